//! Helpers shared by the CLI's test files (`mod common;`): running the
//! binary and reading its output, the sysctls of the test's namespace, a
//! snapshot of a `--root` sandbox, and a copy of the binary for `nobody`.
//! Each test file uses a part of them.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_bbrkit");
/// The congestion-control sysctl (per network namespace).
pub const CC: &str = "net.ipv4.tcp_congestion_control";

/// Runs bbrkit with `args` and extra environment `envs` (never the crash
/// hook of the test process's own environment).
pub fn run(args: &[&str], envs: &[(&str, &str)]) -> Output {
    let mut c = Command::new(BIN);
    c.args(args).env_remove("BBRKIT_TEST_CRASH_AT");
    for (k, v) in envs {
        c.env(k, v);
    }
    c.output().expect("spawn bbrkit")
}

/// Runs bbrkit with `args`.
pub fn bbrkit(args: &[&str]) -> Output {
    run(args, &[])
}

/// The exit code (-1 when a signal ended the process).
pub fn code(o: &Output) -> i32 {
    o.status.code().unwrap_or(-1)
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Stdout then stderr, for assertion messages.
pub fn text(o: &Output) -> String {
    format!("{}{}", stdout(o), stderr(o))
}

/// Stdout as one JSON document.
pub fn json(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("not one JSON document ({e}): {}", text(o)))
}

/// Stdout as one JSON document of a run that succeeded.
pub fn json_ok(o: &Output) -> serde_json::Value {
    assert!(o.status.success(), "exit {:?}: {}", o.status, stderr(o));
    json(o)
}

/// `promtool check metrics` (`promtool` is a path or a name on PATH) fed
/// `text` on stdin.
pub fn promtool_check(promtool: &str, text: &str) -> Output {
    use std::io::Write;
    let mut child = Command::new(promtool)
        .args(["check", "metrics"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{promtool} (Debian package 'prometheus'): {e}"));
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// `/proc/sys/...` of `key` (`net.ipv4.tcp_congestion_control`).
pub fn proc_path(key: &str) -> PathBuf {
    PathBuf::from("/proc/sys").join(key.replace('.', "/"))
}

/// The sysctl's value as this thread's namespace sees it, white space
/// folded (`4096 131072 6291456`).
pub fn sysctl_get(key: &str) -> String {
    let s = std::fs::read_to_string(proc_path(key)).unwrap();
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Writes the sysctl (in the test's throwaway namespace only).
pub fn sysctl_set(key: &str, v: &str) {
    std::fs::write(proc_path(key), v).unwrap();
}

/// One entry of a [`snapshot`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    /// Content and permission bits.
    File(Vec<u8>, u32),
    /// Where it points.
    Link(PathBuf),
    Dir,
}

/// Every file, symlink and directory under `dir`, by relative path.
pub fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Entry> {
    fn walk(base: &Path, d: &Path, out: &mut BTreeMap<PathBuf, Entry>) {
        for e in std::fs::read_dir(d).unwrap().flatten() {
            let p = e.path();
            let m = std::fs::symlink_metadata(&p).unwrap();
            let rel = p.strip_prefix(base).unwrap().to_path_buf();
            if m.file_type().is_symlink() {
                out.insert(rel, Entry::Link(std::fs::read_link(&p).unwrap()));
            } else if m.is_dir() {
                out.insert(rel, Entry::Dir);
                walk(base, &p, out);
            } else {
                out.insert(
                    rel,
                    Entry::File(std::fs::read(&p).unwrap(), m.permissions().mode() & 0o7777),
                );
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

/// [`snapshot`] without the directories themselves (files and symlinks).
pub fn snapshot_files(dir: &Path) -> BTreeMap<PathBuf, Entry> {
    let mut all = snapshot(dir);
    all.retain(|_, e| *e != Entry::Dir);
    all
}

/// A copy of the bbrkit binary that user `nobody` (uid/gid 65534) can run
/// wherever the checkout is: root may build in a directory nobody cannot
/// enter (`/root/...`, a `mktemp -d` folder), and then exec'ing the binary
/// there as nobody fails with EACCES before bbrkit even starts. The copy
/// lives in a world-readable temporary directory removed on drop.
pub struct NobodyBin {
    _dir: tempfile::TempDir,
    path: PathBuf,
}

impl NobodyBin {
    /// Copies `CARGO_BIN_EXE_bbrkit`.
    pub fn new() -> Self {
        let dir = tempfile::Builder::new()
            .prefix("bbrkit-nobody-")
            .tempdir_in("/tmp")
            .unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let path = dir.path().join("bbrkit");
        std::fs::copy(env!("CARGO_BIN_EXE_bbrkit"), &path).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        NobodyBin { _dir: dir, path }
    }

    /// A command running the copy as uid/gid 65534 (the test must run as root).
    pub fn command(&self) -> Command {
        let mut c = Command::new(&self.path);
        // SAFETY: the closure runs in the forked child before exec and only
        // calls setgid/setuid, which are async-signal-safe.
        unsafe {
            c.pre_exec(|| {
                if libc::setgid(65534) != 0 || libc::setuid(65534) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        c
    }
}

/// Every network namespace that a task, an open file or a mount refers to.
pub fn live_namespaces() -> std::collections::BTreeSet<u64> {
    let mut out = std::collections::BTreeSet::new();
    let mut note = |link: &str| out.extend(bbrkit_diag::netns::parse_link(link));
    for p in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        if !p
            .file_name()
            .to_string_lossy()
            .bytes()
            .all(|c| c.is_ascii_digit())
        {
            continue;
        }
        for t in std::fs::read_dir(p.path().join("task"))
            .into_iter()
            .flatten()
            .flatten()
        {
            if let Ok(l) = std::fs::read_link(t.path().join("ns/net")) {
                note(&l.to_string_lossy());
            }
        }
        for fd in std::fs::read_dir(p.path().join("fd"))
            .into_iter()
            .flatten()
            .flatten()
        {
            if let Ok(l) = std::fs::read_link(fd.path()) {
                note(&l.to_string_lossy());
            }
        }
    }
    for line in std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap_or_default()
        .lines()
    {
        if let Some(root) = line.split(' ').nth(3) {
            note(root);
        }
    }
    out
}
