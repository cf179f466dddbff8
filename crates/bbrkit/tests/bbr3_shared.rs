//! One bbr3 registration shared by concurrent users (issue 21.3): two labs
//! that overlap both complete (the second joins the first's registration
//! and keeps it when the first ends), and `enable`/`rollback` while a lab
//! holds it (`enable` pins the lab's link; `rollback` unpins, and the name
//! goes when the lab ends). Root, real lab runs: run under
//! `flock /work/lab.lock flock /tmp/bbrkit-root.lock` (a congestion-control
//! name is global, and lab traffic must not overlap other measurements).
//! `enable` and `rollback` run in a throwaway network and mount namespace
//! with their own bpffs, so the pin dies with the test.

mod bbr3_name;
mod common;
#[path = "../../bbrkit-diag/tests/netns/mod.rs"]
mod netns;

use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use bbr3_name::registered;
use common::{BIN, CC, bbrkit, code, snapshot, stdout, sysctl_get, sysctl_set, text};

const PIN: &str = "/sys/fs/bpf/bbrkit/bbr3/link";

static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn wait_until(what: &str, secs: u64, cond: impl Fn() -> bool) {
    let until = Instant::now() + Duration::from_secs(secs);
    while !cond() {
        assert!(Instant::now() < until, "timed out waiting: {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A bbr3 lab of one run of `secs` seconds, its report on stdout.
fn lab(secs: u32) -> Child {
    labs(1, secs)
}

/// A bbr3 lab of `runs` runs of `secs` seconds (each run makes its own
/// connections), its report on stdout.
fn labs(runs: u32, secs: u32) -> Child {
    let (runs, secs) = (runs.to_string(), format!("{secs}s"));
    Command::new(BIN)
        .args(["--json", "lab", "--cc", "bbr3", "--retries", "0"])
        .args(["--runs", &runs, "--delay", "5ms", "--duration", &secs])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn bbrkit lab")
}

/// Waits for a lab; its exit code, report and stderr.
fn finish(mut c: Child) -> (i32, serde_json::Value, String) {
    let mut out = String::new();
    let mut err = String::new();
    c.stdout.take().unwrap().read_to_string(&mut out).unwrap();
    c.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    let status = c.wait().unwrap();
    let doc = serde_json::from_str(&out).unwrap_or(serde_json::Value::Null);
    (status.code().unwrap_or(-1), doc, err)
}

/// bbr3's measured rate in a lab report (0 when missing).
fn bbr3_rate(doc: &serde_json::Value) -> f64 {
    doc["conditions"][0]["results"]
        .as_array()
        .and_then(|r| r.iter().find(|x| x["cc"] == "bbr3"))
        .and_then(|x| x["bits_per_second"].as_f64())
        .unwrap_or(0.0)
}

fn precondition() -> Option<std::sync::MutexGuard<'static, ()>> {
    let g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    if !bbr3_name::wait_free() {
        return None;
    }
    Some(g)
}

#[test]
#[ignore = "needs root"]
fn two_overlapping_labs_with_bbr3_both_complete() {
    let Some(_g) = precondition() else { return };
    let first = lab(3);
    wait_until("the first lab registers bbr3", 30, registered);
    std::thread::sleep(Duration::from_millis(1000));
    // The second lab's later runs open their connections after the first
    // lab has ended and let go of its registration.
    let second = labs(3, 3);
    let (c1, d1, e1) = finish(first);
    assert_eq!(c1, 0, "first lab: {e1}");
    assert!(bbr3_rate(&d1) > 0.0, "{d1}");
    // The first lab has let go; the second still holds the registration.
    assert!(registered(), "bbr3 went with the first lab");
    let (c2, d2, e2) = finish(second);
    assert_eq!(c2, 0, "second lab died of the first one's cleanup: {e2}");
    assert!(!e2.contains("has no congestion control"), "{e2}");
    assert!(bbr3_rate(&d2) > 0.0, "{d2}");
    assert!(
        bbr3_name::wait_released(),
        "bbr3 registered after the last lab"
    );
}

/// Runs `f` on a thread in fresh network and mount namespaces with a
/// private bpffs at /sys/fs/bpf.
fn in_sandbox<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::spawn(move || {
        netns::enter_netns_with_private_bpffs();
        let out = f();
        let _ = std::fs::remove_dir_all("/sys/fs/bpf/bbrkit");
        out
    })
    .join()
    .unwrap_or_else(|e| std::panic::resume_unwind(e))
}

/// A systemd-like scratch root.
fn fixture() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for d in ["etc/sysctl.d", "run/systemd/system"] {
        std::fs::create_dir_all(dir.path().join(d)).unwrap();
    }
    dir
}

#[test]
#[ignore = "needs root"]
fn enable_pins_a_running_labs_bbr3_and_rollback_lets_the_lab_finish() {
    let Some(_g) = precondition() else { return };
    let dir = fixture();
    let root = dir.path().to_str().unwrap().to_string();
    let original = snapshot(dir.path());
    in_sandbox(move || {
        sysctl_set(CC, "reno");
        // enable while a lab holds bbr3: the lab's link is pinned.
        let l = lab(5);
        wait_until("the lab registers bbr3", 30, registered);
        let out = bbrkit(&["enable", "--cc", "bbr3", "--root", &root]);
        assert_eq!(code(&out), 0, "{}", text(&out));
        assert!(
            stdout(&out).contains("bpf: pinned the running lab's registration of bbr3"),
            "{}",
            text(&out)
        );
        assert_eq!(sysctl_get(CC), "bbr3");
        let (c, doc, err) = finish(l);
        assert_eq!(c, 0, "the lab: {err}");
        assert!(bbr3_rate(&doc) > 0.0, "{doc}");
        assert!(
            registered() && Path::new(PIN).exists(),
            "the pin keeps bbr3"
        );

        // rollback while another lab holds it: the pin goes, the lab keeps
        // bbr3 until it ends.
        let l = lab(6);
        std::thread::sleep(Duration::from_secs(2));
        let out = bbrkit(&["rollback", "--root", &root]);
        assert_eq!(code(&out), 0, "{}", text(&out));
        let t = stdout(&out);
        assert!(t.contains("bpf bbr3: unregistered (pin /sys/fs/bpf/bbrkit/bbr3/link removed; still registered:"), "{t}");
        assert!(
            t.contains("(a running lab), and it goes when that run ends"),
            "{t}"
        );
        assert!(registered(), "rollback pulled bbr3 from under the lab");
        let (c, doc, err) = finish(l);
        assert_eq!(c, 0, "the lab died of rollback: {err}");
        assert!(bbr3_rate(&doc) > 0.0, "{doc}");
        assert!(bbr3_name::wait_released(), "bbr3 registered after the lab");
        assert_eq!(sysctl_get(CC), "reno");
    });
    assert_eq!(
        snapshot(dir.path()),
        original,
        "rollback is not byte-identical"
    );
}
