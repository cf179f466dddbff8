//! Cost of the policy's sock_ops program: connections per second on
//! loopback (connect, accept, close, both ends in the governed cgroup)
//! without the program and with it in four cases, and the program's run
//! time per connection and per callback (`BPF_ENABLE_STATS`: run-time
//! stats are on while this process holds the fd, and off again when it
//! closes or the process dies; `kernel.bpf_stats_enabled` is never
//! written). Needs root; runs in a throwaway network and mount namespace
//! and a throwaway child cgroup (this process moves itself there for the
//! measurement and back before the cgroup is removed). Hold the lab lock:
//!
//! ```text
//! flock /work/lab.lock cargo run --release -p bbrkit-bpf --example policy_cost -- [CONNS] [REPEATS] [BYTES]
//! ```
//!
//! Each connection sends BYTES (default 0) from client to server. Cases
//! (run interleaved, REPEATS rounds of CONNS connections each; the median
//! of the rounds is reported):
//! - `none`: no program attached;
//! - `unmatched`: attached, no rule matches (three LPM lookups per socket);
//! - `keep`: a rule matches and gives the namespace's default algorithm
//!   (the kernel's setsockopt finds nothing to change);
//! - `assign`: a rule matches and sets another algorithm (cubic, or reno
//!   when the default is cubic);
//! - `record`: as assign, and each close is recorded through the ring,
//!   drained as it fills.

#[path = "../tests/sockops_sandbox/mod.rs"]
mod sandbox;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::time::Instant;

use bbrkit_bpf::sockops::Attachment;
use bbrkit_bpf::sockops::records::Records;
use bbrkit_policy::Compiled;
use libbpf_rs::query::ProgInfoIter;

const PORT: u16 = 7100;

/// The cases: name and policy (`None`: nothing attached), for a namespace
/// whose default algorithm is `default`.
fn cases(default: &str) -> Vec<(&'static str, Option<String>)> {
    let other = if default == "cubic" { "reno" } else { "cubic" };
    let rule = |cc: &str, record: bool| {
        Some(format!(
            "[[rule]]\nremote = [\"127.0.0.0/8\"]\ncc = \"{cc}\"\nrecord = {record}\n"
        ))
    };
    vec![
        ("none", None),
        (
            "unmatched",
            Some("[[rule]]\nremote = [\"192.0.2.0/24\"]\ncc = \"cubic\"\n".into()),
        ),
        ("keep", rule(default, false)),
        ("assign", rule(other, false)),
        ("record", rule(other, true)),
    ]
}

/// `(run_time_ns, run_cnt)` of program `id` (zeros without one).
fn runtime(id: Option<u32>) -> (u64, u64) {
    ProgInfoIter::default()
        .find(|p| Some(p.id) == id)
        .map_or((0, 0), |p| (p.run_time_ns, p.run_cnt))
}

/// Moves this whole process into `cgroup` (its sockets are governed from
/// now on).
fn join(cgroup: &Path) {
    std::fs::write(cgroup.join("cgroup.procs"), std::process::id().to_string())
        .expect("join the cgroup");
}

/// This process's cgroup v2 path relative to the mount (`0::/x` line).
fn own_cgroup() -> String {
    std::fs::read_to_string("/proc/self/cgroup")
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("0::").map(str::to_string))
        .unwrap_or_else(|| "/".into())
}

/// CPU time of this process, seconds (both ends and, on loopback, the
/// softirq work they trigger run here).
fn cpu() -> f64 {
    let t = nix::time::clock_gettime(nix::time::ClockId::CLOCK_PROCESS_CPUTIME_ID).unwrap();
    t.tv_sec() as f64 + t.tv_nsec() as f64 / 1e9
}

/// One round's result.
struct Round {
    per_sec: f64,
    cpu_us: f64,
    drained: u64,
}

/// `n` connections: connect, send `bytes`, close; a server thread accepts,
/// reads to the end and closes.
fn churn(n: usize, bytes: usize, mut records: Option<&mut Records>) -> Round {
    let l = TcpListener::bind(("127.0.0.1", PORT)).unwrap();
    let server = std::thread::spawn(move || {
        let mut buf = vec![0u8; 1 << 16];
        for _ in 0..n {
            let (mut s, _) = l.accept().unwrap();
            while s.read(&mut buf).unwrap_or(0) > 0 {}
        }
    });
    let payload = vec![7u8; bytes];
    let mut drained = 0u64;
    let (t0, c0) = (Instant::now(), cpu());
    for i in 0..n {
        let mut c = TcpStream::connect(("127.0.0.1", PORT)).unwrap();
        c.write_all(&payload).unwrap();
        drop(c);
        if let Some(r) = records.as_deref_mut()
            && i % 256 == 255
        {
            drained += r.drain().unwrap().len() as u64;
        }
    }
    server.join().unwrap();
    let per_sec = n as f64 / t0.elapsed().as_secs_f64();
    let cpu_us = (cpu() - c0) * 1e6 / n as f64;
    if let Some(r) = records {
        std::thread::sleep(std::time::Duration::from_millis(200));
        drained += r.drain().unwrap().len() as u64;
    }
    Round {
        per_sec,
        cpu_us,
        drained,
    }
}

/// A case's rounds and BPF run time.
struct Row {
    case: &'static str,
    per_sec: Vec<f64>,
    cpu_us: Vec<f64>,
    bpf_ns: u64,
    calls: u64,
    records: u64,
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().map_or(2_000, |s| s.parse().expect("CONNS"));
    let repeats: usize = args.next().map_or(15, |s| s.parse().expect("REPEATS"));
    let bytes: usize = args.next().map_or(0, |s| s.parse().expect("BYTES"));
    // SAFETY: returns an fd that keeps run-time stats on while open.
    let stats_fd = unsafe { libbpf_sys::bpf_enable_stats(libbpf_sys::BPF_STATS_RUN_TIME) };
    assert!(
        stats_fd >= 0,
        "BPF_ENABLE_STATS: {}",
        std::io::Error::last_os_error()
    );
    let home = own_cgroup();
    let rows = sandbox::in_sandbox(move |sb| {
        let root = bbrkit_bpf::sockops::cgroup::cgroup2_mount()
            .unwrap()
            .unwrap();
        join(&sb.cgroup);
        let cases = cases(&sandbox::default_cc());
        let mut rows: Vec<Row> = cases
            .iter()
            .map(|(case, _)| Row {
                case,
                per_sec: Vec::new(),
                cpu_us: Vec::new(),
                bpf_ns: 0,
                calls: 0,
                records: 0,
            })
            .collect();
        for _ in 0..repeats {
            for (row, (_, text)) in rows.iter_mut().zip(&cases) {
                let att = text.as_ref().map(|t| {
                    let p = bbrkit_policy::parse("bench", t).unwrap();
                    Attachment::attach(&Compiled::new(&p, 1), &sb.cgroup).unwrap()
                });
                let mut rec = att
                    .as_ref()
                    .filter(|_| row.case == "record")
                    .map(|a| Records::new(a.maps()).unwrap());
                let id = att.as_ref().map(|a| a.describe().unwrap().prog_id);
                let before = runtime(id);
                let round = churn(n, bytes, rec.as_mut());
                let after = runtime(id);
                row.per_sec.push(round.per_sec);
                row.cpu_us.push(round.cpu_us);
                row.bpf_ns += after.0 - before.0;
                row.calls += after.1 - before.1;
                row.records += round.drained;
            }
        }
        // Back home, so the sandbox can remove the cgroup.
        join(&root.join(home.trim_start_matches('/')));
        rows
    });
    // SAFETY: closing our own fd turns the stats off again.
    unsafe { libc::close(stats_fd) };
    let base_rate = median(&mut rows[0].per_sec.clone());
    let base_cpu = median(&mut rows[0].cpu_us.clone());
    let conns = (n * repeats) as f64;
    println!(
        "policy_cost: {n} connections of {bytes} bytes x {repeats} rounds per case (interleaved), loopback, both ends governed"
    );
    println!(
        "case       conn/s  vs none  CPU us/conn  vs none  BPF ns/conn  calls/conn  ns/call  records"
    );
    for mut r in rows {
        let rate = median(&mut r.per_sec);
        let cpu_us = median(&mut r.cpu_us);
        let per_call = if r.calls > 0 {
            r.bpf_ns as f64 / r.calls as f64
        } else {
            0.0
        };
        println!(
            "{:10} {rate:6.0}  {:+6.1}%  {cpu_us:11.1}  {:+6.1}%  {:11.0}  {:10.1}  {per_call:7.0}  {}",
            r.case,
            (rate / base_rate - 1.0) * 100.0,
            (cpu_us / base_cpu - 1.0) * 100.0,
            r.bpf_ns as f64 / conns,
            r.calls as f64 / conns,
            r.records
        );
    }
}
