use std::sync::atomic::AtomicBool;
use std::time::Duration;

use bbrkit_lab::emulator::Emulator;
use bbrkit_lab::emulator::model::LinkParams;
use bbrkit_lab::tester::{CcOn, TestSpec, run_test};
use bbrkit_lab::topology::Topology;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let delay_ms: u64 = args.get(1).map(|s| s.parse().unwrap()).unwrap_or(10);
    let loss: f64 = args.get(2).map(|s| s.parse().unwrap()).unwrap_or(0.02);
    let secs: u64 = args.get(3).map(|s| s.parse().unwrap()).unwrap_or(4);
    let mtu: u32 = args.get(4).map(|s| s.parse().unwrap()).unwrap_or(1500);
    let topo = Topology::build("bbrksmoke", mtu, false).unwrap();
    let cancel = AtomicBool::new(false);
    for cc in ["cubic", "bbr"] {
        let params = LinkParams {
            delay: Duration::from_millis(delay_ms),
            jitter: Duration::ZERO,
            loss,
            rate_bps: None,
            buffer_bytes: None,
        };
        let emu = Emulator::start(&topo, params, 1).unwrap();
        let spec = TestSpec {
            cc: cc.into(),
            cc_on: CcOn::Sender,
            flows: 1,
            duration: Duration::from_secs(secs),
            sample_every: Duration::from_millis(100),
        };
        let r = run_test(&topo, &spec, &cancel).unwrap();
        let rep = emu.stop().unwrap();
        println!(
            "{cc}: {:.1} Mbit/s retrans {} rtt {}us minrtt {}us cpu {:.2}s cc={}",
            r.bits_per_second / 1e6,
            r.retransmits,
            r.flows[0].end.rtt,
            r.flows[0].end.min_rtt,
            r.sender_cpu_s,
            r.flows[0].sender_tcp_congestion
        );
        println!("  {:?}", rep.data);
        println!(
            "  rev frames_out {} late {} kdrops {}",
            rep.reverse.frames_out, rep.reverse.late_frames, rep.reverse.kernel_drops
        );
    }
}
