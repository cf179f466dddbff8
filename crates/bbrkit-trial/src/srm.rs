//! The sample-ratio check: do the arms' counts match the split?
//!
//! ```text
//!   observed n_A, n_B (units of randomization), shares s_A, s_B of the split
//!   expected E_i = (n_A + n_B) s_i
//!   X² = Σ (n_i − E_i)² / E_i   ~ χ²(1) when the assignment works
//!   p  = P(χ²(1) ≥ X²)          mismatch when p < α (0.001)
//! ```
//!
//! A mismatch means the assignment or the recording is broken (one arm's
//! connections fail, are dropped, or are assigned differently), and the
//! comparison cannot be trusted, however significant it looks (Fabijan,
//! Gupchup, Gupta, Omhover, Qin, Vermeer & Dmitriev, "Diagnosing Sample
//! Ratio Mismatch in Online Controlled Experiments", KDD 2019; Kohavi, Tang
//! & Xu, "Trustworthy Online Controlled Experiments", 2020, ch. 21). The
//! counts are of units: with per-client or per-prefix units, connections
//! per unit vary so much that a test on connections would raise false
//! alarms. The low α keeps the repeated check (at every look) quiet when
//! nothing is wrong; Pearson's test is the binomial test's normal form,
//! accurate for the counts a trial has (every expected count ≥ 5 is
//! required, else no check is made).

use std::borrow::Cow;

use serde::Serialize;
use statrs::distribution::{ChiSquared, ContinuousCDF};

/// The result of one sample-ratio check.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SampleRatio {
    /// What was counted: `connections`, `clients`, `prefixes` (a fleet's
    /// pooled check: `connections drawn`).
    pub counted: Cow<'static, str>,
    /// Units of A and B.
    pub observed: [u64; 2],
    /// What the split expects for the same total.
    pub expected: [f64; 2],
    /// Pearson's X².
    pub chi_square: f64,
    /// P(χ²(1) ≥ X²).
    pub p_value: f64,
    /// The level below which `p_value` is a mismatch.
    pub alpha: f64,
    /// The counts do not fit the split.
    pub mismatch: bool,
}

/// The smallest expected count for which Pearson's approximation is used
/// (Cochran 1954's rule).
const MIN_EXPECTED: f64 = 5.0;

/// Checks `observed` units against the split `shares` (summing to 1) at
/// level `alpha`. `None` while an expected count is below 5.
pub fn check(
    counted: impl Into<Cow<'static, str>>,
    observed: [u64; 2],
    shares: [f64; 2],
    alpha: f64,
) -> Option<SampleRatio> {
    let total = (observed[0] + observed[1]) as f64;
    let expected = [total * shares[0], total * shares[1]];
    if expected.iter().any(|&e| e < MIN_EXPECTED) {
        return None;
    }
    let chi_square: f64 = observed
        .iter()
        .zip(expected)
        .map(|(&o, e)| (o as f64 - e).powi(2) / e)
        .sum();
    let p_value = ChiSquared::new(1.0).map_or(f64::NAN, |d| d.sf(chi_square));
    Some(SampleRatio {
        counted: counted.into(),
        observed,
        expected,
        chi_square,
        p_value,
        alpha,
        mismatch: p_value < alpha,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fair_split_passes() {
        let s = check("connections", [5012, 4988], [0.5, 0.5], 0.001).unwrap();
        assert!((s.chi_square - 0.0576).abs() < 1e-9, "{s:?}");
        assert!((s.p_value - 0.8103).abs() < 1e-3, "{s:?}");
        assert!(!s.mismatch);
    }

    #[test]
    fn a_broken_split_fails() {
        // 5 % of B's records lost: 10000 vs 9500.
        let s = check("connections", [10_000, 9_500], [0.5, 0.5], 0.001).unwrap();
        assert!(s.p_value < 1e-3, "{s:?}");
        assert!(s.mismatch);
    }

    #[test]
    fn an_uneven_split_is_checked_against_its_shares() {
        let s = check("clients", [900, 100], [0.9, 0.1], 0.001).unwrap();
        assert_eq!(s.expected, [900.0, 100.0]);
        assert_eq!((s.chi_square, s.p_value, s.mismatch), (0.0, 1.0, false));
        // The same counts under 50/50 are a gross mismatch.
        assert!(
            check("clients", [900, 100], [0.5, 0.5], 0.001)
                .unwrap()
                .mismatch
        );
    }

    #[test]
    fn too_few_units_are_not_checked() {
        assert_eq!(check("prefixes", [3, 2], [0.5, 0.5], 0.001), None);
        assert!(check("prefixes", [6, 4], [0.5, 0.5], 0.001).is_some());
    }
}
