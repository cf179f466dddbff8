//! Measures the emulator's fidelity and ceiling on this machine (root):
//! ping RTT against configured delay, probe loss against configured loss,
//! delivered rate against configured rate, and BBR/CUBIC through it.
//!
//! `cargo run --release -p bbrkit-lab --example fidelity [split|userspace]`
//! (default `split`).

mod common;

use std::sync::atomic::AtomicBool;
use std::time::Duration;

use bbrkit_lab::blast::blast;
use bbrkit_lab::emulator::model::LinkParams;
use bbrkit_lab::emulator::{Emulator, EmulatorKind};
use bbrkit_lab::probe::probe;
use bbrkit_lab::tester::run_test;
use bbrkit_lab::topology::Topology;

fn params(delay_ms: u64, loss: f64, rate: Option<u64>, buffer: Option<u64>) -> LinkParams {
    LinkParams::without_jitter(Duration::from_millis(delay_ms), loss, rate, buffer)
}

fn kind() -> EmulatorKind {
    match std::env::args().nth(1).as_deref() {
        Some("userspace") => EmulatorKind::Userspace,
        _ => EmulatorKind::Split,
    }
}

fn start(topo: &Topology, p: LinkParams, seed: u64) -> Emulator {
    Emulator::start_kind(topo, kind(), p, seed).unwrap()
}

/// Delivered rate of Ethernet frames measured at the receiver (first to
/// last arrival), and late frames (either direction).
fn udp_rate(topo: &Topology, rate: u64, offered: u64) -> (f64, u64) {
    let emu = start(topo, params(5, 0.0, Some(rate), Some(rate / 8 / 20)), 1);
    let blast = blast(topo, offered, Duration::from_secs(3)).unwrap();
    let rep = emu.stop().unwrap();
    (
        blast.rate_bps().unwrap_or(0.0),
        rep.data.late_frames + rep.reverse.late_frames,
    )
}

fn main() {
    let topo = Topology::build("bbrkfid", 1500, false).unwrap();
    println!("emulator: {:?}", kind());
    println!("## delay: ICMP ping RTT (server -> client kernel -> server), 500 probes");
    println!("| configured | min | median | p99 | max |");
    for d in [0, 1, 10, 50] {
        let emu = start(&topo, params(d, 0.0, None, None), 1);
        let p = probe(
            &topo,
            500,
            Duration::from_millis(2),
            Duration::from_millis(300),
        )
        .unwrap();
        drop(emu);
        println!(
            "| {d} ms | {:.3} | {:.3} | {:.3} | {:.3} |",
            p.rtt_min_ms, p.rtt_median_ms, p.rtt_p99_ms, p.rtt_max_ms
        );
    }
    println!("\n## loss: 20000 ICMP probes");
    println!("| configured | measured | binomial 99.9% band |");
    for l in [0.01, 0.02, 0.05] {
        let emu = start(&topo, params(1, l, None, None), 7);
        let p = probe(
            &topo,
            20_000,
            Duration::from_micros(100),
            Duration::from_millis(300),
        )
        .unwrap();
        drop(emu);
        let sd = (l * (1.0 - l) / 20_000.0).sqrt();
        println!(
            "| {:.1}% | {:.2}% | {:.2}%..{:.2}% |",
            l * 100.0,
            p.loss * 100.0,
            (l - 3.3 * sd) * 100.0,
            (l + 3.3 * sd) * 100.0
        );
    }
    println!("\n## rate: UDP offered at 1.5x, 50 ms buffer, delivered Ethernet rate");
    println!("| configured | delivered | error | late frames |");
    for r in [10_000_000u64, 100_000_000, 500_000_000] {
        let (m, late) = udp_rate(&topo, r, r * 3 / 2);
        println!(
            "| {} Mbit/s | {:.1} Mbit/s | {:+.2}% | {late} |",
            r / 1_000_000,
            m / 1e6,
            (m / r as f64 - 1.0) * 100.0
        );
    }
    println!("\n## TCP through the emulator, 4 s, 1 flow");
    println!("| delay | loss | cc | goodput | retransmits | late frames | data frames/s |");
    for (d, l) in [(0, 0.0), (0, 0.02), (10, 0.0), (10, 0.02), (10, 0.05)] {
        for cc in ["cubic", "bbr"] {
            let emu = start(&topo, params(d, l, None, None), 3);
            let spec = common::bulk_4s(cc);
            let r = run_test(&topo, &spec, &AtomicBool::new(false)).unwrap();
            let rep = emu.stop().unwrap();
            println!(
                "| {d} ms | {:.0}% | {cc} | {:.1} Mbit/s | {} | {} of {} | {:.0} |",
                l * 100.0,
                r.bits_per_second / 1e6,
                r.retransmits,
                rep.data.late_frames + rep.reverse.late_frames,
                rep.data.frames_out + rep.reverse.frames_out,
                rep.data.frames_in as f64 / 4.0
            );
        }
    }
}
