//! Snapshot tests (insta): the event stream of a few canonical runs per
//! algorithm through the test driver, in integers only (no floats, so the
//! text is the same on every machine): a summary, every controller state
//! change and loss-recovery state change, and cwnd / ssthresh / pacing rate
//! at the start of each packet-timed round (every round up to 30, then
//! every 10th).
//!
//! A behaviour change in any controller shows up here as a diff. Review it
//! with `cargo insta review` (or rerun with `INSTA_UPDATE=always` and read
//! the diff in git) and commit the new `.snap` files only if the change is
//! intended.

use bbrkit_cc::Algorithm;
use bbrkit_cc::tcp::TCP_INFINITE_SSTHRESH;
use bbrkit_cc::testing::{App, Driver, EventKind, TestPath, TraceEvent, random_loss};
use std::fmt::Write;
use std::time::Duration;

fn fmt_ss(ss: u32) -> String {
    if ss >= TCP_INFINITE_SSTHRESH {
        "inf".into()
    } else {
        ss.to_string()
    }
}

fn kbit(bytes_per_s: u64) -> u64 {
    bytes_per_s.saturating_mul(8) / 1000
}

fn line(out: &mut String, what: &str, e: &TraceEvent) {
    writeln!(
        out,
        "{:>7}ms r{:<4} {:<40} cwnd={} ssthresh={} pacing={}kbit inflight={}",
        e.t_us / 1000,
        e.round,
        what,
        e.cwnd,
        fmt_ss(e.ssthresh),
        kbit(e.pacing_rate),
        e.in_flight
    )
    .unwrap();
}

fn event_stream<C: bbrkit_cc::CongestionControl>(d: &Driver<C>) -> String {
    let mut out = String::new();
    let s = d.sender.stats;
    let p = d.stats();
    writeln!(
        out,
        "delivered={} lost={} sent={} retransmitted={} rtos={} recoveries={} queue_drops={} hook_drops={} max_queue={}",
        d.sender.tcp.delivered,
        d.sender.tcp.lost,
        s.packets_sent,
        s.retransmits,
        s.rtos,
        s.recoveries,
        p.dropped_queue,
        p.dropped_hook,
        p.max_queue
    )
    .unwrap();
    let mut prev: Option<&TraceEvent> = None;
    for e in d.trace() {
        if e.kind == EventKind::Rto {
            line(&mut out, "RTO", e);
        }
        match prev {
            None => line(&mut out, &format!("start {}", e.state), e),
            Some(p) => {
                if p.state != e.state {
                    line(&mut out, &format!("{} -> {}", p.state, e.state), e);
                }
                if p.ca_state != e.ca_state {
                    line(
                        &mut out,
                        &format!("ca {:?} -> {:?}", p.ca_state, e.ca_state),
                        e,
                    );
                }
                if p.round != e.round && (e.round <= 30 || e.round % 10 == 0) {
                    line(&mut out, &format!("round {}", e.state), e);
                }
            }
        }
        prev = Some(e);
    }
    out
}

fn base() -> TestPath {
    TestPath {
        rate_bps: 10_000_000,
        base_rtt: Duration::from_millis(40),
        queue_limit: 100,
        ..TestPath::default()
    }
}

fn run(alg: Algorithm, scenario: &str) -> String {
    let mut d = match scenario {
        "clean" => Driver::with_algorithm(base(), alg, 1),
        "lossy" => Driver::with_algorithm(base(), alg, 1).with_loss(random_loss(0.01, 3)),
        "onoff" => Driver::with_algorithm(
            TestPath {
                app: App::OnOff {
                    burst: 300,
                    idle: Duration::from_secs(2),
                },
                ..base()
            },
            alg,
            1,
        ),
        _ => unreachable!(),
    };
    d.run_for(Duration::from_secs(if scenario == "onoff" { 8 } else { 6 }));
    event_stream(&d)
}

macro_rules! snapshot {
    ($name:ident, $alg:expr, $scenario:literal) => {
        #[test]
        fn $name() {
            insta::assert_snapshot!(run($alg, $scenario));
        }
    };
}

snapshot!(reno_clean, Algorithm::Reno, "clean");
snapshot!(reno_lossy, Algorithm::Reno, "lossy");
snapshot!(reno_onoff, Algorithm::Reno, "onoff");
snapshot!(cubic_clean, Algorithm::Cubic, "clean");
snapshot!(cubic_lossy, Algorithm::Cubic, "lossy");
snapshot!(cubic_onoff, Algorithm::Cubic, "onoff");
snapshot!(bbr1_clean, Algorithm::Bbr1, "clean");
snapshot!(bbr1_lossy, Algorithm::Bbr1, "lossy");
snapshot!(bbr1_onoff, Algorithm::Bbr1, "onoff");
snapshot!(bbr2_clean, Algorithm::Bbr2, "clean");
snapshot!(bbr2_lossy, Algorithm::Bbr2, "lossy");
snapshot!(bbr2_onoff, Algorithm::Bbr2, "onoff");
snapshot!(bbr3_clean, Algorithm::Bbr3, "clean");
snapshot!(bbr3_lossy, Algorithm::Bbr3, "lossy");
snapshot!(bbr3_onoff, Algorithm::Bbr3, "onoff");

#[test]
fn event_streams_are_deterministic() {
    for alg in Algorithm::ALL {
        assert_eq!(run(alg, "lossy"), run(alg, "lossy"), "{alg}");
    }
}
