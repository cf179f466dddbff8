//! The one error type of `bbrkit-diag`.
//!
//! Owns the wording of every failure the library can report. Must never hide
//! the cause: each variant carries the path, errno or byte offset involved.
//! An OS error is the `source`, never also part of the message, so `{:#}`
//! and [`error_chain`] name it once, after the wording.

use std::path::PathBuf;

/// Everything that can go wrong while taking a census or reading counters.
#[derive(Debug, thiserror::Error)]
pub enum DiagError {
    /// The `NETLINK_SOCK_DIAG` socket could not be opened, bound or used.
    #[error("sock_diag netlink: {context}")]
    Netlink {
        /// What was being done (`open socket`, `send dump request`, ...).
        context: &'static str,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The kernel answered a dump request with an error (`NLMSG_ERROR`).
    #[error("sock_diag dump of {family} sockets refused by the kernel")]
    Kernel {
        /// `IPv4` or `IPv6`.
        family: &'static str,
        /// The errno the kernel returned, as an OS error.
        #[source]
        source: std::io::Error,
    },
    /// A netlink message or attribute does not fit in the bytes that carry it.
    #[error("malformed sock_diag message: {what} at byte {offset}: {detail}")]
    Malformed {
        /// The structure being decoded (`nlmsghdr`, `rtattr`, `inet_diag_msg`).
        what: &'static str,
        /// Byte offset of the structure inside the buffer that was parsed.
        offset: usize,
        /// Human explanation (`length 400 exceeds the 120 bytes left`).
        detail: String,
    },
    /// A fixed-size kernel structure arrived shorter than its minimum size.
    #[error("{what} truncated: {got} bytes, need at least {need}")]
    Truncated {
        /// The structure (`tcp_bbr_info`, `inet_diag_msg`).
        what: &'static str,
        /// Minimum size in bytes.
        need: usize,
        /// Bytes actually present.
        got: usize,
    },
    /// A counters file under `/proc` could not be read.
    #[error("reading {}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// A counters file does not have the nstat "table" format.
    #[error("{}: line {line}: {detail}", path.display())]
    Format {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What is wrong with it.
        detail: String,
    },
    /// A `--cc` filter names an algorithm the kernel has not registered
    /// (no socket can have it: a typo such as `bbr2`).
    #[error(
        "--cc {name}: no such congestion-control algorithm on this kernel (available: {})",
        available.join(", ")
    )]
    UnknownAlgorithm {
        /// The name asked for.
        name: String,
        /// `tcp_available_congestion_control`.
        available: Vec<String>,
    },
    /// A user-supplied name (TCP state, metric name) is not valid.
    #[error("{0}")]
    Invalid(String),
}

/// `error` and each of its causes, joined by `": "` (what `anyhow`'s `{:#}`
/// prints), for reports that carry an error as text.
pub fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut out = error.to_string();
    let mut cause = error.source();
    while let Some(c) = cause {
        out.push_str(": ");
        out.push_str(&c.to_string());
        cause = c.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(errno: i32) -> std::io::Error {
        std::io::Error::from_raw_os_error(errno)
    }

    #[test]
    fn every_chain_names_the_os_error_once() {
        let errors = [
            DiagError::Netlink {
                context: "open socket",
                source: os(libc::EACCES),
            },
            DiagError::Kernel {
                family: "IPv4",
                source: os(libc::EPERM),
            },
            DiagError::Read {
                path: "/proc/net/snmp".into(),
                source: os(libc::ENOENT),
            },
        ];
        for e in &errors {
            let chain = error_chain(e);
            assert_eq!(chain.matches("os error").count(), 1, "{chain}");
            assert!(chain.starts_with(&e.to_string()), "{chain}");
        }
        assert_eq!(
            error_chain(&errors[2]),
            "reading /proc/net/snmp: No such file or directory (os error 2)"
        );
    }
}
