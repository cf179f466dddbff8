//! Times the benchmark scenarios in-process (for benches/ns3/run.sh, which
//! compares with ns-3's Simulator::Run() time): `timing FLOWS RATE_BPS
//! RTT_MS SECS REPEATS [ALG]`. Prints mean wall and CPU seconds per run.
//! Reads the clock and /proc, so it is an example, not library code.

use bbrkit_cc::{Algorithm, Duration};
use bbrkit_sim::{BufferSize, FlowConfig, LossModel, PathConfig, SimConfig};

/// This thread's CPU time (ns on CPU, from schedstat).
fn cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let num = |i: usize, d: u64| a.get(i).and_then(|s| s.parse().ok()).unwrap_or(d);
    let (flows, rate, rtt_ms, secs, reps) = (
        num(1, 1),
        num(2, 100_000_000),
        num(3, 10),
        num(4, 10),
        num(5, 10),
    );
    let alg: Algorithm = a.get(6).map_or("bbr1", String::as_str).parse().unwrap();
    let path = PathConfig {
        rate_bps: rate,
        rtt: Duration::from_millis(rtt_ms),
        buffer: BufferSize::Bdp(1.0),
        loss: LossModel::None,
        ack_loss: 0.0,
    };
    let cfg = SimConfig::new(
        path,
        vec![FlowConfig::bulk(alg); flows as usize],
        Duration::from_secs(secs),
        1,
    );
    let (t0, c0) = (std::time::Instant::now(), cpu_ns());
    let mut last = None;
    for _ in 0..reps {
        last = Some(bbrkit_sim::run(&cfg, &mut |_| {}).unwrap());
    }
    let wall = t0.elapsed().as_secs_f64() / reps as f64;
    let cpu = (cpu_ns() - c0) as f64 / 1e9 / reps as f64;
    let r = last.unwrap();
    let goodput: f64 = r.flows.iter().map(|f| f.bits_per_second).sum();
    let pkts: u64 = r.flows.iter().map(|f| f.packets_sent).sum();
    println!(
        "bbrkit {alg} flows={flows} rate_bps={rate} rtt_ms={rtt_ms} simulated_s={secs} goodput_bps={goodput:.0} \
         data_packets={pkts} events={} wall_s={wall:.4} cpu_s={cpu:.4} (mean of {reps})",
        r.events
    );
}
