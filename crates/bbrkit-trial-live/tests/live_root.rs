//! Root tests of the live trial in a throwaway network namespace and a
//! throwaway child cgroup: the governed server (`examples/trial_peer`) runs
//! in the cgroup, the clients (this process) outside it.

mod sandbox;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bbrkit_bpf::sockops::cgroup;
use bbrkit_policy::ConnRecord;
use bbrkit_trial::{GuardrailBounds, PrefixLengths, Verdict};
use bbrkit_trial_live::plan::{HostFacts, plan};
use bbrkit_trial_live::testing::{Held, Peer, connect_from, fetch};
use bbrkit_trial_live::{Event, Matching, Plan, Stop, StopReason, TrialSpec, run};
use sandbox::{Sandbox, client, in_sandbox};

/// The path of one of this crate's examples (built by `cargo test`).
fn example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().unwrap();
    let dir = if dir.ends_with("deps") {
        dir.parent().unwrap()
    } else {
        dir
    };
    dir.join("examples").join(name)
}

fn peer(sb: &Sandbox, reply: u64, pace: Option<(&str, u64)>) -> Peer {
    let mut cmd = std::process::Command::new(example("trial_peer"));
    let listen: SocketAddr = "127.0.0.1:0".parse().unwrap();
    cmd.arg("serve")
        .args(Peer::args(&sb.cgroup, &[listen], reply, pace));
    Peer::start(cmd)
}

fn trial_plan(sb: &Sandbox, port: u16, arms: [&str; 2], stop: Stop) -> Plan {
    let facts = HostFacts {
        available: bbrkit_diag::algorithms::available().unwrap(),
        cgroup2_root: cgroup::cgroup2_mount().unwrap(),
    };
    let spec = TrialSpec {
        arms: Some(arms.map(String::from)),
        split: None,
        unit: None,
        matching: Matching::Flags {
            prefixes: vec![],
            ports: vec![port.to_string()],
        },
        cgroup: Some(sb.cgroup.clone()),
        stop,
        look_every: Duration::from_millis(500),
        seed: bbrkit_cc::testing::test_seed(0x7e1a1),
        ring_bytes: 1 << 20,
        prefix: PrefixLengths { v4: 24, v6: 48 },
        guardrails: GuardrailBounds::default(),
    };
    plan(&spec, &facts).unwrap()
}

/// What the callback saw.
#[derive(Default)]
struct Seen {
    records: Mutex<Vec<ConnRecord>>,
    closed: AtomicU64,
    held: Mutex<Option<Held>>,
    attached: AtomicBool,
    guardrail: AtomicBool,
}

impl Seen {
    fn on(&self, ev: Event<'_>) {
        match ev {
            Event::Attached(info) => {
                let a = info.attachment.as_ref().unwrap();
                let held = Held::of(a.prog_id, a.link_id);
                assert_eq!(
                    held.alive(),
                    held,
                    "the leak check sees them while attached"
                );
                *self.held.lock().unwrap() = Some(held);
                self.attached.store(true, Ordering::SeqCst);
            }
            Event::Records(batch) => {
                let closed = batch.iter().filter(|r| !r.open).count() as u64;
                self.closed.fetch_add(closed, Ordering::SeqCst);
                self.records.lock().unwrap().extend_from_slice(batch);
            }
            Event::Guardrail(_) => self.guardrail.store(true, Ordering::SeqCst),
            _ => {}
        }
    }

    fn wait(&self, what: &str, until: impl Fn(&Seen) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while !until(self) {
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// `n` requests of `bytes` from clients of groups 1..=3, `threads` at once.
fn requests(to: SocketAddr, n: usize, bytes: u64, threads: usize) -> Vec<SocketAddr> {
    let next = AtomicU64::new(0);
    let done = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::SeqCst) as usize;
                    if i >= n {
                        return;
                    }
                    let from = client(1 + (i % 3) as u8, 1 + (i / 3 % 200) as u8);
                    let local = fetch(from, to, bytes).unwrap();
                    done.lock().unwrap().push(local);
                }
            });
        }
    });
    done.into_inner().unwrap()
}

#[test]
#[ignore = "needs root"]
fn every_closed_connection_yields_one_record_with_its_arm_and_open_ones_are_sampled() {
    in_sandbox(|sb| {
        let server = peer(sb, 200_000, None);
        let to: SocketAddr = ([127, 0, 0, 1], server.ports[0]).into();
        let plan = trial_plan(
            sb,
            server.ports[0],
            ["cubic", "reno"],
            Stop::For(Duration::from_secs(120)),
        );
        let (seen, cancel) = (Seen::default(), AtomicBool::new(false));
        let (report, clients, held_open) = std::thread::scope(|s| {
            let work = s.spawn(|| {
                seen.wait("the attach", |s| s.attached.load(Ordering::SeqCst));
                let clients = requests(to, 60, 200_000, 6);
                let held: Vec<_> = (0..6)
                    .map(|i| {
                        let mut c = connect_from(client(4, 1 + i), to).unwrap();
                        std::io::copy(
                            &mut std::io::Read::take(&mut c, 200_000),
                            &mut std::io::sink(),
                        )
                        .unwrap();
                        c
                    })
                    .collect();
                seen.wait("60 closes", |s| s.closed.load(Ordering::SeqCst) >= 60);
                cancel.store(true, Ordering::SeqCst);
                (clients, held)
            });
            let report = run(&plan, &cancel, &mut |ev| seen.on(ev)).unwrap();
            let (clients, held) = work.join().unwrap();
            (report, clients, held)
        });
        let records = seen.records.lock().unwrap().clone();
        let (open, closed): (Vec<_>, Vec<_>) = records.iter().partition(|r| r.open);
        // Exactly one record per client connection, each with its drawn arm.
        let mut got: Vec<SocketAddr> = closed
            .iter()
            .map(|r| SocketAddr::new(r.remote, r.remote_port))
            .collect();
        got.sort();
        let mut want = clients.clone();
        want.sort();
        assert_eq!(got, want, "one record per closed connection");
        let arms = ["cubic", "reno"];
        for r in closed.iter().chain(&open) {
            let d = plan
                .compiled
                .decide(r.remote, r.local_port, r.remote_port, r.cookie)
                .unwrap();
            assert_eq!(Some(usize::from(r.arm)), d.arm, "{r:?}");
            assert_eq!(r.cc, arms[usize::from(r.arm)], "{r:?}");
            assert!(r.assigned && r.rule == Some(0), "{r:?}");
            assert!(r.bytes_acked >= 200_000, "{r:?}");
        }
        assert!(closed.iter().any(|r| r.arm == 0) && closed.iter().any(|r| r.arm == 1));
        // The connections still open: sampled, with the arm the draw gives.
        assert_eq!(open.len(), 6, "{open:?}");
        let live = &report.live;
        let o = live.open.as_ref().unwrap();
        assert_eq!((o.matched, o.not_their_arm, o.closed_since), (6, 0, 0));
        let c = &report.report.records;
        assert_eq!(
            (c.closed, c.open, c.duplicate, c.unexpected_arm),
            (60, 6, 0, 0)
        );
        assert_eq!(live.records.intake.received, 60);
        assert_eq!((live.records.written, live.lost_records()), (60, 0));
        assert_eq!(live.stopped, StopReason::Interrupted);
        assert_eq!(report.report.groups.len(), 4, "127.0.1-4.0/24");
        let assigned: u64 = live.assignment.iter().map(|a| a.assigned).sum();
        assert_eq!(assigned, 66);
        let draws = live.draws.as_ref().unwrap();
        assert_eq!(draws.observed.iter().sum::<u64>(), 66, "{draws:?}");
        // Nothing left: no program on the cgroup, the trial's objects freed.
        assert!(
            cgroup::sock_ops_programs(&sb.cgroup, false)
                .unwrap()
                .is_empty()
        );
        let held = seen.held.lock().unwrap().clone().unwrap();
        assert!(!held.maps.is_empty());
        assert_eq!(held.wait_gone(Duration::from_secs(5)), None);
        drop(held_open);
        server.stop();
    });
}

#[test]
#[ignore = "needs root"]
fn a_tripped_guardrail_sends_new_connections_to_the_other_arm() {
    in_sandbox(|sb| {
        // Arm B (reno) is paced at 2 MB/s: far more than 20 % slower.
        let server = peer(sb, 1_000_000, Some(("reno", 2_000_000)));
        let to: SocketAddr = ([127, 0, 0, 1], server.ports[0]).into();
        let plan = trial_plan(
            sb,
            server.ports[0],
            ["cubic", "reno"],
            Stop::For(Duration::from_secs(120)),
        );
        let (seen, cancel) = (Seen::default(), AtomicBool::new(false));
        let (report, late) = std::thread::scope(|s| {
            let work = s.spawn(|| {
                seen.wait("the attach", |s| s.attached.load(Ordering::SeqCst));
                let mut made = 0;
                while !seen.guardrail.load(Ordering::SeqCst) {
                    assert!(made < 600, "no guardrail after {made} connections");
                    requests(to, 24, 1_000_000, 8);
                    made += 24;
                }
                let late = requests(to, 20, 1_000_000, 4);
                seen.wait("the late closes", |s| {
                    let r = s.records.lock().unwrap();
                    late.iter().all(|a| {
                        r.iter()
                            .any(|x| SocketAddr::new(x.remote, x.remote_port) == *a)
                    })
                });
                cancel.store(true, Ordering::SeqCst);
                late
            });
            let report = run(&plan, &cancel, &mut |ev| seen.on(ev)).unwrap();
            (report, work.join().unwrap())
        });
        let g = report.live.guardrail.as_ref().expect("a guardrail applied");
        assert_eq!((g.decision.stop, g.decision.send_to), ("B", "A"));
        assert_eq!(g.weights, [50, 0]);
        let draws = report.live.draws.as_ref().unwrap();
        assert_eq!(
            draws.observed, g.drawn_at_cut,
            "the draws of the comparison"
        );
        // Every draw counted at the cut started before it, so it is
        // compared: closed, or still open at the end (a paced B server
        // socket closes after its client has read everything).
        let c = &report.report.records;
        assert!(
            g.drawn_at_cut.iter().sum::<u64>() <= c.closed + c.open,
            "{g:?} {c:?}"
        );
        assert!(g.decision.because[0].starts_with("goodput B/A"), "{g:?}");
        // Every connection after the decision ran A and is left out.
        let records = seen.records.lock().unwrap().clone();
        for a in &late {
            let r = records
                .iter()
                .find(|x| SocketAddr::new(x.remote, x.remote_port) == *a)
                .unwrap();
            assert_eq!((r.arm, r.cc.as_str()), (0, "cubic"), "{r:?}");
        }
        let intake = &report.live.records.intake;
        assert!(intake.after_guardrail >= late.len() as u64, "{intake:?}");
        assert_eq!(
            report.report.records.closed + intake.after_guardrail,
            intake.received,
            "{intake:?}"
        );
        assert_eq!(report.report.overall.verdict, Verdict::Worse);
        assert!(
            cgroup::sock_ops_programs(&sb.cgroup, false)
                .unwrap()
                .is_empty()
        );
        let held = seen.held.lock().unwrap().clone().unwrap();
        assert_eq!(held.wait_gone(Duration::from_secs(5)), None);
        server.stop();
    });
}
