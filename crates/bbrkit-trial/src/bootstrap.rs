//! The bootstrap of the effect: the distribution of the size-stratified log
//! ratio of median goodputs (B over A) under resampling of the units of
//! randomization.
//!
//! ```text
//!   statistic  L = Σ_k w_k (ln med(G_B,k) − ln med(G_A,k))      k ∈ informative classes
//!   resample   per arm, per stratum: draw its units with replacement
//!              (as many as it has), take all their goodputs by class
//!   strata     connection units: one stratum per size class (class counts
//!              fixed, Efron & Tibshirani 1993 §8.4 "stratified bootstrap");
//!              client/prefix units: one stratum, whole clusters resampled
//!              (Davison & Hinkley 1997 §3.8: connections of one unit are
//!              correlated, so the unit is what is independent)
//!   weights    w_k fixed (known workload shares), not re-estimated
//! ```
//!
//! Arms are resampled independently: each is a separate random sample of
//! units. A resample in which an informative class is empty in an arm (only
//! possible with clusters) has no statistic and is counted as failed.
//!
//! Randomness is a PCG stream from the seed passed in; indices are drawn
//! with Lemire's multiply-shift (Lemire 2019, "Fast random integer
//! generation in an interval"; bias below n/2^64, immaterial here).

use std::collections::BTreeMap;

use rand_core::Rng;
use rand_pcg::Pcg64Mcg;
use statrs::statistics::{Data, OrderStatistics};

use crate::words::SizeClass;

const CLASSES: usize = SizeClass::ALL.len();

/// One arm's goodputs arranged for resampling.
#[derive(Debug, Clone, Default)]
pub(crate) struct ArmSample {
    /// Goodputs, unit after unit, within a unit class after class.
    values: Vec<f64>,
    /// Per unit: where each class's values start in `values`, and the end.
    bounds: Vec<[usize; CLASSES + 1]>,
    /// Ranges of `bounds` resampled separately.
    strata: Vec<std::ops::Range<usize>>,
    /// Per stratum, when stratified by class: its class (its units are one
    /// value each, contiguous in `values`).
    stratum_class: Vec<Option<usize>>,
}

impl ArmSample {
    /// Arranges `(unit, class, goodput)` triples. `stratify_by_class`: every
    /// unit has one value (per-connection units) and the strata are the
    /// classes; otherwise the units are clusters in one stratum.
    pub fn new(
        values: impl IntoIterator<Item = (u32, SizeClass, f64)>,
        stratify_by_class: bool,
    ) -> Self {
        let mut by_unit: BTreeMap<(usize, u32), [Vec<f64>; CLASSES]> = BTreeMap::new();
        for (unit, class, g) in values {
            let stratum = if stratify_by_class { class.index() } else { 0 };
            by_unit.entry((stratum, unit)).or_default()[class.index()].push(g);
        }
        let mut s = ArmSample::default();
        let mut current = None;
        for ((stratum, _), classes) in by_unit {
            if current != Some(stratum) {
                current = Some(stratum);
                s.strata.push(s.bounds.len()..s.bounds.len());
                s.stratum_class.push(stratify_by_class.then_some(stratum));
            }
            let mut b = [0; CLASSES + 1];
            for (k, v) in classes.iter().enumerate() {
                b[k] = s.values.len();
                s.values.extend_from_slice(v);
            }
            b[CLASSES] = s.values.len();
            s.bounds.push(b);
            if let Some(last) = s.strata.last_mut() {
                last.end = s.bounds.len();
            }
        }
        s
    }

    /// Every value of class `k`, in unit order.
    pub fn class_values(&self, k: usize) -> Vec<f64> {
        let mut out = Vec::new();
        for b in &self.bounds {
            out.extend_from_slice(&self.values[b[k]..b[k + 1]]);
        }
        out
    }

    /// Fills `bufs[k]` (for each `k` in `classes`) with one resample.
    fn resample(&self, rng: &mut Pcg64Mcg, classes: &[usize], bufs: &mut [Vec<f64>; CLASSES]) {
        for b in bufs.iter_mut() {
            b.clear();
        }
        for (stratum, class) in self.strata.iter().zip(&self.stratum_class) {
            let n = stratum.len() as u64;
            if let Some(k) = *class {
                // One value per unit, contiguous: draw values directly.
                if classes.contains(&k) {
                    let first = self.bounds[stratum.start][k];
                    let values = &self.values[first..first + stratum.len()];
                    bufs[k].extend((0..n).map(|_| values[below(rng, n)]));
                }
                continue;
            }
            for _ in 0..n {
                let u = stratum.start + below(rng, n);
                let b = &self.bounds[u];
                for &k in classes {
                    bufs[k].extend_from_slice(&self.values[b[k]..b[k + 1]]);
                }
            }
        }
    }
}

/// A uniform index in `0..n` (Lemire's multiply-shift).
fn below(rng: &mut Pcg64Mcg, n: u64) -> usize {
    ((u128::from(rng.next_u64()) * u128::from(n)) >> 64) as usize
}

/// The median (statrs: the mean of the two middle values for an even
/// count), reordering `v`; `None` when empty.
pub(crate) fn median(v: &mut [f64]) -> Option<f64> {
    (!v.is_empty()).then(|| OrderStatistics::median(&mut Data::new(v)))
}

/// What the bootstrap produced: the statistic of each successful resample,
/// combined and per informative class.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Draws {
    /// Combined log ratios.
    pub combined: Vec<f64>,
    /// Per class log ratios (empty for classes not combined).
    pub per_class: [Vec<f64>; CLASSES],
    /// Resamples without a statistic (an informative class emptied).
    pub failed: usize,
}

/// Per class log ratio `ln med_B − ln med_A` of the given class buffers.
fn log_ratios(
    a: &mut [Vec<f64>; CLASSES],
    b: &mut [Vec<f64>; CLASSES],
    classes: &[usize],
) -> Option<[f64; CLASSES]> {
    let mut out = [0.0; CLASSES];
    for &k in classes {
        out[k] = median(&mut b[k])?.ln() - median(&mut a[k])?.ln();
    }
    Some(out)
}

/// The combined statistic from per-class log ratios.
pub(crate) fn combine(
    per_class: &[f64; CLASSES],
    weights: &[f64; CLASSES],
    classes: &[usize],
) -> f64 {
    classes.iter().map(|&k| weights[k] * per_class[k]).sum()
}

/// The statistic on the data itself: per class log ratios (None when an
/// informative class is empty, which the caller rules out).
pub(crate) fn point(arms: [&ArmSample; 2], classes: &[usize]) -> Option<[f64; CLASSES]> {
    let mut a: [Vec<f64>; CLASSES] = std::array::from_fn(|k| arms[0].class_values(k));
    let mut b: [Vec<f64>; CLASSES] = std::array::from_fn(|k| arms[1].class_values(k));
    log_ratios(&mut a, &mut b, classes)
}

/// `resamples` bootstrap draws of the statistic over `classes` with
/// normalised `weights`, from the stream `seed`.
pub(crate) fn draws(
    arms: [&ArmSample; 2],
    classes: &[usize],
    weights: &[f64; CLASSES],
    resamples: usize,
    seed: u64,
) -> Draws {
    use rand_core::SeedableRng;
    let mut rng = Pcg64Mcg::seed_from_u64(seed);
    let mut a: [Vec<f64>; CLASSES] = Default::default();
    let mut b: [Vec<f64>; CLASSES] = Default::default();
    let mut out = Draws {
        combined: Vec::with_capacity(resamples),
        per_class: Default::default(),
        failed: 0,
    };
    for _ in 0..resamples {
        arms[0].resample(&mut rng, classes, &mut a);
        arms[1].resample(&mut rng, classes, &mut b);
        match log_ratios(&mut a, &mut b, classes) {
            Some(l) => {
                out.combined.push(combine(&l, weights, classes));
                for &k in classes {
                    out.per_class[k].push(l[k]);
                }
            }
            None => out.failed += 1,
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use SizeClass::*;

    #[test]
    fn units_and_strata_are_arranged() {
        let s = ArmSample::new(
            [
                (7, Under100Kb, 1.0),
                (3, Over10Mb, 5.0),
                (7, Over10Mb, 2.0),
                (3, Under100Kb, 4.0),
            ],
            false,
        );
        assert_eq!(s.strata, vec![0..2]);
        assert_eq!(s.class_values(0), vec![4.0, 1.0], "unit 3 first");
        assert_eq!(s.class_values(3), vec![5.0, 2.0]);
        let c = ArmSample::new(
            [
                (1, Under100Kb, 1.0),
                (2, Over10Mb, 2.0),
                (3, Under100Kb, 3.0),
            ],
            true,
        );
        assert_eq!(c.strata, vec![0..2, 2..3], "one stratum per class present");
    }

    #[test]
    fn stratified_resamples_keep_class_counts() {
        let vals = (0..10u32)
            .map(|i| (i, Under100Kb, f64::from(i)))
            .chain((10..13).map(|i| (i, Over10Mb, f64::from(i))));
        let s = ArmSample::new(vals, true);
        let mut rng = Pcg64Mcg::new(1);
        let mut bufs: [Vec<f64>; CLASSES] = Default::default();
        for _ in 0..50 {
            s.resample(&mut rng, &[0, 3], &mut bufs);
            assert_eq!((bufs[0].len(), bufs[3].len()), (10, 3));
            assert!(bufs[3].iter().all(|&v| v >= 10.0));
        }
    }

    #[test]
    fn cluster_resamples_move_whole_units() {
        // Unit u has u+1 values, all equal to u: a resample's values come in
        // whole runs of their unit.
        let vals = (0..6u32).flat_map(|u| (0..=u).map(move |_| (u, To1Mb, f64::from(u))));
        let s = ArmSample::new(vals, false);
        let mut rng = Pcg64Mcg::new(2);
        let mut bufs: [Vec<f64>; CLASSES] = Default::default();
        for _ in 0..50 {
            s.resample(&mut rng, &[1], &mut bufs);
            for u in 0..6 {
                let n = bufs[1].iter().filter(|&&v| v == f64::from(u)).count();
                assert_eq!(n % (u as usize + 1), 0, "unit {u} split: {:?}", bufs[1]);
            }
        }
    }

    #[test]
    fn the_point_statistic_is_the_weighted_log_ratio_of_medians() {
        let a = ArmSample::new(
            [
                (0, Under100Kb, 1.0),
                (1, Under100Kb, 3.0),
                (2, Over10Mb, 10.0),
            ],
            true,
        );
        let b = ArmSample::new(
            [
                (0, Under100Kb, 2.0),
                (1, Under100Kb, 2.0),
                (2, Over10Mb, 40.0),
            ],
            true,
        );
        let l = point([&a, &b], &[0, 3]).unwrap();
        assert!((l[0] - 0.0).abs() < 1e-12, "medians 2 and 2");
        assert!((l[3] - 4f64.ln()).abs() < 1e-12);
        let w = [0.25, 0.0, 0.0, 0.75];
        assert!((combine(&l, &w, &[0, 3]) - 0.75 * 4f64.ln()).abs() < 1e-12);
        assert_eq!(point([&a, &b], &[1]), None, "empty class");
    }

    #[test]
    fn draws_are_reproducible_from_the_seed_and_vary_with_it() {
        let a = ArmSample::new(
            (0..40u32).map(|i| (i, To1Mb, f64::from(i % 17) + 1.0)),
            true,
        );
        let b = ArmSample::new(
            (0..40u32).map(|i| (i, To1Mb, f64::from(i % 13) + 2.0)),
            true,
        );
        let w = [0.0, 1.0, 0.0, 0.0];
        let d1 = draws([&a, &b], &[1], &w, 200, 9);
        assert_eq!(d1, draws([&a, &b], &[1], &w, 200, 9));
        assert_ne!(d1.combined, draws([&a, &b], &[1], &w, 200, 10).combined);
        assert_eq!((d1.combined.len(), d1.failed), (200, 0));
        assert_eq!(d1.combined, d1.per_class[1]);
    }
}
