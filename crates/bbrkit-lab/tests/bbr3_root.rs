//! Root tests of the lab with bbrkit-bpf's bbr3: the lab registers it for a
//! run, real lab connections carry it (the sender's sockets report `bbr3`
//! through sock_diag, and its telemetry map has their model state), the
//! registration ends with the run leaving no bbr3 BPF object, and a bbr3
//! registered by someone else is used and left alone. Run under
//! `flock /tmp/bbrkit-root.lock` (a congestion-control name is global).

use std::sync::Mutex;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use bbrkit_bpf::status::Leftovers;
use bbrkit_bpf::{bbr3, status, telemetry};
use bbrkit_diag::{Filter, StateSet};
use bbrkit_lab::bpf_cc;
use bbrkit_lab::emulator::Emulator;
use bbrkit_lab::emulator::model::LinkParams;
use bbrkit_lab::tester::{CcOn, TestSpec};
use bbrkit_lab::topology::{SERVER_ADDR, Topology};

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

/// The names bbrkit-bpf registers.
const NAMES: &[&str] = &["bbr3", "bbr2"];

fn available(name: &str) -> bool {
    bbrkit_diag::algorithms::is_available(name).unwrap()
}

/// No bbr3 program, map, link or pin beyond `before`, and bbr3 not registered (waits up to
/// 5 s: the kernel frees a struct_ops map after its last socket is gone).
fn assert_nothing_left(before: &Leftovers) {
    let left = status::leftovers_after(before, bbr3::PREFIX, NAMES, Duration::from_secs(5));
    assert!(left.is_empty(), "left behind: {left:?}");
    assert!(!available("bbr3"));
}

/// The bbr3 objects that exist before a test (say, maps still used by
/// connections of an earlier run), or `None` (skip, with a message) when
/// bbr3 is registered by someone else: tests never touch that.
fn precondition() -> Option<Leftovers> {
    if available("bbr3") {
        eprintln!("skipped: bbr3 is already registered on this host");
        return None;
    }
    Some(status::leftovers(bbr3::PREFIX, NAMES))
}

fn link() -> LinkParams {
    LinkParams {
        delay: Duration::from_millis(5),
        jitter: Duration::ZERO,
        loss: 0.0,
        rate_bps: Some(100_000_000),
        buffer_bytes: Some(125_000),
    }
}

#[test]
#[ignore = "needs root"]
fn lab_connections_carry_bbr3_and_the_registration_ends_with_the_run() {
    let _g = serial();
    let Some(before) = precondition() else {
        return;
    };
    let ccs = bpf_cc::register_missing(&["cubic".into(), "bbr3".into()]).expect("register");
    assert_eq!(ccs.algorithms.len(), 1);
    assert!(ccs.algorithms[0].registered_by_lab);
    assert!(available("bbr3"));

    let topo = Topology::build("bbrkb3", 1500, false).expect("build");
    let emu = Emulator::start(&topo, link(), 1).expect("emulator");
    let spec = TestSpec {
        sample_every: Duration::from_millis(100),
        keep_off_cpu: None,
        ..TestSpec::uniform("bbr3", 2, CcOn::Sender, Duration::from_millis(2000))
    };
    let server_ns = topo.server.inode() as u32;
    let (result, socks, models) = std::thread::scope(|s| {
        let t = s.spawn(|| bbrkit_lab::tester::run_test(&topo, &spec, &AtomicBool::new(false)));
        std::thread::sleep(Duration::from_millis(1000));
        let filter = Filter {
            states: StateSet::connected(),
            cc: Some("bbr3".into()),
            ..Filter::default()
        };
        let socks = topo
            .server
            .run(|| Ok(bbrkit_diag::census(&filter).expect("census")))
            .unwrap();
        let models = telemetry::read_kernel().expect("read telemetry");
        (t.join().unwrap(), socks, models)
    });
    let result = result.expect("test");
    drop(emu);
    for f in &result.flows {
        assert_eq!(f.sender_tcp_congestion, "bbr3");
        assert!(f.bytes > 0);
    }
    // The sender's sockets, as sock_diag sees them in its namespace.
    let senders: Vec<_> = socks
        .iter()
        .filter(|s| s.local.ip() == SERVER_ADDR)
        .collect();
    assert_eq!(senders.len(), 2, "{socks:?}");
    assert!(senders.iter().all(|s| s.cc.as_deref() == Some("bbr3")));
    // Each has a telemetry entry under its namespace and 4-tuple.
    for s in &senders {
        let m = models
            .iter()
            .find(|m| {
                m.socket.netns_ino == server_ns
                    && m.socket.local == s.local
                    && m.socket.remote == s.remote
            })
            .unwrap_or_else(|| panic!("no telemetry for {} -> {}: {models:?}", s.local, s.remote));
        assert_eq!(m.state.version, 3);
        assert!(m.state.cwnd > 0 && m.state.bw_bits_per_second > 0, "{m:?}");
    }
    println!("{:.1} Mbit/s", result.bits_per_second / 1e6);
    drop(topo);
    drop(ccs);
    assert_nothing_left(&before);
}

#[test]
#[ignore = "needs root"]
fn a_bbr3_registered_by_someone_else_is_used_and_left_alone() {
    let _g = serial();
    let Some(before) = precondition() else {
        return;
    };
    let operator = bbr3::register(Some(&["bbr3"])).expect("operator registers bbr3");
    let ccs = bpf_cc::register_missing(&["bbr3".into()]).expect("lab");
    assert_eq!(
        ccs.algorithms,
        vec![bpf_cc::BpfAlgorithm {
            name: "bbr3".into(),
            registered_by_lab: false
        }]
    );
    drop(ccs);
    assert!(
        available("bbr3"),
        "the lab unregistered the operator's bbr3"
    );
    drop(operator);
    assert_nothing_left(&before);
}
