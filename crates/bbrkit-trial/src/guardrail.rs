//! Guardrails: metrics with their own thresholds, watched at every look,
//! that protect the baseline's traffic from the candidate: they stop arm B
//! when it is clearly worse than A — whatever the goodput verdict says (B
//! can win on goodput and still retransmit unacceptably) — and send its
//! new connections back to A. They are one-sided: A is what runs without
//! the trial, so A is never "harmful" and a guardrail never moves traffic
//! to the candidate (with per-connection units on a shared bottleneck, B
//! taking A's bandwidth would otherwise make A look harmful and hand every
//! connection to the arm that caused it; issue 32). A B far better than A
//! is the verdict's business (`better`), not a guardrail's.
//!
//! ```text
//!   goodput      r = B/A (the effect), [lo, hi] the effect's own interval (the one the report
//!                prints for the effect), bound b = 1 − max_goodput_loss
//!                B trips when hi < b
//!   retransmits  R_a = Σ retransmitted / Σ sent segments of arm a (pooled)
//!                Var(R_a) = U/(U−1) · Σ_u (r_u − R_a s_u)² / (Σ_u s_u)²   (u: units; ratio-estimator
//!                linearisation, Cochran 1977 §6.4, cluster-robust)
//!                D = R_B − R_A, [D ± m(t)·sqrt(Var_A + Var_B)], bound d = max_retransmit_increase
//!                B trips when the low end > d
//!   decision     B's new connections go to A (always: only B trips)
//! ```
//!
//! A guardrail is checked at every look, so it needs an interval valid at
//! every look: the retransmit guardrail uses the anytime multiplier `m(t)`
//! (`crate::sequential`); the goodput guardrail takes the effect's interval,
//! which is the confidence sequence in every look the live command acts on
//! ([`Mode::Sequential`]) and the fixed-horizon interval in a report made
//! once at the end (where one look is all there is). One quantity, one
//! interval per report: the effect line, the guardrail row and a decision's
//! reason print the same numbers.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::definition::{ARM_NAMES, TrialDef, Unit};
use crate::effect::{Effect, Intervals, Mode};
use crate::observe::Obs;
use crate::words::{pct, ratio_interval};

/// What a guardrail watches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// Median goodput, B over A.
    Goodput,
    /// Pooled retransmit rate, B minus A.
    RetransmitRate,
}

impl Metric {
    /// The JSON and label spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Metric::Goodput => "goodput",
            Metric::RetransmitRate => "retransmit_rate",
        }
    }
}

/// One guardrail of one group.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GuardrailCheck {
    /// The metric.
    pub metric: Metric,
    /// Goodput: ratio B/A. Retransmit rate: difference B − A (0..1).
    pub value: f64,
    /// Interval, low end (goodput: the effect's `ci_low`).
    pub low: f64,
    /// Interval, high end (goodput: the effect's `ci_high`).
    pub high: f64,
    /// How the interval was computed (goodput: the effect's `interval`;
    /// retransmit rate: always `sequential`).
    pub interval: Mode,
    /// Goodput: the ratio B must stay above.
    /// Retransmit rate: the difference B − A may not exceed.
    pub bound: f64,
    /// `B` when B is found worse than A beyond the bound (never `A`: the
    /// guardrails protect the baseline from the candidate).
    pub tripped: Option<&'static str>,
}

/// A guardrail decision the live command applies.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Decision {
    /// `all`, or the group whose new connections move.
    pub scope: String,
    /// The arm that stops receiving new connections.
    pub stop: &'static str,
    /// The arm that receives them instead.
    pub send_to: &'static str,
    /// Its algorithm.
    pub cc: String,
    /// Which guardrails tripped, with their numbers.
    pub because: Vec<String>,
}

/// The goodput guardrail from a group's effect.
pub(crate) fn goodput(def: &TrialDef, e: &Effect) -> GuardrailCheck {
    let bound = 1.0 - def.guardrails.max_goodput_loss;
    let tripped = (e.ci_high < bound).then_some(ARM_NAMES[1]);
    GuardrailCheck {
        metric: Metric::Goodput,
        value: e.ratio,
        low: e.ci_low,
        high: e.ci_high,
        interval: e.interval,
        bound,
        tripped,
    }
}

/// Pooled rate of one arm and its variance over units (`None` with too
/// few units or nothing sent).
fn pooled_rate(obs: &[&Obs]) -> Option<(f64, f64, usize)> {
    let mut by_unit: BTreeMap<u32, (f64, f64)> = BTreeMap::new();
    for o in obs {
        let e = by_unit.entry(o.unit).or_default();
        e.0 += f64::from(o.total_retrans);
        e.1 += f64::from(o.segs_out);
    }
    let sent: f64 = by_unit.values().map(|u| u.1).sum();
    let n = by_unit.len();
    if sent <= 0.0 || n < 2 {
        return None;
    }
    let rate = by_unit.values().map(|u| u.0).sum::<f64>() / sent;
    let ss: f64 = by_unit.values().map(|u| (u.0 - rate * u.1).powi(2)).sum();
    let var = n as f64 / (n - 1) as f64 * ss / (sent * sent);
    Some((rate, var, n))
}

/// The retransmit guardrail (`None` until each arm has the minimum of
/// connections, and of units with per-client or per-prefix units).
pub(crate) fn retransmits(
    def: &TrialDef,
    iv: &Intervals,
    arms: [&[&Obs]; 2],
) -> Option<GuardrailCheck> {
    let s = &def.settings;
    let min_units = if def.unit == Unit::Connection {
        s.min_connections
    } else {
        s.min_units
    };
    if arms.iter().any(|a| a.len() < s.min_connections) {
        return None;
    }
    let (ra, va, na) = pooled_rate(arms[0])?;
    let (rb, vb, nb) = pooled_rate(arms[1])?;
    if na.min(nb) < min_units {
        return None;
    }
    let d = rb - ra;
    let w = iv.multiplier((na + nb) as f64) * (va + vb).sqrt();
    let bound = def.guardrails.max_retransmit_increase;
    let (low, high) = (d - w, d + w);
    let tripped = (low > bound).then_some(ARM_NAMES[1]);
    Some(GuardrailCheck {
        metric: Metric::RetransmitRate,
        value: d,
        low,
        high,
        interval: Mode::Sequential,
        bound,
        tripped,
    })
}

/// The decision for `scope` from its checks, if any tripped: B stops, its
/// new connections go back to A.
pub(crate) fn decide(def: &TrialDef, scope: &str, checks: &[GuardrailCheck]) -> Option<Decision> {
    let because: Vec<String> = checks
        .iter()
        .filter(|c| c.tripped.is_some())
        .map(because)
        .collect();
    (!because.is_empty()).then(|| back_to_a(&def.arms[0].cc, scope, because))
}

/// B stops in `scope`, its new connections go to A (algorithm `cc_a`):
/// what every guardrail event decides, a stalled B's included
/// (`crate::gates`).
pub fn back_to_a(cc_a: &str, scope: &str, because: Vec<String>) -> Decision {
    Decision {
        scope: scope.into(),
        stop: ARM_NAMES[1],
        send_to: ARM_NAMES[0],
        cc: cc_a.into(),
        because,
    }
}

fn because(c: &GuardrailCheck) -> String {
    let arm = c.tripped.unwrap_or("?");
    match c.metric {
        Metric::Goodput => format!(
            "goodput B/A {}: {arm} is more than {} slower than A ({})",
            ratio_interval(c.value, c.low, c.high),
            pct(1.0 - c.bound),
            interval_kind(c.interval)
        ),
        Metric::RetransmitRate => format!(
            "retransmit rate B-A {:+.2} points [{:+.2}, {:+.2}]: {arm} retransmits more than {} points more than A ({})",
            c.value * 100.0,
            c.low * 100.0,
            c.high * 100.0,
            c.bound * 100.0,
            interval_kind(c.interval)
        ),
    }
}

fn interval_kind(m: Mode) -> &'static str {
    match m {
        Mode::FixedHorizon => "interval",
        Mode::Sequential => "anytime interval",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observe::tests::rec;
    use crate::{Trial, TrialDef};

    /// A 50/50 trial with `n` connections per arm of 1448-byte segments:
    /// A retransmits `ra` of its segments, B `rb`.
    fn trial(n: u64, ra: f64, rb: f64) -> Trial {
        let mut t = Trial::new(TrialDef::new("cubic", "bbr")).unwrap();
        for i in 0..2 * n {
            let arm = (i % 2) as u8;
            let mut r = rec(i, arm, "192.0.2.1", 2_000_000 + 1000 * (i % 7), 1e7);
            // Unequal sizes and a little noise per connection.
            r.segs_out = 1000 + (i % 13) as u32 * 100;
            let rate = if arm == 0 { ra } else { rb };
            let jitter = 1.0 + 0.2 * (((i * 7919) % 11) as f64 / 10.0 - 0.5);
            r.total_retrans = (f64::from(r.segs_out) * rate * jitter).round() as u32;
            t.add(&r);
        }
        t
    }

    fn arms(t: &Trial) -> [Vec<&Obs>; 2] {
        [0, 1].map(|a| t.obs.iter().filter(|o| o.arm == a).collect())
    }

    #[test]
    fn a_retransmit_guardrail_trips_when_b_causes_loss() {
        let t = trial(200, 0.01, 0.08);
        let [a, b] = arms(&t);
        let iv = Intervals::new(&t.def);
        let c = retransmits(&t.def, &iv, [&a, &b]).unwrap();
        assert!((c.value - 0.07).abs() < 0.005, "{c:?}");
        assert!(c.low > 0.02, "{c:?}");
        assert_eq!(c.tripped, Some("B"));
        let d = decide(&t.def, "all", &[c]).unwrap();
        assert_eq!((d.stop, d.send_to, d.cc.as_str()), ("B", "A", "cubic"));
        assert!(
            d.because[0].starts_with("retransmit rate B-A +7."),
            "{:?}",
            d.because
        );
    }

    #[test]
    fn a_retransmit_guardrail_does_not_trip_inside_its_bound() {
        // B retransmits more, clearly, but by one point: below the bound.
        let t = trial(2000, 0.02, 0.03);
        let [a, b] = arms(&t);
        let iv = Intervals::new(&t.def);
        let c = retransmits(&t.def, &iv, [&a, &b]).unwrap();
        assert!(c.low > 0.0, "B's excess is certain: {c:?}");
        assert_eq!(c.tripped, None, "{c:?}");
        assert_eq!(decide(&t.def, "all", &[c]), None);
    }

    #[test]
    fn too_few_connections_have_no_retransmit_guardrail() {
        let t = trial(10, 0.0, 0.5);
        let [a, b] = arms(&t);
        assert_eq!(retransmits(&t.def, &Intervals::new(&t.def), [&a, &b]), None);
    }

    #[test]
    fn a_far_worse_a_never_trips_and_b_s_trips_send_to_a() {
        // A retransmits 10 %, B 1 %: B is the better arm, no guardrail acts.
        let t = trial(200, 0.10, 0.01);
        let [a, b] = arms(&t);
        let iv = Intervals::new(&t.def);
        let c = retransmits(&t.def, &iv, [&a, &b]).unwrap();
        assert!(c.high < -0.05, "A's excess is certain: {c:?}");
        assert_eq!(c.tripped, None, "{c:?}");
        assert_eq!(decide(&t.def, "x", std::slice::from_ref(&c)), None);
        let g = GuardrailCheck {
            metric: Metric::Goodput,
            value: 0.5,
            low: 0.4,
            high: 0.6,
            interval: Mode::Sequential,
            bound: 0.8,
            tripped: Some("B"),
        };
        let d = decide(&t.def, "x", &[c, g]).unwrap();
        assert_eq!((d.stop, d.send_to, d.cc.as_str()), ("B", "A", "cubic"));
        assert_eq!(d.because.len(), 1);
    }
}
