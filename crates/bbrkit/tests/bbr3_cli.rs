//! `bbrkit lab --cc bbr3` and `bbrkit conns` with bbrkit-bpf's bbr3 (needs
//! root). The lab registers bbr3 for its run (or joins a registration
//! another lab made) and lets go of it on Ctrl-C and after SIGKILL; `conns`
//! joins bbr3 sockets with the telemetry map, and says why not when it
//! cannot read it.
//!
//! The tests hold while bbrkit runs elsewhere on the host: a
//! congestion-control name is global, so the lab under test shares a
//! registration the way labs do (`bbrkit_bpf::share`), a test that
//! registers bbr3 itself waits until the name is free, and each leak check
//! looks only at the ids of the programs, maps and links the test or its
//! lab created or held (`bbrkit_bpf::objects`); what another process still
//! uses through a link it joined is not a leak.

mod bbr3_name;
mod common;
#[path = "../../bbrkit-diag/tests/netns/mod.rs"]
mod netns;

#[path = "../../bbrkit-bpf/tests/ours/mod.rs"]
mod ours;

use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use bbr3_name::FREE_WITHIN;
use bbrkit_bpf::objects::Objects;
use bbrkit_bpf::{share, status};
use ours::{Ours, assert_nothing_left};

static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

/// bbr3 registered by this test from this build's embedded object (what
/// the tests are about; a lab elsewhere may run another build's), the way
/// a lab holds it (`share::hold`): while someone else holds the name, waits
/// for it to be free; labs that start meanwhile join ours.
fn register_own() -> Option<share::Held> {
    let until = Instant::now() + FREE_WITHIN;
    loop {
        let held = share::hold(&["bbr3"]).expect("register or join bbr3");
        if held.registration.is_some() {
            return Some(held);
        }
        drop(held);
        if Instant::now() >= until {
            eprintln!("skipped: bbr3 stayed registered by someone else");
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// What `held` made or took: its own registration's objects and the links
/// it joined.
fn objects_of(held: &share::Held) -> Objects {
    let mut o = held
        .registration
        .as_ref()
        .map(Objects::of_registration)
        .unwrap_or_default();
    o.add(&Objects {
        links: held.joined.iter().map(|j| j.link_id).collect(),
        ..Objects::default()
    });
    o
}

/// Whether `held` has a link of a struct_ops map
/// named bbr3: the lab holds the bbr3 registration (its own or a joined one).
fn holds_bbr3(held: &Objects) -> bool {
    status::ops_maps()
        .iter()
        .filter(|m| m.name == "bbr3")
        .any(|m| m.links.iter().any(|l| held.links.contains(l)))
}

/// A lab comparing cubic and bbr3, started with default signal dispositions;
/// returns once it holds the bbr3 registration and the run has started,
/// with what it held then.
fn start_lab() -> (Child, Objects) {
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
    while !holds_bbr3(&Objects::held_by(child.id())) {
        assert!(Instant::now() < until, "the lab never held bbr3");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(2500)); // into the run
    let held = Objects::held_by(child.id());
    (child, held)
}

#[test]
#[ignore = "needs root"]
fn lab_ctrl_c_unregisters_bbr3() {
    let _g = serial();
    let (child, held) = start_lab();
    let ours = Ours::new(held);
    // SAFETY: signals our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().expect("wait");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "stderr: {stderr}");
    assert_nothing_left(&ours);
}

#[test]
#[ignore = "needs root"]
fn lab_sigkill_unregisters_bbr3() {
    let _g = serial();
    let (mut child, held) = start_lab();
    let ours = Ours::new(held);
    child.kill().expect("SIGKILL");
    child.wait().expect("wait");
    assert_nothing_left(&ours);
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

/// `bbrkit conns` on a real lab connection: bbr3 registered from the
/// embedded object, which has no LRU (or any other per-socket) map but the sockets' storage,
/// a 100 Mbit/s × 10 ms emulated path, and the sender's model state read by
/// `conns` through sock_diag in the sender's namespace.
#[test]
#[ignore = "needs root"]
fn conns_shows_bbr3_on_a_real_lab_connection_without_an_lru_map() {
    use bbrkit_lab::emulator::Emulator;
    use bbrkit_lab::emulator::model::LinkParams;
    use bbrkit_lab::tester::{CcOn, TestSpec};
    use bbrkit_lab::topology::{SERVER_ADDR, Topology};

    let _g = serial();
    let Some(held) = register_own() else { return };
    let ours = Ours::new(objects_of(&held));
    // Every map our registration created, as the kernel lists them (what
    // `bpftool map` shows): the sockets' storage and the per-CPU counters.
    let mut maps: Vec<String> = ours
        .objects
        .map_names()
        .into_iter()
        .filter(|n| n != "bbr3")
        .collect();
    maps.sort();
    assert_eq!(maps, ["bbr3_sk_stor", "bbr3_stats"]);
    let topo = Topology::build("bbrkcn", 1500, false).expect("lab topology");
    let link = LinkParams {
        delay: Duration::from_millis(10),
        jitter: Duration::ZERO,
        loss: 0.0,
        rate_bps: Some(100_000_000),
        buffer_bytes: Some(125_000),
        ecn_threshold_bytes: None,
    };
    let emu = Emulator::start(&topo, link, 1).expect("emulator");
    let spec = TestSpec::uniform("bbr3", 1, CcOn::Sender, Duration::from_secs(3));
    let (result, conns) = std::thread::scope(|s| {
        let t = s.spawn(|| {
            bbrkit_lab::tester::run_test(&topo, &spec, &std::sync::atomic::AtomicBool::new(false))
        });
        std::thread::sleep(Duration::from_millis(1500));
        let out = topo
            .server
            .run(|| Ok(bbrkit_as(false, &["conns", "--cc", "bbr3", "--json"])))
            .unwrap();
        (t.join().unwrap(), common::json_ok(&out))
    });
    result.expect("lab transfer");
    drop(emu);
    drop(topo);
    drop(held);
    let sender = conns["sockets"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| {
            s["local"]
                .as_str()
                .unwrap()
                .starts_with(&SERVER_ADDR.to_string())
        })
        .unwrap_or_else(|| panic!("no bbr3 sender: {conns}"));
    let m = &sender["bpf_model"];
    assert_eq!(m["version"], 3, "{sender}");
    assert!(m["mode"].is_string(), "{sender}");
    assert!(
        m["bw_bits_per_second"].as_u64().unwrap() > 1_000_000,
        "{sender}"
    );
    assert!(m["min_rtt_ms"].as_f64().unwrap() >= 10.0, "{sender}");
    assert!(conns["bpf_model_note"].is_null(), "{conns}");
    assert_nothing_left(&ours);
}

#[test]
#[ignore = "needs root"]
fn conns_shows_the_model_state_of_bbr3_sockets() {
    let _g = serial();
    let Some(held) = register_own() else { return };
    let ours = Ours::new(objects_of(&held));
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
    drop(held);
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
    assert_nothing_left(&ours);
}
