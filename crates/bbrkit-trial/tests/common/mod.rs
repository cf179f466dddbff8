//! Synthetic trials for the statistics' tests: records from known
//! distributions, drawn from a seeded generator (inverse-transform sampling
//! through statrs' quantile functions), so the truth each interval should
//! cover is known.

#![allow(dead_code)] // each test file uses part of it

use bbrkit_policy::ConnRecord;
pub use bbrkit_trial::testing::conn;
use bbrkit_trial::{Look, Mode, Report, Trial, TrialDef};
use rand_core::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use statrs::distribution::{ContinuousCDF, Normal};

/// A seeded generator of the distributions the tests draw from.
pub struct Draw {
    rng: Pcg64Mcg,
    normal: Normal,
}

impl Draw {
    pub fn new(seed: u64) -> Draw {
        Draw {
            rng: Pcg64Mcg::seed_from_u64(seed),
            normal: Normal::standard(),
        }
    }

    /// Uniform in (0, 1).
    pub fn uniform(&mut self) -> f64 {
        ((self.rng.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }

    /// Standard normal.
    pub fn normal(&mut self) -> f64 {
        let u = self.uniform();
        self.normal.inverse_cdf(u)
    }

    /// Log-normal with median `median` and log-sd `sigma`.
    pub fn lognormal(&mut self, median: f64, sigma: f64) -> f64 {
        median * (sigma * self.normal()).exp()
    }

    /// Pareto with scale `xm` and tail index `alpha` (median xm·2^(1/α)).
    pub fn pareto(&mut self, xm: f64, alpha: f64) -> f64 {
        xm * self.uniform().powf(-1.0 / alpha)
    }

    /// Uniform integer in `lo..=hi`.
    pub fn int(&mut self, lo: u64, hi: u64) -> u64 {
        lo + ((u128::from(self.rng.next_u64()) * u128::from(hi - lo + 1)) >> 64) as u64
    }
}

/// The report of `records` under `def`.
pub fn report(def: &TrialDef, records: &[ConnRecord], seed: u64, mode: Mode) -> Report {
    let mut t = Trial::new(def.clone()).expect("valid definition");
    t.extend(records);
    t.report(&Look::new(seed, mode))
}

/// A default definition with `resamples` bootstrap resamples.
pub fn def(resamples: usize) -> TrialDef {
    let mut d = TrialDef::new("cubic", "bbr");
    d.settings.resamples = resamples;
    d
}

/// Fraction of `hits` over `n`, and a line saying so.
pub fn rate(hits: usize, n: usize) -> f64 {
    hits as f64 / n as f64
}

/// The fixed fixture of the snapshot tests: three /24s from a seeded
/// generator. `198.51.100.0/24` is a lossy long path where B (bbr) is much
/// faster and retransmits a little more; `203.0.113.0/24` a clean path
/// where the arms do the same; `192.0.2.0/24` uploads to this host
/// (receiver side). A size mix in each, and a few connections still open.
pub fn fixture() -> Vec<ConnRecord> {
    let mut d = Draw::new(23);
    let sizes = [20_000, 60_000, 300_000, 4_000_000, 20_000_000];
    let mut out = Vec::new();
    let mut cookie = 0;
    let mut push = |c: ConnRecord| out.push(c);
    for i in 0..400u64 {
        let arm = (i % 2) as u8;
        let bytes = sizes[(i / 2 % 5) as usize];
        cookie += 1;
        let long = bytes >= 1_000_000;
        let median = match (arm, long) {
            (0, true) => 6e6,
            (1, true) => 60e6,
            (0, false) => 2e6,
            _ => 2.4e6,
        };
        let mut c = conn(
            cookie,
            arm,
            &format!("198.51.100.{}", i % 7 + 1),
            bytes,
            d.lognormal(median, 0.8),
        );
        c.total_retrans =
            (f64::from(c.segs_out) * if arm == 0 { 0.012 } else { 0.02 }).round() as u32;
        c.srtt_us = if arm == 0 { 33_000 } else { 31_000 } + d.int(0, 3000) as u32;
        push(c);
    }
    for i in 0..300u64 {
        let arm = (i % 2) as u8;
        let bytes = sizes[(i / 2 % 5) as usize];
        cookie += 1;
        let mut c = conn(
            cookie,
            arm,
            &format!("203.0.113.{}", i % 5 + 1),
            bytes,
            d.lognormal(80e6, 0.3),
        );
        c.min_rtt_us = 2_000;
        c.srtt_us = 2_100 + d.int(0, 200) as u32;
        c.rwnd_limited_us = c.busy_us / 10;
        push(c);
    }
    for i in 0..60u64 {
        cookie += 1;
        let mut c = conn(
            cookie,
            (i % 2) as u8,
            "192.0.2.10",
            1_000,
            d.lognormal(1e6, 0.5),
        );
        c.bytes_received = 8_000_000;
        push(c);
    }
    for i in 0..6u64 {
        cookie += 1;
        let mut c = conn(
            cookie,
            (i % 2) as u8,
            "198.51.100.3",
            700_000_000,
            30e6 + 10e6 * i as f64,
        );
        c.open = true;
        push(c);
    }
    out
}
