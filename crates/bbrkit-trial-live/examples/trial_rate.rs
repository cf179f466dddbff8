//! Benchmark of the live trial (root; hold the lab lock: `flock
//! /work/lab.lock ...`): how many close records per second a trial takes
//! in without losing one, and what a connection costs with the trial's
//! program attached.
//!
//! ```text
//! trial_rate [--seconds S] [--threads N] [--reply BYTES] [--ring-size BYTES] [--interval S]
//! ```
//!
//! In a throwaway network namespace and child cgroup (the root tests'
//! sandbox), the governed peer (`trial_peer serve`, in the cgroup) answers
//! every connection with BYTES; N client threads (outside the cgroup)
//! connect from 127.0.g.i, read the reply and close, as fast as they can,
//! for S seconds:
//!
//! 1. without a trial: connections per second and CPU per connection
//!    (this process and the peer);
//! 2. with `bbrkit_trial_live::run` attached (a cubic/reno split of the
//!    peer's port, a look every `--interval`, default 10 s as the CLI's):
//!    the same, plus every record the program wrote, dropped (ring full)
//!    and the statistics took in. The CPU includes the trial's own: the
//!    ring reader, the intake and the looks' bootstrap.
//!
//! The program's own time per connection comes from the kernel's BPF run
//! statistics (`BPF_ENABLE_STATS`, on only while this process holds the
//! fd: no sysctl is changed), summed over every sock_ops callback of the
//! connection (establish, state changes, the close and its record).

#[path = "../tests/sandbox/mod.rs"]
mod sandbox;

use std::net::SocketAddr;
use std::os::fd::{FromRawFd, OwnedFd};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bbrkit_trial::{GuardrailBounds, PrefixLengths};
use bbrkit_trial_live::plan::{HostFacts, plan};
use bbrkit_trial_live::testing::{Peer, fetch};
use bbrkit_trial_live::{Event, LiveReport, Matching, Stop, TrialSpec, run};
use sandbox::{Sandbox, client, in_sandbox};

/// The benchmark's knobs.
#[derive(Debug, Clone, Copy)]
struct Args {
    seconds: u64,
    threads: usize,
    reply: u64,
    ring: u32,
    interval: u64,
}

fn args() -> Result<Args, String> {
    let mut a = Args {
        seconds: 10,
        threads: 4,
        reply: 1000,
        ring: 4 << 20,
        interval: 10,
    };
    let v: Vec<String> = std::env::args().skip(1).collect();
    for pair in v.chunks(2) {
        let [flag, value] = pair else {
            return Err(format!("{} needs a value", pair[0]));
        };
        let bad = |e: &dyn std::fmt::Display| format!("{flag} {value}: {e}");
        match flag.as_str() {
            "--seconds" => a.seconds = value.parse().map_err(|e| bad(&e))?,
            "--threads" => a.threads = value.parse().map_err(|e| bad(&e))?,
            "--reply" => a.reply = value.parse().map_err(|e| bad(&e))?,
            "--ring-size" => a.ring = value.parse().map_err(|e| bad(&e))?,
            "--interval" => a.interval = value.parse().map_err(|e| bad(&e))?,
            _ => return Err(format!("unknown flag {flag}")),
        }
    }
    Ok(a)
}

fn main() -> ExitCode {
    match args() {
        Ok(a) => {
            in_sandbox(move |sb| bench(sb, a));
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("trial_rate: {e}");
            ExitCode::from(2)
        }
    }
}

/// This example's sibling `trial_peer`.
fn peer_exe() -> PathBuf {
    std::env::current_exe()
        .unwrap()
        .with_file_name("trial_peer")
}

/// One phase's counts.
#[derive(Debug, Default)]
struct Phase {
    connections: u64,
    failed: u64,
    wall: Duration,
    cpu: Duration,
}

impl Phase {
    fn per_second(&self) -> f64 {
        self.connections as f64 / self.wall.as_secs_f64()
    }

    fn cpu_us_per_connection(&self) -> f64 {
        self.cpu.as_secs_f64() * 1e6 / self.connections.max(1) as f64
    }
}

fn bench(sb: &Sandbox, a: Args) {
    let mut cmd = std::process::Command::new(peer_exe());
    let listen: SocketAddr = "127.0.0.1:0".parse().unwrap();
    cmd.arg("serve")
        .args(Peer::args(&sb.cgroup, &[listen], a.reply, None));
    let server = Peer::start(cmd);
    let to: SocketAddr = ([127, 0, 0, 1], server.ports[0]).into();
    let peer_pid = server.pid();
    println!(
        "trial_rate: {} client threads, {} B replies, {} s per phase, ring {} B, a look every {} s, loopback in a throwaway namespace",
        a.threads, a.reply, a.seconds, a.ring, a.interval
    );
    let base = clients(to, a, peer_pid);
    println!(
        "without a trial: {} connections in {:.1} s = {:.0}/s, CPU {:.1} µs per connection ({} failed)",
        base.connections,
        base.wall.as_secs_f64(),
        base.per_second(),
        base.cpu_us_per_connection(),
        base.failed
    );
    let stats = enable_bpf_stats();
    let (with, report, (ns, runs)) = with_trial(sb, to, a, peer_pid);
    drop(stats);
    let f = &report.live.records;
    println!(
        "with a trial:    {} connections in {:.1} s = {:.0}/s, CPU {:.1} µs per connection ({} failed)",
        with.connections,
        with.wall.as_secs_f64(),
        with.per_second(),
        with.cpu_us_per_connection(),
        with.failed
    );
    println!(
        "records: {} written, {} dropped (ring full), {} without storage, {} taken in, {} closed in the statistics; lost {}",
        f.written,
        f.dropped_ring_full,
        f.without_storage,
        f.intake.received,
        report.report.records.closed,
        with.connections
            .saturating_sub(report.report.records.closed)
    );
    println!(
        "records per second taken in: {:.0}",
        report.report.records.closed as f64 / with.wall.as_secs_f64()
    );
    println!(
        "program: {runs} runs, {:.2} µs per connection ({:.0} ns per run, {:.1} runs per connection); CPU per connection {:+.1} µs against no trial",
        ns as f64 / 1e3 / with.connections.max(1) as f64,
        ns as f64 / runs.max(1) as f64,
        runs as f64 / with.connections.max(1) as f64,
        with.cpu_us_per_connection() - base.cpu_us_per_connection()
    );
    server.stop();
}

/// The trial over the peer's port while the clients run.
fn with_trial(
    sb: &Sandbox,
    to: SocketAddr,
    a: Args,
    peer_pid: u32,
) -> (Phase, LiveReport, (u64, u64)) {
    let facts = HostFacts {
        available: bbrkit_diag::algorithms::available().unwrap(),
        cgroup2_root: bbrkit_bpf::sockops::cgroup::cgroup2_mount().unwrap(),
    };
    let spec = TrialSpec {
        arms: Some(["cubic".into(), "reno".into()]),
        split: None,
        unit: None,
        matching: Matching::Flags {
            prefixes: vec![],
            ports: vec![to.port().to_string()],
        },
        cgroup: Some(sb.cgroup.clone()),
        stop: Stop::For(Duration::from_secs(a.seconds + 60)),
        look_every: Duration::from_secs(a.interval.max(1)),
        seed: 1,
        ring_bytes: a.ring,
        prefix: PrefixLengths { v4: 24, v6: 48 },
        guardrails: GuardrailBounds::default(),
    };
    let plan = plan(&spec, &facts).unwrap();
    let (attached, cancel, prog) = (
        AtomicBool::new(false),
        AtomicBool::new(false),
        AtomicU64::new(0),
    );
    // A reference to the program that outlives the trial's detach, so its
    // run statistics can be read after the run.
    let held = std::sync::Mutex::new(None);
    std::thread::scope(|s| {
        let work = s.spawn(|| {
            while !attached.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(10));
            }
            let phase = clients(to, a, peer_pid);
            // The last records reach the ring within a look.
            std::thread::sleep(Duration::from_secs(2));
            cancel.store(true, Ordering::SeqCst);
            phase
        });
        let report = run(&plan, &cancel, &mut |ev| {
            if let Event::Attached(info) = ev {
                let id = info.attachment.as_ref().unwrap().prog_id;
                *held.lock().unwrap() = Some(hold_prog(id));
                prog.store(u64::from(id), Ordering::SeqCst);
                attached.store(true, Ordering::SeqCst);
            }
        })
        .unwrap();
        let id = prog.load(Ordering::SeqCst) as u32;
        let run_time = prog_run_time(id);
        drop(held.lock().unwrap().take());
        (work.join().unwrap(), report, run_time)
    })
}

/// `a.threads` clients fetching for `a.seconds`; CPU of this process and
/// the peer over the phase.
fn clients(to: SocketAddr, a: Args, peer_pid: u32) -> Phase {
    let (done, failed) = (AtomicU64::new(0), AtomicU64::new(0));
    let cpu0 = cpu_of(std::process::id()) + cpu_of(peer_pid);
    let t0 = Instant::now();
    let until = t0 + Duration::from_secs(a.seconds);
    std::thread::scope(|s| {
        for t in 0..a.threads {
            let (done, failed) = (&done, &failed);
            s.spawn(move || {
                let mut i = t;
                while Instant::now() < until {
                    // 250 addresses in each of 100 /24s: no port runs out.
                    let from = client(1 + (i / 250 % 100) as u8, 1 + (i % 250) as u8);
                    match fetch(from, to, a.reply) {
                        Ok(_) => done.fetch_add(1, Ordering::Relaxed),
                        Err(_) => failed.fetch_add(1, Ordering::Relaxed),
                    };
                    i += a.threads;
                }
            });
        }
    });
    Phase {
        connections: done.into_inner(),
        failed: failed.into_inner(),
        wall: t0.elapsed(),
        cpu: (cpu_of(std::process::id()) + cpu_of(peer_pid)).saturating_sub(cpu0),
    }
}

/// User + system CPU of process `pid` (all its threads), from
/// `/proc/PID/stat` (fields 14 and 15, in clock ticks).
fn cpu_of(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let rest = stat.rsplit_once(") ").map(|(_, r)| r).unwrap_or("");
    let f: Vec<u64> = rest.split(' ').filter_map(|x| x.parse().ok()).collect();
    // After ") ": state is field 3, so utime (14) and stime (15) are
    // entries 11 and 12 of the numeric fields (state is not numeric).
    let ticks = f.get(10).copied().unwrap_or(0) + f.get(11).copied().unwrap_or(0);
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    Duration::from_nanos(ticks * 1_000_000_000 / hz)
}

/// Turns the kernel's BPF run-time statistics on for as long as the
/// returned fd lives (`BPF_ENABLE_STATS`; closing it turns them off).
fn enable_bpf_stats() -> OwnedFd {
    // SAFETY: a plain bpf(2) command with a scalar argument.
    let fd = unsafe {
        libbpf_rs::libbpf_sys::bpf_enable_stats(libbpf_rs::libbpf_sys::BPF_STATS_RUN_TIME)
    };
    assert!(
        fd >= 0,
        "BPF_ENABLE_STATS: {}",
        std::io::Error::from_raw_os_error(-fd)
    );
    // SAFETY: the fd was just returned to us and nothing else owns it.
    unsafe { OwnedFd::from_raw_fd(fd) }
}

/// An fd of program `id`: the program lives while it is open.
fn hold_prog(id: u32) -> OwnedFd {
    // SAFETY: a plain bpf(2) command with a scalar argument.
    let fd = unsafe { libbpf_rs::libbpf_sys::bpf_prog_get_fd_by_id(id) };
    assert!(
        fd >= 0,
        "BPF_PROG_GET_FD_BY_ID {id}: {}",
        std::io::Error::from_raw_os_error(-fd)
    );
    // SAFETY: the fd was just returned to us and nothing else owns it.
    unsafe { OwnedFd::from_raw_fd(fd) }
}

/// Total run time (ns) and runs of program `id` (held by `hold_prog`).
fn prog_run_time(id: u32) -> (u64, u64) {
    libbpf_rs::query::ProgInfoIter::default()
        .find(|p| p.id == id)
        .map(|p| (p.run_time_ns, p.run_cnt))
        .unwrap_or((0, 0))
}
