//! The types `enable` takes and returns (options, per-key and per-interface
//! outcomes, the report) and the tuning set. Pure data; no I/O.

use serde::Serialize;

use crate::precedence::Loader;

/// `--qdisc`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum QdiscChoice {
    /// fq when the kernel has it, else leave the default qdisc alone.
    Auto,
    /// fq.
    Fq,
    /// fq_codel.
    FqCodel,
    /// Do not touch the default qdisc.
    Keep,
}

/// What `enable` should do.
#[derive(Debug, Clone)]
pub struct Options {
    /// Congestion control algorithm (`bbr`).
    pub cc: String,
    /// Default qdisc choice.
    pub qdisc: QdiscChoice,
    /// Add the seeds' tuning set.
    pub tune: bool,
    /// Show what would happen; change nothing.
    pub dry_run: bool,
    /// Write files only; no runtime writes.
    pub no_apply: bool,
    /// Proceed although another file overrides bbrkit's value at boot.
    pub force: bool,
}

/// The tuning set (`--tune`): key, value, one-line rationale.
pub const TUNING: &[(&str, &str, &str)] = &[
    (
        "net.core.rmem_max",
        "67108864",
        "largest receive buffer a socket may request: 64 MiB for long fat paths",
    ),
    (
        "net.core.wmem_max",
        "67108864",
        "largest send buffer a socket may request: 64 MiB",
    ),
    (
        "net.ipv4.tcp_rmem",
        "4096 87380 33554432",
        "TCP receive autotuning min/default/max: up to 32 MiB (BDP of 1 Gbit/s x 250 ms)",
    ),
    (
        "net.ipv4.tcp_wmem",
        "4096 65536 33554432",
        "TCP send autotuning min/default/max: up to 32 MiB",
    ),
    (
        "net.ipv4.tcp_notsent_lowat",
        "131072",
        "keep at most 128 KiB unsent in the socket: less latency and memory, BBR still fills the pipe",
    ),
    (
        "net.ipv4.tcp_mtu_probing",
        "1",
        "probe the path MTU after an ICMP black hole instead of stalling",
    ),
    (
        "net.ipv4.tcp_slow_start_after_idle",
        "0",
        "keep cwnd after idle periods so bursts after a pause need no new slow start",
    ),
];

/// The state of one key at runtime after `enable`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RuntimeStatus {
    /// Written and read back.
    Set,
    /// Already had the value.
    AlreadySet,
    /// `--dry-run`: would be written.
    WouldSet,
    /// `--no-apply`: not written.
    Skipped,
    /// Not owned by this network namespace (absent or read-only): the host's job.
    HostOnly,
    /// The kernel lacks the feature (e.g. fq: ENOENT); not a failure.
    NoKernelSupport,
    /// EPERM (e.g. not in tcp_allowed_congestion_control).
    NotPermitted,
    /// Any other failure.
    Failed,
}

/// One key `enable` manages.
#[derive(Debug, Clone, Serialize)]
pub struct KeyResult {
    /// Dotted key.
    pub key: String,
    /// bbrkit's value.
    pub value: String,
    /// Why bbrkit sets it.
    pub rationale: String,
    /// Written to bbrkit's sysctl.d file.
    pub persisted: bool,
    /// Runtime value before.
    pub before: Option<String>,
    /// Runtime outcome.
    pub runtime: RuntimeStatus,
    /// One line explaining the outcome.
    pub detail: String,
}

/// Which file wins one key at boot under one loader.
#[derive(Debug, Clone, Serialize)]
pub struct BootWinner {
    /// Key.
    pub key: String,
    /// Loader.
    pub loader: Loader,
    /// Winning file (None: no file sets it; the kernel default stays).
    pub file: Option<String>,
    /// Line in that file.
    pub line: Option<usize>,
    /// Value that wins.
    pub value: Option<String>,
    /// True when bbrkit's file wins or the winner has bbrkit's value.
    pub ok: bool,
}

/// What happened to one interface.
#[derive(Debug, Clone, Serialize)]
pub struct InterfaceAction {
    /// Interface name.
    pub name: String,
    /// Root qdisc before (`pfifo_fast 0:`).
    pub before: String,
    /// `recreated`, `would_recreate`, `already_default`, `deliberate`,
    /// `noqueue`, `inactive`, `unchanged_default`, `failed`.
    pub action: String,
    /// One line explaining it.
    pub detail: String,
}

/// The `enable` report (also the `--json` document).
#[derive(Debug, Clone, Serialize)]
pub struct EnableReport {
    /// bbrkit's sysctl.d file.
    pub file: String,
    /// Its (planned) content.
    pub content: String,
    /// The file is (or would be) written because it differs.
    pub file_changed: bool,
    /// Per-key outcome.
    pub keys: Vec<KeyResult>,
    /// Winner at boot for each persisted key under each loader.
    pub boot: Vec<BootWinner>,
    /// Notes (fq absent, namespace limits, ...).
    pub notes: Vec<String>,
    /// Interfaces.
    pub interfaces: Vec<InterfaceAction>,
    /// Another file overrides bbrkit at boot and `--force` was not given:
    /// nothing was written.
    pub blocked: bool,
    /// Anything changed (or would change with `--dry-run`).
    pub changed: bool,
    /// `--dry-run`.
    pub dry_run: bool,
    /// Where the before-image is.
    pub before_image: String,
    /// A problem that makes the command exit 1.
    pub problem: bool,
    /// The BPF part (`--cc bbr3`): registration, unit; `null` otherwise.
    pub bpf: Option<super::bpf::BpfPlan>,
}
