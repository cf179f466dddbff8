//! `verify`: is the expected algorithm really in effect? The seeds' four
//! checks plus persistence, one [`Check`] each — the sysctl value; the
//! algorithm present (built in counts); live established sockets by
//! algorithm; every interface's root qdisc; the file that wins at boot —
//! and, for one of bbrkit's BPF algorithms, its registration, boot unit
//! and this boot's run of it. A pure judgement ([`judge`]) of a
//! [`Snapshot`]; each check belongs to its kind of change
//! (`crate::change`). A kernel without fq passes the qdisc check (BBR
//! paces internally). Only reads.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::change::{boot_unit, bpf, persist, policy, qdisc, sysctl};
use crate::host::{Host, LinuxHost};
use crate::outcome::CheckName;
use crate::snapshot::{Scope, Snapshot};
use crate::{HostError, KEY_CC, Provider, Root};

pub use crate::host::Established;
pub use crate::outcome::Check;

/// A socket not on the expected algorithm.
#[derive(Debug, Clone, Serialize)]
pub struct OldSocket {
    /// Local address.
    pub local: String,
    /// Remote address.
    pub remote: String,
    /// Its algorithm.
    pub cc: String,
}

/// The `verify` report (also the `--json` document).
#[derive(Debug, Clone, Serialize)]
pub struct VerifyReport {
    /// The algorithm checked for.
    pub expected_cc: String,
    /// All checks.
    pub checks: Vec<Check>,
    /// Established sockets per algorithm.
    pub sockets_by_cc: BTreeMap<String, usize>,
    /// Established sockets on another algorithm.
    pub old_sockets: Vec<OldSocket>,
    /// Every check passed.
    pub ok: bool,
}

/// Runs every check on `host`. `cc` overrides the expected algorithm
/// (default: the one in bbrkit's file, else `bbr`); an algorithm this host
/// does not offer is a usage error.
pub fn run(host: &dyn Host, cc: Option<&str>) -> Result<VerifyReport, HostError> {
    judge(&Snapshot::read(host, &Scope::verify())?, cc)
}

/// Like [`run`] on the live host under `root`, with the established
/// sockets supplied by the caller (or the reason they could not be read),
/// so a caller that already took a census (`bbrkit metrics`) does not dump
/// the sockets again.
pub fn run_with(
    root: &Root,
    cc: Option<&str>,
    established: Result<Vec<Established>, String>,
) -> Result<VerifyReport, HostError> {
    let scope = Scope {
        sockets: false,
        ..Scope::verify()
    };
    let mut snap = Snapshot::read(&LinuxHost::new(root.clone()), &scope)?;
    snap.sockets = established;
    judge(&snap, cc)
}

/// The checks for `snap` (see [`run`]).
pub fn judge(snap: &Snapshot, cc: Option<&str>) -> Result<VerifyReport, HostError> {
    if let Some(cc) = cc {
        crate::enable::validate_cc(snap, cc)?;
    }
    let expected = cc
        .map(String::from)
        .or_else(|| snap.bbrkit_value(KEY_CC))
        .unwrap_or_else(|| "bbr".into());
    if cc.is_none() && snap.bbrkit_file.is_none() && !snap.policy.records.is_empty() {
        return Ok(policy_only(snap, expected));
    }
    let mut checks = vec![
        sysctl::check(snap, &expected),
        check_available(snap, &expected),
    ];
    let (sockets, by_cc, old) = check_sockets(&snap.sockets, &expected);
    checks.push(sockets);
    checks.extend(qdisc::checks(snap));
    checks.extend(persist::checks(snap, &expected));
    if let Provider::Bpf(reg) = snap.provider(&expected) {
        checks.push(bpf::check(reg));
        checks.extend(boot_unit::checks(snap, &expected));
    }
    checks.extend(policy::checks(snap));
    let ok = checks.iter().all(|c| c.ok);
    Ok(VerifyReport {
        expected_cc: expected,
        checks,
        sockets_by_cc: by_cc,
        old_sockets: old,
        ok,
    })
}

/// Only a policy was enabled (no sysctl file of bbrkit's): its checks and
/// the socket census, the default algorithm left as it is.
fn policy_only(snap: &Snapshot, expected: String) -> VerifyReport {
    let checks = policy::checks(snap);
    let (_, by_cc, _) = check_sockets(&snap.sockets, &expected);
    VerifyReport {
        expected_cc: expected,
        ok: checks.iter().all(|c| c.ok),
        checks,
        sockets_by_cc: by_cc,
        old_sockets: Vec::new(),
    }
}

/// Check 2: the algorithm is there (built in counts).
fn check_available(snap: &Snapshot, expected: &str) -> Check {
    let facts = &snap.kernel;
    let listed = facts.available_cc.iter().any(|c| c == expected);
    let how = if expected == "bbr" {
        facts.bbr.provision.word().to_string()
    } else if listed {
        "registered".into()
    } else {
        "not registered".into()
    };
    Check::new(
        CheckName::Available,
        listed,
        "tcp_available_congestion_control",
        facts.available_cc.join(" "),
        format!("contains {expected}"),
        if expected == "bbr" {
            format!("bbr {how}: {}", facts.bbr.evidence.join("; "))
        } else {
            how
        },
    )
}

/// Live sockets by algorithm (check 3): the check, the count per algorithm and
/// the sockets on another one.
fn check_sockets(
    established: &Result<Vec<Established>, String>,
    expected: &str,
) -> (Check, BTreeMap<String, usize>, Vec<OldSocket>) {
    let mut by_cc = BTreeMap::new();
    let mut old = Vec::new();
    let socks = match established {
        Ok(socks) => socks,
        Err(e) => {
            let c = Check::new(
                CheckName::Sockets,
                false,
                "established_sockets",
                "unreadable",
                "readable",
                e,
            );
            return (c, by_cc, old);
        }
    };
    for s in socks {
        let c = s.cc.clone().unwrap_or_else(|| "unknown".into());
        *by_cc.entry(c.clone()).or_insert(0usize) += 1;
        if c != expected {
            old.push(OldSocket {
                local: s.local.clone(),
                remote: s.remote.clone(),
                cc: c,
            });
        }
    }
    let c = Check::new(
        CheckName::Sockets,
        old.is_empty(),
        format!("established_not_{expected}"),
        old.len().to_string(),
        "0",
        sockets_detail(&by_cc, &old),
    );
    (c, by_cc, old)
}

fn sockets_detail(by_cc: &BTreeMap<String, usize>, old: &[OldSocket]) -> String {
    let summary = if by_cc.is_empty() {
        "no established TCP sockets in this network namespace".to_string()
    } else {
        by_cc
            .iter()
            .map(|(k, v)| format!("{k}:{v}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    if old.is_empty() {
        return format!("sock_diag INET_DIAG_CONG: {summary}");
    }
    let names: Vec<String> = old
        .iter()
        .take(5)
        .map(|o| format!("{}->{} {}", o.local, o.remote, o.cc))
        .collect();
    format!(
        "sock_diag INET_DIAG_CONG: {summary}; still on the old algorithm: {}{}; created before the switch (the algorithm is fixed when a socket is created, or set by the application): they change when they reconnect",
        names.join(", "),
        if old.len() > 5 {
            format!(" and {} more", old.len() - 5)
        } else {
            String::new()
        }
    )
}

#[cfg(test)]
#[path = "verify_tests.rs"]
mod tests;
