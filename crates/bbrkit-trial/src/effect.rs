//! The effect of B against A in one set of connections: the ratio of median
//! goodputs, stratified by transfer size, with a 95 % interval that holds
//! for heavy-tailed data and respects the unit of randomization.
//!
//! ```text
//!   per size class k:  n_A,k, n_B,k connections with goodput (and units)
//!   informative k:     n ≥ min_connections in both arms (and ≥ min_units units)
//!   weight w_k:        bytes acked in class k (both arms) / bytes of all informative classes,
//!                      frozen with the classes at the first look that has them (Estimand)
//!   effect:            r = exp(Σ w_k ln(med_B,k / med_A,k))
//!   fixed horizon:     [lo, hi] = exp(percentiles α/2, 1−α/2 of the bootstrap draws)
//!   anytime:           exp(ln r ± m(t) · SE),  SE = IQR(draws) / (2 Φ⁻¹(3/4)),
//!                      t = units compared, m(t) the confidence-sequence multiplier,
//!                      widened to hold the fixed-horizon interval (ties: IQR 0)
//! ```
//!
//! Why this estimator: the issue asks for the ratio of medians, and the
//! bootstrap estimates exactly that quantity, whatever the shapes of the
//! two distributions (a Hodges–Lehmann interval on log goodput estimates
//! the median of pairwise differences, the ratio of medians only under a
//! pure scale shift). Resampling units, not connections, makes it
//! cluster-aware for client and prefix units; resampling within size
//! classes and combining fixed-weight class effects makes it stratified.
//! The percentile interval of a median is consistent (Efron 1982; Hall &
//! Martin 1991 on its coverage for the median) and its coverage here is
//! checked by simulation (`tests/coverage.rs`).
//!
//! Why bytes as weights: the question is how fast this server's data moves,
//! and bytes are where a different algorithm shows. Short transfers
//! (< 100 kB) are dominated by the handshake and slow start, carry a small
//! share of the bytes, and would otherwise dilute the effect toward 1
//! (they are most connections). Every class is still reported on its own,
//! and the unstratified ratio of medians beside it (`pooled_ratio`).
//! The IQR-based SE is the normal-consistent scale of the draws, robust to
//! the bootstrap distribution's own heavy tails.

use std::collections::HashSet;

use serde::Serialize;
use statrs::distribution::{ContinuousCDF, Normal};
use statrs::statistics::{Data, OrderStatistics};

use crate::bootstrap::{self, ArmSample, Draws};
use crate::definition::{TrialDef, Unit};
use crate::observe::Obs;
use crate::sequential::multiplier;
use crate::verdict::Needed;
use crate::words::SizeClass;

/// How `ci_low`/`ci_high` were computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// One look at the end (`--duration`): bootstrap percentile interval.
    FixedHorizon,
    /// Looks at any time (`--until-confident`, progress): the confidence
    /// sequence.
    Sequential,
}

/// Where an [`Estimand`] comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EstimandSource {
    /// Computed from this report's own data (no earlier look fixed one):
    /// the classes that carry information now, weighted by their bytes now.
    ThisLook,
    /// Fixed at an earlier look (the first that had a class carrying
    /// information) and carried to this one ([`crate::Look::estimand`]).
    Frozen,
}

/// What the effect estimates: the size classes combined and their weights.
/// Declared once, at the first look that has them, and then fixed: a
/// comparison whose classes and weights moved between looks would estimate
/// a different quantity at every look (issue 32).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Estimand {
    /// The size classes combined, smallest first.
    pub classes: Vec<SizeClass>,
    /// Their weights (bytes acked in the class over both arms, over those
    /// of every combined class, when fixed), in the order of `classes`.
    pub weights: Vec<f64>,
    /// Computed at this look, or frozen at an earlier one.
    pub source: EstimandSource,
    /// Seconds into the trial of the look that fixed it, when known.
    pub fixed_at_s: Option<f64>,
}

impl Estimand {
    /// The one an effect combined (`source` this look).
    pub fn of(e: &Effect, at_s: Option<f64>) -> Estimand {
        let used: Vec<&ClassEffect> = e.classes.iter().filter(|c| c.weight > 0.0).collect();
        Estimand {
            classes: used.iter().map(|c| c.class).collect(),
            weights: used.iter().map(|c| c.weight).collect(),
            source: EstimandSource::ThisLook,
            fixed_at_s: at_s,
        }
    }

    /// The same, carried to a later look.
    pub fn frozen(&self) -> Estimand {
        Estimand {
            source: EstimandSource::Frozen,
            ..self.clone()
        }
    }

    /// Weights of the classes of this estimand that carry information now
    /// (`informative`), renormalised over them.
    fn weights_over(&self, informative: &[usize]) -> ([f64; 4], Vec<usize>) {
        let mut w = [0.0; 4];
        let mut used = Vec::new();
        for (c, x) in self.classes.iter().zip(&self.weights) {
            if informative.contains(&c.index()) {
                w[c.index()] = *x;
                used.push(c.index());
            }
        }
        let total: f64 = w.iter().sum();
        if total > 0.0 {
            w.iter_mut().for_each(|x| *x /= total);
        }
        used.sort_unstable();
        (w, used)
    }
}

/// One size class's comparison.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClassEffect {
    /// The class.
    pub class: SizeClass,
    /// Connections with a goodput, A and B.
    pub connections: [u64; 2],
    /// Units among them, A and B.
    pub units: [u64; 2],
    /// Share of the combined effect (0: not combined).
    pub weight: f64,
    /// Ratio of median goodputs B/A (only for classes that carry
    /// information).
    pub ratio: Option<f64>,
    /// Interval of the ratio, low end.
    pub ci_low: Option<f64>,
    /// Interval of the ratio, high end.
    pub ci_high: Option<f64>,
}

/// The effect of B against A.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Effect {
    /// Size-stratified ratio of median goodputs, B over A.
    pub ratio: f64,
    /// Interval low end (per `interval`).
    pub ci_low: f64,
    /// Interval high end.
    pub ci_high: f64,
    /// How the interval was computed.
    pub interval: Mode,
    /// The confidence sequence's low end (valid at every look). Not in
    /// the JSON document nor printed: a report prints one interval per
    /// quantity, `ci_low`/`ci_high` (equal to this in `sequential` mode);
    /// kept for simulations that compare the two.
    #[serde(skip)]
    pub anytime_low: f64,
    /// The confidence sequence's high end (not printed, see `anytime_low`).
    #[serde(skip)]
    pub anytime_high: f64,
    /// Ratio of the medians of all sizes pooled, unstratified (shown to
    /// reveal a difference of size mix between the arms).
    pub pooled_ratio: f64,
    /// The classes combined (those carrying information).
    pub combined_over: Vec<SizeClass>,
    /// Every class, combined or not.
    pub classes: Vec<ClassEffect>,
    /// Units compared, A and B.
    pub units: [u64; 2],
    /// Bootstrap resamples that produced a statistic.
    pub resamples: usize,
}

/// A comparison made, or why not.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Comparison {
    Made(Effect),
    TooFew { needed: Needed, reason: String },
}

/// Per class and arm: connections with goodput and their distinct units.
struct Counts {
    conns: [[u64; 4]; 2],
    units: [[u64; 4]; 2],
}

fn counts(arms: [&[&Obs]; 2]) -> Counts {
    let mut c = Counts {
        conns: [[0; 4]; 2],
        units: [[0; 4]; 2],
    };
    for (a, obs) in arms.iter().enumerate() {
        let mut seen: HashSet<(usize, u32)> = HashSet::new();
        for o in obs.iter().filter(|o| o.goodput.is_some()) {
            let k = o.class.index();
            c.conns[a][k] += 1;
            if seen.insert((k, o.unit)) {
                c.units[a][k] += 1;
            }
        }
    }
    c
}

/// Compares B (`arms[1]`) with A (`arms[0]`) in `mode` with `resamples`
/// bootstrap resamples drawn from `seed`, over the classes and weights of
/// `fixed` when given (those of its classes that carry information here,
/// renormalised), else over the classes that carry information here,
/// weighted by their bytes.
pub(crate) fn compare(
    def: &TrialDef,
    mode: Mode,
    resamples: usize,
    seed: u64,
    arms: [&[&Obs]; 2],
    fixed: Option<&Estimand>,
) -> Comparison {
    let s = &def.settings;
    let cluster = def.unit != Unit::Connection;
    let c = counts(arms);
    let informative: Vec<usize> = (0..4)
        .filter(|&k| {
            (0..2).all(|a| c.conns[a][k] >= s.min_connections as u64)
                && (!cluster || (0..2).all(|a| c.units[a][k] >= s.min_units as u64))
        })
        .collect();
    let (weights, informative) = match fixed {
        Some(e) => e.weights_over(&informative),
        None => (weights(arms, &informative), informative),
    };
    if informative.is_empty() {
        return too_few(def, &c);
    }
    let samples = arms.map(|obs| {
        ArmSample::new(
            obs.iter()
                .filter_map(|o| o.goodput.map(|g| (o.unit, o.class, g))),
            !cluster,
        )
    });
    let per_class = bootstrap::point([&samples[0], &samples[1]], &informative)
        .expect("informative classes have values in both arms");
    let est = bootstrap::combine(&per_class, &weights, &informative);
    let d = bootstrap::draws(
        [&samples[0], &samples[1]],
        &informative,
        &weights,
        resamples,
        seed,
    );
    if d.combined.len() * 10 < resamples * 9 {
        return Comparison::TooFew {
            needed: Needed {
                per_arm: s.min_units as u64 * 2,
                of: def.unit.plural().into(),
            },
            reason: format!(
                "{} of {} resamples lost a size class: its connections come from too few {}",
                d.failed,
                resamples,
                def.unit.plural()
            ),
        };
    }
    let basis = Basis {
        est,
        per_class,
        units: units_compared(arms, &informative),
        draws: d,
        counts: c,
        informative,
        weights,
    };
    Comparison::Made(basis.effect(def, mode, pooled_ratio(arms)))
}

/// What an effect is computed from.
struct Basis {
    /// Combined log ratio.
    est: f64,
    /// Per class log ratios (informative classes only).
    per_class: [f64; 4],
    draws: Draws,
    counts: Counts,
    informative: Vec<usize>,
    weights: [f64; 4],
    /// Units compared, A and B.
    units: [u64; 2],
}

impl Basis {
    fn effect(&self, def: &TrialDef, mode: Mode, pooled_ratio: f64) -> Effect {
        let iv = Intervals::new(def);
        let t = (self.units[0] + self.units[1]) as f64;
        let (ci_low, ci_high) = iv.of(mode, self.est, &self.draws.combined, t);
        let (anytime_low, anytime_high) =
            iv.of(Mode::Sequential, self.est, &self.draws.combined, t);
        Effect {
            ratio: self.est.exp(),
            ci_low,
            ci_high,
            interval: mode,
            anytime_low,
            anytime_high,
            pooled_ratio,
            combined_over: self
                .informative
                .iter()
                .map(|&k| SizeClass::ALL[k])
                .collect(),
            classes: SizeClass::ALL
                .iter()
                .map(|&c| self.class(&iv, mode, c))
                .collect(),
            units: self.units,
            resamples: self.draws.combined.len(),
        }
    }

    fn class(&self, iv: &Intervals, mode: Mode, class: SizeClass) -> ClassEffect {
        let k = class.index();
        let c = &self.counts;
        let used = self.informative.contains(&k);
        let t = (c.units[0][k] + c.units[1][k]) as f64;
        let ci = used.then(|| iv.of(mode, self.per_class[k], &self.draws.per_class[k], t));
        ClassEffect {
            class,
            connections: [c.conns[0][k], c.conns[1][k]],
            units: [c.units[0][k], c.units[1][k]],
            weight: self.weights[k],
            ratio: used.then(|| self.per_class[k].exp()),
            ci_low: ci.map(|i| i.0),
            ci_high: ci.map(|i| i.1),
        }
    }
}

/// Interval rules for one definition.
pub(crate) struct Intervals {
    alpha: f64,
    tuned_for: f64,
    /// 2 Φ⁻¹(3/4): the IQR of a standard normal (1.349).
    iqr_per_sd: f64,
}

impl Intervals {
    pub(crate) fn new(def: &TrialDef) -> Intervals {
        let z75 = Normal::standard().inverse_cdf(0.75);
        Intervals {
            alpha: 1.0 - def.settings.confidence,
            tuned_for: def.settings.tuned_for_units as f64,
            iqr_per_sd: 2.0 * z75,
        }
    }

    /// The anytime multiplier at `t` units.
    pub(crate) fn multiplier(&self, t: f64) -> f64 {
        multiplier(t, self.tuned_for, self.alpha)
    }

    /// The ratio interval for log estimate `est` with bootstrap `draws`.
    fn of(&self, mode: Mode, est: f64, draws: &[f64], t: f64) -> (f64, f64) {
        let mut d = Data::new(draws.to_vec());
        let fixed = (
            d.quantile(self.alpha / 2.0),
            d.quantile(1.0 - self.alpha / 2.0),
        );
        let (lo, hi) = match mode {
            Mode::FixedHorizon => fixed,
            Mode::Sequential => {
                let se = (d.quantile(0.75) - d.quantile(0.25)) / self.iqr_per_sd;
                let w = self.multiplier(t) * se;
                // Never narrower than the fixed-horizon interval: when most
                // draws tie (goodputs of short connections take few values,
                // busy time counts jiffies) the IQR is 0 while the tails
                // are not.
                ((est - w).min(fixed.0), (est + w).max(fixed.1))
            }
        };
        (lo.exp(), hi.exp())
    }
}

/// Bytes acked per class over both arms, normalised over `informative`.
fn weights(arms: [&[&Obs]; 2], informative: &[usize]) -> [f64; 4] {
    let mut bytes = [0.0; 4];
    for o in arms.iter().flat_map(|a| a.iter()) {
        bytes[o.class.index()] += o.bytes_acked as f64;
    }
    let total: f64 = informative.iter().map(|&k| bytes[k]).sum();
    let mut w = [0.0; 4];
    for &k in informative {
        w[k] = bytes[k] / total;
    }
    w
}

fn units_compared(arms: [&[&Obs]; 2], informative: &[usize]) -> [u64; 2] {
    arms.map(|obs| {
        obs.iter()
            .filter(|o| o.goodput.is_some() && informative.contains(&o.class.index()))
            .map(|o| o.unit)
            .collect::<HashSet<u32>>()
            .len() as u64
    })
}

fn pooled_ratio(arms: [&[&Obs]; 2]) -> f64 {
    let [a, b] = arms.map(|obs| {
        let mut v: Vec<f64> = obs.iter().filter_map(|o| o.goodput).collect();
        bootstrap::median(&mut v).unwrap_or(f64::NAN)
    });
    b / a
}

/// Why no class carries information, and how much each arm needs.
fn too_few(def: &TrialDef, c: &Counts) -> Comparison {
    let s = &def.settings;
    let cluster = def.unit != Unit::Connection;
    let table = if cluster { &c.units } else { &c.conns };
    // The class nearest to carrying information: the most in its weaker arm.
    let best = (0..4)
        .max_by_key(|&k| (table[0][k].min(table[1][k]), std::cmp::Reverse(k)))
        .unwrap_or(0);
    let (per_arm, of) = if cluster {
        (s.min_units as u64, def.unit.plural())
    } else {
        (s.min_connections as u64, "connections")
    };
    let also = if cluster {
        format!(" and {} connections", s.min_connections)
    } else {
        String::new()
    };
    Comparison::TooFew {
        needed: Needed {
            per_arm,
            of: format!("{of} in one size class"),
        },
        reason: format!(
            "no size class has {per_arm} {of}{also} with goodput in each arm (most: {} with {} / {})",
            SizeClass::ALL[best].label(),
            table[0][best],
            table[1][best]
        ),
    }
}
