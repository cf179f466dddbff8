//! `bbrkit lab` end to end: errors, output files, and that SIGINT, SIGTERM
//! and SIGKILL (+ `--cleanup`) leave nothing behind. Root tests run the real
//! binary; its labs live in namespaces it creates and removes.

mod common;

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn bbrkit() -> Command {
    Command::new(env!("CARGO_BIN_EXE_bbrkit"))
}

/// Root tests run one lab at a time: labs in parallel on a 2-core CI
/// machine would compete with each other's real-time emulator threads.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

/// What one lab process built, as the test saw it: the inodes of its named
/// namespaces (a bind mount of an nsfs file has the namespace's inode) and
/// the ids of the eBPF programs it held. Leak checks look at exactly these,
/// so the tests hold while bbrkit runs elsewhere on the host.
#[derive(Debug, Default)]
struct Seen {
    inodes: Vec<u64>,
    programs: Vec<u32>,
}

impl Seen {
    /// Adds what lab `pid` holds now.
    fn note(&mut self, pid: u32) {
        for n in names_of(pid) {
            if let Ok(ino) = bbrkit_diag::netns::inode_of(format!("/run/netns/{n}").as_ref())
                && !self.inodes.contains(&ino)
            {
                self.inodes.push(ino);
            }
        }
        // The process may be exiting: its fdinfo is then gone.
        for id in bbrkit_lab::emulator::bpf::programs_held_by(pid).unwrap_or_default() {
            if !self.programs.contains(&id) {
                self.programs.push(id);
            }
        }
    }

    /// What lab `pid` holds now.
    fn of(pid: u32) -> Seen {
        let mut seen = Seen::default();
        seen.note(pid);
        seen
    }
}

/// Asserts that what a lab that has exited built is gone: none of its
/// namespaces exists anywhere and none of its eBPF programs is loaded. The
/// kernel frees a namespace (and a program) shortly after its last
/// reference.
fn assert_gone(seen: &Seen) {
    let until = Instant::now() + Duration::from_secs(5);
    loop {
        let live = common::live_namespaces();
        let left: Vec<_> = seen.inodes.iter().filter(|i| live.contains(i)).collect();
        let progs: Vec<_> = seen
            .programs
            .iter()
            .filter(|&&id| {
                bbrkit_lab::emulator::bpf::program_loaded(id).expect("look up a program")
            })
            .collect();
        if left.is_empty() && progs.is_empty() {
            return;
        }
        assert!(
            Instant::now() < until,
            "namespaces still alive: {left:?}, eBPF programs still loaded: {progs:?} (of {seen:?})"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Waits for `child` to exit, noting what it holds until then (a lab that
/// was signalled during set-up may still build something before it
/// notices); its stdout and stderr, when piped, are read meanwhile.
fn wait_noting(mut child: std::process::Child, seen: &mut Seen) -> std::process::Output {
    let stdout = drain(child.stdout.take());
    let stderr = drain(child.stderr.take());
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        seen.note(child.id());
        std::thread::sleep(Duration::from_millis(5));
    };
    std::process::Output {
        status,
        stdout: stdout.join().expect("read stdout"),
        stderr: stderr.join().expect("read stderr"),
    }
}

/// Reads `pipe` to its end on a thread.
fn drain<R: std::io::Read + Send + 'static>(pipe: Option<R>) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        if let Some(mut p) = pipe {
            p.read_to_end(&mut bytes).expect("read a pipe");
        }
        bytes
    })
}

fn names_of(pid: u32) -> Vec<String> {
    let prefix = format!("bbrk{pid}-");
    std::fs::read_dir("/run/netns")
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with(&prefix))
                .collect()
        })
        .unwrap_or_default()
}

fn host_links() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir("/sys/class/net")
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// Starts a lab with named namespaces and waits until they exist.
/// `bbrkit` with default signal dispositions: whatever the test runner
/// ignores (e.g. SIGHUP under nohup), the lab starts as from a terminal.
fn bbrkit_default_signals() -> Command {
    let mut cmd = bbrkit();
    // SAFETY: the closure runs in the forked child and only calls signal(2),
    // which is async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
                libc::signal(sig, libc::SIG_DFL);
            }
            Ok(())
        });
    }
    cmd
}

fn start_named_lab() -> std::process::Child {
    start_named_lab_with(&[])
}

/// [`start_named_lab`] with `extra` arguments.
fn start_named_lab_with(extra: &[&std::ffi::OsStr]) -> std::process::Child {
    let child = bbrkit_default_signals()
        .args([
            "lab",
            "--netns-names",
            "--runs",
            "1",
            "--duration",
            "4s",
            "--delay",
            "5ms",
        ])
        .args(["--loss", "1%", "--cc", "cubic", "--retries", "0"])
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn bbrkit");
    let until = Instant::now() + Duration::from_secs(20);
    while names_of(child.id()).len() < 3 {
        assert!(Instant::now() < until, "lab namespaces never appeared");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(1500)); // in the middle of the run
    child
}

fn signal_leaves_nothing(sig: i32, code: i32) {
    let _g = serial();
    signal_leaves_nothing_with(sig, code, &[]);
}

/// [`signal_leaves_nothing`] of a lab with `extra` arguments (the caller
/// holds [`serial`]).
fn signal_leaves_nothing_with(sig: i32, code: i32, extra: &[&std::ffi::OsStr]) {
    let links = host_links();
    let child = start_named_lab_with(extra);
    let pid = child.id();
    let mut seen = Seen::of(pid);
    assert_eq!(seen.inodes.len(), 3);
    assert!(!seen.programs.is_empty(), "the split emulator's programs");
    // SAFETY: kill(2) of our own child.
    unsafe { libc::kill(pid as i32, sig) };
    let out = wait_noting(child, &mut seen);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "stderr: {stderr}");
    assert!(stderr.contains("interrupted"), "stderr: {stderr}");
    assert!(names_of(pid).is_empty(), "names left: {:?}", names_of(pid));
    assert_gone(&seen);
    assert_eq!(host_links(), links);
}

/// Ctrl-C in the middle of a workload: the server process, its cgroup and
/// the namespaces are all gone.
#[test]
#[ignore = "needs root"]
fn sigint_mid_workload_leaves_nothing() {
    let _g = serial();
    let extra = ["--workload".as_ref(), "10kb".as_ref()];
    let links = host_links();
    let child = start_named_lab_with(&extra);
    let pid = child.id();
    let mut seen = Seen::of(pid);
    let cgroup = format!("/sys/fs/cgroup/unified/bbrkit-lab-{pid}");
    let servers = std::fs::read_to_string(format!("{cgroup}/cgroup.procs")).unwrap_or_default();
    assert!(!servers.trim().is_empty(), "a server runs in {cgroup}");
    // SAFETY: kill(2) of our own child.
    unsafe { libc::kill(pid as i32, libc::SIGINT) };
    let out = wait_noting(child, &mut seen);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "stderr: {stderr}");
    assert!(names_of(pid).is_empty());
    assert_gone(&seen);
    assert!(!Path::new(&cgroup).exists(), "{cgroup} left behind");
    for server in servers.lines() {
        assert!(
            !Path::new(&format!("/proc/{server}")).exists(),
            "server {server} still runs"
        );
    }
    assert_eq!(host_links(), links);
}

/// A second Ctrl-C ends the lab at once, without waiting for the teardown;
/// its `--netns-names` names are removed all the same.
#[test]
#[ignore = "needs root"]
fn second_sigint_exits_at_once_leaving_nothing() {
    let _g = serial();
    let child = start_named_lab();
    let pid = child.id();
    let mut seen = Seen::of(pid);
    // Two SIGINTs sent back to back may reach the process as one (a
    // standard signal pending twice is delivered once): the second is
    // sent once the first has had time to start the teardown.
    // SAFETY: kill(2) of our own child.
    unsafe { libc::kill(pid as i32, libc::SIGINT) };
    std::thread::sleep(Duration::from_millis(20));
    // SAFETY: as above.
    unsafe { libc::kill(pid as i32, libc::SIGINT) };
    let out = wait_noting(child, &mut seen);
    assert_eq!(out.status.code(), Some(130), "{out:?}");
    // Issue 21 item 12: it says what happened (it used to exit silently).
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("second signal (2)"), "{stderr}");
    assert!(names_of(pid).is_empty(), "names left: {:?}", names_of(pid));
    assert_gone(&seen);
}

/// SIGINT or SIGTERM at random moments from start-up through setup into the
/// run: whatever was built is gone afterwards. The seed is printed.
#[test]
#[ignore = "needs root"]
fn signals_at_random_moments_leave_nothing() {
    let _g = serial();
    // BBRKIT_TEST_SEED repeats a run; the seed is printed.
    let mut x = bbrkit_cc::testing::fresh_test_seed() | 1;
    let links = host_links();
    for i in 0..4 {
        // xorshift64: a delay of 0..1000 ms after spawning.
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let delay = Duration::from_millis(x % 1000);
        let (sig, code) = if i % 2 == 0 {
            (libc::SIGINT, 130)
        } else {
            (libc::SIGTERM, 143)
        };
        let child = bbrkit_default_signals()
            .args(["lab", "--netns-names", "--runs", "1", "--duration", "3s"])
            .args(["--delay", "5ms", "--loss", "1%", "--cc", "cubic"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn bbrkit");
        let pid = child.id();
        let start = Instant::now();
        let mut seen = Seen::default();
        while start.elapsed() < delay {
            seen.note(pid);
            std::thread::sleep(Duration::from_millis(5));
        }
        // SAFETY: kill(2) of our own child.
        unsafe { libc::kill(pid as i32, sig) };
        let out = wait_noting(child, &mut seen);
        let stderr = String::from_utf8_lossy(&out.stderr);
        println!(
            "signal {sig} after {delay:?} ({} namespaces, {} eBPF programs seen): {:?} {stderr}",
            seen.inodes.len(),
            seen.programs.len(),
            out.status
        );
        // Before the lab blocks the signal, its default action ends the
        // process (nothing is built yet); afterwards the lab exits 128+sig.
        use std::os::unix::process::ExitStatusExt;
        assert!(
            out.status.code() == Some(code) || out.status.signal() == Some(sig),
            "{:?} stderr: {stderr}",
            out.status
        );
        assert!(names_of(pid).is_empty(), "names left: {:?}", names_of(pid));
        assert_gone(&seen);
    }
    assert_eq!(host_links(), links);
}

#[test]
#[ignore = "needs root"]
fn sigint_mid_run_leaves_nothing() {
    signal_leaves_nothing(libc::SIGINT, 130);
}

#[test]
#[ignore = "needs root"]
fn sigterm_mid_run_leaves_nothing() {
    signal_leaves_nothing(libc::SIGTERM, 143);
}

#[test]
#[ignore = "needs root"]
fn sighup_mid_run_leaves_nothing() {
    signal_leaves_nothing(libc::SIGHUP, 129);
}

/// `--out`, `--timeseries` and `--plot` files in `dir`.
fn out_files(dir: &Path) -> [std::path::PathBuf; 3] {
    ["lab.json", "lab.csv", "lab.svg"].map(|n| dir.join(n))
}

/// Ctrl-C of a lab asked for `--out`, `--timeseries` and `--plot`: exit 130
/// and neither a file (final or temporary) nor a namespace is left.
#[test]
#[ignore = "needs root"]
fn sigint_with_output_files_leaves_no_file_and_no_namespace() {
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let [json, csv, svg] = out_files(dir.path());
    let args = [
        "--out".as_ref(),
        json.as_os_str(),
        "--timeseries".as_ref(),
        csv.as_os_str(),
        "--plot".as_ref(),
        svg.as_os_str(),
    ];
    signal_leaves_nothing_with(libc::SIGINT, 130, &args);
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(left.is_empty(), "files left: {left:?}");
}

#[test]
#[ignore = "needs root"]
fn cleanup_removes_what_sigkill_left() {
    let _g = serial();
    let mut child = start_named_lab();
    let pid = child.id();
    let seen = Seen::of(pid);
    child.kill().expect("SIGKILL");
    child.wait().expect("wait");
    assert_eq!(
        names_of(pid).len(),
        3,
        "a SIGKILLed named lab leaves its names"
    );
    // A lab that is still running keeps its names.
    let running = start_named_lab();
    let out = bbrkit()
        .args(["lab", "--cleanup", "--json"])
        .output()
        .expect("cleanup");
    assert!(out.status.success());
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    let removed: Vec<String> = doc["removed"]
        .as_array()
        .expect("removed")
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    for n in ["client", "router", "server"] {
        let path = format!("/run/netns/bbrk{pid}-{n}");
        assert!(removed.contains(&path), "{path} in {removed:?}");
    }
    assert!(names_of(pid).is_empty());
    assert_gone(&seen);
    let running_seen = Seen::of(running.id());
    assert_eq!(
        names_of(running.id()).len(),
        3,
        "a running lab is left alone"
    );
    assert!(
        !removed
            .iter()
            .any(|r| r.contains(&format!("bbrk{}-", running.id())))
    );
    // SAFETY: kill(2) of our own child.
    unsafe { libc::kill(running.id() as i32, libc::SIGINT) };
    let rid = running.id();
    assert_eq!(running.wait_with_output().unwrap().status.code(), Some(130));
    assert!(names_of(rid).is_empty());
    assert_gone(&running_seen);
}

#[test]
#[ignore = "needs root"]
fn short_run_writes_json_csv_and_svg() {
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let [out, csv, svg] = out_files(dir.path());
    let o = bbrkit()
        .args([
            "lab",
            "--json",
            "--runs",
            "1",
            "--duration",
            "1s",
            "--delay",
            "5ms",
        ])
        .args([
            "--loss",
            "0,1%",
            "--cc",
            "cubic,bbr",
            "-P",
            "2",
            "--seed",
            "7",
        ])
        .arg("--out")
        .arg(&out)
        .arg("--timeseries")
        .arg(&csv)
        .arg("--plot")
        .arg(&svg)
        .output()
        .expect("run");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).expect("one JSON document");
    let file: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(doc, file, "--out holds the same report");
    assert_eq!(doc["seed"], 7);
    let conds = doc["conditions"].as_array().unwrap();
    assert_eq!(conds.len(), 2);
    assert_eq!(conds[1]["loss"], 0.01);
    assert_eq!(conds[1]["delay_ms"], 5.0);
    // Unrated conditions run on the split emulator here (the kernel has
    // tcx and no netem).
    assert_eq!(doc["emulator"], "split");
    assert!(conds.iter().all(|c| c["emulator"] == "split"), "{conds:?}");
    for c in conds {
        let results = c["results"].as_array().unwrap();
        assert_eq!(results[0]["cc"], "cubic");
        assert_eq!(results[1]["cc"], "bbr");
        for r in results {
            assert!(r["bits_per_second"].as_f64().unwrap() > 0.0);
            let runs = r["runs"].as_array().unwrap();
            assert_eq!(runs.len(), 1);
            assert_eq!(runs[0]["flows"].as_array().unwrap().len(), 2);
            assert_eq!(runs[0]["flows"][0]["sender_tcp_congestion"], r["cc"]);
            assert!(runs[0]["retransmits"].is_u64());
            assert!(runs[0]["flows"][0]["end"]["snd_cwnd"].is_u64());
            // One run: the median is that run; a run is the sum of its flows.
            assert_eq!(r["bits_per_second"], runs[0]["bits_per_second"]);
            let flows_sum: f64 = runs[0]["flows"]
                .as_array()
                .unwrap()
                .iter()
                .map(|f| f["bits_per_second"].as_f64().unwrap())
                .sum();
            let run_bps = runs[0]["bits_per_second"].as_f64().unwrap();
            assert!(
                (flows_sum - run_bps).abs() <= 1e-6 * run_bps,
                "{flows_sum} vs {run_bps}"
            );
            // iperf3's names and units: RTTs in µs, at least the 5 ms delay.
            for f in runs[0]["flows"].as_array().unwrap() {
                let end = &f["end"];
                assert!(end["min_rtt"].as_u64().unwrap() >= 5000, "{end}");
                assert!(end["rtt"].as_u64().unwrap() >= 5000, "{end}");
                assert!(f["retransmits"].is_u64());
            }
        }
    }
    let csv = std::fs::read_to_string(&csv).unwrap();
    assert!(csv.starts_with("condition,cc,run,flow,t_s,"));
    assert!(csv.lines().count() > 20, "samples every 100 ms");
    assert!(std::fs::read_to_string(&svg).unwrap().contains("<svg"));
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains(".tmp-"))
        .collect();
    assert!(leftovers.is_empty(), "no temporary files left");
}

#[test]
#[ignore = "needs root"]
fn unknown_algorithm_is_a_clear_error() {
    let o = bbrkit()
        .args(["lab", "--cc", "cubic,nosuchcc"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(
        e.starts_with("bbrkit: ") && e.contains("nosuchcc") && e.contains("cubic"),
        "{e}"
    );
}

#[test]
#[ignore = "needs root"]
fn non_root_is_refused() {
    let nobody = common::NobodyBin::new();
    let o = nobody
        .command()
        .args(["lab", "--runs", "1"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.starts_with("bbrkit: ") && e.contains("root"), "{e}");
}

#[test]
#[ignore = "needs root"]
fn no_namespaces_is_a_clear_error() {
    // Root without CAP_SYS_ADMIN (dropped from the bounding set, as in a
    // container) cannot create network namespaces.
    const CAP_SYS_ADMIN: libc::c_ulong = 21; // linux/capability.h
    let links = host_links();
    let mut cmd = bbrkit();
    cmd.args(["lab", "--runs", "1", "--duration", "1s", "--netns-names"]);
    // SAFETY: the closure runs in the forked child and only calls prctl(2),
    // which is async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            if libc::prctl(libc::PR_CAPBSET_DROP, CAP_SYS_ADMIN, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let o = cmd.output().unwrap();
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(
        e.starts_with("bbrkit: ") && e.contains("cannot create network namespaces"),
        "{e}"
    );
    assert_eq!(e.matches("os error").count(), 1, "the OS error once: {e}");
    assert!(o.stdout.is_empty());
    assert_eq!(host_links(), links);
}

#[test]
fn bad_units_are_usage_errors() {
    for args in [
        &["lab", "--delay", "10"][..],
        &["lab", "--loss", "150%"][..],
        &["lab", "--rate", "fast"][..],
        &["lab", "--buffer", "lots"][..],
    ] {
        let o = bbrkit().args(args).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let e = String::from_utf8_lossy(&o.stderr);
        assert!(
            e.starts_with("bbrkit: ") && e.lines().count() == 1,
            "{args:?}: {e}"
        );
    }
    assert!(Path::new(env!("CARGO_BIN_EXE_bbrkit")).exists());
}

/// Runs `bbrkit lab --json --netns-names ARGS` to the end, noting its
/// namespaces and eBPF programs while they exist; returns the output and
/// the report (what it built is gone by then, or it panics).
fn run_named_json(args: &[&str]) -> (std::process::Output, serde_json::Value) {
    let child = bbrkit()
        .args(["lab", "--json", "--netns-names"])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn bbrkit");
    let pid = child.id();
    let mut seen = Seen::default();
    let until = Instant::now() + Duration::from_secs(20);
    while seen.inodes.len() < 3 && Instant::now() < until {
        seen.note(pid);
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(seen.inodes.len(), 3, "the lab's namespaces never appeared");
    let out = wait_noting(child, &mut seen);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    // `--netns-names` says where the namespaces are.
    assert!(
        stderr.contains(&format!("/run/netns/bbrk{pid}-client")),
        "{stderr}"
    );
    // Off a terminal, one progress line per run.
    assert!(stderr.contains("bbrkit lab: [1/"), "{stderr}");
    assert!(names_of(pid).is_empty(), "names left: {:?}", names_of(pid));
    assert_gone(&seen);
    let cgroup = format!("/sys/fs/cgroup/unified/bbrkit-lab-{pid}");
    assert!(!Path::new(&cgroup).exists(), "{cgroup} left behind");
    let doc = serde_json::from_slice(&out.stdout).expect("one JSON document");
    (out, doc)
}

/// Two flows of one algorithm on a rate-limited path share it fairly. The
/// same run also writes `--plot` and `--timeseries` (no extra lab run), and
/// its `--json` has the keys of `bbrkit sim --compete --json`.
#[test]
#[ignore = "needs root"]
fn compete_of_identical_algorithms_shares_fairly() {
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let (csv, svg) = (dir.path().join("c.csv"), dir.path().join("c.svg"));
    let (_, doc) = run_named_json(&[
        "--compete",
        "--cc",
        "cubic,cubic",
        "--rate",
        "50mbit",
        "--delay",
        "20ms",
        "--runs",
        "1",
        "--duration",
        "10s",
        "--seed",
        "3",
        "--timeseries",
        csv.to_str().unwrap(),
        "--plot",
        svg.to_str().unwrap(),
    ]);
    assert_eq!(doc["mode"], "compete");
    let run = &doc["runs"][0];
    let flows = run["flows"].as_array().unwrap();
    assert_eq!(flows.len(), 2);
    let jain = run["jain_index"].as_f64().unwrap();
    assert!(jain >= 0.9, "Jain's index {jain}: {flows:?}");
    let shares: f64 = flows.iter().map(|f| f["share"].as_f64().unwrap()).sum();
    assert!((shares - 1.0).abs() < 1e-9);
    let util = run["link"]["utilization"].as_f64().unwrap();
    assert!(util > 0.7 && util <= 1.0, "{util}");
    assert!(run["link"]["queue_delay_ms"]["p50"].as_f64().unwrap() >= 0.0);
    assert_eq!(flows[0]["sender_tcp_congestion"], "cubic");
    // TCP_INFO every 100 ms of both flows for 10 s; one panel of shares.
    let rows = assert_csv(&csv, SAMPLE_HEADER);
    assert!(rows >= 2 * 50, "{rows} samples of two 10 s flows");
    assert_svg(&svg);
    same_shape_as_sim_compete(&doc);
}

/// The header of `--timeseries` of bulk and competing flows.
const SAMPLE_HEADER: &str = "condition,cc,run,flow,t_s,bytes_acked,goodput_bits_per_second,retransmits,snd_cwnd,rtt_us,min_rtt_us,pacing_rate_bits_per_second,delivery_rate_bits_per_second";

/// Asserts that `path` is a CSV file with `header` and at least one row,
/// every row with the header's number of fields; returns the row count.
fn assert_csv(path: &Path, header: &str) -> usize {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some(header), "{}", path.display());
    let fields = |line: &str| {
        // Commas outside double quotes (the condition label is quoted).
        let mut quoted = false;
        1 + line
            .chars()
            .filter(|&c| {
                quoted ^= c == '"';
                c == ',' && !quoted
            })
            .count()
    };
    let want = fields(header);
    let mut rows = 0;
    for line in lines {
        assert_eq!(fields(line), want, "{}: {line}", path.display());
        rows += 1;
    }
    assert!(rows > 0, "{}: no rows", path.display());
    rows
}

/// Asserts that `path` is a well-formed SVG document: one `<svg>` root
/// element, every tag closed in order, nothing after the root.
fn assert_svg(path: &Path) {
    let text = std::fs::read_to_string(path).unwrap();
    let mut stack: Vec<&str> = Vec::new();
    let mut roots = 0;
    let mut rest = text.as_str();
    while let Some(open) = rest.find('<') {
        let close = rest[open..].find('>').expect("an unclosed tag") + open;
        let tag = &rest[open + 1..close];
        rest = &rest[close + 1..];
        if tag.starts_with('?') || tag.starts_with('!') {
            continue;
        }
        if let Some(name) = tag.strip_prefix('/') {
            assert_eq!(stack.pop(), Some(name.trim()), "{}", path.display());
            continue;
        }
        let name = tag
            .split_whitespace()
            .next()
            .unwrap_or("")
            .trim_end_matches('/');
        if stack.is_empty() {
            roots += 1;
            assert_eq!(name, "svg", "{}: root element", path.display());
        }
        if !tag.ends_with('/') {
            stack.push(name);
        }
    }
    assert!(stack.is_empty(), "{}: unclosed {stack:?}", path.display());
    assert_eq!(roots, 1, "{}", path.display());
    assert!(
        rest.trim().is_empty(),
        "{}: text after the root",
        path.display()
    );
}

/// The keys `bbrkit lab --compete --json` shares with `bbrkit sim --compete
/// --json` (docs/lab.md), as JSON pointers; `*` stands for every element.
const SHARED_COMPETE_KEYS: &[&str] = &[
    "/mode",
    "/path/bits_per_second",
    "/path/rtt_ms",
    "/path/buffer_bytes",
    "/path/duration_s",
    "/path/seed",
    "/runs/*/loss",
    "/runs/*/duration_s",
    "/runs/*/jain_index",
    "/runs/*/link/bits_per_second",
    "/runs/*/link/buffer_bytes",
    "/runs/*/link/utilization",
    "/runs/*/link/queue_delay_ms/p50",
    "/runs/*/link/queue_delay_ms/p95",
    "/runs/*/link/queue_delay_ms/p99",
    "/runs/*/flows/*/flow",
    "/runs/*/flows/*/cc",
    "/runs/*/flows/*/start_s",
    "/runs/*/flows/*/bytes_delivered",
    "/runs/*/flows/*/bits_per_second",
    "/runs/*/flows/*/share",
    "/runs/*/flows/*/retransmits",
    "/runs/*/flows/*/rtt_ms/p50",
    "/runs/*/flows/*/rtt_ms/p95",
    "/runs/*/flows/*/rtt_ms/p99",
];

/// The JSON type of every value `pointer` (with `*` for every array
/// element) reaches in `doc`; empty when it reaches none.
fn kinds_at(doc: &serde_json::Value, pointer: &str) -> Vec<&'static str> {
    let mut here = vec![doc];
    for part in pointer.split('/').skip(1) {
        here = here
            .into_iter()
            .flat_map(|v| match (part, v) {
                ("*", serde_json::Value::Array(a)) => a.iter().collect(),
                (_, serde_json::Value::Object(o)) => o.get(part).into_iter().collect(),
                _ => Vec::new(),
            })
            .collect();
    }
    here.into_iter()
        .map(|v| match v {
            serde_json::Value::Null => "null",
            serde_json::Value::Bool(_) => "bool",
            serde_json::Value::Number(_) => "number",
            serde_json::Value::String(_) => "string",
            serde_json::Value::Array(_) => "array",
            serde_json::Value::Object(_) => "object",
        })
        .collect()
}

/// Issue 24: `lab --compete --json` has the shape of `sim --compete
/// --json`. The simulator runs the lab's path (a cheap 2 s run).
fn same_shape_as_sim_compete(lab: &serde_json::Value) {
    let o = bbrkit()
        .args(["sim", "--json", "--compete", "--cc", "cubic,cubic"])
        .args(["--rate", "50mbit", "--rtt", "20ms", "--duration", "2s"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let sim: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    for key in SHARED_COMPETE_KEYS {
        let (l, s) = (kinds_at(lab, key), kinds_at(&sim, key));
        assert!(
            !l.is_empty() && !s.is_empty(),
            "{key}: lab {l:?}, sim {s:?}"
        );
        let mut all = l.clone();
        all.extend(&s);
        assert!(
            all.iter().all(|k| *k == all[0]),
            "{key}: lab {l:?}, sim {s:?}"
        );
    }
    assert_eq!(lab["mode"], sim["mode"]);
    assert_eq!(
        kinds_at(lab, "/runs/*/flows/*/flow").len(),
        kinds_at(&sim, "/runs/*/flows/*/flow").len(),
        "one entry per flow in both"
    );
}

/// The p50 and p90 completion times of `class` per algorithm, pooled over
/// the runs the lab did not mark spoiled (its own verdict: late frames or
/// drops outside the emulated link, after its repeat), from the per-request
/// rows of `--timeseries` (`condition,cc,run,request,bytes,fct_ms`).
/// Returns (cc, requests, p50, p90) in the report's order.
fn unspoiled_fct(
    doc: &serde_json::Value,
    csv: &Path,
    class: bbrkit_vocab::workload::SizeClass,
) -> Vec<(String, usize, f64, f64)> {
    let text = std::fs::read_to_string(csv).unwrap();
    let rows: Vec<(String, u64, u64, f64)> = text
        .lines()
        .skip(1)
        .map(|line| {
            // From the end: the condition label is quoted and may hold commas.
            let f: Vec<&str> = line.rsplitn(6, ',').collect();
            let num = |i: usize| f[i].parse::<f64>().unwrap();
            (f[4].to_string(), num(3) as u64, num(1) as u64, num(0))
        })
        .collect();
    let results = doc["conditions"][0]["results"].as_array().unwrap();
    results
        .iter()
        .map(|r| {
            let cc = r["cc"].as_str().unwrap();
            let good: Vec<u64> = r["runs"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|run| !run["spoiled"].as_bool().unwrap())
                .map(|run| run["run"].as_u64().unwrap())
                .collect();
            assert!(!good.is_empty(), "every {cc} run spoiled: {r}");
            let fct: Vec<f64> = rows
                .iter()
                .filter(|(c, run, bytes, _)| {
                    c == cc
                        && good.contains(run)
                        && bbrkit_vocab::workload::SizeClass::of(*bytes) == class
                })
                .map(|row| row.3)
                .collect();
            let n = fct.len();
            let q = bbrkit_vocab::stats::FctQuantiles::of(fct).expect("completed requests");
            (cc.to_string(), n, q.p50, q.p90)
        })
        .collect()
}

/// `004_*`: large objects over a long lossy path complete several times
/// sooner with BBR. The run also writes `--timeseries` (one row per
/// request) and `--plot` (FCT CDFs).
///
/// Medians, not tails: CUBIC completes only ~10 requests in a run, so its
/// p99 is its slowest request and one run's tail against another's would
/// decide the test. The claim is physical (CUBIC at 1 % loss and 100 ms
/// RTT is loss-bound, ~3 Mbit/s per flow by Mathis et al., so 4 MB takes
/// ~10 s; BBR is not) and a loaded CPU can only slow BBR.
///
/// The path has a rate (200 Mbit/s, 25 Mbit/s per client): without one,
/// BBR runs as fast as the 2 CPUs let it (~280 Mbit/s) and the machine,
/// not the path, is the bottleneck. CI once saw the ACK forwarder 13 % late
/// there (17 713 of 132 282 ACKs > 500 µs, limit 10 %), and the lab rightly
/// marked both attempts spoiled. With the rate, 12:50 UTC, five other
/// builds running: p50 BBR 1 402 ms (59 requests), CUBIC 12 396 ms (10),
/// ratio 8.8, no run spoiled, 1.3 % of data frames late; at 100 Mbit/s the
/// ratio was 5.9 (BBR 2 334 ms). The test asks for 5x at 200 Mbit/s: BBR's
/// median would have to grow 1.8x to fail it.
#[test]
#[ignore = "needs root"]
fn workload_4mb_at_50ms_and_1pct_loss_bbr_finishes_5x_sooner() {
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let (csv, svg) = (dir.path().join("w.csv"), dir.path().join("w.svg"));
    let (_, doc) = run_named_json(&[
        "--timeseries",
        csv.to_str().unwrap(),
        "--plot",
        svg.to_str().unwrap(),
        "--workload",
        "4mb",
        "--clients",
        "8",
        "--cc",
        "cubic,bbr",
        "--delay",
        "50ms",
        "--loss",
        "1%",
        "--rate",
        "200mbit",
        "--runs",
        "1",
        "--duration",
        "10s",
        "--seed",
        "5",
    ]);
    assert_eq!(doc["mode"], "workload");
    let results = doc["conditions"][0]["results"].as_array().unwrap();
    let requests: u64 = results
        .iter()
        .map(|r| r["requests"].as_u64().unwrap())
        .sum();
    let rows = assert_csv(&csv, "condition,cc,run,request,bytes,fct_ms");
    assert_eq!(rows as u64, requests, "one row per completed request");
    assert_svg(&svg);
    assert_eq!(results[1]["server_tcp_congestion"][0], "bbr");
    let fct = unspoiled_fct(&doc, &csv, bbrkit_vocab::workload::SizeClass::To10Mb);
    println!("4 MB at 50 ms + 1 %: (cc, requests, p50 ms, p90 ms) {fct:?}");
    let [(c, cn, cubic, _), (b, bn, bbr, _)] = &fct[..] else {
        panic!("two algorithms: {fct:?}")
    };
    assert_eq!((c.as_str(), b.as_str()), ("cubic", "bbr"));
    assert!(*cn >= 4 && *bn >= 4, "requests: cubic {cn}, bbr {bn}");
    assert!(
        bbr * 5.0 < *cubic,
        "p50 bbr {bbr:.0} ms vs cubic {cubic:.0} ms: not 5x sooner"
    );
}

/// `--keepalive` skips the handshake: on the same path its median 10 kB
/// completion time is about one round trip (50 ms here) below a new
/// connection per request's.
#[test]
#[ignore = "needs root"]
fn workload_keepalive_saves_one_round_trip() {
    let _g = serial();
    let p50 = |keepalive: bool| {
        let mut args = vec!["--workload", "10kb", "--clients", "8", "--cc", "cubic"];
        args.extend([
            "--delay",
            "50ms",
            "--runs",
            "1",
            "--duration",
            "4s",
            "--seed",
            "8",
        ]);
        if keepalive {
            args.push("--keepalive");
        }
        let (_, doc) = run_named_json(&args);
        assert_eq!(doc["workload"]["keepalive"], keepalive);
        let class = &doc["conditions"][0]["results"][0]["classes"]["lt_100kb"];
        assert!(class["requests"].as_u64().unwrap() > 100, "{class}");
        let p = |q: &str| class["fct_ms"][q].as_f64().unwrap();
        (p("p50"), p("p90"))
    };
    let (fresh, fresh_p90) = p50(false);
    let (kept, kept_p90) = p50(true);
    println!(
        "10 kB at 50 ms: p50/p90 {fresh:.1}/{fresh_p90:.1} ms new connection per request, \
         {kept:.1}/{kept_p90:.1} ms keep-alive; saved {:.1} ms",
        fresh - kept
    );
    // Medians of 300-600 requests each, each against the physical floor,
    // not one median against the other's: a loaded machine only adds to a
    // completion time, and more to a new connection's (connect, accept and
    // a server thread each wait for a CPU) than to a kept one's. Measured
    // at load average 7 from other builds, twice each, alternating: p50
    // 103.4 / 105.2 ms new, 52.3 / 51.5 ms kept; with a `bbrkit lab` loop
    // beside (load 11.8): 112.6 ms new, 51.7 ms kept (saved 60.8 ms, 9 ms
    // short of the old bound on the difference, 35-70 ms).
    // A new connection: handshake + request, two 50 ms round trips at least.
    assert!(fresh >= 100.0, "new-connection p50 {fresh} ms");
    // Keep-alive: request + response, one round trip at least, and below
    // one and a half: the handshake's round trip is gone (with it, the
    // median could not be under 100 ms).
    assert!(
        (50.0..75.0).contains(&kept),
        "keep-alive p50 {kept:.1} ms, not about one 50 ms round trip"
    );
}

/// `004_*`: short responses finish alike — the connection is too short for
/// the algorithm to matter (10 kB is 7 segments, inside both algorithms'
/// initial window of 10: two round trips, 100 ms, for either). What lies
/// above 100 ms is the machine (a client, server or emulator thread waiting
/// for a CPU), so the test compares medians and p90s, pooled over three
/// runs per algorithm interleaved in time (the lab runs cubic 1, bbr 1,
/// cubic 2, ...: a slow spell of the machine lands on both), without the
/// runs the lab itself marks spoiled. The p99 is not asserted: it is the
/// machine's tail, not the algorithm's (docs/compete-workload.md).
///
/// Spread, measured 08:55-08:57 UTC on the 2-vCPU VM at load average 6-7
/// from other builds, `lab --workload 10kb --clients 16 --cc cubic,bbr
/// --delay 50ms --runs 3 --duration 4s`, seeds 7 and 8 (12 runs of ~600
/// requests): single-run p50 101.3-105.8 ms, p90 105.6-123.0 ms, p99
/// 114.5-235.7 ms (one run's p99 against another's: up to 2x); pooled over
/// three runs, bbr/cubic p50 0.99-1.00 and p90 0.96-1.03; the test's own
/// first run (09:02 UTC, load 7.8) p50 105.8 / 103.0 ms (0.97), p90 122.9 /
/// 114.8 ms (0.93). The bounds, 10 % at p50 and 25 % at p90, lie between
/// that noise (single runs 4 % and 16 %) and the smallest difference an
/// algorithm could make here: one more round trip, +50 %.
#[test]
#[ignore = "needs root"]
fn workload_10kb_at_50ms_p50_and_p90_agree() {
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("w.csv");
    let (_, doc) = run_named_json(&[
        "--timeseries",
        csv.to_str().unwrap(),
        "--workload",
        "10kb",
        "--clients",
        "16",
        "--cc",
        "cubic,bbr",
        "--delay",
        "50ms",
        "--runs",
        "3",
        "--duration",
        "4s",
        "--seed",
        "6",
    ]);
    let fct = unspoiled_fct(&doc, &csv, bbrkit_vocab::workload::SizeClass::Under100Kb);
    println!("10 kB at 50 ms: (cc, requests, p50 ms, p90 ms) {fct:?}");
    let [(c, cn, c50, c90), (b, bn, b50, b90)] = &fct[..] else {
        panic!("two algorithms: {fct:?}")
    };
    assert_eq!((c.as_str(), b.as_str()), ("cubic", "bbr"));
    // ~600 requests a run, ~1800 pooled; even one unspoiled run gives the
    // p90 as the 30th-slowest of 300.
    assert!(*cn > 300 && *bn > 300, "requests: cubic {cn}, bbr {bn}");
    for (q, c, b, tol) in [("p50", c50, b50, 0.1), ("p90", c90, b90, 0.25)] {
        assert!(
            (b / c - 1.0).abs() <= tol,
            "{q}: cubic {c:.1} ms, bbr {b:.1} ms, not within {tol}"
        );
        // A new connection per request: handshake + request = 2 RTTs.
        assert!(
            *c >= 100.0 && *b >= 100.0,
            "{q}: below two 50 ms round trips"
        );
    }
}

/// `--cc host` in a named cgroup: the server process runs there while the
/// lab runs, its connections use the host's default, and the lab leaves the
/// cgroup it did not create in place.
#[test]
#[ignore = "needs root"]
fn workload_with_cc_host_runs_the_server_in_the_named_cgroup() {
    let _g = serial();
    let cg =
        Path::new("/sys/fs/cgroup/unified").join(format!("bbrkit-test-{}", std::process::id()));
    std::fs::create_dir(&cg).unwrap();
    let child = bbrkit()
        .args([
            "lab",
            "--json",
            "--workload",
            "web",
            "--clients",
            "4",
            "--cc",
            "host",
        ])
        .args([
            "--delay",
            "5ms",
            "--runs",
            "1",
            "--duration",
            "3s",
            "--cgroup",
        ])
        .arg(&cg)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut seen = Vec::new();
    let until = Instant::now() + Duration::from_secs(30);
    while seen.is_empty() && Instant::now() < until {
        seen = std::fs::read_to_string(cg.join("cgroup.procs"))
            .unwrap_or_default()
            .lines()
            .map(String::from)
            .collect();
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!seen.is_empty(), "no process ever joined {}", cg.display());
    let exe = std::fs::read_link(format!("/proc/{}/exe", seen[0])).ok();
    assert!(cg.is_dir(), "the lab removed a cgroup it did not create");
    let empty = std::fs::read_to_string(cg.join("cgroup.procs")).unwrap();
    std::fs::remove_dir(&cg).unwrap();
    assert!(empty.is_empty(), "processes left in the cgroup: {empty}");
    if let Some(exe) = exe {
        assert!(exe.to_string_lossy().contains("bbrkit"), "{exe:?}");
    }
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["cgroup"], cg.display().to_string());
    assert_eq!(doc["cgroup_created"], false);
    assert_eq!(doc["cc_on"], "host");
    let r = &doc["conditions"][0]["results"][0];
    assert_eq!(r["cc"], "host");
    let default = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_congestion_control").unwrap();
    assert_eq!(
        r["server_tcp_congestion"][0],
        default.trim(),
        "the host's default decides"
    );
    assert!(r["requests"].as_u64().unwrap() > 0);
}

/// Issue 21 item 4: an output that cannot be written fails at once, before
/// any namespace exists (before, the lab ran to the end and then lost its
/// results).
#[test]
fn unwritable_outputs_fail_at_once_before_the_lab() {
    let ro = tempfile::tempdir().unwrap();
    let mut perms = std::fs::metadata(ro.path()).unwrap().permissions();
    use std::os::unix::fs::PermissionsExt;
    perms.set_mode(0o555);
    std::fs::set_permissions(ro.path(), perms).unwrap();
    let in_ro = ro.path().join("x.svg");
    let cases: [(&str, &std::ffi::OsStr, &str); 3] = [
        ("--out", "/proc/version".as_ref(), "/proc"),
        ("--timeseries", "/sys/x.csv".as_ref(), "/sys"),
        ("--plot", in_ro.as_os_str(), "x.svg"),
    ];
    for (flag, path, says) in cases {
        if flag == "--plot" && nix::unistd::geteuid().is_root() {
            continue; // root writes into a 0555 directory
        }
        let start = Instant::now();
        let child = bbrkit()
            .args([
                "lab",
                "--netns-names",
                "--runs",
                "1",
                "--duration",
                "60s",
                flag,
            ])
            .arg(path)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let pid = child.id();
        let o = child.wait_with_output().unwrap();
        let e = String::from_utf8_lossy(&o.stderr);
        // At once, not after the lab: the lab asked for runs 2 x 60 s
        // (cubic and bbr), so anything under half a run is "before the
        // lab" on any machine, however loaded; no timing claim beyond that.
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "{flag}: {:?}, so the lab ran first",
            start.elapsed()
        );
        assert_eq!(o.status.code(), Some(2), "{flag}: {e}");
        assert!(
            e.starts_with("bbrkit: ") && e.contains(flag) && e.contains(says),
            "{e}"
        );
        assert_eq!(e.lines().count(), 1, "{e}");
        assert!(names_of(pid).is_empty());
        assert!(!e.contains("namespaces:"), "no namespace was built: {e}");
    }
}

/// Issue 21 item 6: a bare number is not a rate or a size, and a bare
/// fraction of 0.2 or more is not a loss (it used to mean 100 bit/s and
/// 50 %).
#[test]
fn bare_rates_sizes_and_large_fractions_are_refused() {
    for (args, hint) in [
        (&["sim", "--rate", "100"][..], "100mbit"),
        (&["lab", "--rate", "100"][..], "100mbit"),
        (&["advise", "--path-rate", "100"][..], "100mbit"),
        (&["sim", "--buffer", "64"][..], "64kb"),
        (&["lab", "--buffer", "150000"][..], "150000b"),
        (&["sim", "--loss", "0.5"][..], "50%"),
        (&["lab", "--loss", "0.2"][..], "20%"),
        (&["sim", "--loss", "2"][..], "2%"),
    ] {
        let o = bbrkit().args(args).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let e = String::from_utf8_lossy(&o.stderr);
        assert!(
            e.starts_with("bbrkit: ") && e.lines().count() == 1,
            "{args:?}: {e}"
        );
        assert!(e.contains(hint), "{args:?}: {e}");
    }
}

/// `--ecn-threshold` on the kernel: both namespaces negotiate ECN, the
/// emulator CE-marks CUBIC's data once more than 20 packets wait, and CUBIC
/// (RFC 3168: halve on ECE) backs off long before its 100-packet buffer
/// fills; the same path without the threshold is loss-driven and overflows.
/// Counts, not times: a stalled emulator changes neither verdict.
#[test]
#[ignore = "needs root"]
fn ecn_threshold_marks_and_cubic_backs_off_before_the_buffer_fills() {
    let _g = serial();
    let run = |ecn: &[&str]| -> serde_json::Value {
        let o = bbrkit()
            .args(["lab", "--json", "--cc", "cubic", "--runs", "1"])
            .args(["--duration", "3s", "--delay", "2ms", "--rate", "40mbit"])
            .args(["--buffer", "100pkt"])
            .args(ecn)
            .output()
            .expect("run");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        doc["conditions"][0]["results"][0]["runs"][0]["emulator"]["data"].clone()
    };
    let marked = run(&["--ecn-threshold", "20pkt"]);
    let ecn = &marked["ecn"];
    assert!(ecn["ce_marked"].as_u64().unwrap() > 0, "{marked}");
    assert_eq!(marked["buffer_drops"], 0, "{marked}");
    let plain = run(&[]);
    assert!(plain.get("ecn").is_none(), "{plain}");
    assert!(plain["buffer_drops"].as_u64().unwrap() > 0, "{plain}");
}
