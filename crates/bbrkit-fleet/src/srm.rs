//! The fleet-wide sample-ratio check: the arms' counts summed over hosts
//! against the split.
//!
//! ```text
//!   n_A, n_B summed over the pooled hosts, shares s_A, s_B of the split
//!   E_i = (n_A + n_B) s_i,  X² = Σ (n_i − E_i)² / E_i ~ χ²(1),  mismatch when p < α
//! ```
//!
//! The same Pearson test each host runs on its own counts (bbrkit-trial's
//! `srm`, Fabijan et al., KDD 2019), on the pooled counts: a bias too
//! small to show on one host (an arm whose connections are recorded a
//! little less often everywhere) shows on the fleet's. Counted are the
//! program's draws where every host exports them and the unit is the
//! connection (draws are independent there and not skewed by connections
//! still open), else the units of randomization among closed connections.

use serde::Serialize;
use statrs::distribution::{ChiSquared, ContinuousCDF};

/// The fleet's sample-ratio check.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SampleRatio {
    /// What was counted: `connections drawn`, or the unit's plural.
    pub counted: String,
    /// Summed counts of A and B.
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
    /// Hosts whose counts were summed.
    pub hosts: usize,
}

/// The smallest expected count for which Pearson's approximation is used
/// (Cochran 1954's rule, as on each host).
const MIN_EXPECTED: f64 = 5.0;

/// Checks `observed` (summed over `hosts`) against the split `weights`
/// at level `alpha`. `None` while an expected count is below 5.
pub fn check(
    counted: &str,
    observed: [u64; 2],
    weights: [f64; 2],
    alpha: f64,
    hosts: usize,
) -> Option<SampleRatio> {
    let total = (observed[0] + observed[1]) as f64;
    let sum = weights[0] + weights[1];
    let expected = [total * weights[0] / sum, total * weights[1] / sum];
    if !(expected.iter().all(|&e| e >= MIN_EXPECTED)) {
        return None;
    }
    let chi_square: f64 = observed
        .iter()
        .zip(expected)
        .map(|(&o, e)| (o as f64 - e).powi(2) / e)
        .sum();
    let p_value = ChiSquared::new(1.0).map_or(f64::NAN, |c| c.sf(chi_square));
    Some(SampleRatio {
        counted: counted.to_string(),
        observed,
        expected,
        chi_square,
        p_value,
        alpha,
        mismatch: p_value < alpha,
        hosts,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bias_too_small_for_one_host_shows_on_the_fleet() {
        // One host: 1010 / 990 is nothing (p ≈ 0.65).
        let one = check("connections drawn", [1010, 990], [50.0, 50.0], 0.001, 1).unwrap();
        assert!(!one.mismatch && one.p_value > 0.5, "{one:?}");
        // 200 hosts with the same 1 % bias: 202000 / 198000, X² = 40.
        let fleet = check(
            "connections drawn",
            [202_000, 198_000],
            [50.0, 50.0],
            0.001,
            200,
        )
        .unwrap();
        assert!((fleet.chi_square - 40.0).abs() < 1e-9, "{fleet:?}");
        assert!(fleet.mismatch && fleet.p_value < 1e-9);
    }

    #[test]
    fn uneven_splits_and_tiny_counts() {
        let s = check("clients", [900, 100], [90.0, 10.0], 0.001, 3).unwrap();
        assert_eq!(s.chi_square, 0.0);
        assert_eq!(check("clients", [40, 2], [90.0, 10.0], 0.001, 3), None);
    }
}
