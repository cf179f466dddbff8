//! `bbrkit lab --cc bbr3` and `bbrkit conns` with bbrkit-bpf's bbr3 (needs
//! root; run under `flock /tmp/bbrkit-root.lock`: a congestion-control name
//! is global). The lab registers bbr3 for its run and unregisters it on
//! Ctrl-C and after SIGKILL; `conns` joins bbr3 sockets with the telemetry
//! map, and says why not when it cannot read it.

mod common;
#[path = "../../bbrkit-diag/tests/netns/mod.rs"]
mod netns;

use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use bbrkit_bpf::bbr3;
use bbrkit_bpf::status::{self, Leftovers};

static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

/// The names bbrkit-bpf registers.
const NAMES: &[&str] = &["bbr3", "bbr2"];

fn available(name: &str) -> bool {
    bbrkit_diag::algorithms::is_available(name).unwrap()
}

fn snapshot() -> Option<Leftovers> {
    if available("bbr3") {
        eprintln!("skipped: bbr3 is already registered on this host");
        return None;
    }
    Some(status::leftovers(bbr3::PREFIX, NAMES))
}

fn assert_nothing_left(before: &Leftovers) {
    let left = status::leftovers_after(before, bbr3::PREFIX, NAMES, Duration::from_secs(5));
    assert!(left.is_empty(), "left behind: {left:?}");
    assert!(!available("bbr3"), "bbr3 still registered");
}

/// A lab comparing cubic and bbr3, started with default signal dispositions;
/// returns once bbr3 is registered and the run has started.
fn start_lab() -> Child {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_bbrkit"));
    // SAFETY: only signal(2) in the child before exec.
    unsafe {
        cmd.pre_exec(|| {
            for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
                libc::signal(sig, libc::SIG_DFL);
            }
            Ok(())
        });
    }
    let child = cmd
        .args(["lab", "--cc", "bbr3", "--runs", "1", "--duration", "6s"])
        .args(["--delay", "5ms", "--retries", "0"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn bbrkit");
    let until = Instant::now() + Duration::from_secs(30);
    while !available("bbr3") {
        assert!(Instant::now() < until, "the lab never registered bbr3");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(2500)); // into the run
    child
}

#[test]
#[ignore = "needs root"]
fn lab_ctrl_c_unregisters_bbr3() {
    let _g = serial();
    let Some(before) = snapshot() else { return };
    let child = start_lab();
    // SAFETY: signals our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().expect("wait");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "stderr: {stderr}");
    assert_nothing_left(&before);
}

#[test]
#[ignore = "needs root"]
fn lab_sigkill_unregisters_bbr3() {
    let _g = serial();
    let Some(before) = snapshot() else { return };
    let mut child = start_lab();
    child.kill().expect("SIGKILL");
    child.wait().expect("wait");
    assert_nothing_left(&before);
}

/// Runs bbrkit as root, or as user nobody through a world-readable copy of
/// the binary (`common::NobodyBin`: the checkout may be somewhere nobody
/// cannot enter, such as /root or a `mktemp -d` folder).
fn bbrkit_as(nobody: bool, args: &[&str]) -> Output {
    let copy;
    let mut cmd = if nobody {
        copy = common::NobodyBin::new();
        copy.command()
    } else {
        Command::new(env!("CARGO_BIN_EXE_bbrkit"))
    };
    cmd.args(args).output().expect("spawn bbrkit")
}

#[test]
#[ignore = "needs root"]
fn conns_shows_the_model_state_of_bbr3_sockets() {
    let _g = serial();
    let Some(before) = snapshot() else { return };
    let reg = bbr3::register(Some(&["bbr3"])).expect("register bbr3");
    let (root, nobody) = netns::in_new_netns(|| {
        let mut keep = Vec::new();
        for v6 in [false, true] {
            let l = netns::listener("bbr3", v6);
            keep.push((netns::connect(&l, "bbr3", 2, 2 << 20), l));
        }
        let root = common::json_ok(&bbrkit_as(false, &["conns", "--cc", "bbr3", "--json"]));
        let nobody = common::json_ok(&bbrkit_as(true, &["conns", "--cc", "bbr3", "--json"]));
        drop(keep);
        (root, nobody)
    });
    drop(reg);
    let socks = root["sockets"].as_array().unwrap();
    // 2 families x 2 connections x 2 ends, all on bbr3.
    assert_eq!(socks.len(), 8, "{root}");
    assert!(root["bpf_model_note"].is_null(), "{root}");
    for s in socks {
        assert_eq!(s["cc"], "bbr3");
        assert!(s["bbr"].is_null(), "sock_diag has no BBR info for a BPF CA");
        if s["bytes_acked"].as_u64().unwrap() <= 1 {
            continue; // a pure receiver: no ACK of data, no model sample
        }
        let m = &s["bpf_model"];
        assert_eq!(m["version"], 3, "{s}");
        assert!(
            m["mode"].is_string() && m["cwnd"].as_u64().unwrap() > 0,
            "{s}"
        );
        assert!(m["pacing_gain"].as_f64().unwrap() > 0.0, "{s}");
    }
    // The senders measured a bandwidth and an RTT.
    let senders = socks
        .iter()
        .filter(|s| s["bytes_sent"].as_u64().unwrap() > 1 << 20);
    for s in senders {
        assert!(
            s["bpf_model"]["bw_bits_per_second"].as_u64().unwrap() > 0,
            "{s}"
        );
        assert!(s["bpf_model"]["min_rtt_ms"].as_f64().is_some(), "{s}");
    }
    // As another user: the sockets, no model, and why.
    let socks = nobody["sockets"].as_array().unwrap();
    assert_eq!(socks.len(), 8);
    assert!(socks.iter().all(|s| s["bpf_model"].is_null()));
    let note = nobody["bpf_model_note"].as_str().unwrap();
    assert!(note.contains("needs root"), "{note}");
    assert_nothing_left(&before);
}
