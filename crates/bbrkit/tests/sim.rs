//! `bbrkit sim` end to end through the binary: JSON contract, determinism,
//! time series and plot files, competition, and bad input (exit 2, one
//! line, no file written).

use std::path::Path;
use std::process::{Command, Output};

fn bbrkit(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_bbrkit"))
        .args(args)
        .output()
        .expect("run bbrkit")
}

fn json(args: &[&str]) -> serde_json::Value {
    let mut all = vec!["sim", "--json"];
    all.extend_from_slice(args);
    let out = bbrkit(&all);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("one JSON document")
}

#[test]
fn json_has_the_contract_fields_per_flow_and_link() {
    let v = json(&[
        "--cc",
        "reno,bbr1",
        "--rate",
        "20mbit",
        "--rtt",
        "20ms",
        "--loss",
        "0,2%",
        "--duration",
        "2s",
    ]);
    assert_eq!(v["mode"], "alone");
    assert_eq!(v["path"]["bits_per_second"], 20_000_000);
    assert_eq!(v["path"]["rtt_ms"], 20.0);
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 4, "2 algorithms x 2 loss rates");
    for run in runs {
        let f = &run["flows"][0];
        assert!(["reno", "bbr1"].contains(&f["cc"].as_str().unwrap()));
        assert!(f["bits_per_second"].as_f64().unwrap() > 0.0);
        assert!(f["retransmits"].is_u64());
        let loss = f["loss"].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&loss));
        for q in ["p50", "p95", "p99"] {
            assert!(f["rtt_ms"][q].as_f64().unwrap() >= 20.0);
        }
        let util = run["link"]["utilization"].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&util));
        assert!(run["link"]["queue_delay_ms"]["p50"].is_number());
    }
    // Ratio to the first algorithm on the same condition.
    assert_eq!(runs[0]["flows"][0]["ratio"], 1.0);
    assert_eq!(runs[2]["loss"], 0.02);
}

#[test]
fn same_seed_gives_identical_output() {
    let args = [
        "sim",
        "--json",
        "--cc",
        "cubic,bbr1",
        "--loss",
        "1%",
        "--duration",
        "2s",
        "--seed",
        "5",
    ];
    let a = bbrkit(&args);
    let b = bbrkit(&args);
    assert!(a.status.success());
    assert_eq!(a.stdout, b.stdout);
    let mut other = args.to_vec();
    other[9] = "6";
    assert_ne!(bbrkit(&other).stdout, a.stdout, "the seed matters");
}

#[test]
fn compete_reports_shares_and_jain_index() {
    let v = json(&["--cc", "bbr1,bbr1", "--compete", "--duration", "5s"]);
    assert_eq!(v["mode"], "compete");
    let run = &v["runs"][0];
    let flows = run["flows"].as_array().unwrap();
    assert_eq!(flows.len(), 2);
    let shares: f64 = flows.iter().map(|f| f["share"].as_f64().unwrap()).sum();
    assert!((shares - 1.0).abs() < 1e-9);
    assert!(run["jain_index"].as_f64().unwrap() > 0.9);
}

#[test]
fn timeseries_and_plot_are_written() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("ts.csv");
    let svg = dir.path().join("plot.svg");
    let out = bbrkit(&[
        "sim",
        "--cc",
        "cubic,bbr1",
        "--duration",
        "2s",
        "--interval",
        "100ms",
        "--timeseries",
        csv.to_str().unwrap(),
        "--plot",
        svg.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&csv).unwrap();
    let mut lines = text.lines();
    assert!(lines.next().unwrap().starts_with("time_s,flow,cc,"));
    let rows: Vec<&str> = lines.collect();
    // 20 samples per run, 2 runs (one flow each).
    assert_eq!(rows.len(), 40);
    assert!(
        rows.iter().any(|r| r.contains(",bbr1,")) && rows.iter().any(|r| r.contains(",cubic,"))
    );
    let plot = std::fs::read_to_string(&svg).unwrap();
    assert!(plot.starts_with("<svg") && plot.contains("polyline"));
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n.to_string_lossy().contains("bbrkit-tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    let human = String::from_utf8(out.stdout).unwrap();
    assert!(
        human.contains("vs cubic") && human.contains("bbr1"),
        "{human}"
    );
}

fn assert_usage_error(args: &[&str], needle: &str) {
    let mut all = vec!["sim"];
    all.extend_from_slice(args);
    let out = bbrkit(&all);
    assert_eq!(out.status.code(), Some(2), "{args:?}");
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(
        err.starts_with("bbrkit: ") && err.contains(needle),
        "{args:?}: {err}"
    );
    assert!(out.stdout.is_empty());
}

#[test]
fn bad_input_exits_2_with_one_line() {
    assert_usage_error(&["--rate", "0"], "rate must be positive");
    assert_usage_error(&["--loss", "150%"], "between 0 and 100%");
    assert_usage_error(&["--rtt", "-1ms"], "must not be negative");
    assert_usage_error(&["--cc", "nosuch"], "unknown congestion control 'nosuch'");
    assert_usage_error(&["--loss", "100%"], "every packet");
    assert_usage_error(&["--duration", "0s"], "--duration");
    assert_usage_error(&["--buffer", "lots"], "--buffer");
    assert_usage_error(
        &["--cc", "bbr1,bbr1", "--start", "0,1s,2s"],
        "3 values for 2 flows",
    );
    assert_usage_error(&["--preset", "nope"], "nope");
}

#[test]
fn unwritable_plot_path_fails_before_simulating_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("ts.csv");
    let bad = Path::new("/nonexistent-bbrkit-dir/plot.svg");
    assert_usage_error(
        &[
            "--duration",
            "600s",
            "--timeseries",
            csv.to_str().unwrap(),
            "--plot",
            bad.to_str().unwrap(),
        ],
        "--plot: cannot write",
    );
    assert!(
        std::fs::read_dir(dir.path()).unwrap().next().is_none(),
        "nothing left behind"
    );
    assert_usage_error(&["--plot", dir.path().to_str().unwrap()], "is a directory");
}

#[test]
fn same_path_for_timeseries_and_plot_is_refused_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run.svg");
    std::fs::write(&out, "previous").unwrap();
    let spelled_otherwise = dir.path().join(".").join("run.svg");
    assert_usage_error(
        &[
            "--duration",
            "1s",
            "--timeseries",
            out.to_str().unwrap(),
            "--plot",
            spelled_otherwise.to_str().unwrap(),
        ],
        "name the same file",
    );
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "previous");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn a_flow_starting_after_the_run_is_refused() {
    assert_usage_error(
        &[
            "--cc",
            "cubic,bbr1",
            "--compete",
            "--start",
            "0,20s",
            "--duration",
            "10s",
        ],
        "flow 1 would start at 20 s",
    );
}

#[test]
fn finite_flows_show_their_completion_time_alone_too() {
    let out = bbrkit(&[
        "sim",
        "--cc",
        "cubic,bbr1",
        "--size",
        "500pkt",
        "--duration",
        "5s",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let human = String::from_utf8(out.stdout).unwrap();
    let header = human.lines().find(|l| l.starts_with("loss")).unwrap();
    assert!(header.trim_end().ends_with("fct s"), "{human}");
    let v = json(&["--cc", "cubic,bbr1", "--size", "500pkt", "--duration", "5s"]);
    for run in v["runs"].as_array().unwrap() {
        let fct = run["flows"][0]["fct_s"].as_f64().expect("finished");
        let cell = format!("{fct:.3}");
        assert!(human.contains(&cell), "{cell} in {human}");
    }
    let bulk = bbrkit(&["sim", "--duration", "1s"]);
    assert!(!String::from_utf8(bulk.stdout).unwrap().contains("fct"));
}

#[test]
fn a_pipe_is_written_into_and_a_symlink_kept_not_replaced() {
    use std::os::unix::fs::FileTypeExt;
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("ts.fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo on a NUL-terminated path in our temporary directory.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read_to_string(fifo).unwrap())
    };
    let out = bbrkit(&[
        "sim",
        "--duration",
        "1s",
        "--timeseries",
        fifo.to_str().unwrap(),
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        std::fs::symlink_metadata(&fifo)
            .unwrap()
            .file_type()
            .is_fifo(),
        "the FIFO was replaced by a regular file"
    );
    let csv = reader.join().unwrap();
    assert!(csv.starts_with("time_s,flow,cc,"), "{csv:.80}");
    assert!(csv.lines().count() > 100);
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        1,
        "no temporary file"
    );
    // A symbolic link to a regular file: the file is replaced, the link kept.
    let real = dir.path().join("real.csv");
    let link = dir.path().join("link.csv");
    std::fs::write(&real, "old").unwrap();
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let out = bbrkit(&[
        "sim",
        "--duration",
        "1s",
        "--timeseries",
        link.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0));
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert!(
        std::fs::read_to_string(&real)
            .unwrap()
            .starts_with("time_s,flow,cc,")
    );
}

#[test]
fn fine_intervals_keep_timestamps_distinct_and_absurd_ones_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("ts.csv");
    let out = bbrkit(&[
        "sim",
        "--cc",
        "bbr1",
        "--duration",
        "20ms",
        "--interval",
        "100us",
        "--timeseries",
        csv.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0));
    let text = std::fs::read_to_string(&csv).unwrap();
    let times: Vec<&str> = text
        .lines()
        .skip(1)
        .map(|l| l.split(',').next().unwrap())
        .collect();
    assert!(times.len() >= 190, "{}", times.len());
    let mut unique = times.clone();
    unique.dedup();
    assert_eq!(unique.len(), times.len(), "a timestamp repeats: {times:?}");
    // Before the first RTT sample srtt_ms is empty, not 0.
    let first = text.lines().nth(1).unwrap();
    assert_eq!(first.split(',').nth(11), Some(""), "{first}");
    std::fs::remove_file(&csv).unwrap();
    assert_usage_error(
        &[
            "--duration",
            "1s",
            "--interval",
            "1ns",
            "--timeseries",
            csv.to_str().unwrap(),
        ],
        "use a longer interval",
    );
    assert!(std::fs::read_dir(dir.path()).unwrap().next().is_none());
}

#[test]
fn presets_run() {
    let v = json(&["--preset", "seed", "--duration", "1s", "--rate", "100mbit"]);
    assert_eq!(
        v["runs"].as_array().unwrap().len(),
        6,
        "cubic,bbr1 x 0,2%,5%"
    );
    assert_eq!(v["path"]["rtt_ms"], 10.0);
    let v = json(&["--preset", "fairness", "--duration", "2s"]);
    assert_eq!(v["mode"], "compete");
    let v = json(&["--preset", "bufferbloat", "--duration", "2s"]);
    assert_eq!(v["path"]["buffer_bytes"], 2_500_000);
}

#[test]
fn ctrl_c_leaves_no_file_behind() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("ts.csv");
    let mut child = Command::new(env!("CARGO_BIN_EXE_bbrkit"))
        .args([
            "sim",
            "--rate",
            "1gbit",
            "--duration",
            "600s",
            "--timeseries",
        ])
        .arg(&csv)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let tmp = dir.path().join(".ts.csv.bbrkit-tmp");
    let t0 = std::time::Instant::now();
    while !tmp.exists() {
        assert!(t0.elapsed().as_secs() < 20, "temporary file never appeared");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    std::thread::sleep(std::time::Duration::from_millis(200));
    // SAFETY: sends SIGINT to our own child.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    assert!(
        std::fs::read_dir(dir.path()).unwrap().next().is_none(),
        "nothing left"
    );
}
