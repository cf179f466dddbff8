//! What de-duplication adds to one census of 100,000 sockets:
//! `cargo run --release -p bbrkit-advise --example track_cost [N]`.
//!
//! Takes the recorded lab sender (`tests/fixtures/lossy-server-s*`), makes N
//! copies with distinct cookies (default 100,000), and times
//! `Tracker::observe` over them for a first census (inserting every record)
//! and a second one (updating them), then the analysis (grouping and
//! estimates; the remotes are spread over 256 /24 prefixes, all with too few
//! bytes for a prediction), and one group's prediction on three paths. The dump itself is `cargo bench -p bbrkit-diag
//! --bench census` (root).

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

use bbrkit_advise::report::Options;
use bbrkit_advise::{SamplingStats, Tracker, analyze};
use bbrkit_diag::{Socket, TcpState};

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");

fn sender(sweep: usize) -> Socket {
    let mut out = Vec::new();
    for j in 0.. {
        let Ok(b) = std::fs::read(format!("{DIR}/lossy-server-s{sweep}-{j}.bin")) else {
            break;
        };
        bbrkit_diag::wire::parse_datagram(&b, "fixture", &mut |s| out.push(s)).unwrap();
    }
    out.into_iter()
        .find(|s| s.state == TcpState::Established && s.remote.ip() == Ipv4Addr::new(198, 18, 0, 1))
        .expect("the recorded sender")
}

fn copies(base: &Socket, n: usize) -> Vec<Socket> {
    (0..n)
        .map(|i| {
            let mut s = base.clone();
            s.cookie = i as u64 + 1;
            // 256 /24 prefixes of 10.0.0.0/16, ~390 connections each.
            let ip = Ipv4Addr::new(10, 0, (i % 256) as u8, (i / 256 % 256) as u8);
            s.remote = SocketAddr::new(IpAddr::V4(ip), 40000 + (i % 20000) as u16);
            s
        })
        .collect()
}

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .map_or(100_000, |a| a.parse().expect("N"));
    let (a, b) = (copies(&sender(0), n), copies(&sender(1), n));
    let mut t = Tracker::new();
    for (i, socks) in [&a, &b].into_iter().enumerate() {
        let t0 = Instant::now();
        t.begin_sweep(Duration::from_secs(i as u64));
        for s in socks {
            t.observe(s);
        }
        t.end_sweep();
        println!(
            "census {i}: observe {n} sockets {:.1} ms ({} records)",
            t0.elapsed().as_secs_f64() * 1e3,
            t.len()
        );
    }
    println!(
        "record: {} bytes each (+ the algorithm name and the map's overhead)",
        std::mem::size_of::<bbrkit_advise::track::Conn>()
    );
    let t0 = Instant::now();
    let opts = Options {
        min_bytes: u64::MAX,
        ..Options::default()
    };
    let r = analyze(&t, SamplingStats::default(), &opts, &|_| None).expect("analysis");
    println!(
        "analysis: {} groups in {:.1} ms",
        r.groups.len(),
        t0.elapsed().as_secs_f64() * 1e3
    );
    predictions();
}

/// Wall time of one group's prediction (9 simulator runs) on three paths.
fn predictions() {
    use bbrkit_advise::estimate::wilson;
    use bbrkit_advise::predict::{PathGuess, RateSource, predict};
    for (rate, rtt_ms, k, n) in [
        (100_000_000u64, 10u64, 40u64, 2_000u64),
        (1_000_000_000, 50, 100, 10_000),
        (10_000_000_000, 100, 100, 100_000),
    ] {
        let path = PathGuess {
            rate_bps: rate,
            rate_source: RateSource::Given,
            rtt: Duration::from_millis(rtt_ms),
            loss: wilson(k, n, 1.96).unwrap(),
            queue_loss: false,
            link: None,
        };
        let t0 = Instant::now();
        let p = predict(&path, Some("cubic")).expect("prediction");
        println!(
            "prediction {} Mbit/s, {rtt_ms} ms, loss {k}/{n}: {} runs of {:.1} s simulated in {:.0} ms (bbr {:.1}x cubic)",
            rate / 1_000_000,
            p.runs,
            p.simulated_s,
            t0.elapsed().as_secs_f64() * 1e3,
            p.gain.estimate
        );
    }
    // An unknown capacity (issue 23's case: CUBIC through 35 ms + 1.5 %,
    // the highest delivery rate seen 4 Mbit/s, a 1 Gbit/s link): the extra
    // runs at the link's speed.
    let path = PathGuess {
        rate_bps: 4_000_000,
        rate_source: RateSource::HighestDeliveryRate,
        rtt: Duration::from_millis(35),
        loss: wilson(150, 10_000, 1.96).unwrap(),
        queue_loss: false,
        link: Some(bbrkit_diag::link::Link {
            dev: "eth0".into(),
            bits_per_second: Some(1_000_000_000),
        }),
    };
    let t0 = Instant::now();
    let p = predict(&path, Some("cubic")).expect("prediction");
    let at = p.at_link_speed.expect("a faster link");
    println!(
        "prediction 4 Mbit/s..1 Gbit/s, 35 ms, loss 1.5%: {} + {} runs in {:.0} ms (bbr {:.1}x..{:.1}x cubic)",
        p.runs,
        at.runs,
        t0.elapsed().as_secs_f64() * 1e3,
        p.gain.estimate,
        at.gain
    );
}
