//! CPU cost of bbr3 against the kernel's bbr: one TCP flow over loopback in
//! a throwaway network namespace (MTU 1500, so ACKs come as often as on an
//! Ethernet path), per algorithm, reporting CPU seconds per GB sent (both
//! threads; on loopback the softirq work runs in their context) and, for
//! bbr3, the run time of each BPF program per call (`BPF_ENABLE_STATS`).
//! Needs root; registers bbr3 for its run if it is not registered.
//!
//! ```text
//! cargo run --release -p bbrkit-bpf --example cost -- [SECONDS] [REPEATS]
//! cargo run --release -p bbrkit-bpf --example cost -- --watch SECONDS   # only the BPF stats
//! ```

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

use bbrkit_bpf::bbr3;
use libbpf_rs::query::ProgInfoIter;

fn thread_cpu() -> f64 {
    let t = nix::time::clock_gettime(nix::time::ClockId::CLOCK_THREAD_CPUTIME_ID)
        .expect("thread CPU clock");
    t.tv_sec() as f64 + t.tv_nsec() as f64 / 1e9
}

fn set_cc(stream: &std::net::TcpStream, cc: &str) {
    socket2::SockRef::from(stream)
        .set_tcp_congestion(cc.as_bytes())
        .unwrap_or_else(|e| panic!("TCP_CONGESTION {cc}: {e}"));
}

/// lo up with MTU 1500 in the calling thread's (new) namespace.
fn lo_up_1500() {
    // SAFETY: ioctls on a fresh datagram socket with an ifreq naming "lo".
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_DGRAM, 0);
        let mut ifr: libc::ifreq = std::mem::zeroed();
        for (d, s) in ifr.ifr_name.iter_mut().zip(b"lo\0") {
            *d = *s as libc::c_char;
        }
        ifr.ifr_ifru.ifru_mtu = 1500;
        assert_eq!(libc::ioctl(fd, libc::SIOCSIFMTU, &ifr), 0);
        assert_eq!(libc::ioctl(fd, libc::SIOCGIFFLAGS, &mut ifr), 0);
        ifr.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
        assert_eq!(libc::ioctl(fd, libc::SIOCSIFFLAGS, &ifr), 0);
        libc::close(fd);
    }
}

/// Sends for `secs`; returns (bytes, CPU seconds of sender + receiver).
fn transfer(cc: &str, secs: f64) -> (u64, f64) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let rx = std::thread::spawn(move || {
        let (mut s, _) = l.accept().unwrap();
        let c0 = thread_cpu();
        let mut buf = vec![0u8; 1 << 20];
        let mut n = 0u64;
        loop {
            match s.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(k) => n += k as u64,
            }
        }
        (n, thread_cpu() - c0)
    });
    let mut c = TcpStream::connect(addr).unwrap();
    set_cc(&c, cc);
    let buf = vec![7u8; 1 << 20];
    let c0 = thread_cpu();
    let end = Instant::now() + Duration::from_secs_f64(secs);
    while Instant::now() < end {
        c.write_all(&buf).unwrap();
    }
    let tx_cpu = thread_cpu() - c0;
    drop(c);
    let (n, rx_cpu) = rx.join().unwrap();
    (n, tx_cpu + rx_cpu)
}

/// `(id, name, run_time_ns, run_cnt)` of every bbr3 program.
fn bpf_runtime() -> Vec<(u32, String, u64, u64)> {
    ProgInfoIter::default()
        .filter(|p| p.name.to_string_lossy().starts_with(bbr3::PREFIX))
        .map(|p| {
            (
                p.id,
                p.name.to_string_lossy().into_owned(),
                p.run_time_ns,
                p.run_cnt,
            )
        })
        .collect()
}

/// Per-program run time between two [`bpf_runtime`] readings, per GB.
fn print_runtime(before: &[(u32, String, u64, u64)], after: &[(u32, String, u64, u64)], gb: f64) {
    for (id, name, t1, n1) in after {
        let (t0, n0) = before
            .iter()
            .find(|(b, ..)| b == id)
            .map_or((0, 0), |(_, _, t, n)| (*t, *n));
        if *n1 > n0 {
            let (dt, dn) = (t1 - t0, n1 - n0);
            println!(
                "      {name:16} {dn:9} calls  {:6.0} ns/call  {:.4} s/GB",
                dt as f64 / dn as f64,
                dt as f64 / 1e9 / gb
            );
        }
    }
}

fn main() {
    let mut args = std::env::args().skip(1).peekable();
    let watch = args.peek().is_some_and(|a| a == "--watch");
    if watch {
        args.next();
    }
    let secs: f64 = args.next().map_or(5.0, |s| s.parse().expect("SECONDS"));
    let repeats: usize = args.next().map_or(3, |s| s.parse().expect("REPEATS"));
    let _reg = (!bbrkit_diag::algorithms::is_available("bbr3").unwrap())
        .then(|| bbr3::register(Some(&["bbr3"])).expect("register bbr3"));
    // SAFETY: returns an fd that keeps run-time stats on while open.
    let stats_fd = unsafe { libbpf_sys::bpf_enable_stats(libbpf_sys::BPF_STATS_RUN_TIME) };
    assert!(
        stats_fd >= 0,
        "BPF_ENABLE_STATS: {}",
        std::io::Error::last_os_error()
    );
    if watch {
        // Stats of whatever bbr3 traffic runs meanwhile (e.g. a lab), per
        // call; `SECONDS` is how long to watch.
        let before = bpf_runtime();
        std::thread::sleep(Duration::from_secs_f64(secs));
        print_runtime(&before, &bpf_runtime(), 1.0);
        return;
    }
    let results = std::thread::spawn(move || {
        // SAFETY: CLONE_NEWNET affects this thread only.
        assert_eq!(unsafe { libc::unshare(libc::CLONE_NEWNET) }, 0);
        lo_up_1500();
        let mut out = Vec::new();
        for r in 0..repeats {
            for cc in ["bbr", "bbr3"] {
                let before = bpf_runtime();
                let (bytes, cpu) = transfer(cc, secs);
                let after = bpf_runtime();
                out.push((r, cc, bytes, cpu, before, after));
            }
        }
        out
    })
    .join()
    .unwrap();
    for (r, cc, bytes, cpu, before, after) in results {
        let gb = bytes as f64 / 1e9;
        println!(
            "run {r} {cc:5} {:7.2} Gbit/s  {:.3} CPU s/GB",
            bytes as f64 * 8.0 / secs / 1e9,
            cpu / gb
        );
        if cc == "bbr3" {
            print_runtime(&before, &after, gb);
        }
    }
    // SAFETY: closing our own fd turns the stats off again.
    unsafe { libc::close(stats_fd) };
}
