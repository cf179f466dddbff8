//! Simulator speed. `one_flow`: one BBRv1 flow, 100 Mbit/s, 10 ms RTT,
//! 1 BDP buffer, 10 s simulated (the ns-3 comparison scenario, see
//! benches/ns3/run.sh). `sixteen_flows`: 16 BBRv1 flows on 1 Gbit/s, 100 ms
//! RTT, 1 BDP buffer, 60 s simulated (goal: under 10 s of wall time).

use std::hint::black_box;
use std::time::Duration as WallDuration;

use bbrkit_cc::{Algorithm, Duration};
use bbrkit_sim::{BufferSize, FlowConfig, LossModel, PathConfig, SimConfig};
use criterion::{Criterion, criterion_group, criterion_main};

fn scenario(alg: Algorithm, flows: usize, rate_bps: u64, rtt_ms: u64, secs: u64) -> SimConfig {
    let path = PathConfig {
        rate_bps,
        rtt: Duration::from_millis(rtt_ms),
        buffer: BufferSize::Bdp(1.0),
        loss: LossModel::None,
        ack_loss: 0.0,
    };
    SimConfig::new(
        path,
        vec![FlowConfig::bulk(alg); flows],
        Duration::from_secs(secs),
        1,
    )
}

fn one_flow(c: &mut Criterion) {
    let mut g = c.benchmark_group("one_flow_100mbit_10ms_10s");
    for alg in [Algorithm::Bbr1, Algorithm::Cubic, Algorithm::Bbr3] {
        let cfg = scenario(alg, 1, 100_000_000, 10, 10);
        g.bench_function(alg.name(), |b| {
            b.iter(|| black_box(bbrkit_sim::run(&cfg, &mut |_| {}).unwrap().events))
        });
    }
    g.finish();
}

fn sixteen_flows(c: &mut Criterion) {
    let mut g = c.benchmark_group("sixteen_flows_1gbit_100ms_60s");
    g.sample_size(10)
        .measurement_time(WallDuration::from_secs(30))
        .warm_up_time(WallDuration::from_secs(1));
    let cfg = scenario(Algorithm::Bbr1, 16, 1_000_000_000, 100, 60);
    g.bench_function("bbr1", |b| {
        b.iter(|| black_box(bbrkit_sim::run(&cfg, &mut |_| {}).unwrap().events))
    });
    g.finish();
}

criterion_group!(benches, one_flow, sixteen_flows);
criterion_main!(benches);
