//! Typed errors of `bbrkit-host`. Every variant names what failed and why in
//! one line, so the CLI can print `bbrkit: <error>` and exit 2. An OS error
//! is the `source`, never also part of the message, so `{:#}` and
//! [`bbrkit_diag::error_chain`] name it once, after the wording.

use std::path::PathBuf;

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
    #[error("unknown congestion control {name:?}: this kernel offers {available}")]
    UnknownCc {
        /// The requested name.
        name: String,
        /// Space-separated list of algorithms this kernel offers.
        available: String,
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
    /// A netlink request failed.
    #[error("netlink: {0}")]
    Netlink(String),
    /// A BPF congestion control cannot be enabled here (no systemd, a
    /// missing kernel feature, the verifier's refusal, another holder).
    #[error("{0}")]
    Bpf(String),
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
}
