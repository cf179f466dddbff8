//! What an attached policy program is and reports, as plain values: where
//! bbrkit pins it ([`PIN_ROOT`], [`default_pin_dir`]), a cgroup's sock_ops
//! programs ([`SockOpsProgram`]) and the program's counters ([`Counters`]).
//! `bbrkit-bpf` reads them from the kernel (and re-exports them from
//! `bbrkit_bpf::sockops`); `bbrkit-host` judges them, also in a build
//! without BPF support, which reads none.

use std::path::{Path, PathBuf};

/// The layout of the pins this code makes: which maps, what they hold and
/// what the program does with them. 1: issue 19 (no marker pinned); 2:
/// the marker [`LAYOUT_PIN`], and the program stamps its latest failure
/// (`BKPOL_S_LAST_FAILED`). A pinned attachment of another layout is
/// replaced by `enable` even when its maps equal the policy (an upgrade).
pub const LAYOUT: u32 = 2;
/// The layout marker's pin name in a pin directory.
pub const LAYOUT_PIN: &str = "layout";

/// File name of the link pin in a pin directory.
pub const LINK_PIN: &str = "link";
/// Where bbrkit pins the policy of a cgroup by default: `<this>/<cgroup id>`.
pub const PIN_ROOT: &str = "/sys/fs/bpf/bbrkit/policy";

/// The default pin directory of the policy of cgroup `id`.
pub fn default_pin_dir(cgroup_id: u64) -> PathBuf {
    Path::new(PIN_ROOT).join(cgroup_id.to_string())
}

/// A sock_ops program a cgroup runs.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SockOpsProgram {
    /// Program id.
    pub id: u32,
    /// Program name (`bkpol_sockops` is bbrkit's).
    pub name: String,
    /// The BPF link attaching it to this cgroup, when it is attached here
    /// through a link (`None`: attached with `BPF_PROG_ATTACH`, or to an
    /// ancestor).
    pub link_id: Option<u32>,
    /// bbrkit's policy program.
    pub ours: bool,
}

/// One (rule, arm)'s counters, summed over CPUs.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ArmCounters {
    /// Rule index (0-based).
    pub rule: usize,
    /// Arm index.
    pub arm: usize,
    /// The arm's algorithm.
    pub cc: String,
    /// Connections that matched the rule and drew the arm.
    pub matched: u64,
    /// ... whose algorithm the program set.
    pub assigned: u64,
    /// ... that kept the application's (or its listener's) choice.
    pub kept_app: u64,
    /// ... that kept a locked route's choice.
    pub kept_route: u64,
    /// ... where the kernel refused the name.
    pub failed: u64,
}

/// The program's global counters, summed over CPUs.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Stats {
    /// Connections seen established.
    pub established: u64,
    /// ... that no rule matched (host default).
    pub unmatched: u64,
    /// ... whose rule had every weight at 0.
    pub no_arm: u64,
    /// ... of recorded rules without per-connection storage (no record).
    pub no_storage: u64,
    /// Records written to the ring.
    pub records: u64,
    /// Records lost because the ring was full.
    pub ring_full: u64,
    /// Closes where the kernel gave no `tcp_sock`.
    pub no_tcp_sock: u64,
    /// The monotonic clock (`CLOCK_MONOTONIC`, ns) at the latest failed
    /// `setsockopt`, 0 when none failed (or the program predates the stamp).
    pub last_failed_ns: u64,
    /// The monotonic clock when these counters were read.
    pub read_ns: u64,
}

impl Stats {
    /// How long before the reading the latest failure was (`None`: none
    /// stamped).
    pub fn since_failed(&self) -> Option<std::time::Duration> {
        (self.last_failed_ns != 0).then(|| {
            std::time::Duration::from_nanos(self.read_ns.saturating_sub(self.last_failed_ns))
        })
    }
}

/// Everything the program counted.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Counters {
    /// Per rule and arm, in rule order.
    pub arms: Vec<ArmCounters>,
    /// Global.
    pub stats: Stats,
}

impl Counters {
    /// Rules (0-based) that no connection matched.
    pub fn unmatched_rules(&self) -> Vec<usize> {
        let mut rules: Vec<usize> = self.arms.iter().map(|a| a.rule).collect();
        rules.dedup();
        rules.retain(|r| {
            self.arms
                .iter()
                .filter(|a| a.rule == *r)
                .all(|a| a.matched == 0)
        });
        rules
    }
}
