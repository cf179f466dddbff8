//! Census of 100,000 sockets against `ss -tin` on the same sockets.
//!
//! `cargo bench -p bbrkit-diag --bench census` (root: it needs a throwaway
//! network namespace). A helper thread unshares a network namespace and,
//! inside it, starts holder processes (this same binary re-executed with
//! `BBRKIT_BENCH_HOLDER=N`) that each open N loopback connection pairs to
//! their own listener, a third each with reno, cubic and bbr (so a third carry
//! BBR info), and keep them open. Several processes are used because
//! RLIMIT_NOFILE is 20,000 here and cannot be raised (no CAP_SYS_RESOURCE);
//! nothing on the host changes. 50,000 pairs make 100,000 sockets plus one
//! listener per holder. Then, in that namespace, it times:
//!
//! - `census/100k`: `bbrkit_diag::census(&Filter::default())` with
//!   `tcp_info`, algorithm and BBR info, decoded into `Vec<Socket>`;
//! - `census_each/100k`: the same dump and decoding, each socket handed to a
//!   visitor instead of collected (what an aggregating exporter needs);
//! - `ss_tin/100k`: `ss -tin` (iproute2, same netlink dump, text to /dev/null).
//!
//! The goal (issue 6): census under 1 s and no slower than `ss -tin`.
//! `BBRKIT_BENCH_PAIRS=N` changes the number of pairs.

#[path = "../tests/netns/mod.rs"]
mod netns;

use std::io::{BufRead, BufReader, Read};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use bbrkit_diag::{Filter, census, census_each};
use criterion::Criterion;

/// Pairs per holder process: two descriptors per pair under a 20,000 limit.
const PER_HOLDER: usize = 9_000;
const ALGOS: [&str; 3] = ["reno", "cubic", "bbr"];

/// Holder role: open `pairs` connection pairs, say `ready`, wait for stdin EOF.
fn hold(pairs: usize) {
    let l = netns::listener(ALGOS[pairs % 3], false);
    let mut keep = Vec::with_capacity(2 * pairs);
    for i in 0..pairs {
        let c = TcpStream::connect(l.local_addr().unwrap()).expect("connect");
        netns::set_cc(&c, ALGOS[i % 3]);
        let (s, _) = l.accept().expect("accept");
        netns::set_cc(&s, ALGOS[i % 3]);
        keep.push(c);
        keep.push(s);
    }
    println!("ready");
    let _ = std::io::stdin().read_to_end(&mut Vec::new());
}

/// Starts holders for `pairs` pairs in the calling thread's namespace and
/// waits until all of them are ready.
fn start_holders(pairs: usize) -> Vec<Child> {
    let exe = std::env::current_exe().unwrap();
    let mut children = Vec::new();
    let mut left = pairs;
    while left > 0 {
        let n = left.min(PER_HOLDER);
        left -= n;
        let child = Command::new(&exe)
            .env("BBRKIT_BENCH_HOLDER", n.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn holder");
        children.push(child);
    }
    for c in &mut children {
        let mut line = String::new();
        BufReader::new(c.stdout.as_mut().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert_eq!(line.trim(), "ready", "holder failed");
    }
    children
}

fn ss_tin() {
    let st = Command::new("ss")
        .arg("-tin")
        .stdout(Stdio::null())
        .status()
        .expect("run ss");
    assert!(st.success());
}

fn median_of(runs: usize, f: impl Fn()) -> Duration {
    let mut v: Vec<Duration> = (0..runs)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed()
        })
        .collect();
    v.sort();
    v[runs / 2]
}

fn main() {
    if let Some(n) = std::env::var("BBRKIT_BENCH_HOLDER")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        return hold(n);
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("census bench: needs root (a throwaway network namespace); not run");
        return;
    }
    let pairs: usize = std::env::var("BBRKIT_BENCH_PAIRS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(50_000);
    netns::in_new_netns(move || {
        let t = Instant::now();
        let mut holders = start_holders(pairs);
        eprintln!(
            "{} holders opened {} sockets in {:.1?}",
            holders.len(),
            2 * pairs,
            t.elapsed()
        );
        let n = census(&Filter::default()).expect("census").len();
        assert_eq!(
            n,
            2 * pairs + holders.len(),
            "census sees every socket and listener"
        );

        let c = median_of(5, || {
            census(&Filter::default()).unwrap();
        });
        let s = median_of(5, ss_tin);
        eprintln!(
            "median of 5: census {n} sockets {:.1} ms, ss -tin {:.1} ms (census/ss = {:.2})",
            c.as_secs_f64() * 1e3,
            s.as_secs_f64() * 1e3,
            c.as_secs_f64() / s.as_secs_f64()
        );

        let mut cr = Criterion::default()
            .sample_size(10)
            .measurement_time(Duration::from_secs(10))
            .configure_from_args();
        let label = format!("{}k", n / 1000);
        cr.bench_function(&format!("census/{label}"), |b| {
            b.iter(|| census(&Filter::default()).unwrap())
        });
        cr.bench_function(&format!("census_each/{label}"), |b| {
            b.iter(|| census_each(&Filter::default(), |s| drop(std::hint::black_box(s))).unwrap())
        });
        cr.bench_function(&format!("ss_tin/{label}"), |b| b.iter(ss_tin));
        cr.final_summary();
        for h in &mut holders {
            drop(h.stdin.take());
        }
        for mut h in holders {
            let _ = h.wait();
        }
    });
}
