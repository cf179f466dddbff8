//! A throwaway child cgroup for root tests (shared by the sock_ops and the
//! live-trial sandboxes and the CLI's policy test through `#[path]`): a new
//! directory under the cgroup2 mount, never the root cgroup itself, removed
//! on drop once its processes have exited (a cgroup with an attached
//! program can be removed, which detaches it).
#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

static SEQ: AtomicU32 = AtomicU32::new(0);

/// The cgroup; removed on drop.
pub struct ChildCgroup(pub PathBuf);

impl ChildCgroup {
    /// Creates `bbrkit-test-{kind}-{pid}-{n}` under the cgroup2 mount.
    pub fn new(kind: &str) -> ChildCgroup {
        let root = bbrkit_bpf::sockops::cgroup::cgroup2_mount()
            .expect("read mountinfo")
            .expect("cgroup v2 mounted");
        let path = root.join(format!(
            "bbrkit-test-{kind}-{}-{}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir(&path).expect("create a child cgroup");
        ChildCgroup(path)
    }
}

impl Drop for ChildCgroup {
    /// Retries for up to 5 s: processes that just exited leave the cgroup
    /// asynchronously.
    fn drop(&mut self) {
        for _ in 0..100 {
            match std::fs::remove_dir(&self.0) {
                Ok(()) => return,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return,
                Err(_) => std::thread::sleep(Duration::from_millis(50)),
            }
        }
        eprintln!("could not remove cgroup {}", self.0.display());
    }
}
