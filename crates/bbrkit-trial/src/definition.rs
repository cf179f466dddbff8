//! What a trial is: two arms (A, the baseline, and B) with their split
//! weights, the unit of randomization, how connections are grouped, and
//! the statistical settings and guardrail bounds, each with its default and
//! why. Validated once ([`TrialDef::validate`]); every later step trusts it.

use serde::Serialize;

use crate::TrialError;

/// One arm: the algorithm its connections run and its share of the split.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Arm {
    /// Congestion-control name (`cubic`, `bbr`, `bbr3`).
    pub cc: String,
    /// Relative weight of the split (`--split 50/50`: 50 and 50).
    pub weight: u32,
}

/// What drew an arm: every record of one unit shares its arm. The
/// policy's type: a trial is a policy rule with a split.
pub use bbrkit_policy::Unit;

/// What the unit means for the comparison, in one sentence.
pub fn unit_meaning(unit: Unit) -> &'static str {
    match unit {
        Unit::Connection => {
            "each connection drew its arm: connections of both arms share paths and \
                 bottlenecks, so one arm can take bandwidth from the other (the effect can be \
                 overstated and the harm to the other arm understated); intervals are over \
                 connections"
        }
        Unit::Client => {
            "each remote address drew one arm for all its connections: a client's \
                 connections do not compete across arms, at the cost of fewer independent \
                 units; intervals are over clients, not connections"
        }
        Unit::Prefix => {
            "each remote prefix drew one arm for all its connections: arms do not share a \
                 prefix's paths, at the cost of few independent units; intervals are over \
                 prefixes, not connections, and a single prefix cannot be compared"
        }
    }
}

/// How records are grouped for per-group results.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Grouping {
    /// By remote prefix (`--prefix-v4`/`--prefix-v6` bits, /24 and /48 by
    /// default, as `bbrkit advise` groups).
    Prefix,
    /// By the policy rule the connection matched.
    Rule,
}

/// Prefix lengths of a remote group (and of the `prefix` unit).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct PrefixLengths {
    /// IPv4 prefix bits (24: a /24, what `advise` uses).
    pub v4: u8,
    /// IPv6 prefix bits (48: a site, what `advise` uses).
    pub v6: u8,
}

/// Statistical settings.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Settings {
    /// Coverage of every interval (0.95).
    pub confidence: f64,
    /// Equivalence margin: a ratio inside `[1/(1+m), 1+m]` is no
    /// difference (0.05: ±5 %, below what an operator would act on).
    pub equivalence_margin: f64,
    /// Connections each arm needs in a size class for the class to carry
    /// information (30: below it a bootstrap of the median is too coarse).
    pub min_connections: usize,
    /// Units (clients, prefixes) each arm needs in a size class with
    /// `client` or `prefix` units (20: a cluster bootstrap with fewer
    /// clusters under-covers).
    pub min_units: usize,
    /// Bootstrap resamples (2000: percentile endpoints to about ±0.5 % of
    /// coverage; Efron & Tibshirani 1993, §19.3).
    pub resamples: usize,
    /// Sample-ratio test level (0.001: the check runs at every look, so a
    /// low level keeps false alarms rare; Fabijan et al., KDD 2019).
    pub srm_alpha: f64,
    /// Units (both arms) at which the confidence sequence is tightest
    /// (1000); it stays valid at every other size.
    pub tuned_for_units: u64,
    /// Units each arm needs in the compared classes before a decided
    /// verdict may stop a trial (`Report::confident`): 100. The anytime
    /// interval is valid only asymptotically (a bootstrap SE of a median,
    /// a normal boundary); the pipeline simulation (`tests/pipeline.rs`)
    /// keeps its any-look false verdicts under 5 % with this floor, and
    /// the issue saw decisions at 30 per arm.
    pub min_stop_units: u64,
    /// Seconds a trial must have run before a decided verdict may stop it:
    /// 30, three looks at the default 10 s interval, so the cohorts, the
    /// draws and the stall gate have seen the trial's rate and its slower
    /// connections close.
    pub min_stop_s: f64,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            confidence: 0.95,
            equivalence_margin: 0.05,
            min_connections: 30,
            min_units: 20,
            resamples: 2000,
            srm_alpha: 0.001,
            tuned_for_units: 1000,
            min_stop_units: 100,
            min_stop_s: 30.0,
        }
    }
}

/// Guardrails: how much worse than the other an arm may be, with
/// confidence, before its new connections go to the other arm.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GuardrailBounds {
    /// Goodput: an arm whose median goodput is below `1 - this` times the
    /// other's (0.2: 20 % slower).
    pub max_goodput_loss: f64,
    /// Retransmit rate: an arm whose pooled retransmit rate exceeds the
    /// other's by more than this, absolute (0.02: two percentage points;
    /// both arms see a path's random loss alike, so the difference is the
    /// loss one arm causes).
    pub max_retransmit_increase: f64,
}

impl Default for GuardrailBounds {
    fn default() -> Self {
        GuardrailBounds {
            max_goodput_loss: 0.2,
            max_retransmit_increase: 0.02,
        }
    }
}

/// A whole trial definition. Arm A (index 0 in records) is the baseline;
/// the effect is B over A.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TrialDef {
    /// A then B.
    pub arms: [Arm; 2],
    /// Unit of randomization.
    pub unit: Unit,
    /// Per-group results by prefix or rule.
    pub grouping: Grouping,
    /// Prefix lengths for [`Grouping::Prefix`] and [`Unit::Prefix`].
    pub prefix: PrefixLengths,
    /// Statistical settings.
    pub settings: Settings,
    /// Guardrail bounds.
    pub guardrails: GuardrailBounds,
}

impl TrialDef {
    /// A 50/50 per-connection trial of `a` (baseline) against `b`, grouped
    /// by /24 and /48 prefix, with the default settings.
    pub fn new(a: &str, b: &str) -> TrialDef {
        TrialDef {
            arms: [
                Arm {
                    cc: a.into(),
                    weight: 50,
                },
                Arm {
                    cc: b.into(),
                    weight: 50,
                },
            ],
            unit: Unit::Connection,
            grouping: Grouping::Prefix,
            prefix: PrefixLengths { v4: 24, v6: 48 },
            settings: Settings::default(),
            guardrails: GuardrailBounds::default(),
        }
    }

    /// The first problem with this definition, if any.
    pub fn validate(&self) -> Result<(), TrialError> {
        for (i, arm) in self.arms.iter().enumerate() {
            let name = ARM_NAMES[i];
            if arm.cc.trim().is_empty() {
                return Err(TrialError::EmptyAlgorithm { arm: name });
            }
            if arm.weight == 0 {
                return Err(TrialError::ZeroWeight { arm: name });
            }
        }
        if self.prefix.v4 > 32 || self.prefix.v6 > 128 {
            return Err(TrialError::PrefixLength {
                v4: self.prefix.v4,
                v6: self.prefix.v6,
            });
        }
        let s = &self.settings;
        check_open_unit("confidence", s.confidence, 0.5)?;
        check_open_unit("equivalence margin", s.equivalence_margin, 0.0)?;
        check_open_unit("sample-ratio alpha", s.srm_alpha, 0.0)?;
        check_open_unit("goodput guardrail", self.guardrails.max_goodput_loss, 0.0)?;
        check_open_unit(
            "retransmit guardrail",
            self.guardrails.max_retransmit_increase,
            0.0,
        )?;
        check_min("min_connections", s.min_connections as u64, 5)?;
        check_min("min_units", s.min_units as u64, 5)?;
        check_min("resamples", s.resamples as u64, 100)?;
        check_min("tuned_for_units", s.tuned_for_units, 10)
    }

    /// Share of arm `i` in the split.
    pub fn share(&self, i: usize) -> f64 {
        let total = f64::from(self.arms[0].weight) + f64::from(self.arms[1].weight);
        f64::from(self.arms[i].weight) / total
    }
}

/// How reports name the arms: index 0 is `A`, 1 is `B`.
pub const ARM_NAMES: [&str; 2] = ["A", "B"];

fn check_open_unit(what: &'static str, value: f64, above: f64) -> Result<(), TrialError> {
    if value > above && value < 1.0 {
        Ok(())
    } else {
        Err(TrialError::OutOfRange {
            what,
            value,
            low: above,
        })
    }
}

fn check_min(what: &'static str, value: u64, min: u64) -> Result<(), TrialError> {
    if value >= min {
        Ok(())
    } else {
        Err(TrialError::TooSmall { what, value, min })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_definition_is_valid() {
        let d = TrialDef::new("cubic", "bbr");
        assert_eq!(d.validate().unwrap(), ());
        assert_eq!(d.share(1), 0.5);
    }

    #[test]
    fn each_bad_field_is_named() {
        let mut d = TrialDef::new("cubic", "bbr");
        d.arms[1].weight = 0;
        assert_eq!(
            d.validate().unwrap_err().to_string(),
            "arm B has weight 0: a split needs both arms"
        );
        let mut d = TrialDef::new("cubic", " ");
        assert!(d.validate().unwrap_err().to_string().contains("arm B"));
        d = TrialDef::new("cubic", "bbr");
        d.settings.confidence = 1.0;
        assert_eq!(
            d.validate().unwrap_err().to_string(),
            "confidence must be above 0.5 and below 1, got 1"
        );
        d = TrialDef::new("cubic", "bbr");
        d.settings.resamples = 10;
        assert_eq!(
            d.validate().unwrap_err().to_string(),
            "resamples must be at least 100, got 10"
        );
        d = TrialDef::new("cubic", "bbr");
        d.prefix.v4 = 33;
        assert!(d.validate().unwrap_err().to_string().contains("/33"));
        d = TrialDef::new("cubic", "bbr");
        d.guardrails.max_retransmit_increase = 0.0;
        assert!(
            d.validate()
                .unwrap_err()
                .to_string()
                .starts_with("retransmit guardrail")
        );
    }

    #[test]
    fn an_uneven_split_has_its_shares() {
        let mut d = TrialDef::new("cubic", "bbr");
        d.arms[0].weight = 90;
        d.arms[1].weight = 10;
        assert!((d.share(0) - 0.9).abs() < 1e-12);
        assert!((d.share(1) - 0.1).abs() < 1e-12);
    }
}
