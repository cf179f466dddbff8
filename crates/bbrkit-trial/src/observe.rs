//! Records in, observations out: [`Trial`] reads each [`ConnRecord`] once,
//! keeps what the statistics need (`Obs`: arm, group, unit, size class,
//! goodput, counters) and counts what it set aside and why. Closed and
//! still-open connections are kept apart; a connection is counted once
//! (by socket cookie); a record outside the trial (no rule matched) or with
//! an arm the split does not have is counted, not used.
//!
//! Memory is one `Obs` (about 100 bytes) per connection: medians and
//! bootstrap resamples need every value, not a sketch.

use std::collections::{HashMap, HashSet};
use std::net::IpAddr;

use bbrkit_advise::group::prefix_of;
use bbrkit_policy::ConnRecord;
use serde::Serialize;

use crate::TrialError;
use crate::definition::{Grouping, TrialDef, Unit};
use crate::words::SizeClass;

/// One closed connection, as the statistics see it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Obs {
    /// 0 (A) or 1 (B).
    pub arm: usize,
    /// Index into [`Trial::groups`].
    pub group: u32,
    /// Index of the unit of randomization (connection, client, prefix).
    pub unit: u32,
    /// Size class of `bytes_acked`.
    pub class: SizeClass,
    /// [`ConnRecord::goodput_bits_per_second`].
    pub goodput: Option<f64>,
    pub bytes_acked: u64,
    pub bytes_received: u64,
    /// Established to close, microseconds.
    pub duration_us: u64,
    /// Established, `CLOCK_MONOTONIC` ns (the cohort it belongs to).
    pub start_ns: u64,
    pub segs_out: u32,
    pub total_retrans: u32,
    /// srtt / min_rtt.
    pub rtt_inflation: Option<f64>,
    pub busy_us: u64,
    pub rwnd_limited_us: u64,
    pub sndbuf_limited_us: u64,
    /// [`ConnRecord::mostly_received`].
    pub mostly_received: bool,
    /// The program set the arm's algorithm.
    pub assigned: bool,
    /// The connection closed running its arm's algorithm.
    pub ran_arm_cc: bool,
}

/// One connection still open when the trial ended.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct OpenObs {
    pub arm: usize,
    pub group: u32,
    pub bytes_acked: u64,
    pub goodput: Option<f64>,
}

/// A group's key: a remote prefix or a policy rule.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum GroupKey {
    Prefix(String),
    Rule(u16),
}

impl GroupKey {
    /// How reports name it: `198.51.100.0/24`, `rule 2`.
    pub fn label(&self) -> String {
        match self {
            GroupKey::Prefix(p) => p.clone(),
            GroupKey::Rule(r) => format!("rule {r}"),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum UnitKey {
    Client(IpAddr),
    Prefix(String),
}

/// What happened to the records given to a trial.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct RecordCounts {
    /// Closed connections used.
    pub closed: u64,
    /// Connections still open at the end, reported apart.
    pub open: u64,
    /// Records of connections that matched no policy rule (not in the
    /// trial).
    pub outside: u64,
    /// Records whose arm index the split does not have (a broken
    /// assignment or decoder).
    pub unexpected_arm: u64,
    /// Second records of a connection already counted (a broken recorder).
    pub duplicate: u64,
    /// Units (clients, prefixes) whose connections drew both arms, which a
    /// per-unit split cannot do (0 with per-connection units).
    pub units_in_both_arms: u64,
    /// Closed connections of A and B that acknowledged data but whose
    /// kernel kept no busy time: no goodput, so outside the goodput
    /// comparison (never re-measured over their lifetime); still counted
    /// in `closed`, the sample ratio and the other metrics.
    pub no_busy_time: [u64; 2],
}

/// A trial's data so far: feed it records with [`Trial::add`], read it
/// with [`Trial::report`].
#[derive(Debug, Clone)]
pub struct Trial {
    pub(crate) def: TrialDef,
    pub(crate) obs: Vec<Obs>,
    pub(crate) open: Vec<OpenObs>,
    pub(crate) groups: Vec<GroupKey>,
    group_ix: HashMap<GroupKey, u32>,
    unit_ix: HashMap<UnitKey, u32>,
    /// Per unit: bit 0 when it has an A connection, bit 1 for B.
    unit_arms: Vec<u8>,
    closed_seen: HashSet<u64>,
    open_seen: HashSet<u64>,
    pub(crate) counts: RecordCounts,
}

impl Trial {
    /// An empty trial of `def` (validated).
    pub fn new(def: TrialDef) -> Result<Trial, TrialError> {
        def.validate()?;
        Ok(Trial {
            def,
            obs: Vec::new(),
            open: Vec::new(),
            groups: Vec::new(),
            group_ix: HashMap::new(),
            unit_ix: HashMap::new(),
            unit_arms: Vec::new(),
            closed_seen: HashSet::new(),
            open_seen: HashSet::new(),
            counts: RecordCounts::default(),
        })
    }

    /// The definition.
    pub fn def(&self) -> &TrialDef {
        &self.def
    }

    /// What happened to the records so far.
    pub fn counts(&self) -> &RecordCounts {
        &self.counts
    }

    /// Takes one record (closed, or open at the end of the trial).
    pub fn add(&mut self, r: &ConnRecord) {
        let (Some(rule), arm) = (r.rule, usize::from(r.arm)) else {
            self.counts.outside += 1;
            return;
        };
        if arm > 1 {
            self.counts.unexpected_arm += 1;
            return;
        }
        let seen = if r.open {
            &mut self.open_seen
        } else {
            &mut self.closed_seen
        };
        if !seen.insert(r.cookie) {
            self.counts.duplicate += 1;
            return;
        }
        let group = self.group_of(r, rule);
        if r.open {
            self.counts.open += 1;
            self.open.push(OpenObs {
                arm,
                group,
                bytes_acked: r.bytes_acked,
                goodput: r.goodput_bits_per_second(),
            });
            return;
        }
        self.counts.closed += 1;
        if r.no_busy_time() {
            self.counts.no_busy_time[arm] += 1;
        }
        let unit = self.unit_of(r, arm);
        self.obs.push(Obs {
            arm,
            group,
            unit,
            class: SizeClass::of(r.bytes_acked),
            goodput: r.goodput_bits_per_second(),
            bytes_acked: r.bytes_acked,
            bytes_received: r.bytes_received,
            duration_us: r.duration_us(),
            start_ns: r.start_ns,
            segs_out: r.segs_out,
            total_retrans: r.total_retrans,
            rtt_inflation: r.rtt_inflation(),
            busy_us: r.busy_us,
            rwnd_limited_us: r.rwnd_limited_us,
            sndbuf_limited_us: r.sndbuf_limited_us,
            mostly_received: r.mostly_received(),
            assigned: r.assigned,
            ran_arm_cc: r.cc == self.def.arms[arm].cc,
        });
    }

    /// Per arm (A, B): closed connections read so far and their mean
    /// duration in seconds, established to close (`None` with none): what
    /// the stall gate (`crate::gates`) weighs the open ones against.
    pub fn closed_durations(&self) -> [(u64, Option<f64>); 2] {
        [0, 1].map(|a| {
            let (n, sum) = self
                .obs
                .iter()
                .filter(|o| o.arm == a)
                .fold((0u64, 0.0), |(n, s), o| (n + 1, s + o.duration_us as f64));
            (n, (n > 0).then(|| sum / n as f64 / 1e6))
        })
    }

    /// Takes every record of `records`.
    pub fn extend<'a>(&mut self, records: impl IntoIterator<Item = &'a ConnRecord>) {
        for r in records {
            self.add(r);
        }
    }

    fn group_of(&mut self, r: &ConnRecord, rule: u16) -> u32 {
        let key = match self.def.grouping {
            Grouping::Prefix => GroupKey::Prefix(self.prefix(r.remote)),
            Grouping::Rule => GroupKey::Rule(rule),
        };
        if let Some(&ix) = self.group_ix.get(&key) {
            return ix;
        }
        let ix = self.groups.len() as u32;
        self.groups.push(key.clone());
        self.group_ix.insert(key, ix);
        ix
    }

    fn unit_of(&mut self, r: &ConnRecord, arm: usize) -> u32 {
        let key = match self.def.unit {
            // Every closed connection is its own unit: its index.
            Unit::Connection => return self.obs.len() as u32,
            Unit::Client => UnitKey::Client(r.remote),
            Unit::Prefix => UnitKey::Prefix(self.prefix(r.remote)),
        };
        let next = self.unit_arms.len() as u32;
        let ix = *self.unit_ix.entry(key).or_insert(next);
        if ix == next {
            self.unit_arms.push(0);
        }
        let mask = &mut self.unit_arms[ix as usize];
        let before = *mask;
        *mask |= 1 << arm;
        if before != 0 && before != *mask {
            self.counts.units_in_both_arms += 1;
        }
        ix
    }

    fn prefix(&self, addr: IpAddr) -> String {
        prefix_of(addr, self.def.prefix.v4, self.def.prefix.v6)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) use crate::testing::conn as rec;

    #[test]
    fn records_are_classified_once_and_set_asides_counted() {
        let mut t = Trial::new(TrialDef::new("cubic", "bbr")).unwrap();
        let a = rec(1, 0, "198.51.100.7", 50_000, 8e6);
        t.add(&a);
        t.add(&a); // the same connection again
        t.add(&ConnRecord {
            rule: None,
            ..rec(2, 0, "198.51.100.7", 1, 1.0)
        });
        t.add(&ConnRecord {
            arm: 2,
            ..rec(3, 0, "198.51.100.7", 1, 1.0)
        });
        t.add(&ConnRecord {
            open: true,
            ..rec(1, 1, "2001:db8:5:6::1", 2_000_000, 1e7)
        });
        t.add(&rec(4, 1, "198.51.100.9", 20_000_000, 1e8));
        let c = t.counts();
        assert_eq!(
            (c.closed, c.open, c.outside, c.unexpected_arm, c.duplicate),
            (2, 1, 1, 1, 1)
        );
        assert_eq!(t.obs.len(), 2);
        assert_eq!(t.obs[0].class, SizeClass::Under100Kb);
        assert_eq!(t.obs[1].class, SizeClass::Over10Mb);
        assert_eq!(t.obs[0].group, t.obs[1].group, "one /24");
        assert_ne!(t.obs[0].unit, t.obs[1].unit, "per-connection units");
        assert!((t.obs[0].goodput.unwrap() - 8e6).abs() < 1.0);
        assert_eq!(t.open.len(), 1);
        assert_eq!(
            t.groups[t.open[0].group as usize].label(),
            "2001:db8:5::/48"
        );
    }

    #[test]
    fn client_units_that_draw_both_arms_are_counted() {
        let mut def = TrialDef::new("cubic", "bbr");
        def.unit = Unit::Client;
        let mut t = Trial::new(def).unwrap();
        t.add(&rec(1, 0, "192.0.2.1", 1000, 1e6));
        t.add(&rec(2, 0, "192.0.2.1", 1000, 1e6));
        t.add(&rec(3, 1, "192.0.2.2", 1000, 1e6));
        assert_eq!(t.obs[0].unit, t.obs[1].unit);
        assert_ne!(t.obs[0].unit, t.obs[2].unit);
        assert_eq!(t.counts().units_in_both_arms, 0);
        t.add(&rec(4, 1, "192.0.2.1", 1000, 1e6));
        t.add(&rec(5, 1, "192.0.2.1", 1000, 1e6));
        assert_eq!(t.counts().units_in_both_arms, 1, "counted once");
    }

    #[test]
    fn rule_grouping_keys_by_rule() {
        let mut def = TrialDef::new("cubic", "bbr");
        def.grouping = Grouping::Rule;
        let mut t = Trial::new(def).unwrap();
        t.add(&ConnRecord {
            rule: Some(3),
            ..rec(1, 0, "192.0.2.1", 1000, 1e6)
        });
        t.add(&ConnRecord {
            rule: Some(3),
            ..rec(2, 1, "203.0.113.1", 1000, 1e6)
        });
        assert_eq!(t.groups.len(), 1);
        assert_eq!(t.groups[0].label(), "rule 3");
    }

    #[test]
    fn an_invalid_definition_is_refused() {
        let mut def = TrialDef::new("cubic", "bbr");
        def.arms[0].weight = 0;
        assert!(Trial::new(def).is_err());
    }
}
