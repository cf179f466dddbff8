//! The per-connection policy's families of `bbrkit metrics`: per rule and
//! arm what the program matched and what became of it, the program's global
//! counters, and the other sock_ops programs around each policy's cgroup.
//! Absent on a host without a policy, so such a host publishes exactly what
//! it did before policies existed. Reads nothing (plain values in).

use crate::DiagError;
use crate::prom::{Exposition, MetricType};

/// One (rule, arm) of a per-connection policy bbrkit attached, with the
/// program's counters summed over CPUs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyArm {
    /// The cgroup the policy governs (its id).
    pub cgroup_id: u64,
    /// The rule, numbered from 1 in match order.
    pub rule: usize,
    /// The arm's index in the order written (0 for `cc =`).
    pub arm: usize,
    /// The arm's algorithm.
    pub cc: String,
    /// Connections that matched the rule and drew the arm.
    pub matched: u64,
    /// ... whose algorithm the program set.
    pub assigned: u64,
    /// ... that kept the application's (or another program's) choice.
    pub kept_app: u64,
    /// ... that kept a locked route's choice.
    pub kept_route: u64,
    /// ... where the kernel refused the algorithm.
    pub failed: u64,
}

impl PolicyArm {
    /// The `cgroup_id`, `rule` and `arm` label values.
    fn labels(&self) -> [String; 3] {
        [
            self.cgroup_id.to_string(),
            self.rule.to_string(),
            self.arm.to_string(),
        ]
    }
}

/// The global counters of one attached policy's program.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyStats {
    /// The cgroup the policy governs (its id).
    pub cgroup_id: u64,
    /// What the program counted, summed over CPUs.
    pub stats: bbrkit_policy::attached::Stats,
}

/// Other sock_ops programs around one recorded policy's cgroup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyForeign {
    /// The cgroup the policy governs (its id).
    pub cgroup_id: u64,
    /// sock_ops programs on it, its ancestors or its descendants that are
    /// not bbrkit's pinned policies (`None`: they could not be listed).
    pub programs: Option<usize>,
}

/// `bbrkit_policy_matches_total{cgroup_id,rule,arm,cc}` and
/// `bbrkit_policy_outcomes_total{cgroup_id,rule,arm,cc,outcome}`, when a policy is
/// attached (a host without one publishes exactly what it did before).
pub(super) fn write_arms(e: &mut Exposition, arms: &[PolicyArm]) -> Result<(), DiagError> {
    if arms.is_empty() {
        return Ok(());
    }
    e.family(
        "bbrkit_policy_matches_total",
        MetricType::Counter,
        "Connections the per-connection policy matched, by cgroup, rule (1-based, match order), arm (0-based) and the arm's algorithm, since the policy was attached.",
    )?;
    for a in arms {
        let [id, rule, arm] = a.labels();
        let labels = [
            ("cgroup_id", id.as_str()),
            ("rule", &rule),
            ("arm", &arm),
            ("cc", &a.cc),
        ];
        e.sample(&labels, a.matched as f64)?;
    }
    e.family(
        "bbrkit_policy_outcomes_total",
        MetricType::Counter,
        "What became of the connections each rule and arm matched, by outcome: assigned (the program set the algorithm), kept_app (an application's or another program's choice was kept), kept_route (a locked route's), failed (the kernel refused the algorithm), since the policy was attached.",
    )?;
    for a in arms {
        let [id, rule, arm] = a.labels();
        for (outcome, n) in [
            ("assigned", a.assigned),
            ("kept_app", a.kept_app),
            ("kept_route", a.kept_route),
            ("failed", a.failed),
        ] {
            e.sample(
                &[
                    ("cgroup_id", &id),
                    ("rule", &rule),
                    ("arm", &arm),
                    ("cc", &a.cc),
                    ("outcome", outcome),
                ],
                n as f64,
            )?;
        }
    }
    Ok(())
}

/// `bbrkit_policy_events_total{cgroup_id,event}`: the program's global
/// counters (absent without a policy).
pub(super) fn write_stats(e: &mut Exposition, all: &[PolicyStats]) -> Result<(), DiagError> {
    if all.is_empty() {
        return Ok(());
    }
    e.family(
        "bbrkit_policy_events_total",
        MetricType::Counter,
        "The per-connection policy program's global counters, by cgroup and event: established (connections seen), unmatched (no rule: host default), no_arm (every weight 0), no_storage (recorded rule without storage), records (written), ring_full (records lost), no_tcp_sock (closes without a tcp_sock), since the policy was attached.",
    )?;
    for p in all {
        let id = p.cgroup_id.to_string();
        let s = &p.stats;
        for (event, n) in [
            ("established", s.established),
            ("unmatched", s.unmatched),
            ("no_arm", s.no_arm),
            ("no_storage", s.no_storage),
            ("records", s.records),
            ("ring_full", s.ring_full),
            ("no_tcp_sock", s.no_tcp_sock),
        ] {
            e.sample(&[("cgroup_id", &id), ("event", event)], n as f64)?;
        }
    }
    Ok(())
}

/// `bbrkit_policy_foreign_programs{cgroup_id}`: other sock_ops programs
/// that can set the algorithm of a recorded policy's sockets (absent
/// without a policy; a cgroup whose programs could not be listed has no
/// sample).
pub(super) fn write_foreign(e: &mut Exposition, all: &[PolicyForeign]) -> Result<(), DiagError> {
    if all.is_empty() {
        return Ok(());
    }
    e.family(
        "bbrkit_policy_foreign_programs",
        MetricType::Gauge,
        "Other sock_ops programs (not bbrkit's pinned policies: bpftune, Cilium, a trial) attached to a recorded policy's cgroup, an ancestor or a descendant, by cgroup: each can set the algorithm of the policy's connections (`bbrkit doctor` names them).",
    )?;
    for p in all {
        if let Some(n) = p.programs {
            e.sample(&[("cgroup_id", &p.cgroup_id.to_string())], n as f64)?;
        }
    }
    Ok(())
}
