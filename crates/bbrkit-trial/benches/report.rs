//! What a trial's statistics cost: taking records in, and one look.
//!
//! `cargo bench -p bbrkit-trial --bench report` (hold `flock /work/lab.lock`
//! on a shared machine). Records come from a seeded generator: two arms,
//! log-normal goodput, the web size mix, spread over 64 /24 prefixes.
//!
//! - `add/N`: `Trial::add` of N records (the live command's per-record
//!   cost, next to reading the ring buffer);
//! - `look_final/N`: `Trial::report` with the definition's 2000 resamples,
//!   fixed horizon (the report at the end);
//! - `look_progress/N`: the same with 200 resamples, sequential (a
//!   progress line or guardrail check while the trial runs).

#[path = "../tests/common/mod.rs"]
mod common;

use bbrkit_policy::ConnRecord;
use bbrkit_trial::{Look, Mode, Trial, TrialDef};
use common::{Draw, conn};
use criterion::{BatchSize, Criterion};

/// `n` records: sizes of the web mix, goodput log-normal (B 1.5x A).
fn records(n: u64) -> Vec<ConnRecord> {
    let mut d = Draw::new(1);
    let sizes = [10_000, 50_000, 300_000, 4_000_000, 12_000_000];
    let weights = [50, 22, 15, 10, 3];
    (0..n)
        .map(|i| {
            let arm = (i % 2) as u8;
            let mut pick = d.int(0, 99);
            let mut k = 0;
            while pick >= weights[k] {
                pick -= weights[k];
                k += 1;
            }
            let median = if arm == 0 { 10e6 } else { 15e6 };
            let remote = format!("198.51.{}.{}", i % 64, i % 200 + 1);
            conn(i, arm, &remote, sizes[k], d.lognormal(median, 1.0))
        })
        .collect()
}

fn main() {
    let mut c = Criterion::default().sample_size(10).configure_from_args();
    for n in [10_000u64, 100_000] {
        let recs = records(n);
        c.bench_function(&format!("add/{n}"), |b| {
            b.iter_batched(
                || Trial::new(TrialDef::new("cubic", "bbr")).unwrap(),
                |mut t| {
                    t.extend(&recs);
                    t
                },
                BatchSize::LargeInput,
            )
        });
        let mut t = Trial::new(TrialDef::new("cubic", "bbr")).unwrap();
        t.extend(&recs);
        c.bench_function(&format!("look_final/{n}"), |b| {
            b.iter(|| t.report(&Look::new(7, Mode::FixedHorizon)))
        });
        c.bench_function(&format!("look_progress/{n}"), |b| {
            b.iter(|| {
                t.report(&Look {
                    resamples: Some(200),
                    ..Look::new(7, Mode::Sequential)
                })
            })
        });
    }
    c.final_summary();
}
