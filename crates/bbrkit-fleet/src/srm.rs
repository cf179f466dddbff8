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

/// The fleet's sample-ratio check: each host's test on the summed counts.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SampleRatio {
    /// The test (`counted`: `connections drawn`, or the unit's plural).
    #[serde(flatten)]
    pub test: bbrkit_trial::srm::SampleRatio,
    /// Hosts whose counts were summed.
    pub hosts: usize,
}

/// Checks `observed` (summed over `hosts`) against the split `weights`
/// (any scale) at level `alpha`. `None` while an expected count is below 5.
pub fn check(
    counted: String,
    observed: [u64; 2],
    weights: [f64; 2],
    alpha: f64,
    hosts: usize,
) -> Option<SampleRatio> {
    let sum = weights[0] + weights[1];
    let shares = [weights[0] / sum, weights[1] / sum];
    let test = bbrkit_trial::srm::check(counted, observed, shares, alpha)?;
    Some(SampleRatio { test, hosts })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bias_too_small_for_one_host_shows_on_the_fleet() {
        // One host: 1010 / 990 is nothing (p ≈ 0.65).
        let one = check(
            "connections drawn".into(),
            [1010, 990],
            [50.0, 50.0],
            0.001,
            1,
        )
        .unwrap();
        assert!(!one.test.mismatch && one.test.p_value > 0.5, "{one:?}");
        // 200 hosts with the same 1 % bias: 202000 / 198000, X² = 40.
        let fleet = check(
            "connections drawn".into(),
            [202_000, 198_000],
            [50.0, 50.0],
            0.001,
            200,
        )
        .unwrap();
        assert!((fleet.test.chi_square - 40.0).abs() < 1e-9, "{fleet:?}");
        assert!(fleet.test.mismatch && fleet.test.p_value < 1e-9);
    }

    #[test]
    fn uneven_splits_and_tiny_counts() {
        let s = check("clients".into(), [900, 100], [90.0, 10.0], 0.001, 3).unwrap();
        assert_eq!(s.test.chi_square, 0.0);
        assert_eq!(
            check("clients".into(), [40, 2], [90.0, 10.0], 0.001, 3),
            None
        );
    }
}
