//! `bbrkit advise` end to end, without root (sock_diag needs no privilege):
//! bad flags are one-line errors with exit 2 and nothing sampled; a short
//! run is one JSON document; a loopback transfer made by this test is found,
//! counted once per socket, and shown in the table.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

fn bbrkit() -> Command {
    Command::new(env!("CARGO_BIN_EXE_bbrkit"))
}

/// The shortest time any case of `bad_flags_are_one_line_errors` would
/// spend sampling if it were not refused first.
const SAMPLED_FIRST: Duration = Duration::from_secs(59);

#[test]
fn bad_flags_are_one_line_errors() {
    for (args, says) in [
        (&["--interval", "0s"][..], "--interval"),
        (
            &["--duration", "59s", "--interval", "60s"][..],
            "at least one interval",
        ),
        (&["--prefix-v4", "33"][..], "--prefix-v4"),
        (&["--prefix-v6", "129"][..], "--prefix-v6"),
        (&["--path-rate", "0"][..], "--path-rate"),
        (&["--path-rate", "fast"][..], "--path-rate"),
        (&["--min-bytes", "1bdp"][..], "--min-bytes"),
        (&["--port", "0"][..], "--port"),
        (&["--duration", "5x"][..], "--duration"),
    ] {
        let start = Instant::now();
        let o = bbrkit().arg("advise").args(args).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(
            err.starts_with("bbrkit: ") && err.contains(says),
            "{args:?}: {err}"
        );
        assert!(o.stdout.is_empty(), "{args:?}");
        // Refused before sampling: every case that gets as far as sampling
        // samples for 59 s or more (the default --duration is 60 s), so
        // half that is no timing claim, only the line between "refused at
        // once" and "sampled first", with room for any loaded machine.
        assert!(
            start.elapsed() < SAMPLED_FIRST / 2,
            "{args:?}: {:?}, refused before sampling",
            start.elapsed()
        );
    }
}

/// A loopback pair moving 64 kB every 20 ms until `stop`.
fn transfer(l: TcpListener, stop: &AtomicBool) {
    let mut c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
    let (mut s, _) = l.accept().unwrap();
    std::thread::scope(|sc| {
        sc.spawn(|| {
            let buf = [7u8; 65536];
            while !stop.load(Ordering::Relaxed) {
                s.write_all(&buf).unwrap();
                std::thread::sleep(Duration::from_millis(20));
            }
        });
        c.set_read_timeout(Some(Duration::from_millis(20))).unwrap();
        let mut buf = [0u8; 65536];
        while !stop.load(Ordering::Relaxed) {
            let _ = c.read(&mut buf);
        }
    });
}

#[test]
fn finds_a_loopback_transfer_once_per_socket() {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port().to_string();
    let stop = AtomicBool::new(false);
    let (json, table) = std::thread::scope(|s| {
        s.spawn(|| transfer(l, &stop));
        std::thread::sleep(Duration::from_millis(100));
        let args = [
            "advise",
            "--duration",
            "1s",
            "--interval",
            "250ms",
            "--port",
            &port,
            "--include-loopback",
            "--prefix-v4",
            "32",
            "--min-bytes",
            "100kb",
        ];
        let json = bbrkit().args(args).arg("--json").output().unwrap();
        let table = bbrkit().args(args).output().unwrap();
        stop.store(true, Ordering::Relaxed);
        (json, table)
    });
    assert!(
        json.status.success(),
        "{}",
        String::from_utf8_lossy(&json.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&json.stdout).expect("one JSON document");
    assert_eq!(doc["sampling"]["sweeps"], 5, "{doc}");
    assert_eq!(doc["connections"], 2, "both ends, each once: {doc}");
    let groups = doc["groups"].as_array().unwrap();
    assert_eq!(groups.len(), 1, "{doc}");
    let g = &groups[0];
    assert_eq!(g["prefix"], "127.0.0.1/32");
    assert_eq!(g["connections"], 2);
    for key in [
        "bytes_sent",
        "min_rtt_ms",
        "loss",
        "cc",
        "limited",
        "predicted_bits_per_second",
        "verdict",
    ] {
        assert!(g.get(key).is_some(), "{key} missing: {g}");
    }
    // ~3.2 MB/s for ~1 s, of which at least half inside the window.
    assert!(g["bytes_sent"].as_u64().unwrap() > 1_000_000, "{g}");
    assert!(
        g["limited"]["app"].as_f64().unwrap() > 0.5,
        "64 kB every 20 ms is mostly idle: {g}"
    );
    let out = String::from_utf8_lossy(&table.stdout);
    assert!(table.status.success());
    assert!(out.starts_with("bbrkit advise: 5 censuses"), "{out}");
    assert!(
        out.contains("127.0.0.1/32") && out.contains("VERDICT"),
        "{out}"
    );
}

/// Issue 21 item 10: without `--include-loopback` the loopback pair was
/// dropped without a word (progress: 2 connections, summary: 0, "no TCP
/// connections to remote hosts were seen"). Now the header and the JSON say
/// what was left out and why.
#[test]
fn loopback_left_out_is_said() {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port().to_string();
    let stop = AtomicBool::new(false);
    let (json, table) = std::thread::scope(|s| {
        s.spawn(|| transfer(l, &stop));
        std::thread::sleep(Duration::from_millis(100));
        let args = [
            "advise",
            "--duration",
            "500ms",
            "--interval",
            "250ms",
            "--port",
            &port,
        ];
        let json = bbrkit().args(args).arg("--json").output().unwrap();
        let table = bbrkit().args(args).output().unwrap();
        stop.store(true, Ordering::Relaxed);
        (json, table)
    });
    let doc: serde_json::Value = serde_json::from_slice(&json.stdout).expect("one JSON document");
    assert_eq!(doc["connections"], 0, "{doc}");
    assert_eq!(doc["loopback_connections_left_out"], 2, "{doc}");
    let out = String::from_utf8_lossy(&table.stdout);
    assert!(
        out.contains("0 connections (and 2 connections to loopback addresses, left out: they never cross a network; --include-loopback keeps them)"),
        "{out}"
    );
    assert!(
        out.contains("no TCP connections to remote hosts were seen (2 connections to loopback addresses left out)"),
        "{out}"
    );
    assert!(!out.contains("1 sockets"), "{out}");
}
