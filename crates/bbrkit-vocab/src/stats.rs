//! Summaries in the shapes bbrkit's reports print: RTT and queue delay
//! percentiles ([`Percentiles`]: p50/p95/p99, as `bbrkit sim` has always
//! reported them), flow completion times ([`FctQuantiles`]: p50/p90/p99,
//! like wrk's latency report) and Jain's fairness index ([`jain_index`]).
//!
//! Quantiles over samples are statrs' (`OrderStatistics::quantile`, the
//! R-8 median-unbiased estimator), exact over the samples. (The simulator
//! fills [`Percentiles`] from its streaming histogram instead.)

use serde::Serialize;
use statrs::statistics::{Data, OrderStatistics};

/// The `q`-quantiles of `samples`; `None` when there is none.
fn quantiles<const N: usize>(samples: Vec<f64>, q: [f64; N]) -> Option<[f64; N]> {
    if samples.is_empty() {
        return None;
    }
    let mut data = Data::new(samples);
    Some(q.map(|q| data.quantile(q)))
}

/// Three percentiles, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Percentiles {
    /// Median.
    pub p50: f64,
    /// 95th percentile.
    pub p95: f64,
    /// 99th percentile.
    pub p99: f64,
}

impl Percentiles {
    /// Over `samples` (milliseconds); `None` when there is none.
    pub fn of(samples: Vec<f64>) -> Option<Self> {
        let [p50, p95, p99] = quantiles(samples, [0.5, 0.95, 0.99])?;
        Some(Percentiles { p50, p95, p99 })
    }
}

/// Three quantiles of flow completion time, milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct FctQuantiles {
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
}

impl FctQuantiles {
    /// Over `samples` (milliseconds); `None` when there is none.
    pub fn of(samples: Vec<f64>) -> Option<Self> {
        let [p50, p90, p99] = quantiles(samples, [0.5, 0.9, 0.99])?;
        Some(FctQuantiles { p50, p90, p99 })
    }
}

/// Jain's fairness index `(Σx)² / (n·Σx²)` (Jain, Chiu, Hawe 1984): 1
/// when every share is equal, 1/n when one takes everything; 1 for an
/// empty or all-zero set.
pub fn jain_index(xs: &[f64]) -> f64 {
    let sum: f64 = xs.iter().sum();
    let sq: f64 = xs.iter().map(|x| x * x).sum();
    if xs.is_empty() || sq == 0.0 {
        return 1.0;
    }
    sum * sum / (xs.len() as f64 * sq)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jain_index_bounds() {
        assert_eq!(jain_index(&[5.0, 5.0, 5.0]), 1.0);
        assert!((jain_index(&[1.0, 0.0]) - 0.5).abs() < 1e-12);
        assert!((jain_index(&[3.0, 1.0]) - 0.8).abs() < 1e-12);
        assert_eq!(jain_index(&[]), 1.0);
    }

    #[test]
    fn quantiles_of_samples() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        let p = Percentiles::of(v.clone()).unwrap();
        assert!((p.p50 - 50.5).abs() < 1e-9, "{p:?}");
        assert!(p.p95 > 94.0 && p.p95 < 96.0 && p.p99 > 98.0 && p.p99 <= 100.0);
        let f = FctQuantiles::of(v).unwrap();
        assert!(f.p90 > 89.0 && f.p90 < 91.5);
        assert_eq!(Percentiles::of(Vec::new()), None);
        assert_eq!(FctQuantiles::of(vec![7.0]).unwrap().p99, 7.0);
    }
}
