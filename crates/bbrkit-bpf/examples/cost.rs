//! CPU cost of bbr3 against the kernel's bbr and cubic on a high-ACK-rate
//! path: one TCP flow over loopback in a throwaway network namespace with
//! MTU 1500 and TSO, GSO and GRO off (every 1448-byte segment is its own
//! packet), a receiver that ACKs every second full segment (`SO_RCVLOWAT`)
//! and a sender that writes 64 KiB at a time: about 100 000 ACKs per GB, as
//! on an Ethernet path without offloads. Per algorithm and run it reports goodput, CPU seconds
//! per GB sent (sender + receiver thread: on loopback the softirq work runs
//! in their context), and for bbr3 the run time of each of its BPF programs
//! per call (`BPF_ENABLE_STATS`, held as a file descriptor only for the
//! measurement: the kernel turns the statistics off again when it closes,
//! also if this process dies) and the socket's sk_storage (`SO_MEMINFO`
//! optmem of the bbr3 sender minus the bbr sender's). Then medians over the
//! runs. Needs root; registers its own bbr3 for the run and refuses to run
//! while someone else has bbr3 registered (its numbers would be theirs).
//!
//! ```text
//! cargo run --release -p bbrkit-bpf --example cost -- [--seconds S] [--repeats N]
//!           [--cc bbr,bbr3,cubic] [--object FILE]   # FILE: another build of bbr3.bpf.o
//!           [--write BYTES]                         # bytes per write (default 65536)
//! cargo run --release -p bbrkit-bpf --example cost -- --watch SECONDS
//!           # only the BPF run time of whatever bbr3 traffic runs meanwhile (a lab)
//! ```

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::fd::{AsFd, AsRawFd};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use bbrkit_bpf::{Loaded, ObjectSource, Registration, bbr3};
use bbrkit_diag::summary::median;
use libbpf_rs::Program;
use libbpf_rs::query::ProgInfoIter;

struct Args {
    seconds: f64,
    repeats: usize,
    ccs: Vec<String>,
    object: Option<PathBuf>,
    watch: Option<f64>,
    write: usize,
}

fn args() -> Args {
    let mut a = Args {
        seconds: 4.0,
        repeats: 5,
        ccs: vec!["bbr".into(), "bbr3".into(), "cubic".into()],
        object: None,
        watch: None,
        write: WRITE,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().unwrap_or_else(|| panic!("{flag} needs a value"));
        match flag.as_str() {
            "--seconds" => a.seconds = value().parse().expect("--seconds"),
            "--repeats" => a.repeats = value().parse().expect("--repeats"),
            "--cc" => a.ccs = value().split(',').map(str::to_string).collect(),
            "--object" => a.object = Some(value().into()),
            "--watch" => a.watch = Some(value().parse().expect("--watch")),
            "--write" => a.write = value().parse().expect("--write BYTES"),
            other => panic!("unknown argument {other}"),
        }
    }
    a
}

fn thread_cpu() -> f64 {
    let t = nix::time::clock_gettime(nix::time::ClockId::CLOCK_THREAD_CPUTIME_ID)
        .expect("thread CPU clock");
    t.tv_sec() as f64 + t.tv_nsec() as f64 / 1e9
}

/// `ioctl(SIOCETHTOOL)` with a `struct ethtool_value` on `lo`.
fn ethtool_set(cmd: u32, data: u32) {
    #[repr(C)]
    struct Value {
        cmd: u32,
        data: u32,
    }
    let mut value = Value { cmd, data };
    // SAFETY: a zeroed ifreq naming "lo" whose data points at `value`,
    // which outlives the ioctl; the socket is ours and closed once.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_DGRAM, 0);
        let mut ifr: libc::ifreq = std::mem::zeroed();
        for (d, s) in ifr.ifr_name.iter_mut().zip(b"lo\0") {
            *d = *s as libc::c_char;
        }
        ifr.ifr_ifru.ifru_data = (&raw mut value).cast();
        let rc = libc::ioctl(fd, libc::SIOCETHTOOL, &ifr);
        let err = std::io::Error::last_os_error();
        libc::close(fd);
        assert_eq!(rc, 0, "ethtool {cmd:#x} on lo: {err}");
    }
}

/// lo up with MTU 1500 and TSO (0x1f), GSO (0x24), GRO (0x2c) off, in the
/// calling thread's (new) namespace.
fn lo_high_ack_rate() {
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
    for cmd in [0x1f, 0x24, 0x2c] {
        ethtool_set(cmd, 0);
    }
}

/// `SO_MEMINFO`'s `SK_MEMINFO_OPTMEM` (index 6) of `s`: option memory,
/// which is where the kernel charges a socket's BPF sk_storage.
fn optmem(s: &TcpStream) -> u32 {
    let mut v = [0u32; 9];
    let mut len = std::mem::size_of_val(&v) as libc::socklen_t;
    // SAFETY: `v` is a writable buffer of `len` bytes; the fd is open.
    let rc = unsafe {
        libc::getsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_MEMINFO,
            v.as_mut_ptr().cast(),
            &mut len,
        )
    };
    assert_eq!(rc, 0, "SO_MEMINFO: {}", std::io::Error::last_os_error());
    v[6]
}

/// Bytes per `write`: small enough that the sender releases the socket
/// often, so ACKs are processed one by one as they arrive instead of being
/// coalesced in the socket backlog while the sender holds the lock (with
/// 1 MiB writes one `cong_control` call covered ~500 KB). The default;
/// `--write BYTES` changes it: on a fast idle machine 64 KiB writes still
/// let ~30 segments' ACKs coalesce per call, 8 KiB writes give ~120 000
/// calls per GB (docs/bpf.md).
const WRITE: usize = 64 << 10;
/// The receiver's `SO_RCVLOWAT` (below).
const RCVLOWAT: libc::c_int = 4 << 20;

/// `SO_RCVLOWAT` on the receiver: while less than this is unread the
/// kernel ACKs every second full segment (`__tcp_ack_snd_check`) instead of
/// only when the application's read opens the window, which on loopback
/// (receiver on the same CPUs) would mean one ACK per read.
fn rcvlowat(s: &TcpStream) {
    let v: libc::c_int = RCVLOWAT;
    // SAFETY: a c_int option value on an open socket.
    let rc = unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVLOWAT,
            (&raw const v).cast(),
            std::mem::size_of_val(&v) as libc::socklen_t,
        )
    };
    assert_eq!(rc, 0, "SO_RCVLOWAT: {}", std::io::Error::last_os_error());
}

/// One transfer.
struct Run {
    cc: String,
    bytes: u64,
    cpu: f64,
    optmem: u32,
    /// (name, run time ns, calls) of each of our BPF programs that ran.
    bpf: Vec<(String, u64, u64)>,
}

/// Sends for `secs`; returns (bytes, CPU seconds of sender + receiver,
/// sender's optmem half-way).
fn transfer(cc: &str, secs: f64, write: usize) -> (u64, f64, u32) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let rx = std::thread::spawn(move || {
        let (mut s, _) = l.accept().unwrap();
        rcvlowat(&s);
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
    socket2::SockRef::from(&c)
        .set_tcp_congestion(cc.as_bytes())
        .unwrap_or_else(|e| panic!("TCP_CONGESTION {cc}: {e}"));
    let buf = vec![7u8; write];
    let c0 = thread_cpu();
    let start = Instant::now();
    let (half, end) = (
        start + Duration::from_secs_f64(secs / 2.0),
        start + Duration::from_secs_f64(secs),
    );
    let mut mem = None;
    while Instant::now() < end {
        c.write_all(&buf).unwrap();
        if mem.is_none() && Instant::now() >= half {
            mem = Some(optmem(&c));
        }
    }
    let tx_cpu = thread_cpu() - c0;
    drop(c);
    let (n, rx_cpu) = rx.join().unwrap();
    (n, tx_cpu + rx_cpu, mem.unwrap_or(0))
}

/// `(id, name, run_time_ns, run_cnt)` of the bbr3 programs in `ids` (all of
/// them when `None`).
fn bpf_runtime(ids: Option<&[u32]>) -> Vec<(u32, String, u64, u64)> {
    ProgInfoIter::default()
        .filter(|p| p.name.to_string_lossy().starts_with(bbr3::PREFIX))
        .filter(|p| ids.is_none_or(|ids| ids.contains(&p.id)))
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

/// Per program that ran between two readings: (name, ns, calls).
fn delta(
    before: &[(u32, String, u64, u64)],
    after: &[(u32, String, u64, u64)],
) -> Vec<(String, u64, u64)> {
    after
        .iter()
        .filter_map(|(id, name, t1, n1)| {
            let (t0, n0) = before
                .iter()
                .find(|(b, ..)| b == id)
                .map_or((0, 0), |(_, _, t, n)| (*t, *n));
            (*n1 > n0).then(|| (name.clone(), t1 - t0, n1 - n0))
        })
        .collect()
}

/// Turns run-time statistics on while the returned fd is open.
fn stats_on() -> std::os::fd::OwnedFd {
    // SAFETY: returns a new fd (or -1); we take ownership of it.
    let fd = unsafe { libbpf_sys::bpf_enable_stats(libbpf_sys::BPF_STATS_RUN_TIME) };
    assert!(
        fd >= 0,
        "BPF_ENABLE_STATS: {}",
        std::io::Error::last_os_error()
    );
    // SAFETY: `fd` is a fresh descriptor nobody else owns.
    unsafe { std::os::fd::FromRawFd::from_raw_fd(fd) }
}

/// The run time per call of every bbr3 program that ran during `secs`
/// (say, a lab's), per program name. Read every 500 ms, so programs that
/// come and go meanwhile (the lab registers bbr3 for its run) are counted
/// up to their last reading.
fn watch(secs: f64) {
    let _stats = stats_on();
    let start = bpf_runtime(None);
    let mut last: HashMap<u32, (String, u64, u64)> = HashMap::new();
    let end = Instant::now() + Duration::from_secs_f64(secs);
    while Instant::now() < end {
        for (id, name, t, n) in bpf_runtime(None) {
            last.insert(id, (name, t, n));
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    let mut by_name: std::collections::BTreeMap<String, (u64, u64)> = Default::default();
    for (id, (name, t, n)) in last {
        let (t0, n0) = start
            .iter()
            .find(|(b, ..)| *b == id)
            .map_or((0, 0), |(_, _, t, n)| (*t, *n));
        let e = by_name.entry(name).or_default();
        e.0 += t - t0;
        e.1 += n - n0;
    }
    for (name, (ns, n)) in by_name.into_iter().filter(|(_, (_, n))| *n > 0) {
        println!(
            "{name:16} {n:9} calls  {:6.0} ns/call",
            ns as f64 / n as f64
        );
    }
}

fn register(object: Option<&PathBuf>) -> Registration {
    assert!(
        !bbrkit_diag::algorithms::is_available("bbr3").unwrap(),
        "bbr3 is registered by someone else: its run time would not be this build's"
    );
    let loaded = match object {
        Some(p) => Loaded::load_only(ObjectSource::File(p), Some(&["bbr3"])),
        None => bbr3::load(Some(&["bbr3"])),
    };
    Registration::register(loaded.expect("load bbr3")).expect("register bbr3")
}

fn main() {
    let a = args();
    if let Some(secs) = a.watch {
        watch(secs);
        return;
    }
    let reg = a
        .ccs
        .iter()
        .any(|c| c == "bbr3")
        .then(|| register(a.object.as_ref()));
    let ids: Vec<u32> = reg
        .iter()
        .flat_map(|r| {
            r.loaded()
                .object()
                .progs()
                .filter_map(|p| Program::id_from_fd(p.as_fd()).ok())
                .collect::<Vec<_>>()
        })
        .collect();
    let _stats = stats_on();
    let (secs, repeats, ccs, write) = (a.seconds, a.repeats, a.ccs.clone(), a.write);
    let runs = std::thread::spawn(move || {
        // SAFETY: CLONE_NEWNET affects this thread only.
        assert_eq!(unsafe { libc::unshare(libc::CLONE_NEWNET) }, 0);
        lo_high_ack_rate();
        let mut out = Vec::new();
        for _ in 0..repeats {
            for cc in &ccs {
                let before = bpf_runtime(Some(&ids));
                let (bytes, cpu, optmem) = transfer(cc, secs, write);
                let bpf = delta(&before, &bpf_runtime(Some(&ids)));
                out.push(Run {
                    cc: cc.clone(),
                    bytes,
                    cpu,
                    optmem,
                    bpf,
                });
            }
        }
        out
    })
    .join()
    .unwrap();
    drop(reg);
    report(&runs, secs, &a.ccs);
}

fn report(runs: &[Run], secs: f64, ccs: &[String]) {
    for r in runs {
        let gb = r.bytes as f64 / 1e9;
        println!(
            "{:5} {:6.2} Gbit/s  {:.3} CPU s/GB  optmem {} B",
            r.cc,
            r.bytes as f64 * 8.0 / secs / 1e9,
            r.cpu / gb,
            r.optmem
        );
        for (name, ns, n) in &r.bpf {
            println!(
                "      {name:16} {n:9} calls  {:6.0} ns/call  {:.4} s/GB  {:.0} calls/GB",
                *ns as f64 / *n as f64,
                *ns as f64 / 1e9 / gb,
                *n as f64 / gb
            );
        }
    }
    let med = |cc: &str, f: &dyn Fn(&Run) -> Option<f64>| {
        let mut v: Vec<f64> = runs.iter().filter(|r| r.cc == cc).filter_map(f).collect();
        median(&mut v)
    };
    println!("\nmedians over {} run(s):", runs.len() / ccs.len().max(1));
    for cc in ccs {
        let cpu = med(cc, &|r| Some(r.cpu / (r.bytes as f64 / 1e9)));
        let rate = med(cc, &|r| Some(r.bytes as f64 * 8.0 / secs / 1e9));
        let mem = med(cc, &|r| Some(f64::from(r.optmem)));
        println!(
            "{cc:5} {:6.2} Gbit/s  {:.3} CPU s/GB  optmem {:.0} B",
            rate.unwrap_or(0.0),
            cpu.unwrap_or(0.0),
            mem.unwrap_or(0.0)
        );
    }
    let main = med("bbr3", &|r| {
        r.bpf
            .iter()
            .find(|(n, ..)| n == "bbr3_main")
            .map(|(_, ns, n)| *ns as f64 / *n as f64)
    });
    if let Some(ns) = main {
        println!("bbr3_main {ns:.0} ns/call (median of runs)");
    }
    let cpu = |cc: &str| med(cc, &|r| Some(r.cpu / (r.bytes as f64 / 1e9)));
    if let (Some(b3), Some(b1)) = (cpu("bbr3"), cpu("bbr")) {
        println!("CPU per GB bbr3 / bbr: {:.2}x", b3 / b1);
    }
    let mem = |cc: &str| med(cc, &|r| Some(f64::from(r.optmem)));
    if let (Some(b3), Some(b1)) = (mem("bbr3"), mem("bbr")) {
        println!(
            "sk_storage per socket: {:.0} B (optmem of bbr3 minus bbr)",
            b3 - b1
        );
    }
}
