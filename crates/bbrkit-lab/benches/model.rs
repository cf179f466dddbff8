//! Cost of the emulator's per-frame decision (loss, bottleneck queue, delay):
//! it must stay far below the ~3 µs per frame a 1 Gbit/s forwarder has.

use std::time::Duration;

use bbrkit_lab::emulator::model::{LinkModel, LinkParams};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("link_model");
    g.throughput(Throughput::Elements(1));
    for (name, params) in [
        (
            "delay+loss",
            LinkParams {
                delay: Duration::from_millis(10),
                jitter: Duration::ZERO,
                loss: 0.02,
                rate_bps: None,
                buffer_bytes: None,
                ecn_threshold_bytes: None,
            },
        ),
        (
            "delay+loss+rate+jitter",
            LinkParams {
                delay: Duration::from_millis(10),
                jitter: Duration::from_millis(1),
                loss: 0.02,
                rate_bps: Some(1_000_000_000),
                buffer_bytes: Some(1_250_000),
                ecn_threshold_bytes: None,
            },
        ),
    ] {
        let mut m = LinkModel::new(params, 1);
        let mut now = 0u64;
        g.bench_function(name, |b| {
            b.iter(|| {
                now += 12_000;
                m.on_arrival(std::hint::black_box(now), 1514)
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
