//! Records the sock_diag answers the estimator tests replay
//! (`tests/fixtures/`), from real kernel connections in a throwaway lab:
//!
//! `cargo run -p bbrkit-advise --example record -- DIR` (root; run it under
//! `flock /tmp/bbrkit-root.lock`).
//!
//! * `lossy`: kernel CUBIC over 10 ms + 2 % loss + 100 Mbit/s for 3 s; the
//!   server namespace (the sender) also holds a loopback pair
//!   127.0.0.1 → 127.0.0.2 whose writer sends 10 kB every 50 ms (app-limited).
//!   Two censuses of the server and of the client namespace, at ~1.0 s and
//!   ~2.5 s.
//! * `rwnd`: the same path without loss, the client's `tcp_rmem` capped at
//!   32 kB (window-limited); two censuses of the server.
//!
//! Writes `DIR/<case>-<ns>-s<sweep>-<datagram>.bin` and `DIR/sweeps.txt`
//! (`<case>-<ns> <sweep> <seconds since the first census>`).

#[path = "../tests/lab/mod.rs"]
mod lab;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use bbrkit_diag::Filter;
use bbrkit_lab::netns::Netns;

/// Dumps `ns` raw (IPv4 and IPv6) into `DIR/<name>-s<sweep>-<i>.bin`.
fn dump(ns: &Netns, dir: &str, name: &str, sweep: usize) {
    ns.run(|| {
        let mut i = 0;
        for v6 in [false, true] {
            for frame in bbrkit_diag::dump_raw(v6, &Filter::default()).expect("dump") {
                std::fs::write(format!("{dir}/{name}-s{sweep}-{i}.bin"), frame).expect("write");
                i += 1;
            }
        }
        Ok(())
    })
    .expect("enter namespace");
}

/// A loopback pair in the calling thread's namespace whose writer sends
/// 10 kB every 50 ms until `stop`; returns the two sockets' threads' handles.
fn app_limited_pair(stop: &AtomicBool) {
    let l = TcpListener::bind("127.0.0.2:0").expect("listen");
    let c = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    c.bind(
        &"127.0.0.1:0"
            .parse::<std::net::SocketAddr>()
            .unwrap()
            .into(),
    )
    .unwrap();
    c.connect(&l.local_addr().unwrap().into()).unwrap();
    let mut client = TcpStream::from(c);
    let (mut server, _) = l.accept().unwrap();
    std::thread::scope(|s| {
        s.spawn(|| {
            let chunk = [0x5au8; 10_000];
            while !stop.load(Ordering::Relaxed) {
                let _ = server.write_all(&chunk);
                std::thread::sleep(Duration::from_millis(50));
            }
        });
        let mut buf = [0u8; 65536];
        client
            .set_read_timeout(Some(Duration::from_millis(20)))
            .unwrap();
        while !stop.load(Ordering::Relaxed) {
            let _ = client.read(&mut buf);
        }
    });
}

fn main() {
    let dir = std::env::args().nth(1).expect("usage: record DIR");
    std::fs::create_dir_all(&dir).expect("create DIR");
    let mut sweeps = String::new();
    let cond = lab::condition(10, 0.02, 100_000_000);
    lab::with_traffic(&cond, "cubic", 3.0, &[], 11, |topo| {
        let stop = AtomicBool::new(false);
        std::thread::scope(|s| {
            s.spawn(|| {
                topo.server
                    .run(|| {
                        app_limited_pair(&stop);
                        Ok(())
                    })
                    .unwrap()
            });
            let t0 = Instant::now() + Duration::from_millis(1000);
            for (sweep, at) in [(0, Duration::ZERO), (1, Duration::from_millis(1500))] {
                std::thread::sleep((t0 + at).saturating_duration_since(Instant::now()));
                let t = t0.elapsed().as_secs_f64();
                dump(&topo.server, &dir, "lossy-server", sweep);
                dump(&topo.client, &dir, "lossy-client", sweep);
                sweeps += &format!("lossy-server {sweep} {t:.6}\nlossy-client {sweep} {t:.6}\n");
            }
            stop.store(true, Ordering::Relaxed);
        });
    });
    let cond = lab::condition(10, 0.0, 100_000_000);
    lab::with_traffic(
        &cond,
        "cubic",
        3.0,
        &[("client", "net/ipv4/tcp_rmem", "4096 32768 32768")],
        12,
        |topo| {
            let t0 = Instant::now() + Duration::from_millis(1000);
            for (sweep, at) in [(0, Duration::ZERO), (1, Duration::from_millis(1500))] {
                std::thread::sleep((t0 + at).saturating_duration_since(Instant::now()));
                let t = t0.elapsed().as_secs_f64();
                dump(&topo.server, &dir, "rwnd-server", sweep);
                sweeps += &format!("rwnd-server {sweep} {t:.6}\n");
            }
        },
    );
    std::fs::write(format!("{dir}/sweeps.txt"), sweeps).expect("write sweeps.txt");
}
