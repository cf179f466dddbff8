//! `doctor`: every known pitfall found on this host, each finding with its
//! evidence and the fix. Only reads (sysctl files under the root, live
//! /proc, rtnetlink, sock_diag).
//!
//! Owns the [`Finding`] and [`DoctorReport`] types, [`diagnose`], which runs
//! every group, and what the groups share. One file per group of findings:
//!
//! | file | findings |
//! |---|---|
//! | `persistence.rs` | `boot_override`, `not_persisted`, `overridden_file`, `runtime_differs` |
//! | `tools.rs` | `tuned`, `image_files` (cloud-init, ufw, rc.local) |
//! | `kernel.rs` | `no_bbr`, `no_fq`, `stale_interface_qdisc` |
//! | `namespaces.rs` | `container`, `container_netns`, `container_hints`, `netns_old_cc`, `not_allowed` |
//! | `connections.rs` | `old_connections`, `route_congctl` |
//! | `traffic.rs` | `mostly_receives` |
//! | `crate::doctor_bpf` | the BPF congestion controls' (`bpf_*`) |

use serde::Serialize;

use crate::verify::Established;
use crate::{HostError, Root, env};

mod connections;
mod kernel;
mod namespaces;
mod persistence;
mod tools;
mod traffic;

pub use traffic::{loopback_bytes, receive_finding};

/// Severity; `warning` and `error` make `doctor` exit 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Level {
    /// Worth knowing; nothing to fix.
    Info,
    /// Something does not work as the operator probably expects.
    Warning,
    /// BBR cannot work here.
    Error,
}

/// One finding.
#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    /// Stable identifier (`boot_override`, `not_persisted`, ...).
    pub id: String,
    /// Severity.
    pub level: Level,
    /// One-line summary.
    pub title: String,
    /// Facts that show it.
    pub evidence: Vec<String>,
    /// What to do.
    pub fix: String,
}

/// The `doctor` report (also the `--json` document).
#[derive(Debug, Clone, Serialize)]
pub struct DoctorReport {
    /// Findings, worst first.
    pub findings: Vec<Finding>,
    /// A warning or error was found.
    pub problem: bool,
}

impl Finding {
    /// A finding with its evidence and fix.
    pub fn new(
        id: &str,
        level: Level,
        title: impl Into<String>,
        evidence: Vec<String>,
        fix: impl Into<String>,
    ) -> Finding {
        Finding {
            id: id.into(),
            level,
            title: title.into(),
            evidence,
            fix: fix.into(),
        }
    }
}

/// At most this many connections are listed as a finding's evidence.
const CONNECTIONS_SHOWN: usize = 10;

/// The established connections `keep` selects, as evidence lines
/// `local -> remote uses cc` plus `note` (the first [`CONNECTIONS_SHOWN`]),
/// and how many there are.
pub(crate) fn connection_lines(
    socks: &[Established],
    keep: impl Fn(&Established) -> bool,
    note: &str,
) -> (usize, Vec<String>) {
    let picked: Vec<&Established> = socks.iter().filter(|s| keep(s)).collect();
    let lines = picked
        .iter()
        .take(CONNECTIONS_SHOWN)
        .map(|s| {
            format!(
                "{} -> {} uses {}{note}",
                s.local,
                s.remote,
                s.cc.as_deref().unwrap_or("?")
            )
        })
        .collect();
    (picked.len(), lines)
}

/// Runs every diagnosis.
pub fn diagnose(root: &Root) -> Result<DoctorReport, HostError> {
    let facts = crate::kernel::gather_without_sockets(root);
    let environ = env::detect(root);
    let mut out = Vec::new();
    out.extend(kernel::no_bbr(&facts));
    persistence::boot_findings(root, &facts, &mut out)?;
    out.extend(kernel::stale_interface_qdisc(&facts));
    out.extend(namespaces::container(&environ));
    out.extend(connections::old_connections(&facts));
    out.extend(connections::route_congctl(&facts));
    out.extend(namespaces::netns_old_cc(&facts, &environ));
    out.extend(kernel::no_fq(&facts));
    out.extend(namespaces::not_allowed(root, &facts, &environ));
    out.extend(tools::tuned(root));
    out.extend(tools::image_files(root));
    out.extend(traffic::mostly_receives());
    out.extend(crate::doctor_bpf::findings(
        root,
        &crate::doctor_bpf::gather(),
    ));
    out.sort_by_key(|f| std::cmp::Reverse(f.level));
    let problem = out.iter().any(|x| x.level >= Level::Warning);
    Ok(DoctorReport {
        findings: out,
        problem,
    })
}

#[cfg(test)]
pub(crate) mod tests;
