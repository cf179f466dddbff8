//! The live side of `bbrkit trial`: a live A/B trial of two congestion
//! controls on this host's own connections, built on the per-connection
//! policy's sock_ops program (`bbrkit-bpf`) and the trial's statistics
//! (`bbrkit-trial`).
//!
//! ```text
//!  TrialSpec ──prepare──► Plan (rule compiled, TrialDef, cgroup)      nothing attached yet
//!                           │ run(plan, cancel, on_event)
//!                           ▼
//!  attach (unpinned link: dies with the process)
//!    reader thread: ring ──ConnRecord batches──► channel
//!    main thread:   Intake (trial's rule, before any guardrail cut) ──► bbrkit_trial::Trial
//!                   every look_every: Report (sequential, 200 resamples)
//!                     ├─ a guardrail decision ──► set_weights (new connections to the other arm)
//!                     ├─ --until-confident: Report::confident() or a guardrail ──► stop
//!                     └─ Event::Look (progress line, textfile)
//!    stop (duration, confident, cancel): census of open connections ──► detach ──► last records
//!  LiveReport = the final Report + LiveInfo (cgroup, rule, ring drops, assignment, guardrail, open)
//! ```
//!
//! | module | owns |
//! |---|---|
//! | [`definition`] | `--definition FILE` and the flags: one [`Definition`], the command line over the file, the defaults, → [`TrialSpec`] |
//! | [`plan`] | flags or a policy rule → the rule, `TrialDef`, the cgroup; every refusal before attaching |
//! | [`intake`] | which records the statistics take, and the guardrail's weights and cut (pure) |
//! | [`open`] | connections still open at the end: sock_diag + `Compiled::decide` |
//! | [`run`](mod@run) | the loop: attach, ring reader, looks, guardrails, stop, detach |
//! | [`report`] | [`LiveReport`]: the trial's report and what the live side saw |
//! | [`render`] | the live report's header, table and progress line |
//! | `testing` | the governed TCP peer of root tests and benchmarks (feature `testing`) |
//!
//! Must never pin anything (a trial leaves the host as it found it on
//! success, error, Ctrl-C and SIGKILL: the link dies with the process),
//! attach to a cgroup it was not given, print, or compute statistics (that
//! is `bbrkit-trial`'s).

// Only the test peer (`testing`) sets a socket option through libc.
#![cfg_attr(not(any(test, feature = "testing")), forbid(unsafe_code))]

pub mod definition;
pub mod intake;
pub mod open;
pub mod plan;
pub mod render;
pub mod report;
pub mod run;
#[cfg(any(test, feature = "testing"))]
pub mod testing;

pub use definition::{Definition, DefinitionError};
pub use plan::{
    BadValue, HostFacts, Matching, Plan, Stop, TrialSpec, parse_arms, parse_split, prepare,
};
pub use report::{LiveInfo, LiveReport, StopReason};
pub use run::{Event, run};

/// Why a trial cannot start or could not run.
#[derive(Debug, thiserror::Error)]
pub enum LiveError {
    /// A `--prefix` that is not a prefix.
    #[error("--prefix {given:?}")]
    Prefix {
        /// As written.
        given: String,
        /// The policy file's wording.
        #[source]
        source: bbrkit_policy::Problem,
    },
    /// A `--port` that is not a port or range.
    #[error("--port {given:?}")]
    Port {
        /// As written.
        given: String,
        /// The policy file's wording.
        #[source]
        source: bbrkit_policy::Problem,
    },
    /// Neither `--duration` nor `--until-confident`.
    #[error("say how long: --duration TIME or --until-confident")]
    NoStop,
    /// Both `--duration` and `--until-confident`.
    #[error("--duration and --until-confident: give one, not both")]
    TwoStops,
    /// `--policy` without `--rule`, or `--rule` without `--policy`.
    #[error("--policy FILE and --rule N|NAME go together")]
    PolicyWithoutRule,
    /// The `--policy` file cannot be read.
    #[error("read --policy {path}")]
    ReadPolicy {
        /// The file.
        path: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// Neither `--arms` nor `--policy`.
    #[error("say what to compare: --arms A,B (or --policy FILE --rule N)")]
    NoArms,
    /// `--arms`, `--split` or `--unit` beside `--policy`.
    #[error(
        "--arms, --split and --unit come from the policy rule's split with --policy: leave them out"
    )]
    PolicyConflict,
    /// A policy that does not parse or validate.
    #[error(transparent)]
    Policy(#[from] bbrkit_policy::PolicyError),
    /// `--rule` that is not a two-arm split of the file.
    #[error("{origin}: --rule {given}: {problem}")]
    Rule {
        /// The policy file.
        origin: String,
        /// As written.
        given: String,
        /// What is wrong.
        problem: String,
    },
    /// An arm (or another rule of the policy) names an algorithm the kernel
    /// does not offer.
    #[error(
        "algorithm {name} is not registered (tcp_available_congestion_control: {available}): {fix}"
    )]
    Unregistered {
        /// The name.
        name: String,
        /// What the kernel offers.
        available: String,
        /// How to get it.
        fix: String,
    },
    /// No `--cgroup` and no cgroup2 mount.
    #[error(
        "cgroup v2 is not mounted (no cgroup2 line in /proc/self/mountinfo): mount it or give --cgroup PATH"
    )]
    NoCgroup2,
    /// `--unit prefix` with other group prefix lengths than the program's.
    #[error(
        "--unit prefix draws one arm per /24 (IPv4) and /48 (IPv6): leave --prefix-v4 and --prefix-v6 at 24 and 48"
    )]
    PrefixUnitLengths,
    /// The statistics refused the definition.
    #[error(transparent)]
    Trial(bbrkit_trial::TrialError),
    /// Reading the host's algorithms or its sockets.
    #[error(transparent)]
    Diag(bbrkit_diag::DiagError),
    /// `/proc/self/mountinfo` unreadable.
    #[error("read /proc/self/mountinfo")]
    Mountinfo(#[source] std::io::Error),
    /// The program: loading, attaching, its maps or ring.
    #[error(transparent)]
    Bpf(#[from] bbrkit_bpf::BpfError),
    /// The ring reader thread panicked (a bug).
    #[error("the ring reader thread stopped unexpectedly")]
    Reader,
}
