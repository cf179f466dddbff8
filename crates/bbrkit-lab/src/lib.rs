//! The lab: kernel TCP in throwaway network namespaces.
//!
//! Owns namespace topologies with guaranteed cleanup (the namespaces are held
//! only by file descriptors, so they vanish with the process whatever ends
//! it), the link emulator (kernel netem where present, else split or a
//! userspace AF_PACKET forwarder), the traffic tester, and experiments:
//!
//! | module | owns |
//! |---|---|
//! | [`experiment`] | the one entry point: plan → topology → mode → report |
//! | [`plan`] | conditions (the rate × delay × loss sweep), algorithms, checks |
//! | [`settings`] | the experiment from an operator's settings in bbrkit's units |
//! | [`session`] | run order, seeds, repeats of spoiled runs, progress; the bulk mode |
//! | [`verdict`] | the emulator's verdict on a run; the emulator per condition |
//! | [`report`] | the bulk mode's report: medians, ratios to the first algorithm |
//! | [`compete`] | all algorithms at once: shares, Jain's index, RTT inflation |
//! | [`workload`] | request/response traffic: server process, cgroup, clients, FCT |
//! | [`commands`] | the operator's own server and client commands; `--hold` |
//! | [`served`] | what the last two share: report header, cgroup, condition |
//!
//! Must never touch an interface, namespace or sysctl outside its own
//! namespaces, nor a cgroup it did not create or was not given.

pub mod blast;
#[cfg_attr(not(feature = "bpf"), path = "bpf_cc_none.rs")]
pub mod bpf_cc;
pub mod cleanup;
pub mod clock;
pub mod commands;
pub mod compete;
pub mod emulator;
pub mod error;
pub mod ethtool;
pub mod experiment;
pub mod netlink;
pub mod netns;
pub mod plan;
pub mod probe;
pub mod report;
pub mod served;
pub mod session;
pub mod settings;
pub mod tcpinfo;
pub mod tester;
pub mod topology;
pub mod verdict;
pub mod workload;

pub use error::{LabError, Result};

/// Fails with [`LabError::NotRoot`] unless the process runs as root.
pub fn require_root() -> Result<()> {
    if nix::unistd::geteuid().is_root() {
        Ok(())
    } else {
        Err(LabError::NotRoot)
    }
}
