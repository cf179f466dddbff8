//! Runs one scenario from the command line and prints its report (a
//! development aid): `quick ALG RATE_MBIT RTT_MS LOSS BUF_BDP SECS [FLOWS]`.
use bbrkit_cc::Duration;
use bbrkit_sim::{BufferSize, FlowConfig, LossModel, PathConfig, SimConfig};

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let arg = |i: usize, d: &str| a.get(i).cloned().unwrap_or_else(|| d.to_string());
    let alg = arg(1, "reno").parse().unwrap();
    let n: usize = arg(7, "1").parse().unwrap();
    let path = PathConfig {
        rate_bps: (arg(2, "100").parse::<f64>().unwrap() * 1e6) as u64,
        rtt: Duration::from_secs_f64(arg(3, "10").parse::<f64>().unwrap() / 1e3),
        buffer: BufferSize::Bdp(arg(5, "1").parse().unwrap()),
        loss: LossModel::bernoulli(arg(4, "0").parse().unwrap()),
        ack_loss: 0.0,
    };
    let mut cfg = SimConfig::new(
        path,
        vec![FlowConfig::bulk(alg); n],
        Duration::from_secs_f64(arg(6, "10").parse().unwrap()),
        1,
    );
    cfg.sample_interval = std::env::var("TRACE")
        .ok()
        .map(|v| Duration::from_millis(v.parse().unwrap()));
    let t = std::time::Instant::now();
    let r = bbrkit_sim::run(&cfg, &mut |row| println!("{row:?}")).unwrap();
    let wall = t.elapsed();
    for f in &r.flows {
        println!("{f:?}");
    }
    println!("{:?}", r.link);
    println!(
        "jain {:.3} events {} wall {:?}",
        r.jain_index, r.events, wall
    );
}
