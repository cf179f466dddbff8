//! Root tests of bbr3's behaviour in the lab (bbrkit-bpf's BPF BBRv3 on
//! real kernel TCP): at a rate-limited bottleneck without loss it fills the
//! link, and under random loss above BBRv3's 2 % threshold it backs off
//! where the built-in bbr (v1) does not. The bounds leave a margin below
//! what docs/bbr3-validation.md measured (87.5–89.7 Mbit/s of goodput,
//! 91.6 % of the wire rate; at 5 % loss bbr3 at about a sixth of v1), because CI machines are shared: they
//! assert the behaviour, not a benchmark figure. Run under
//! `flock /tmp/bbrkit-root.lock` (a congestion-control name is global).

use std::sync::atomic::AtomicBool;
use std::time::Duration;

use bbrkit_lab::bpf_cc;
use bbrkit_lab::emulator::EmulatorKind;
use bbrkit_lab::plan::{self, Plan};
use bbrkit_lab::report::LabReport;
use bbrkit_lab::session;
use bbrkit_lab::tester::CcOn;
use bbrkit_lab::topology::Topology;
use bbrkit_vocab::{BufferSize, PathConditions};

const RATE: u64 = 100_000_000;

/// The tests of this file run one at a time: each registers bbr3 for its run
/// and a congestion-control name is global (two at once: EEXIST).
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// 100 Mbit/s, 20 ms, 1 BDP drop-tail buffer, `loss` random loss.
fn path(loss: f64) -> PathConditions {
    PathConditions {
        rtt: Duration::from_millis(20),
        jitter: Duration::ZERO,
        loss,
        rate_bps: Some(RATE),
        buffer: BufferSize::Bdp(1.0),
    }
}

/// One run of each of `ccs` on `cond` (userspace emulator, as `bbrkit lab`
/// uses for rated links); a run the emulator spoiled (CPU stall, its own
/// drops) is repeated up to twice. bbr3 is registered for the test if the
/// kernel lacks it, and unregistered after.
///
/// The lab's own verdict decides whether a report can be judged: a report
/// with a run still spoiled after the lab's repeats (including "emulator
/// at its ceiling", which the lab does not repeat: on a 100 Mbit/s link
/// that is the machine, not the emulator's speed) is measured again, the
/// whole comparison at once, up to [`ATTEMPTS`] times, and the test fails
/// with the lab's reason only if every attempt was spoiled. The rate
/// bounds below are then asserted on runs the lab trusts.
fn lab(prefix: &str, cond: PathConditions, ccs: &[&str], seconds: u64) -> LabReport {
    for attempt in 1..=ATTEMPTS {
        let report = lab_once(prefix, cond, ccs, seconds);
        let spoiled: Vec<String> = report.conditions[0]
            .results
            .iter()
            .flat_map(|r| &r.runs)
            .filter_map(|run| run.spoiled_reason.clone())
            .collect();
        if spoiled.is_empty() {
            return report;
        }
        assert!(
            attempt < ATTEMPTS,
            "the lab spoiled a run in each of {ATTEMPTS} attempts; last: {spoiled:?}"
        );
        println!("attempt {attempt} spoiled ({spoiled:?}); measuring again");
    }
    unreachable!()
}

/// How often [`lab`] measures a comparison the lab spoiled.
const ATTEMPTS: usize = 3;

/// One [`lab`] attempt.
fn lab_once(prefix: &str, cond: PathConditions, ccs: &[&str], seconds: u64) -> LabReport {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let algorithms: Vec<String> = ccs.iter().map(|s| s.to_string()).collect();
    let registered = bpf_cc::register_missing(&algorithms).expect("register bbr3");
    let plan = Plan {
        conditions: vec![cond],
        algorithms,
        runs: 1,
        duration: Duration::from_secs(seconds),
        flows: 1,
        cc_on: CcOn::Sender,
        emulator: EmulatorKind::Userspace,
        seed: 11,
        mtu: 1500,
        retries: 2,
        ecn_threshold: None,
    };
    plan::validate(&plan).expect("plan");
    let topo = Topology::build(prefix, 1500, false).expect("topology");
    let report = session::run(
        &plan,
        &topo,
        EmulatorKind::Userspace,
        &AtomicBool::new(false),
        &mut |_| {},
    )
    .expect("lab run");
    drop(topo);
    drop(registered);
    for r in &report.conditions[0].results {
        let run = &r.runs[0];
        assert_eq!(run.flows[0].sender_tcp_congestion, r.cc);
        println!(
            "{} {}: {:.1} Mbit/s, {} retransmits, spoiled: {:?}",
            report.conditions[0].label,
            r.cc,
            run.bits_per_second / 1e6,
            run.retransmits,
            run.spoiled_reason
        );
    }
    report
}

fn mbit(report: &LabReport, cc: &str) -> f64 {
    let r = report.conditions[0]
        .results
        .iter()
        .find(|r| r.cc == cc)
        .unwrap();
    r.bits_per_second / 1e6
}

#[test]
#[ignore = "needs root"]
fn bbr3_fills_a_rate_limited_link_without_loss() {
    let report = lab("bbrkb3f", path(0.0), &["bbr3"], 6);
    let got = mbit(&report, "bbr3");
    // Measured 87.5–89.7 Mbit/s of goodput on a quiet machine (TCP payload
    // can reach at most 95.6 Mbit/s on a 100 Mbit/s Ethernet link); with a
    // `bbrkit lab --cc cubic,bbr --runs 1 --duration 5s` loop beside and
    // other builds (load average ~11, 3 Dec 09:23 UTC), 80.5, 86.0 and 90.6
    // Mbit/s, none spoiled by the lab's verdict: 80.5 sat at the old bound
    // of 80. A broken pacing rate, cwnd or model (stuck in ProbeRTT, a
    // halved bw estimate: at most ~48) falls well below 65, which leaves
    // the loaded runs 15 Mbit/s.
    assert!(
        got >= 0.65 * RATE as f64 / 1e6,
        "bbr3 delivered {got:.1} Mbit/s of a 100 Mbit/s link (want >= 65)"
    );
}

#[test]
#[ignore = "needs root"]
fn bbr3_backs_off_under_random_loss_above_its_threshold_unlike_v1() {
    let report = lab("bbrkb3l", path(0.05), &["bbr", "bbr3"], 6);
    let (v1, v3) = (mbit(&report, "bbr"), mbit(&report, "bbr3"));
    // BBRv1 ignores random loss (it stays near the rate); BBRv3 treats more
    // than 2 % loss in a round as the end of its probe (inflight_hi), so it
    // runs far below. Measured: bbr 72–88 Mbit/s, bbr3 13–19 Mbit/s; with a
    // lab loop beside and other builds (load ~11, 3 Dec 09:23 UTC), three
    // runs: bbr 83.2 / 84.4 / 87.9, bbr3 24.8 / 24.0 / 30.8, v3/v1 0.28-0.35.
    // Without a loss response v3/v1 would be ~1; 0.6 lies between (the
    // geometric middle of 0.35 and 1), the old 0.5 was 1.4x from the
    // loaded runs. Both arms run in the same session, one after the other.
    assert!(
        v1 >= 0.5 * RATE as f64 / 1e6,
        "the built-in bbr got only {v1:.1} Mbit/s at 5 % loss: the path, not bbr3, is wrong"
    );
    assert!(
        v3 < 0.6 * v1,
        "bbr3 got {v3:.1} Mbit/s at 5 % loss against bbr's {v1:.1}: no v3 loss response"
    );
    assert!(v3 > 0.5, "bbr3 stalled at 5 % loss: {v3:.2} Mbit/s");
}
