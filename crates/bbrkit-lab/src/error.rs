//! The lab's error type. Owns the wording of every failure the lab reports;
//! must never hide the underlying OS error (it is the `source`, so `{:#}`
//! and error-chain printers show it once, after the wording).

use std::io;

/// Everything that can go wrong while building, running or tearing down a lab.
#[derive(Debug, thiserror::Error)]
pub enum LabError {
    /// The lab needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN).
    #[error("the lab needs root (CAP_NET_ADMIN, CAP_SYS_ADMIN): run it with sudo")]
    NotRoot,
    /// A congestion-control algorithm the kernel does not offer.
    #[error("the kernel has no congestion control '{wanted}' (it offers: {available})")]
    UnknownAlgorithm {
        /// The requested name.
        wanted: String,
        /// `/proc/sys/net/ipv4/tcp_available_congestion_control`.
        available: String,
    },
    /// Network namespaces cannot be created here.
    #[error(
        "cannot create network namespaces here (a container without CAP_SYS_ADMIN cannot run the lab)"
    )]
    NoNamespaces(#[source] io::Error),
    /// The requested emulator is not available.
    #[error("{0}")]
    EmulatorUnavailable(String),
    /// A netlink request failed.
    #[error("netlink {what}")]
    Netlink {
        /// What was being done.
        what: String,
        /// The kernel's answer.
        #[source]
        source: io::Error,
    },
    /// Any other system call failed.
    #[error("{what}")]
    Io {
        /// What was being done.
        what: String,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// A BPF congestion control (bbr3) asked of a build without BPF support.
    #[error(
        "{wanted}: not in this build (built without the cargo feature \"bpf\"); available: {available}"
    )]
    NotInBuild {
        /// The requested name.
        wanted: String,
        /// `/proc/sys/net/ipv4/tcp_available_congestion_control`.
        available: String,
    },
    /// Registering a BPF congestion control for the run failed.
    #[cfg(feature = "bpf")]
    #[error("{what}")]
    Bpf {
        /// What was being done.
        what: String,
        /// bbrkit-bpf's error.
        #[source]
        source: bbrkit_bpf::BpfError,
    },
    /// Invalid experiment parameters.
    #[error("{0}")]
    Invalid(String),
    /// The run was interrupted by a signal.
    #[error("interrupted")]
    Interrupted,
}

impl LabError {
    /// Wraps an OS error with what was being done.
    pub fn io(what: impl Into<String>, source: io::Error) -> Self {
        LabError::Io {
            what: what.into(),
            source,
        }
    }
}

/// Result alias for the lab.
pub type Result<T> = std::result::Result<T, LabError>;
