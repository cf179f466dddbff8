//! The rule of an attached per-connection policy (`enable --policy`, issue
//! 19) that governs each socket, for `conns`: which policy governs it, the
//! rule it matched and the algorithm that rule gives it, plus the count by
//! (cgroup, rule, algorithm).
//!
//! ```text
//!   socket ── cgroup id (INET_DIAG_CGROUP_ID) ──▶ cgroup path ──▶ nearest policy at or above it
//!          └─ remote, local port, remote port, cookie ──▶ Compiled::decide ──▶ rule, arm ──▶ cc
//! ```
//!
//! A sock_ops program on cgroup C runs for sockets of C and its
//! descendants; with several, the nearest cgroup's runs first (the kernel's
//! effective array lists a cgroup's programs before its ancestors') and its
//! `bpf_setsockopt` marks the algorithm chosen, so the others keep it: the
//! nearest policy governs. `decide` is bit for bit what the program draws
//! (`bbrkit_policy::compile`), so the rule is a pure function of the
//! socket and the maps. The program acts when the connection is
//! established: listeners and handshakes have no rule yet. Where the
//! policies come from is a [`RuleSource`]'s business (bbrkit-host reads the
//! pinned ones); this module never reads anything.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

use bbrkit_policy::Compiled;
use serde::Serialize;

use crate::{Socket, TcpState};

/// One attached policy as its maps hold it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttachedPolicy {
    /// The cgroup v2 directory it is attached to (`None`: the directory is
    /// gone, or was not found under the cgroup2 mount).
    pub cgroup: Option<PathBuf>,
    /// Its cgroup id.
    pub cgroup_id: u64,
    /// The maps, read back.
    pub compiled: Compiled,
}

/// Every attached policy, and the cgroup directory of each cgroup id the
/// source could resolve (sockets' and policies').
#[derive(Debug, Clone, Default)]
pub struct Policies {
    /// The attached policies.
    pub attached: Vec<AttachedPolicy>,
    /// Cgroup directories by id.
    pub cgroups: HashMap<u64, PathBuf>,
    /// Why some policy could not be read, if one could not.
    pub note: Option<String>,
}

impl Policies {
    /// The policy governing sockets of cgroup `id`: attached to it, else to
    /// its nearest ancestor.
    pub fn governing(&self, id: u64) -> Option<&AttachedPolicy> {
        if let Some(p) = self.attached.iter().find(|p| p.cgroup_id == id) {
            return Some(p);
        }
        let path = self.cgroups.get(&id)?;
        self.attached
            .iter()
            .filter(|p| p.cgroup.as_ref().is_some_and(|c| path.starts_with(c)))
            .max_by_key(|p| p.cgroup.as_ref().map_or(0, |c| c.components().count()))
    }
}

/// Where the attached policies come from ([`NoRules`] when there are none
/// to read: a build without BPF).
pub trait RuleSource {
    /// The attached policies, read once, with the cgroup directories of
    /// `socks`' cgroup ids.
    fn policies(&self, socks: &[Socket]) -> Policies;
}

/// A source that knows no policy.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoRules;

impl RuleSource for NoRules {
    fn policies(&self, _: &[Socket]) -> Policies {
        Policies::default()
    }
}

/// What the governing policy gives one socket (`policy` of a socket row).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PolicyRow {
    /// The cgroup the governing policy is attached to (its id when the
    /// directory was not found).
    pub cgroup: String,
    /// The rule the connection matched, 1-based in match order (as in
    /// `bbrkit_policy_matches_total`); `null`: none matched, the host default.
    pub rule: Option<usize>,
    /// The split's arm drawn, 0-based (`null` without a rule, or when every
    /// weight is 0).
    pub arm: Option<usize>,
    /// The algorithm the rule gives it (`null`: the host default).
    pub cc: Option<String>,
    /// The socket runs another algorithm than `cc` (its application set
    /// its own, a locked route, or it was established before the policy).
    pub differs: bool,
}

/// Sockets per (cgroup, rule, algorithm) (`policy_summary`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PolicySummaryRow {
    /// The cgroup of the governing policy.
    pub cgroup: String,
    /// The rule, 1-based (`null`: none matched).
    pub rule: Option<usize>,
    /// The algorithm the rule gives (`null`: the host default).
    pub cc: Option<String>,
    /// Sockets.
    pub sockets: usize,
    /// ... of which run another algorithm.
    pub differ: usize,
}

/// States in which the program has already acted (it sets the algorithm
/// at `*_ESTABLISHED_CB`): not listeners, not handshakes.
fn acted(state: TcpState) -> bool {
    !matches!(
        state,
        TcpState::Listen | TcpState::SynSent | TcpState::SynRecv | TcpState::NewSynRecv
    )
}

/// The policy row of `s`, when a policy governs it.
pub fn row(p: &Policies, s: &Socket) -> Option<PolicyRow> {
    if !acted(s.state) {
        return None;
    }
    let gov = p.governing(s.cgroup_id?)?;
    let c = &gov.compiled;
    let d = c.decide(s.remote.ip(), s.local.port(), s.remote.port(), s.cookie);
    let cc = d.and_then(|d| Some(c.rules[d.rule].arms.get(d.arm?)?.cc.clone()));
    Some(PolicyRow {
        cgroup: gov.cgroup.as_ref().map_or_else(
            || format!("cgroup id {}", gov.cgroup_id),
            |c| c.display().to_string(),
        ),
        rule: d.map(|d| d.rule + 1),
        arm: d.and_then(|d| d.arm),
        differs: cc.is_some() && s.cc != cc,
        cc,
    })
}

/// The count by (cgroup, rule, algorithm) of `rows`, in that order (no
/// rule last in its cgroup).
pub fn summary<'a>(rows: impl IntoIterator<Item = &'a PolicyRow>) -> Vec<PolicySummaryRow> {
    let mut by: BTreeMap<(String, usize, Option<String>), (usize, usize)> = BTreeMap::new();
    for r in rows {
        let key = (r.cgroup.clone(), r.rule.unwrap_or(usize::MAX), r.cc.clone());
        let e = by.entry(key).or_default();
        e.0 += 1;
        e.1 += usize::from(r.differs);
    }
    by.into_iter()
        .map(|((cgroup, rule, cc), (sockets, differ))| PolicySummaryRow {
            cgroup,
            rule: (rule != usize::MAX).then_some(rule),
            cc,
            sockets,
            differ,
        })
        .collect()
}
