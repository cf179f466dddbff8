//! Root tests of the lab with bbrkit-bpf's bbr3: the lab registers it for a
//! run, real lab connections carry it (the sender's sockets report `bbr3`
//! through sock_diag, with their model state from their own sk_storage), the
//! registration ends with the run leaving no bbr3 BPF object, and a bbr3
//! registered by someone else is used and left alone.
//!
//! The tests hold while bbrkit runs elsewhere on the host: a test whose
//! point is the lab's own registration waits until nobody holds bbr3 (a
//! lab that starts meanwhile joins it), and each leak check looks only at
//! the ids of the programs, maps and links the test held
//! (`bbrkit_bpf::objects`).

use std::sync::Mutex;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use bbrkit_bpf::objects::Objects;
use bbrkit_bpf::{BpfError, bbr3, telemetry};
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

/// How long a test waits for bbr3 to be free when someone else (a lab
/// running beside the tests) holds it; a name held longer skips the test,
/// with a message.
const FREE_WITHIN: Duration = Duration::from_secs(120);

fn available(name: &str) -> bool {
    bbrkit_diag::algorithms::is_available(name).unwrap()
}

/// What this process holds now (the tests of this binary run one at a time).
fn held_now() -> Objects {
    Objects::held_by(std::process::id())
}

/// None of `ours` is left but what another process still uses through a
/// link it joined (waits up to 5 s: the kernel frees a struct_ops map after
/// its last socket is gone).
fn assert_nothing_left(ours: &Objects) {
    let left = ours.left_after(Duration::from_secs(5));
    assert!(left.is_empty(), "left behind: {left:?} (of {ours:?})");
}

/// Runs `attempt` until it says the name was free (`Some`), for up to
/// [`FREE_WITHIN`]; `None`, with a message, when someone else held it all along.
fn when_free<T>(mut attempt: impl FnMut() -> Option<T>) -> Option<T> {
    let until = Instant::now() + FREE_WITHIN;
    loop {
        if let Some(t) = attempt() {
            return Some(t);
        }
        if Instant::now() >= until {
            eprintln!("skipped: bbr3 stayed registered by someone else");
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn link() -> LinkParams {
    LinkParams {
        delay: Duration::from_millis(5),
        jitter: Duration::ZERO,
        loss: 0.0,
        rate_bps: Some(100_000_000),
        buffer_bytes: Some(125_000),
        ecn_threshold_bytes: None,
    }
}

#[test]
#[ignore = "needs root"]
fn lab_connections_carry_bbr3_and_the_registration_ends_with_the_run() {
    let _g = serial();
    let before = held_now();
    // The lab's own registration (a lab elsewhere may hold bbr3: then ours
    // joins it, which is not what this test is about).
    let Some(ccs) = when_free(|| {
        let ccs = bpf_cc::register_missing(&["cubic".into(), "bbr3".into()]).expect("register");
        assert_eq!(ccs.algorithms.len(), 1);
        ccs.algorithms[0].registered_by_lab.then_some(ccs)
    }) else {
        return;
    };
    assert!(available("bbr3"));

    let topo = Topology::build("bbrkb3", 1500, false).expect("build");
    let emu = Emulator::start(&topo, link(), 1).expect("emulator");
    let spec = TestSpec {
        sample_every: Duration::from_millis(100),
        keep_off_cpu: None,
        ..TestSpec::uniform("bbr3", 2, CcOn::Sender, Duration::from_millis(2000))
    };
    // What the lab's registration made (before the storage maps of every
    // bbr3 load, a lab's elsewhere too, are opened below).
    let ours = held_now().without(&before);
    let maps = telemetry::StorageMaps::in_kernel().expect("storage maps");
    assert!(!maps.is_empty(), "the lab's bbr3 has a storage map");
    let (result, socks) = std::thread::scope(|s| {
        let t = s.spawn(|| bbrkit_lab::tester::run_test(&topo, &spec, &AtomicBool::new(false)));
        std::thread::sleep(Duration::from_millis(1000));
        let mut filter = Filter {
            states: StateSet::connected(),
            cc: Some("bbr3".into()),
            ..Filter::default()
        };
        maps.ask(&mut filter);
        let socks = topo
            .server
            .run(|| Ok(bbrkit_diag::census(&filter).expect("census")))
            .unwrap();
        (t.join().unwrap(), socks)
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
    // Each carries its model in the same dump, from its own storage.
    for s in &senders {
        let t = maps
            .telemetry(s)
            .unwrap_or_else(|| panic!("no telemetry for {} -> {}: {s:?}", s.local, s.remote))
            .expect("decode");
        assert_eq!(t.model.version, 3);
        assert!(t.model.cwnd > 0 && t.model.bw_bits_per_second > 0, "{t:?}");
        assert!(t.counters.acks > 0 && t.counters.rounds > 0, "{t:?}");
    }
    println!("{:.1} Mbit/s", result.bits_per_second / 1e6);
    drop(maps); // its fd holds the storage map
    drop(topo);
    drop(ccs);
    assert_nothing_left(&ours);
}

#[test]
#[ignore = "needs root"]
fn a_bbr3_registered_by_someone_else_is_used_and_left_alone() {
    let _g = serial();
    let Some(operator) = when_free(|| match bbr3::register(Some(&["bbr3"])) {
        Ok(r) => Some(r),
        Err(BpfError::Register { source, .. })
            if source.kind() == libbpf_rs::ErrorKind::AlreadyExists =>
        {
            None
        }
        Err(e) => panic!("operator registers bbr3: {e}"),
    }) else {
        return;
    };
    let theirs = Objects::of_registration(&operator);
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
        available("bbr3") && theirs.alive() == theirs,
        "the lab unregistered the operator's bbr3"
    );
    drop(operator);
    assert_nothing_left(&theirs);
}
