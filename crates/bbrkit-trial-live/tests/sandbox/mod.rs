//! Root-test harness of the live trial (shared by `tests/live_root.rs`,
//! `examples/trial_rate.rs` and the CLI's `tests/trial_cli.rs` through
//! `#[path]`): a throwaway network namespace on a dedicated thread
//! (loopback up: every 127.0.0.0/8 address is local, so clients of many
//! /24s are one bind away) and a throwaway child cgroup under the cgroup2
//! mount, never the root cgroup.
//!
//! Nothing outlives a test: the namespace dies with the thread and its
//! children, and the cgroup is removed on drop (after its processes
//! exited; a cgroup with an attached program can be removed, which
//! detaches it).
#![allow(dead_code)]

use std::net::IpAddr;
use std::path::PathBuf;

#[path = "../../../bbrkit-bpf/tests/child_cgroup/mod.rs"]
mod child_cgroup;
#[path = "../../../bbrkit-diag/tests/netns/mod.rs"]
mod netns;

/// A sandbox: its cgroup (the test thread itself stays outside it).
pub struct Sandbox {
    /// The throwaway child cgroup.
    pub cgroup: PathBuf,
}

/// Runs `f` in a fresh sandbox on its own thread and returns its result.
/// Threads `f` spawns, and processes, are born in its network namespace.
pub fn in_sandbox<T: Send + 'static>(f: impl FnOnce(&Sandbox) -> T + Send + 'static) -> T {
    std::thread::spawn(move || {
        use nix::sched::{CloneFlags, unshare};
        unshare(CloneFlags::CLONE_NEWNET).expect("unshare net");
        netns::lo_up();
        let cg = child_cgroup::ChildCgroup::new("trial");
        f(&Sandbox {
            cgroup: cg.0.clone(),
        })
    })
    .join()
    .unwrap_or_else(|e| std::panic::resume_unwind(e))
}

/// Client address `i` of group `g`: `127.0.g.i` (group g is `127.0.g.0/24`).
pub fn client(g: u8, i: u8) -> IpAddr {
    IpAddr::from([127, 0, g, i])
}

/// The namespace's default algorithm.
pub fn default_cc() -> String {
    std::fs::read_to_string("/proc/sys/net/ipv4/tcp_congestion_control")
        .unwrap()
        .trim()
        .to_string()
}
