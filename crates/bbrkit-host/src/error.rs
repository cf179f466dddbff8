//! Typed errors of `bbrkit-host`. Every variant names what failed and why in
//! one line, so the CLI can print `bbrkit: <error>` and exit 2. An OS,
//! netlink or BPF error is the `source`, never also part of the message, so
//! `{:#}` and [`bbrkit_diag::error_chain`] name it once, after the wording.

use std::path::PathBuf;

/// A lower-level error kept as the source of a [`HostError`].
pub type Source = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Why a host operation could not run.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    /// `--root` is missing or not a directory.
    #[error("--root {path}: {reason}")]
    BadRoot {
        /// The path given.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// A file or directory could not be read or written.
    #[error("{}", path.display())]
    Io {
        /// The file involved.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// `--cc` names an algorithm this kernel does not offer.
    #[error(
        "unknown congestion control {name:?}: this kernel offers {available}; bbrkit's BPF: {bpf}"
    )]
    UnknownCc {
        /// The requested name.
        name: String,
        /// Space-separated list of algorithms this kernel offers.
        available: String,
        /// Space-separated list of bbrkit's BPF algorithms.
        bpf: String,
    },
    /// `boot --cc` names an algorithm that is not one of bbrkit's BPF ones.
    #[error("boot --cc {name}: {reason}")]
    NotBootable {
        /// The requested name.
        name: String,
        /// What it is, and what `bbrkit boot` is for.
        reason: String,
    },
    /// The requested algorithm cannot become this namespace's default.
    #[error(
        "{name} is not in net.ipv4.tcp_allowed_congestion_control ({allowed}); a non-initial network namespace may only choose allowed algorithms (EPERM): add it on the host"
    )]
    NotAllowed {
        /// The requested name.
        name: String,
        /// The allowed list.
        allowed: String,
    },
    /// The caller lacks the permission to make the change.
    #[error("permission denied: {0}")]
    Permission(String),
    /// A netlink request failed: `step` names the part of the request
    /// (`socket`, `recv`, ...), none when the kernel answered with an error.
    #[error("netlink{}", step.map(|s| format!(": {s}")).unwrap_or_default())]
    Netlink {
        /// The part of the exchange that failed.
        step: Option<&'static str>,
        /// The socket, parse or kernel error.
        #[source]
        source: Source,
    },
    /// Reading the kernel's socket table or counters failed.
    #[error("{what}")]
    Diag {
        /// What was read (`sock_diag`).
        what: &'static str,
        /// `bbrkit-diag`'s error.
        #[source]
        source: bbrkit_diag::DiagError,
    },
    /// bbrkit refuses to enable a BPF congestion control here (no systemd,
    /// a missing kernel feature, another holder of the name).
    #[error("--cc {cc}: {reason}")]
    BpfRefused {
        /// The algorithm.
        cc: String,
        /// Why, with the way forward.
        reason: String,
    },
    /// Loading, registering or pinning a BPF congestion control failed.
    #[cfg(feature = "bpf")]
    #[error("{what}")]
    Bpf {
        /// What was being done (`--cc bbr3`, `register bbr3`).
        what: String,
        /// `bbrkit-bpf`'s error.
        #[source]
        source: bbrkit_bpf::BpfError,
    },
    /// A path bbrkit needs holds a file bbrkit did not put there.
    #[error("{path}: {reason}")]
    NotOurs {
        /// The path, as the operator names it.
        path: String,
        /// What is there and what to do.
        reason: String,
    },
    /// Another `enable` or `rollback` holds the host lock and did not
    /// finish in time.
    #[error("{path}: locked by {holder}; try again when it has finished")]
    Locked {
        /// The lock file.
        path: PathBuf,
        /// Who holds it (`pid 123 (enable)`).
        holder: String,
    },
    /// The before-image is unreadable or corrupt.
    /// A policy file that does not parse or validate (its wording names
    /// the file, the rule, the key and the value).
    #[error(transparent)]
    Policy(bbrkit_policy::PolicyError),
    /// A policy that cannot be applied here (an algorithm not registered,
    /// no cgroup v2).
    #[error("--policy: {reason}")]
    PolicyRefused {
        /// Why, with the fix.
        reason: String,
    },
    /// A congestion control's kernel module did not load.
    #[error("load {module}: {reason}")]
    ModuleLoad {
        /// The module (`tcp_bbr`).
        module: String,
        /// Why (the evidence read back).
        reason: String,
    },
    #[error("before-image {path}: {reason}")]
    State {
        /// The state file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
}

impl HostError {
    /// Wraps an I/O error with the path it concerns.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        HostError::Io {
            path: path.into(),
            source,
        }
    }

    /// A netlink failure at `step` (None: the kernel's answer).
    pub fn netlink(step: Option<&'static str>, source: impl Into<Source>) -> Self {
        HostError::Netlink {
            step,
            source: source.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_os_error_is_the_source_and_named_once() {
        let e = HostError::io("/etc/x", std::io::Error::from_raw_os_error(libc::EACCES));
        assert_eq!(e.to_string(), "/etc/x");
        assert_eq!(
            bbrkit_diag::error_chain(&e),
            "/etc/x: Permission denied (os error 13)"
        );
    }

    #[test]
    fn netlink_errors_keep_their_source() {
        let kernel = HostError::netlink(None, std::io::Error::from_raw_os_error(libc::EPERM));
        assert_eq!(
            bbrkit_diag::error_chain(&kernel),
            "netlink: Operation not permitted (os error 1)"
        );
        let recv = HostError::netlink(Some("recv"), std::io::Error::from_raw_os_error(libc::EINTR));
        assert_eq!(recv.to_string(), "netlink: recv");
        assert!(std::error::Error::source(&recv).is_some());
    }
}
