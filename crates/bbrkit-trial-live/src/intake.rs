//! Which close records the statistics take, and what a guardrail does to
//! the split. Pure: records and decisions in, counts and weights out.
//!
//! ```text
//!   record ──rule ≠ the trial's──► other_rule (not compared)
//!          ──started at or after a guardrail's cut──► after_guardrail (drew under the new
//!            weights, all in one arm: comparing them would break the split)
//!          ──otherwise──► Trial::add
//!
//!   Decision {stop, send_to} ──► weights: the stopped arm 0, the other keeps its own
//!   cut = CLOCK_MONOTONIC just before the weights are written: every connection established
//!   before it drew under the split, so it stays in the comparison when it closes later
//! ```
//!
//! The program steers a rule, not a prefix: a decision about one group
//! moves the new connections of every group of the trial's rule (the
//! conservative choice: a guardrail protects connections), and the
//! comparison of every group is then the one of the connections
//! established before the cut.

use bbrkit_policy::ConnRecord;
use bbrkit_trial::definition::ARM_NAMES;
use bbrkit_trial::srm::{self, SampleRatio};
use bbrkit_trial::{Decision, Trial, TrialDef, Unit};
use serde::Serialize;

/// What the live side did with the records besides handing them on.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Intake {
    /// Records read from the ring.
    pub received: u64,
    /// Records of another rule than the trial's (none: only the trial's
    /// rule records).
    pub other_rule: u64,
    /// Records of connections established after a guardrail moved the
    /// split: not compared.
    pub after_guardrail: u64,
}

/// A guardrail decision as applied to the program.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Applied {
    /// The library's decision (scope, arms, because).
    pub decision: Decision,
    /// Seconds into the trial.
    pub after_s: f64,
    /// The rule's new weights, A then B.
    pub weights: [u16; 2],
    /// What the program could steer.
    pub note: String,
    /// Connections the program had drawn into A and B when the weights
    /// changed (the draws the comparison can hold).
    pub drawn_at_cut: [u64; 2],
    /// `CLOCK_MONOTONIC` ns before the weights were written.
    #[serde(skip)]
    pub cut_ns: u64,
}

impl Intake {
    /// Takes one record for the trial's `rule`, cut at `cut_ns` (a
    /// guardrail's, if any).
    pub fn take(&mut self, trial: &mut Trial, rule: u16, cut_ns: Option<u64>, r: &ConnRecord) {
        self.received += 1;
        if r.rule.is_some_and(|x| x != rule) {
            self.other_rule += 1;
        } else if cut_ns.is_some_and(|cut| r.start_ns >= cut) {
            self.after_guardrail += 1;
        } else {
            trial.add(r);
        }
    }
}

/// The weights after `d`: its stopped arm gets 0, the arm it sends to
/// keeps its weight (never 0 in a valid definition).
pub fn weights_after(def: &TrialDef, d: &Decision) -> [u16; 2] {
    [0, 1].map(|i| {
        if ARM_NAMES[i] == d.stop {
            0
        } else {
            u16::try_from(def.arms[i].weight).unwrap_or(u16::MAX).max(1)
        }
    })
}

/// The assignment's own sample-ratio check: the program's draws per arm
/// (connections established, counted at establishment) against the split.
/// Unlike the statistics' check on closed connections, connections still
/// open cannot skew it: when one arm's connections last longer, fewer of
/// them have closed at a look, and the closed counts lag the draws. Only
/// for per-connection units (a client's or prefix's connections are not
/// independent draws).
pub fn draws_check(def: &TrialDef, drawn: [u64; 2]) -> Option<SampleRatio> {
    (def.unit == Unit::Connection).then_some(())?;
    srm::check(
        "connections drawn",
        drawn,
        [def.share(0), def.share(1)],
        def.settings.srm_alpha,
    )
}

/// What applying `d` means for the groups, in a sentence.
pub fn note(d: &Decision) -> String {
    let scope = if d.scope == "all" {
        "all connections".to_string()
    } else {
        format!("group {}", d.scope)
    };
    format!(
        "tripped over {scope}: every new connection of the trial's rule now goes to {} ({}) \
         (the program steers a rule, not a prefix); connections established after this are \
         not compared",
        d.send_to, d.cc
    )
}

#[cfg(test)]
mod tests {
    use bbrkit_trial::testing::conn;

    use super::*;

    fn decision(stop: &'static str) -> Decision {
        let send_to = if stop == "A" { "B" } else { "A" };
        Decision {
            scope: "198.51.100.0/24".into(),
            stop,
            send_to,
            cc: if stop == "A" { "bbr" } else { "cubic" }.into(),
            because: vec!["goodput".into()],
        }
    }

    #[test]
    fn records_of_other_rules_and_after_the_cut_are_set_aside() {
        let mut trial = Trial::new(TrialDef::new("cubic", "bbr")).unwrap();
        let mut intake = Intake::default();
        let mut early = conn(1, 0, "198.51.100.7", 50_000, 8e6);
        early.start_ns = 100;
        let mut late = conn(2, 1, "198.51.100.8", 50_000, 8e6);
        late.start_ns = 500;
        let other = ConnRecord {
            rule: Some(3),
            ..conn(3, 1, "198.51.100.9", 50_000, 8e6)
        };
        for r in [&early, &late, &other] {
            intake.take(&mut trial, 0, Some(500), r);
        }
        assert_eq!(
            intake,
            Intake {
                received: 3,
                other_rule: 1,
                after_guardrail: 1
            }
        );
        assert_eq!(
            trial.counts().closed,
            1,
            "only the connection before the cut"
        );
        intake.take(&mut trial, 0, None, &late);
        assert_eq!(trial.counts().closed, 2, "no cut: taken");
    }

    #[test]
    fn a_decision_zeroes_the_stopped_arm_and_keeps_the_other() {
        let mut def = TrialDef::new("cubic", "bbr");
        def.arms[0].weight = 90;
        def.arms[1].weight = 10;
        assert_eq!(weights_after(&def, &decision("B")), [90, 0]);
        assert_eq!(weights_after(&def, &decision("A")), [0, 10]);
        let n = note(&decision("A"));
        assert!(n.starts_with("tripped over group 198.51.100.0/24: every new connection"));
        assert!(n.contains("goes to B (bbr)"), "{n}");
    }

    #[test]
    fn draws_are_checked_against_the_split_for_connection_units_only() {
        let mut def = TrialDef::new("cubic", "bbr");
        let ok = draws_check(&def, [480, 520]).unwrap();
        assert!(!ok.mismatch && ok.counted == "connections drawn", "{ok:?}");
        assert!(draws_check(&def, [400, 600]).unwrap().mismatch);
        assert_eq!(draws_check(&def, [2, 3]), None, "too few");
        def.unit = Unit::Client;
        assert_eq!(draws_check(&def, [400, 600]), None);
    }
}
