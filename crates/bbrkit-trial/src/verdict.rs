//! A group's verdict from its effect interval, and how much data an
//! undecided group still needs.
//!
//! ```text
//!   interval [lo, hi] of B/A, margin m (±5 %: [1/1.05, 1.05])
//!   receiver_side      most records received more than they sent (CC acts on the sender)
//!   insufficient_data  no interval (too few connections/units per arm and class)
//!   no_difference      1/(1+m) ≤ lo and hi ≤ 1+m: any effect is inside the margin
//!   better             lo > 1
//!   worse              hi < 1
//!   insufficient_data  otherwise: the interval holds 1 and a ratio beyond the margin
//! ```
//!
//! `no_difference` is tested first: an interval such as [1.01, 1.03]
//! excludes 1 but also every effect an operator would act on, which is
//! what equivalence testing calls equivalent (Schuirmann 1987, the two
//! one-sided tests; Wellek 2010, "Testing Statistical Hypotheses of
//! Equivalence and Noninferiority", ch. 1).
//!
//! Needed size: the interval's half-width on the log scale shrinks as
//! 1/√n, so `n' = n · (h / h*)²`, where `h*` is the half-width that would
//! decide — below |ln r| (a difference) or below `ln(1+m) − |ln r|`
//! (equivalence), whichever needs less. `h* ≥ ln(1+m)/2`, so the answer is
//! finite. An estimate: the sequence's multiplier grows slowly with n.

use serde::Serialize;

/// What a group's comparison concludes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// B's median goodput is higher, with confidence.
    Better,
    /// B's median goodput is lower, with confidence.
    Worse,
    /// Any difference is inside the equivalence margin, with confidence.
    NoDifference,
    /// Not enough connections (or units) to decide.
    InsufficientData,
    /// This host mostly receives in this group: congestion control acts on
    /// the sender, so the comparison says nothing about the algorithm.
    ReceiverSide,
}

impl Verdict {
    /// Every verdict, in report order.
    pub const ALL: [Verdict; 5] = [
        Verdict::Better,
        Verdict::Worse,
        Verdict::NoDifference,
        Verdict::InsufficientData,
        Verdict::ReceiverSide,
    ];

    /// The JSON and table spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Better => "better",
            Verdict::Worse => "worse",
            Verdict::NoDifference => "no_difference",
            Verdict::InsufficientData => "insufficient_data",
            Verdict::ReceiverSide => "receiver_side",
        }
    }

    /// A decided comparison (what `--until-confident` waits for).
    pub fn is_decided(self) -> bool {
        matches!(
            self,
            Verdict::Better | Verdict::Worse | Verdict::NoDifference
        )
    }
}

/// How many units each arm needs before the comparison can decide.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Needed {
    /// Units per arm (in total, not more).
    pub per_arm: u64,
    /// What is counted: `connections`, `clients`, `prefixes` (in one size
    /// class when the comparison has none yet).
    pub of: String,
}

/// The verdict of an interval `[lo, hi]` of the ratio B/A with
/// equivalence margin `margin`.
pub fn decide(lo: f64, hi: f64, margin: f64) -> Verdict {
    if lo >= 1.0 / (1.0 + margin) && hi <= 1.0 + margin {
        Verdict::NoDifference
    } else if lo > 1.0 {
        Verdict::Better
    } else if hi < 1.0 {
        Verdict::Worse
    } else {
        Verdict::InsufficientData
    }
}

/// Units per arm needed to decide, from an undecided interval `[lo, hi]`
/// around `ratio` with `per_arm` units now.
pub fn needed_per_arm(ratio: f64, lo: f64, hi: f64, margin: f64, per_arm: u64) -> u64 {
    let h = (hi.ln() - lo.ln()) / 2.0;
    let l = ratio.ln().abs();
    let target = l.max((1.0 + margin).ln() - l);
    let factor = (h / target).powi(2);
    ((per_arm as f64 * factor).ceil() as u64).max(per_arm + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_verdict_from_its_interval() {
        assert_eq!(decide(1.2, 1.9, 0.05), Verdict::Better);
        assert_eq!(decide(0.5, 0.8, 0.05), Verdict::Worse);
        assert_eq!(decide(0.97, 1.04, 0.05), Verdict::NoDifference);
        assert_eq!(decide(0.9, 1.3, 0.05), Verdict::InsufficientData);
        // Excludes 1 but inside the margin: equivalent, not better.
        assert_eq!(decide(1.01, 1.03, 0.05), Verdict::NoDifference);
        // Just beyond the margin on one side, holding 1: undecided.
        assert_eq!(decide(0.98, 1.06, 0.05), Verdict::InsufficientData);
        assert_eq!(decide(1.0 / 1.05, 1.05, 0.05), Verdict::NoDifference);
    }

    #[test]
    fn needed_grows_with_the_width_to_lose() {
        // ratio 1.2, interval [0.9, 1.6]: h = ln(1.6/0.9)/2 = 0.2877;
        // deciding "better" needs h* = ln 1.2 = 0.1823: factor 2.4899.
        let n = needed_per_arm(1.2, 0.9, 1.6, 0.05, 100);
        assert_eq!(n, 249);
        // ratio 1.0: equivalence needs h* = ln 1.05: factor (0.2877/0.0488)^2.
        let n = needed_per_arm(1.0, 0.75, 1.33, 0.05, 100);
        assert!((3400..3700).contains(&n), "{n}");
        // Never less than one more.
        assert_eq!(needed_per_arm(1.2, 1.0, 1.44, 0.05, 100), 101);
    }

    #[test]
    fn spellings() {
        let s: Vec<&str> = Verdict::ALL.iter().map(|v| v.as_str()).collect();
        assert_eq!(
            s,
            [
                "better",
                "worse",
                "no_difference",
                "insufficient_data",
                "receiver_side"
            ]
        );
        assert_eq!(
            serde_json::to_string(&Verdict::NoDifference).unwrap(),
            "\"no_difference\""
        );
        assert!(Verdict::Worse.is_decided() && !Verdict::ReceiverSide.is_decided());
    }
}
