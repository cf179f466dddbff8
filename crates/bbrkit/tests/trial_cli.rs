//! `bbrkit trial` end to end: bad input exits 2 with one line before
//! anything is attached; SIGKILL leaves nothing attached; Ctrl-C prints the
//! report of what was gathered (a lab's traffic, one record per request)
//! and leaves nothing. Root tests run the real binary in a throwaway network
//! namespace with a throwaway child cgroup.

#[path = "../../bbrkit-trial-live/tests/sandbox/mod.rs"]
mod sandbox;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bbrkit_bpf::sockops::cgroup;
use bbrkit_trial_live::testing::Held;

fn bbrkit() -> Command {
    Command::new(env!("CARGO_BIN_EXE_bbrkit"))
}

/// A `bbrkit trial` running, its stderr lines collected as they come.
struct Running {
    child: Child,
    lines: Arc<Mutex<Vec<String>>>,
}

impl Running {
    fn start(args: &[&str]) -> Running {
        let mut child = bbrkit()
            .arg("trial")
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let lines = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&lines);
        let err = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for l in BufReader::new(err).lines().map_while(Result::ok) {
                sink.lock().unwrap().push(l);
            }
        });
        Running { child, lines }
    }

    /// The first stderr line `pick` accepts, within 30 s.
    fn wait_line<T>(&self, what: &str, pick: impl Fn(&str) -> Option<T>) -> T {
        let until = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(t) = self.lines.lock().unwrap().iter().find_map(|l| pick(l)) {
                return t;
            }
            assert!(Instant::now() < until, "no {what} in {:?}", self.lines);
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The program and link the trial attached, from its first line.
    fn held(&self) -> Held {
        self.wait_line("attached line", |l| {
            let rest = l.split_once("(program ")?.1;
            let (prog, rest) = rest.split_once(", link ")?;
            let link = rest.split_once(',')?.0;
            Some(Held::of(prog.parse().ok()?, link.parse().ok()?))
        })
    }
}

/// Every trial object gone and nothing on the cgroup.
fn assert_nothing_left(held: &Held, cg: &std::path::Path) {
    assert_eq!(held.wait_gone(Duration::from_secs(5)), None, "left behind");
    assert!(cgroup::sock_ops_programs(cg, false).unwrap().is_empty());
}

#[test]
fn bad_input_exits_2_with_one_line_before_attaching() {
    let dir = tempfile::tempdir().unwrap();
    let prom = dir.path().join("trial.prom");
    let prom = prom.to_str().unwrap();
    // Definition files (`--definition`), beside the textfile's directory.
    let defs = tempfile::tempdir().unwrap();
    let def = |name: &str, text: &str| {
        let p = defs.path().join(name);
        std::fs::write(&p, text).unwrap();
        p.to_str().unwrap().to_string()
    };
    let unknown = def("unknown.toml", "arms = \"cubic,bbr\"\nduraton = \"1s\"\n");
    let overridden = def(
        "bad-arm.toml",
        "arms = \"cubic,nosuchcc\"\nduration = \"1s\"\n",
    );
    let missing = defs.path().join("missing.toml");
    let missing = missing.to_str().unwrap();
    for (args, want) in [
        (
            vec!["--definition", &unknown],
            format!("bbrkit: {unknown} line 2: unknown field `duraton`, expected one of `name`"),
        ),
        // --arms overrides the file's unregistered arm: the next problem
        // (the cgroup) is the one reported.
        (
            vec![
                "--definition",
                &overridden,
                "--arms",
                "cubic,bbr",
                "--cgroup",
                "/tmp",
            ],
            "bbrkit: cgroup /tmp: not a cgroup v2 directory".to_string(),
        ),
        (
            vec!["--definition", &overridden],
            "bbrkit: algorithm nosuchcc is not registered".to_string(),
        ),
        (
            vec![
                "--definition",
                missing,
                "--arms",
                "cubic,bbr",
                "--duration",
                "1s",
            ],
            format!("bbrkit: read --definition {missing}: No such file or directory"),
        ),
    ]
    .into_iter()
    .chain(
        [
            (
                vec![
                    "--arms",
                    "cubic,bbr",
                    "--duration",
                    "1s",
                    "--prefix",
                    "10.0.0.0/33",
                ],
                "bbrkit: --prefix \"10.0.0.0/33\": prefix length 33 > 32",
            ),
            (
                vec!["--arms", "cubic,nosuchcc", "--duration", "1s"],
                "bbrkit: algorithm nosuchcc is not registered (tcp_available_congestion_control: ",
            ),
            (
                vec![
                    "--arms",
                    "cubic,bbr",
                    "--duration",
                    "1s",
                    "--cgroup",
                    "/tmp",
                ],
                "bbrkit: cgroup /tmp: not a cgroup v2 directory",
            ),
            (
                vec!["--arms", "cubic,bbr"],
                "bbrkit: say how long: --duration TIME or --until-confident",
            ),
            (
                vec!["--arms", "cubic", "--duration", "1s"],
                "bbrkit: invalid value 'cubic' for '--arms <A,B>': give two algorithms",
            ),
        ]
        .map(|(args, want)| (args, want.to_string())),
    ) {
        let out = bbrkit()
            .arg("trial")
            .args(&args)
            .args(["--textfile", prom])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with(&want), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}");
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            0,
            "{args:?}: a file"
        );
        // With --json: the same line and exit code, and one JSON document
        // on stdout saying them (usage and library errors alike).
        let json = bbrkit()
            .arg("trial")
            .args(&args)
            .args(["--textfile", prom, "--json"])
            .output()
            .unwrap();
        let jerr = String::from_utf8_lossy(&json.stderr);
        assert_eq!(json.status.code(), Some(2), "{args:?}: {jerr}");
        assert_eq!(jerr, err, "{args:?}");
        let doc: serde_json::Value = serde_json::from_slice(&json.stdout)
            .unwrap_or_else(|e| panic!("{args:?}: not one JSON document: {e}"));
        let message = err.trim_end().strip_prefix("bbrkit: ").unwrap();
        assert_eq!(
            doc,
            serde_json::json!({"error": {"message": message, "exit_code": 2}}),
            "{args:?}"
        );
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}

#[test]
#[ignore = "needs root"]
fn sigkill_leaves_nothing_attached() {
    sandbox::in_sandbox(|sb| {
        let cg = sb.cgroup.to_str().unwrap();
        let mut t = Running::start(&["--arms", "cubic,reno", "--cgroup", cg, "--duration", "60s"]);
        let held = t.held();
        assert_eq!(held.alive(), held);
        assert_eq!(
            cgroup::sock_ops_programs(&sb.cgroup, false).unwrap().len(),
            1
        );
        t.child.kill().unwrap();
        t.child.wait().unwrap();
        assert_nothing_left(&held, &sb.cgroup);
    });
}

/// The lab's workload (`--cc host`: the trial's program chooses) in the
/// trial's cgroup, then Ctrl-C: the report has one record per request.
#[test]
#[ignore = "needs root"]
fn ctrl_c_reports_what_was_gathered_and_leaves_nothing() {
    sandbox::in_sandbox(|sb| {
        let cg = sb.cgroup.to_str().unwrap();
        let t = Running::start(&[
            "--json",
            "--arms",
            "cubic,reno",
            "--cgroup",
            cg,
            "--duration",
            "300s",
            "--interval",
            "1s",
        ]);
        let held = t.held();
        let lab = bbrkit()
            .args([
                "lab",
                "--json",
                "--workload",
                "10kb",
                "--clients",
                "4",
                "--cc",
                "host",
            ])
            .args([
                "--delay",
                "2ms",
                "--runs",
                "1",
                // A repeated run's connections are real ones the trial
                // records, but the lab reports only the last attempt's.
                "--retries",
                "0",
                "--duration",
                "3s",
                "--cgroup",
                cg,
            ])
            .output()
            .unwrap();
        assert!(
            lab.status.success(),
            "{}",
            String::from_utf8_lossy(&lab.stderr)
        );
        let lab: serde_json::Value = serde_json::from_slice(&lab.stdout).unwrap();
        let results: Vec<&serde_json::Value> = lab["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|c| c["results"].as_array().unwrap())
            .collect();
        assert!(results.iter().all(|r| r["failed"] == 0), "{lab}");
        let requests: u64 = results
            .iter()
            .map(|r| r["requests"].as_u64().unwrap())
            .sum();
        assert!(requests > 20, "{lab}");
        t.wait_line("every request closed", |l| {
            let closed: u64 = l
                .split_once("s: ")?
                .1
                .split_once(" closed")?
                .0
                .parse()
                .ok()?;
            (closed >= requests).then_some(())
        });
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(t.child.id() as i32),
            nix::sys::signal::Signal::SIGINT,
        )
        .unwrap();
        let out = t.child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(130));
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(
            report["records"]["closed"], requests,
            "one record per request"
        );
        assert_eq!(report["live"]["stopped"], "interrupted");
        assert_eq!(report["live"]["records"]["dropped_ring_full"], 0);
        assert_eq!(
            report["mode"], "sequential",
            "an interrupted trial's interval"
        );
        for arm in report["overall"]["arms"].as_array().unwrap() {
            assert!(arm["connections"].as_u64().unwrap() > 0, "{arm}");
        }
        let lines = t.lines.lock().unwrap().clone();
        assert_eq!(
            lines.last().map(String::as_str),
            Some("bbrkit: interrupted by signal 2; trial stopped, program detached"),
            "{lines:?}"
        );
        assert_nothing_left(&held, &sb.cgroup);
    });
}
