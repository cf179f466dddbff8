//! `bbrkit conns` / `bbrkit metrics` without root: bad input is a one-line
//! error with exit 2 that changes nothing, and the metrics of this host pass
//! Prometheus's own parser (`promtool check metrics`).

mod common;

use std::process::{Command, Output, Stdio};

use common::bbrkit;

fn usage_error(out: &Output) -> String {
    assert_eq!(
        out.status.code(),
        Some(2),
        "stdout {}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(out.stdout.is_empty());
    let err = String::from_utf8(out.stderr.clone()).unwrap();
    assert!(
        err.starts_with("bbrkit: ") && err.lines().count() == 1,
        "{err}"
    );
    err
}

#[test]
fn bad_flags_are_usage_errors() {
    let e = usage_error(&bbrkit(&["conns", "--state", "bogus"]));
    assert!(e.contains("unknown TCP state 'bogus'"), "{e}");
    let e = usage_error(&bbrkit(&["conns", "--port", "70000"]));
    assert!(e.contains("70000"), "{e}");
    let e = usage_error(&bbrkit(&["conns", "--cc", "no-such-cc"]));
    assert!(
        e.contains("--cc no-such-cc: no such congestion-control algorithm"),
        "{e}"
    );
    let e = usage_error(&bbrkit(&["conns", "--port", "0"]));
    assert!(
        e.contains("'0'"),
        "port 0 would match every listener's remote end: {e}"
    );
}

#[test]
fn textfile_in_missing_directory_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("missing/bbrkit.prom");
    let e = usage_error(&bbrkit(&["metrics", "--textfile", path.to_str().unwrap()]));
    assert!(
        e.contains("cannot write") && e.contains("No such file"),
        "{e}"
    );
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    let e = usage_error(&bbrkit(&[
        "metrics",
        "--textfile",
        dir.path().to_str().unwrap(),
    ]));
    assert!(e.contains("is a directory"), "{e}");
}

#[test]
fn conns_json_is_one_document() {
    let out = bbrkit(&["conns", "--state", "all", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(doc["summary"].is_array() && doc["sockets"].is_array());
    let n: u64 = doc["summary"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["sockets"].as_u64().unwrap())
        .sum();
    assert_eq!(n, doc["sockets"].as_array().unwrap().len() as u64);
    assert_eq!(doc["filter"]["states"].as_array().unwrap().len(), 13);
}

/// `promtool check metrics` on this host's exposition. promtool comes with
/// Debian's `prometheus` package; CI (CI=true) must have it, elsewhere its
/// absence is reported and the test returns.
#[test]
fn metrics_pass_promtool() {
    let promtool = ["/usr/bin/promtool", "/usr/local/bin/promtool"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists());
    let Some(promtool) = promtool else {
        assert!(
            std::env::var_os("CI").is_none(),
            "promtool missing in CI: install Debian's 'prometheus' package"
        );
        eprintln!("SKIPPED: promtool not installed (apt-get install prometheus)");
        return;
    };
    let out = bbrkit(&["metrics"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("# TYPE bbrkit_sockets gauge"));
    let check = |text: &str| common::promtool_check(promtool, text);
    let res = check(&text);
    assert!(
        res.status.success(),
        "promtool rejected the exposition:\n{}{}\n{text}",
        String::from_utf8_lossy(&res.stdout),
        String::from_utf8_lossy(&res.stderr)
    );
    // The check is real: a broken exposition is rejected.
    let broken = text.replacen("bbrkit_sockets{", "bbrkit_sockets{cc=\"x\" ", 1);
    assert!(
        !check(&broken).status.success(),
        "promtool accepted a malformed line"
    );
}

/// A reader that goes away (`bbrkit conns | head -1`) is not a crash: no
/// panic, no backtrace; bbrkit ends like any Unix filter (SIGPIPE, which the
/// shell does not report) or, if it had written everything, with exit 0.
#[test]
fn closed_stdout_is_not_a_panic() {
    for args in [
        &["metrics", "--json"][..],
        &["metrics"],
        &["conns", "--state", "all", "--json"],
    ] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_bbrkit"))
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take()); // close the read end before bbrkit writes
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        use std::os::unix::process::ExitStatusExt;
        assert!(
            out.status.code() == Some(0) || out.status.signal() == Some(libc::SIGPIPE),
            "{args:?}: {:?} {err}",
            out.status
        );
    }
}
