//! The signal design end to end: this binary runs itself as a child
//! (`BBRKIT_SIGNALS_CHILD=<scenario> <dir>`) that installs it, registers the
//! removal of `<dir>/pending` and says `<dir>/ready`; the parent signals it
//! and checks the exit code, the file and stderr. Its own `main` (no test
//! harness): the harness's threads would not have the signals blocked.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use bbrkit_signals::{Mode, install, remove_on_exit};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

const CHILD: &str = "BBRKIT_SIGNALS_CHILD";

fn main() {
    if let Ok(scenario) = std::env::var(CHILD) {
        let dir = PathBuf::from(std::env::args().nth(1).expect("child: a directory"));
        child(&scenario, &dir);
    }
    let tests: [(&str, fn()); 5] = [
        ("exit_at_once_runs_cleanups", exit_at_once_runs_cleanups),
        (
            "cancel_leaves_the_exit_to_the_run",
            cancel_leaves_the_exit_to_the_run,
        ),
        ("second_signal_exits_at_once", second_signal_exits_at_once),
        ("grace_runs_out", grace_runs_out),
        ("nohup_keeps_sighup_ignored", nohup_keeps_sighup_ignored),
    ];
    for (name, test) in tests {
        test();
        println!("test {name} ... ok");
    }
    println!("{} passed, 0 failed", tests.len());
}

// ---- the child ----

fn cancel(grace_ms: u64) -> Mode {
    Mode::Cancel {
        grace: Duration::from_millis(grace_ms),
        note: "test note",
    }
}

fn child(scenario: &str, dir: &Path) -> ! {
    let signals = match scenario {
        "exit" => install(Mode::ExitAtOnce),
        "both" => install(Mode::ExitAtOnce).and_then(|_| install(cancel(30_000))),
        "slow-grace" => install(cancel(30_000)),
        "short-grace" => install(cancel(300)),
        other => panic!("unknown scenario {other}"),
    }
    .expect("install");
    let pending = dir.join("pending");
    std::fs::write(&pending, "half-written").unwrap();
    remove_on_exit(&pending).keep();
    std::fs::write(dir.join("ready"), "").unwrap();
    let until = Instant::now() + Duration::from_secs(30);
    while Instant::now() < until {
        if signals.cancel.load(Ordering::SeqCst) {
            std::fs::write(dir.join("cancelled"), "").unwrap();
            if scenario == "both" {
                // A run that honours the flag: tears down and exits itself.
                std::process::exit(signals.exit_code().expect("a signal"));
            }
            // Otherwise a teardown that hangs: only the signal thread ends it.
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    std::process::exit(99); // no signal ended it
}

// ---- the parent ----

struct Run {
    dir: tempfile::TempDir,
    child: Child,
}

fn spawn(scenario: &str, sighup_ignored: bool) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.env(CHILD, scenario)
        .arg(dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let handler = if sighup_ignored {
        libc::SIG_IGN
    } else {
        libc::SIG_DFL
    };
    // SAFETY: runs in the forked child and only calls signal(2), which is
    // async-signal-safe.
    unsafe {
        cmd.pre_exec(move || {
            libc::signal(libc::SIGHUP, handler);
            Ok(())
        });
    }
    let run = Run {
        child: cmd.spawn().unwrap(),
        dir,
    };
    wait_for(&run.path("ready"));
    run
}

impl Run {
    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn signal(&self, sig: Signal) {
        kill(Pid::from_raw(self.child.id() as i32), sig).unwrap();
    }

    fn finish(self) -> (Output, tempfile::TempDir) {
        (self.child.wait_with_output().unwrap(), self.dir)
    }
}

fn wait_for(path: &Path) {
    let t0 = Instant::now();
    while !path.exists() {
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "{path:?} never appeared"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn exit_at_once_runs_cleanups() {
    let run = spawn("exit", false);
    run.signal(Signal::SIGINT);
    let (out, dir) = run.finish();
    assert_eq!(out.status.code(), Some(130), "{out:?}");
    assert!(!dir.path().join("pending").exists(), "the cleanup ran");
}

/// "both" installs ExitAtOnce, then Cancel: Cancel wins.
fn cancel_leaves_the_exit_to_the_run() {
    let run = spawn("both", false);
    run.signal(Signal::SIGTERM);
    let (out, dir) = run.finish();
    assert_eq!(out.status.code(), Some(143), "{out:?}");
    assert!(
        dir.path().join("cancelled").exists(),
        "the run saw the flag"
    );
    assert!(
        dir.path().join("pending").exists(),
        "no cleanup under a run that exits by itself"
    );
}

fn second_signal_exits_at_once() {
    let run = spawn("slow-grace", false);
    run.signal(Signal::SIGINT);
    wait_for(&run.path("cancelled"));
    let t0 = Instant::now();
    run.signal(Signal::SIGINT);
    let (out, dir) = run.finish();
    assert_eq!(out.status.code(), Some(130), "{out:?}");
    assert!(t0.elapsed() < Duration::from_secs(10), "not the 30 s grace");
    assert!(!dir.path().join("pending").exists(), "the cleanup ran");
}

fn grace_runs_out() {
    let run = spawn("short-grace", false);
    let t0 = Instant::now();
    run.signal(Signal::SIGHUP);
    let (out, dir) = run.finish();
    assert_eq!(out.status.code(), Some(129), "{out:?}");
    assert!(
        t0.elapsed() >= Duration::from_millis(300),
        "waited the grace"
    );
    assert!(!dir.path().join("pending").exists(), "the cleanup ran");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "bbrkit: interrupted by signal 1; teardown took over 300ms, exiting (test note)"
        ),
        "{stderr}"
    );
}

fn nohup_keeps_sighup_ignored() {
    let run = spawn("exit", true);
    run.signal(Signal::SIGHUP);
    std::thread::sleep(Duration::from_millis(300));
    assert!(run.path("pending").exists(), "SIGHUP changed nothing");
    run.signal(Signal::SIGTERM);
    let (out, _dir) = run.finish();
    assert_eq!(out.status.code(), Some(143), "{out:?}");
}
