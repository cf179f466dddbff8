//! A lab run with something done inside its namespaces while the traffic
//! flows: the root tests and `examples/record.rs` share it. Everything lives
//! in throwaway namespaces built here (bbrkit-lab's topology); nothing on
//! the host changes.

use std::sync::atomic::AtomicBool;
use std::time::Duration;

use bbrkit_lab::emulator::{Emulator, EmulatorKind};
use bbrkit_lab::plan::{BufferSize, PathConditions, link_params};
use bbrkit_lab::tester::{CcOn, TestResult, TestSpec, run_test};
use bbrkit_lab::topology::Topology;
use bbrkit_lab::verdict::condition_emulator;

/// `delay` one way, `loss`, `rate_bps`, a 1-BDP buffer.
pub fn condition(delay_ms: u64, loss: f64, rate_bps: u64) -> PathConditions {
    PathConditions {
        rtt: Duration::from_millis(delay_ms),
        jitter: Duration::ZERO,
        loss,
        rate_bps: Some(rate_bps),
        buffer: BufferSize::Bdp(1.0),
    }
}

/// A namespace sysctl to write before the run: (`"client"` or `"server"`,
/// key under `/proc/sys`, value), e.g. a small client `net/ipv4/tcp_rmem`.
pub type Sysctl<'a> = (&'a str, &'a str, &'a str);

/// Builds a lab, writes `sysctls` inside its namespaces, and runs one `cc`
/// flow for `secs` while `during` runs on another thread with the topology
/// (enter a namespace with `topo.server.run(..)`). Returns the lab's result
/// and `during`'s.
pub fn with_traffic<T: Send>(
    cond: &PathConditions,
    cc: &str,
    secs: f64,
    sysctls: &[Sysctl<'_>],
    seed: u64,
    during: impl FnOnce(&Topology) -> T + Send,
) -> (TestResult, T) {
    let topo = Topology::build(&format!("bbrkadv{}", std::process::id()), 1500, false)
        .expect("build the lab");
    for &(side, key, value) in sysctls {
        let ns = if side == "client" {
            &topo.client
        } else {
            &topo.server
        };
        ns.run(|| ns.write_sysctl(key, value)).expect("lab sysctl");
    }
    let kind = condition_emulator(
        EmulatorKind::Auto,
        EmulatorKind::Auto.resolve(&topo).expect("emulator kind"),
        cond,
    );
    let emu = Emulator::start_kind(&topo, kind, link_params(cond, topo.mtu, None), seed)
        .expect("emulator");
    let spec = TestSpec {
        sample_every: Duration::from_millis(100),
        keep_off_cpu: emu.forwarder_cpu(),
        ..TestSpec::uniform(cc, 1, CcOn::Sender, Duration::from_secs_f64(secs))
    };
    let cancel = AtomicBool::new(false);
    let (test, got) = std::thread::scope(|s| {
        let t = s.spawn(|| run_test(&topo, &spec, &cancel));
        let got = during(&topo);
        (t.join().expect("traffic thread"), got)
    });
    let rep = emu.stop().expect("emulator report");
    let test = test.expect("traffic");
    println!(
        "lab {} {cc}: {:.2} Mbit/s, {} retransmits, emulator data in {} lost {} out {}",
        cond.label(),
        test.bits_per_second / 1e6,
        test.retransmits,
        rep.data.frames_in,
        rep.data.lost_frames,
        rep.data.frames_out
    );
    (test, got)
}
