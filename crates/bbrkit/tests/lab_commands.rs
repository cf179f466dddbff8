//! `bbrkit lab --server-cmd/--client-cmd` and `--hold` end to end with a
//! real third-party server and clients: nginx (Debian's `nginx-light`,
//! configured from a temporary directory: no daemon, no master, pid, logs
//! and temporary files there, never the host's configuration), curl and
//! wrk, all from `contrib/deps.sh test`. Root tests: the labs live in
//! namespaces they create; the checks look for exactly the processes,
//! namespaces, programs and cgroup the lab made.

mod common;

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// One lab at a time (their emulators' real-time threads would compete).
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

/// The object nginx serves: 4 MB, the size.
const OBJECT_BYTES: usize = 4_000_000;

/// nginx serving [`OBJECT_BYTES`] on port 8080 from a temporary directory.
struct Nginx {
    dir: tempfile::TempDir,
}

impl Nginx {
    fn new() -> Nginx {
        for tool in [
            "/usr/sbin/nginx",
            "/usr/bin/curl",
            "/usr/bin/wrk",
            "/usr/bin/nsenter",
        ] {
            assert!(
                Path::new(tool).exists(),
                "{tool} missing: install the test packages with contrib/deps.sh test"
            );
        }
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().display();
        let obj: Vec<u8> = (0..OBJECT_BYTES).map(|i| (i % 251) as u8).collect();
        std::fs::write(dir.path().join("obj"), obj).unwrap();
        let conf = format!(
            "daemon off;\nmaster_process off;\npid {d}/nginx.pid;\nerror_log {d}/error.log;\n\
             events {{ worker_connections 64; }}\n\
             http {{\n  access_log off;\n  client_body_temp_path {d}/body;\n\
             proxy_temp_path {d}/proxy;\n  fastcgi_temp_path {d}/fastcgi;\n\
             uwsgi_temp_path {d}/uwsgi;\n  scgi_temp_path {d}/scgi;\n\
             server {{ listen 8080; root {d}; }}\n}}\n"
        );
        std::fs::write(dir.path().join("nginx.conf"), conf).unwrap();
        Nginx { dir }
    }

    /// `--server-cmd`: nginx in the foreground (`-e` before the config is
    /// read, so the default error log is never opened).
    fn server_cmd(&self) -> String {
        let d = self.dir.path().display();
        format!("exec nginx -p {d} -e {d}/error.log -c {d}/nginx.conf")
    }

    /// `--client-cmd`: curl fetching the object, printing the line the lab
    /// reads (`bbrkit-fct` time, size, status); the URL carries the
    /// directory so the test can find curl.
    fn client_cmd(&self, curl_args: &str) -> String {
        format!(
            "curl -sS {curl_args} -o /dev/null \
             -w 'bbrkit-fct %{{time_total}} %{{size_download}} %{{http_code}}\\n' \
             \"{}\"",
            self.url()
        )
    }

    /// The object's URL (as a shell word: `$BBRKIT_SERVER_ADDR` expands).
    fn url(&self) -> String {
        format!(
            "http://$BBRKIT_SERVER_ADDR:8080/obj?{}",
            self.dir.path().display()
        )
    }

    /// Every process whose command line names the directory: nginx, curl
    /// and the lab's wrappers of both.
    fn processes(&self) -> Vec<u32> {
        let marker = self.dir.path().to_string_lossy().into_owned();
        let mut out = Vec::new();
        for p in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
            let Ok(pid) = p.file_name().to_string_lossy().parse::<u32>() else {
                continue;
            };
            let cmdline = std::fs::read(p.path().join("cmdline")).unwrap_or_default();
            if String::from_utf8_lossy(&cmdline).contains(&marker) && pid != std::process::id() {
                out.push(pid);
            }
        }
        out
    }
}

/// The network namespace (inode) of process `pid`.
fn netns_of(pid: u32) -> Option<u64> {
    let link = std::fs::read_link(format!("/proc/{pid}/ns/net")).ok()?;
    bbrkit_diag::netns::parse_link(&link.to_string_lossy())
}

/// What a running lab made, as the test saw it.
#[derive(Debug, Default)]
struct Made {
    processes: Vec<u32>,
    namespaces: Vec<u64>,
    programs: Vec<u32>,
}

impl Made {
    /// Notes the commands' processes, their namespaces and the lab's eBPF
    /// programs.
    fn note(&mut self, lab: u32, nginx: &Nginx) {
        let host = netns_of(std::process::id());
        for pid in nginx.processes() {
            if !self.processes.contains(&pid) {
                self.processes.push(pid);
            }
            if let Some(ns) = netns_of(pid)
                && Some(ns) != host
                && !self.namespaces.contains(&ns)
            {
                self.namespaces.push(ns);
            }
        }
        for id in bbrkit_lab::emulator::bpf::programs_held_by(lab).unwrap_or_default() {
            if !self.programs.contains(&id) {
                self.programs.push(id);
            }
        }
    }

    /// Waits (5 s at most: the kernel frees a namespace shortly after its
    /// last reference) until none of it exists.
    fn assert_gone(&self) {
        let until = Instant::now() + Duration::from_secs(5);
        loop {
            let procs: Vec<_> = self
                .processes
                .iter()
                .filter(|p| Path::new(&format!("/proc/{p}")).exists())
                .collect();
            let live = common::live_namespaces();
            let ns: Vec<_> = self
                .namespaces
                .iter()
                .filter(|n| live.contains(n))
                .collect();
            let progs: Vec<_> = self
                .programs
                .iter()
                .filter(|&&id| bbrkit_lab::emulator::bpf::program_loaded(id).unwrap())
                .collect();
            if procs.is_empty() && ns.is_empty() && progs.is_empty() {
                return;
            }
            assert!(
                Instant::now() < until,
                "left: processes {procs:?}, namespaces {ns:?}, programs {progs:?} (of {self:?})"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// The cgroup a lab with pid `pid` creates.
fn lab_cgroup(pid: u32) -> PathBuf {
    Path::new("/sys/fs/cgroup/unified").join(format!("bbrkit-lab-{pid}"))
}

/// `bbrkit` with default signal dispositions (whatever the runner ignores).
fn bbrkit() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_bbrkit"));
    // SAFETY: the closure runs in the forked child and only calls
    // signal(2), which is async-signal-safe.
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

/// Runs `bbrkit lab --json --emulator split` with the commands and
/// `args`; returns the report (asserting the lab left nothing).
fn lab_json(nginx: &Nginx, client: &str, args: &[&str]) -> serde_json::Value {
    let stdout = lab_run(nginx, client, &[&["--json"], args].concat());
    serde_json::from_str(&stdout).expect("one JSON document")
}

/// Runs `bbrkit lab --emulator split` with the commands and `args`;
/// returns its standard output (asserting the lab left nothing).
fn lab_run(nginx: &Nginx, client: &str, args: &[&str]) -> String {
    let mut child = bbrkit()
        .args(["lab", "--emulator", "split", "--server-cmd"])
        .arg(nginx.server_cmd())
        .arg("--client-cmd")
        .arg(client)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || std::io::read_to_string(stdout).unwrap());
    let stderr = child.stderr.take().unwrap();
    let err_reader = std::thread::spawn(move || std::io::read_to_string(stderr).unwrap());
    let mut made = Made::default();
    while child.try_wait().unwrap().is_none() {
        made.note(child.id(), nginx);
        std::thread::sleep(Duration::from_millis(50));
    }
    let status = child.wait().unwrap();
    let (stdout, stderr) = (reader.join().unwrap(), err_reader.join().unwrap());
    assert!(status.success(), "{stderr}");
    assert!(!made.namespaces.is_empty(), "no command was seen running");
    made.assert_gone();
    assert!(!lab_cgroup(child.id()).exists(), "the lab's cgroup is left");
    stdout
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The workload: nginx serving 4 MB to curl over the split
/// emulator at 50 ms each way + 1 % loss, cubic against bbr. CUBIC is
/// loss-bound there (Mathis et al.: ~1.22·MSS/(RTT·√p) ≈ 14 Mbit/s at
/// 100 ms and 1 %, so ≥ 2.3 s plus slow start), BBR is not (~0.8 s
/// measured at 200 Mbit/s). The path is rated at 200 Mbit/s so the 2 CPUs,
/// not the path, are never the bottleneck; five interleaved runs per
/// algorithm, the runs the lab marks spoiled left out, medians of the FCT
/// the lab read from curl's `bbrkit-fct` line (`client_report`) compared.
/// 13:47 UTC, other builds running: cubic 9.7-13.2 s (median 11.2), bbr
/// 0.76-0.82 s (median 0.79, one run spoiled and left out), 14x. The test
/// asks for 2x: BBR's median would have to grow ~7x to fail it.
///
/// The same runs check that `--cc` reached nginx's sockets (the lab's
/// sock_ops program on its cgroup), that curl's output is kept and that
/// the lab's reading of it is curl's own line.
#[test]
#[ignore = "needs root"]
fn nginx_4mb_to_curl_at_50ms_and_1pct_loss_bbr_finishes_sooner() {
    let _g = serial();
    let nginx = Nginx::new();
    let doc = lab_json(
        &nginx,
        &nginx.client_cmd(""),
        &[
            "--cc",
            "cubic,bbr",
            "--delay",
            "50ms",
            "--loss",
            "1%",
            "--rate",
            "200mbit",
            "--runs",
            "5",
            "--duration",
            "40s",
            "--seed",
            "36",
        ],
    );
    assert_eq!(doc["mode"], "commands");
    let mut medians = Vec::new();
    for r in doc["conditions"][0]["results"].as_array().unwrap() {
        let cc = r["cc"].as_str().unwrap();
        let mut fct = Vec::new();
        for run in r["runs"].as_array().unwrap() {
            assert_eq!(run["exit_code"], 0, "{run}");
            assert_eq!(run["stopped"], false, "{run}");
            let k = &run["server_sockets"];
            assert!(k["connections"].as_u64().unwrap() >= 1, "{run}");
            assert_eq!(k["tcp_congestion"], serde_json::json!([cc]), "{run}");
            // curl's line, kept, and the lab's reading of it.
            let out = run["stdout"].as_str().unwrap();
            let fields: Vec<&str> = out.split_whitespace().collect();
            let [marker, secs, size, code] = fields[..] else {
                panic!("curl's -w line: {out:?}")
            };
            assert_eq!((marker, size, code), ("bbrkit-fct", "4000000", "200"));
            let c = &run["client_report"];
            assert_eq!(c["tool"], "curl", "{run}");
            assert_eq!((&c["transfers"], &c["failed"]), (&1.into(), &0.into()));
            assert_eq!(c["bytes"], OBJECT_BYTES, "{run}");
            let ms = c["fct_ms"][0].as_f64().unwrap();
            let curl_ms = secs.parse::<f64>().unwrap() * 1e3;
            assert!((ms - curl_ms).abs() < 1e-6, "{ms} vs {curl_ms}: {run}");
            assert_eq!(c["fct_p50_ms"], c["fct_ms"][0], "{run}");
            // curl timed its transfer inside the lab's time of the client.
            assert!(ms <= run["elapsed_s"].as_f64().unwrap() * 1e3, "{run}");
            if !run["spoiled"].as_bool().unwrap() {
                fct.push(ms);
            }
        }
        assert!(fct.len() >= 3, "{cc}: only {} unspoiled runs", fct.len());
        medians.push((cc.to_string(), median(fct.clone()), fct));
    }
    println!("4 MB nginx -> curl at 50 ms + 1 %: (cc, median fct ms, runs) {medians:?}");
    let [(c, cubic, _), (b, bbr, _)] = &medians[..] else {
        panic!("two algorithms: {medians:?}")
    };
    assert_eq!((c.as_str(), b.as_str()), ("cubic", "bbr"));
    assert!(
        bbr * 2.0 < *cubic,
        "median fct bbr {bbr:.0} ms vs cubic {cubic:.0} ms: not 2x sooner"
    );
}

/// wrk as the client: the lab finds its summary in the output and reports
/// it (requests, latency percentiles with `--latency`), in `--out`'s JSON
/// and in the table beside the client's time. One short run; nothing here
/// depends on how fast it was.
#[test]
#[ignore = "needs root"]
fn wrk_s_summary_is_read_into_the_report_and_the_table() {
    let _g = serial();
    let nginx = Nginx::new();
    let out = nginx.dir.path().join("report.json");
    let client = format!("exec wrk -t1 -c2 -d2s --latency \"{}\"", nginx.url());
    let table = lab_run(
        &nginx,
        &client,
        &[
            "--cc",
            "bbr",
            "--delay",
            "5ms",
            "--runs",
            "1",
            "--duration",
            "20s",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let run = &doc["conditions"][0]["results"][0]["runs"][0];
    assert_eq!(run["exit_code"], 0, "{run}");
    let w = &run["client_report"];
    assert_eq!(w["tool"], "wrk", "{run}");
    let requests = w["requests"].as_u64().unwrap();
    assert!(requests >= 1, "{run}");
    assert_eq!(
        (&w["socket_errors"], &w["non_2xx_3xx"]),
        (&0.into(), &0.into())
    );
    // Every completed request read the whole object (wrk rounds its size
    // to 2 decimals of a binary unit: 1 % is ample).
    let read = w["bytes_read"].as_f64().unwrap();
    let want = (requests * OBJECT_BYTES as u64) as f64;
    assert!((read / want - 1.0).abs() < 0.01, "{read} vs {want}: {run}");
    let p50 = w["latency_p50_ms"].as_f64().unwrap();
    let p99 = w["latency_p99_ms"].as_f64().unwrap();
    assert!(p50 > 0.0 && p50 <= p99, "{run}");
    // The table: the p50 in its column, the median line per algorithm.
    assert!(table.contains("fct p50 ms"), "{table}");
    assert!(
        table.contains(&format!(
            "median fct (wrk, exit 0, not spoiled): bbr {p50:.1} ms"
        )),
        "{table}"
    );
}

/// `--cc host --cgroup CG` under a live `bbrkit trial` on `CG` (the
/// issue's comparison): the lab attaches nothing, nginx runs in the
/// operator's cgroup, the trial's program gives each of its connections
/// an arm, the lab reads both algorithms back from nginx's sockets and
/// the trial records every connection; the cgroup, the operator's, is
/// left. 20 connections drawn 50/50 per connection: both arms appear
/// but with probability 2·2⁻²⁰.
#[test]
#[ignore = "needs root"]
fn a_trial_on_the_cgroup_splits_the_server_command_s_connections() {
    let _g = serial();
    let nginx = Nginx::new();
    let cg = Path::new("/sys/fs/cgroup/unified")
        .join(format!("bbrkit-test-trial-{}", std::process::id()));
    std::fs::create_dir(&cg).unwrap();
    /// Removes the test's cgroup however the test ends.
    struct Rmdir(PathBuf);
    impl Drop for Rmdir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir(&self.0);
        }
    }
    let _rmdir = Rmdir(cg.clone());
    let cgs = cg.to_str().unwrap();
    let mut trial = bbrkit()
        .args(["trial", "--json", "--arms", "cubic,bbr", "--cgroup", cgs])
        .args(["--duration", "20s", "--interval", "5s", "--seed", "36"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stop = Interrupt(trial.id());
    let mut lines = BufReader::new(trial.stderr.take().unwrap()).lines();
    loop {
        let line = lines.next().expect("the trial ended early").unwrap();
        if line.contains("attached to") {
            break;
        }
    }
    let rest = std::thread::spawn(move || lines.map_while(Result::ok).collect::<Vec<_>>());
    let client = format!(
        "for i in $(seq 20); do {} || exit; done",
        nginx.client_cmd("")
    );
    let doc = lab_json(
        &nginx,
        &client,
        &[
            "--cc",
            "host",
            "--cgroup",
            cgs,
            "--delay",
            "5ms",
            "--runs",
            "1",
            "--duration",
            "60s",
        ],
    );
    assert_eq!(
        (&doc["cc_on"], &doc["cgroup"], &doc["cgroup_created"]),
        (&"host".into(), &cgs.into(), &false.into())
    );
    let run = &doc["conditions"][0]["results"][0]["runs"][0];
    assert_eq!(run["exit_code"], 0, "{run}");
    let c = &run["client_report"];
    assert_eq!(
        (&c["transfers"], &c["failed"]),
        (&20.into(), &0.into()),
        "{run}"
    );
    let k = &run["server_sockets"];
    assert_eq!(k["connections"], 20, "{run}");
    assert_eq!(
        k["tcp_congestion"],
        serde_json::json!(["bbr", "cubic"]),
        "{run}"
    );
    let out = trial.wait_with_output().unwrap();
    std::mem::forget(stop);
    let stderr = rest.join().unwrap().join("\n");
    assert!(out.status.success(), "{stderr}");
    let t: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(t["records"]["closed"], 20, "{stderr}");
    let arms = t["overall"]["arms"].as_array().unwrap();
    let per_arm: Vec<u64> = arms
        .iter()
        .map(|a| a["connections"].as_u64().unwrap())
        .collect();
    assert!(per_arm.iter().all(|&n| n > 0), "{per_arm:?}");
    assert_eq!(per_arm.iter().sum::<u64>(), 20, "{per_arm:?}");
    assert!(cg.exists(), "the operator's cgroup is theirs to remove");
}

/// A client still running at `--duration` is stopped and the run says so;
/// its standard output is kept to the last 64 kB, counted in full.
#[test]
#[ignore = "needs root"]
fn a_client_past_the_duration_is_stopped_and_its_output_tail_kept() {
    let _g = serial();
    let nginx = Nginx::new();
    let client = format!(
        "head -c 100000 /dev/zero | tr '\\0' x; echo END; sleep 60 # {}",
        nginx.dir.path().display()
    );
    let doc = lab_json(
        &nginx,
        &client,
        &[
            "--cc",
            "bbr",
            "--delay",
            "5ms",
            "--runs",
            "1",
            "--duration",
            "2s",
        ],
    );
    let run = &doc["conditions"][0]["results"][0]["runs"][0];
    assert_eq!(run["stopped"], true, "{run}");
    assert!(run["exit_code"].is_null(), "{run}");
    let elapsed = run["elapsed_s"].as_f64().unwrap();
    assert!((2.0..10.0).contains(&elapsed), "{run}");
    let out = run["stdout"].as_str().unwrap();
    assert_eq!(out.len(), 64 * 1024);
    assert!(out.ends_with("xxEND\n"), "{}", &out[out.len() - 10..]);
    assert_eq!(run["stdout_bytes"], 100_004);
}

/// SIGKILL of bbrkit in the middle of a run: nginx, curl, the wrappers,
/// the namespaces, the emulator's programs and the lab's cgroup (removed
/// by the lab's janitor, no `--cleanup` needed) are all gone.
#[test]
#[ignore = "needs root"]
fn sigkill_mid_run_leaves_nothing() {
    let _g = serial();
    let nginx = Nginx::new();
    let mut child = bbrkit()
        .args([
            "lab",
            "--emulator",
            "split",
            "--cc",
            "bbr",
            "--delay",
            "10ms",
        ])
        .args(["--runs", "1", "--duration", "60s", "--server-cmd"])
        .arg(nginx.server_cmd())
        .arg("--client-cmd")
        .arg(nginx.client_cmd("--limit-rate 100k"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut made = Made::default();
    let until = Instant::now() + Duration::from_secs(30);
    // nginx, curl and a wrapper of each.
    while made.processes.len() < 4 || made.namespaces.len() < 2 {
        assert!(Instant::now() < until, "the commands never ran: {made:?}");
        made.note(pid, &nginx);
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(500));
    made.note(pid, &nginx);
    let cgroup = lab_cgroup(pid);
    let procs = std::fs::read_to_string(cgroup.join("cgroup.procs")).unwrap();
    assert!(
        !procs.trim().is_empty(),
        "nginx runs in {}",
        cgroup.display()
    );
    child.kill().unwrap();
    child.wait().unwrap();
    made.assert_gone();
    // The lab's janitor removes its cgroup once the lab is gone.
    let until = Instant::now() + Duration::from_secs(5);
    while cgroup.exists() {
        let left = std::fs::read_to_string(cgroup.join("cgroup.procs")).unwrap_or_default();
        assert!(
            Instant::now() < until,
            "{} left, holding {left:?}",
            cgroup.display()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Sends SIGINT to a lab when a failed assertion unwinds past it, so a
/// held path never outlives the test (disarmed with `mem::forget` once
/// the lab is reaped).
struct Interrupt(u32);

impl Drop for Interrupt {
    fn drop(&mut self) {
        if std::thread::panicking() {
            // SAFETY: kill(2) of the test's own child, not yet reaped.
            unsafe { libc::kill(self.0 as i32, libc::SIGINT) };
        }
    }
}

/// `--hold`: the path comes up with nginx on it, the printed `nsenter` line
/// of the client side reaches it (curl fetches the object), and SIGINT
/// tears everything down: no process, namespace, program or cgroup left.
#[test]
#[ignore = "needs root"]
fn hold_prints_how_to_enter_and_sigint_leaves_nothing() {
    let _g = serial();
    let nginx = Nginx::new();
    let mut child = bbrkit()
        .args(["lab", "--hold", "--emulator", "split", "--cc", "bbr"])
        .args(["--delay", "10ms", "--loss", "1%", "--server-cmd"])
        .arg(nginx.server_cmd())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    // A failed assertion must not leave the path held.
    let stop = Interrupt(pid);
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut enter = None;
    let mut seen = Vec::new();
    while enter.is_none() {
        let line = lines.next().expect("the lab ended early").unwrap();
        if let Some((_, cmd)) = line.split_once("client side (198.18.0.1): ") {
            enter = Some(cmd.to_string());
        }
        seen.push(line);
    }
    let rest = std::thread::spawn(move || lines.map_while(Result::ok).collect::<Vec<_>>());
    let enter = enter.unwrap();
    assert!(
        enter.starts_with(&format!("nsenter --net=/proc/{pid}/fd/")),
        "{enter}"
    );
    assert!(enter.ends_with(" sh"), "{enter}");
    // The printed line, with the shell given a command.
    let fetch = format!(
        "{} -c '{}'",
        enter,
        nginx.client_cmd("").replace('\'', "'\"'\"'")
    );
    let out = Command::new("sh").arg("-c").arg(&fetch).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{fetch}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.trim().ends_with(&format!(" {OBJECT_BYTES} 200")),
        "{text}"
    );
    let mut made = Made::default();
    made.note(pid, &nginx);
    assert!(!made.namespaces.is_empty(), "nginx runs: {made:?}");
    assert!(!made.programs.is_empty(), "the split emulator's programs");
    // SAFETY: kill(2) of our own child.
    unsafe { libc::kill(pid as i32, libc::SIGINT) };
    let status = child.wait().unwrap();
    std::mem::forget(stop);
    let mut stdout = String::new();
    std::io::Read::read_to_string(&mut child.stdout.take().unwrap(), &mut stdout).unwrap();
    let stderr = [seen, rest.join().unwrap()].concat().join("\n");
    assert!(status.success(), "{stderr}");
    assert!(stdout.starts_with("held 10 ms + 1% loss, bbr"), "{stdout}");
    assert!(stdout.contains("path removed"), "{stdout}");
    made.assert_gone();
    assert!(!lab_cgroup(pid).exists(), "the lab's cgroup is left");
}

/// Bad combinations are one line on stderr and exit 2, before anything is
/// built (no root needed to see them).
#[test]
fn bad_command_combinations_are_one_line_and_exit_2() {
    for (args, want) in [
        (&["--server-cmd", "x"][..], "go together"),
        (&["--client-cmd", "x"], "go together"),
        (&["--hold", "--client-cmd", "x"], "cannot be used with"),
        (
            &["--hold", "--cc", "cubic,bbr", "--delay", "5ms"],
            "one --cc",
        ),
        (
            &[
                "--server-cmd",
                "x",
                "--client-cmd",
                "y",
                "--cc-on",
                "receiver",
            ],
            "--cc-on receiver",
        ),
        (
            &[
                "--server-cmd",
                "x",
                "--client-cmd",
                "y",
                "--workload",
                "10kb",
            ],
            "cannot be used with",
        ),
        (&["--hold", "--json"], "leave out --json"),
        (
            &["--cgroup", "/sys/fs/cgroup/x"],
            "give --workload, --server-cmd or --hold",
        ),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_bbrkit"))
            .arg("lab")
            .args(args)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.starts_with("bbrkit: "), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.contains(want), "{args:?}: {stderr}");
    }
}
