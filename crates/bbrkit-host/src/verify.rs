//! `verify`: the seeds' four checks plus persistence, one [`Check`] each:
//! the sysctl value; the algorithm present (built in counts); live
//! established sockets by algorithm (sock_diag `INET_DIAG_CONG` via
//! `bbrkit-diag`); every interface's root qdisc; the file that wins at boot.
//! A kernel without fq passes the qdisc check (BBR paces internally).
//! Only reads.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::precedence::{self, Loader};
use crate::qdisc::{self, Class};
use crate::{HostError, KEY_CC, KEY_QDISC, Root, kernel};

/// One check.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    /// Check name (`sysctl`, `available`, `sockets`, `qdisc`, `boot`).
    pub name: String,
    /// Passed.
    pub ok: bool,
    /// What was measured (`net.ipv4.tcp_congestion_control`, `qdisc.eth0`).
    pub key: String,
    /// Measured value.
    pub value: String,
    /// Expected value.
    pub expected: String,
    /// Evidence / explanation.
    pub detail: String,
}

impl Check {
    /// The human line: `ok key=value (detail)` or `FAIL key=value expected=value (detail)`.
    pub fn line(&self) -> String {
        if self.ok {
            format!("ok   {}={} ({})", self.key, self.value, self.detail)
        } else {
            format!(
                "FAIL {}={} expected={} ({})",
                self.key, self.value, self.expected, self.detail
            )
        }
    }
}

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

fn check(
    name: &str,
    ok: bool,
    key: &str,
    value: impl Into<String>,
    expected: impl Into<String>,
    detail: impl Into<String>,
) -> Check {
    Check {
        name: name.into(),
        ok,
        key: key.into(),
        value: value.into(),
        expected: expected.into(),
        detail: detail.into(),
    }
}

/// The value bbrkit's own file sets for `key`, if the file exists.
pub fn bbrkit_value(root: &Root, key: &str) -> Option<String> {
    let text = std::fs::read_to_string(root.bbrkit_file()).ok()?;
    precedence::parse(&text, "")
        .into_iter()
        .rev()
        .find(|a| a.key == key)
        .map(|a| a.value)
}

/// One established TCP socket as the `sockets` check needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Established {
    /// Local address and port.
    pub local: String,
    /// Remote address and port.
    pub remote: String,
    /// Its congestion control (`INET_DIAG_CONG`), if the kernel sent it.
    pub cc: Option<String>,
}

impl Established {
    /// The socket's fields when it is established, else None: lets a
    /// caller that already walks every socket (`bbrkit metrics`) collect
    /// what `verify` needs without a second dump.
    pub fn from_socket(s: &bbrkit_diag::Socket) -> Option<Self> {
        (s.state == bbrkit_diag::TcpState::Established).then(|| Self {
            local: s.local.to_string(),
            remote: s.remote.to_string(),
            cc: s.cc.clone(),
        })
    }
}

/// The established sockets of this network namespace (one sock_diag dump).
pub fn established_sockets() -> Result<Vec<Established>, String> {
    let filter = bbrkit_diag::Filter {
        states: bbrkit_diag::StateSet::empty().with(bbrkit_diag::TcpState::Established),
        details: false,
        ..Default::default()
    };
    bbrkit_diag::census(&filter)
        .map(|v| v.iter().filter_map(Established::from_socket).collect())
        .map_err(|e| bbrkit_diag::error_chain(&e))
}

/// Runs every check. `cc` overrides the expected algorithm (default: the
/// one in bbrkit's file, else `bbr`). Takes its own socket census.
pub fn run(root: &Root, cc: Option<&str>) -> Result<VerifyReport, HostError> {
    run_with(root, cc, established_sockets())
}

/// Like [`run`], with the established sockets supplied by the caller (or
/// the reason they could not be read), so a caller that already took a
/// census does not dump the sockets again.
pub fn run_with(
    root: &Root,
    cc: Option<&str>,
    established: Result<Vec<Established>, String>,
) -> Result<VerifyReport, HostError> {
    let facts = kernel::gather_without_sockets(root);
    let expected = cc
        .map(String::from)
        .or_else(|| bbrkit_value(root, KEY_CC))
        .unwrap_or_else(|| "bbr".into());
    let mut checks = vec![
        check_sysctl(&facts, &expected),
        check_available(&facts, &expected),
    ];
    let (sockets, by_cc, old) = check_sockets(established, &expected);
    checks.push(sockets);
    checks.extend(check_qdiscs(root, &facts));
    checks.extend(check_boot(root, &facts, &expected)?);
    if crate::bpfcc::is_bpf_cc(&expected) {
        checks.extend(crate::verify_bpf::checks(root, &expected));
    }
    let ok = checks.iter().all(|c| c.ok);
    Ok(VerifyReport {
        expected_cc: expected,
        checks,
        sockets_by_cc: by_cc,
        old_sockets: old,
        ok,
    })
}

/// Check 1: the sysctl.
fn check_sysctl(facts: &kernel::KernelFacts, expected: &str) -> Check {
    let cur = facts
        .current_cc
        .clone()
        .unwrap_or_else(|| "(absent)".into());
    check(
        "sysctl",
        cur == expected,
        KEY_CC,
        &cur,
        expected,
        "/proc/sys of this network namespace",
    )
}

/// Check 2: the algorithm is there (built in counts).
fn check_available(facts: &kernel::KernelFacts, expected: &str) -> Check {
    let listed = facts.available_cc.iter().any(|c| c == expected);
    let how = if expected == "bbr" {
        facts.bbr.provision.word().to_string()
    } else if listed {
        "registered".into()
    } else {
        "not registered".into()
    };
    check(
        "available",
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
    established: Result<Vec<Established>, String>,
    expected: &str,
) -> (Check, BTreeMap<String, usize>, Vec<OldSocket>) {
    let mut by_cc = BTreeMap::new();
    let mut old = Vec::new();
    let socks = match established {
        Ok(socks) => socks,
        Err(e) => {
            let c = check(
                "sockets",
                false,
                "established_sockets",
                "unreadable",
                "readable",
                format!("sock_diag: {e}"),
            );
            return (c, by_cc, old);
        }
    };
    for s in &socks {
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
    let c = check(
        "sockets",
        old.is_empty(),
        &format!("established_not_{expected}"),
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

/// Check 4: the default qdisc bbrkit's file sets, and every interface's root qdisc.
fn check_qdiscs(root: &Root, facts: &kernel::KernelFacts) -> Vec<Check> {
    let mut checks = Vec::new();
    let absent = |q: &str| {
        facts
            .qdisc(q)
            .is_some_and(|f| f.provision == kernel::Provision::Absent)
    };
    if let (Some(w), Some(d)) = (bbrkit_value(root, KEY_QDISC), &facts.default_qdisc) {
        let kernel_lacks = absent(&w);
        let detail = if kernel_lacks && &w != d {
            format!("kernel has no {w}: BBR paces internally (Linux >= 4.13)")
        } else {
            "bbrkit's file sets it".into()
        };
        checks.push(check(
            "default_qdisc",
            &w == d || kernel_lacks,
            KEY_QDISC,
            d,
            w,
            detail,
        ));
    }
    match qdisc::list() {
        Ok(list) => checks.extend(
            list.iter()
                .map(|i| check_interface(i, facts.default_qdisc.as_deref(), absent("fq"))),
        ),
        Err(e) => checks.push(check(
            "qdisc",
            false,
            "qdisc",
            "unreadable",
            "readable",
            bbrkit_diag::error_chain(&e),
        )),
    }
    checks
}

/// One interface's root qdisc against the default (None: the host's).
fn check_interface(i: &qdisc::InterfaceQdisc, default: Option<&str>, fq_absent: bool) -> Check {
    let key = format!("qdisc.{}", i.name);
    let eff = i.effective().to_string();
    let (ok, expected_kind, detail) = match (i.class, default) {
        (Class::NoQueue, _) => (true, eff.clone(), "virtual device, no queue".to_string()),
        (Class::Inactive, _) => (
            true,
            eff.clone(),
            "down, gets the default when up".to_string(),
        ),
        (Class::Deliberate, _) => (
            true,
            eff.clone(),
            format!("{}: attached on purpose, left alone", i.describe()),
        ),
        (_, None) => (
            true,
            eff.clone(),
            "default qdisc belongs to the host (non-initial network namespace)".to_string(),
        ),
        (_, Some(d)) if eff == d => (
            true,
            d.to_string(),
            if fq_absent {
                format!(
                    "{}; kernel has no fq: BBR paces internally (Linux >= 4.13)",
                    i.describe()
                )
            } else {
                i.describe()
            },
        ),
        (_, Some(d)) => (
            false,
            d.to_string(),
            format!(
                "{}: created before default_qdisc changed; `bbrkit enable` re-creates it",
                i.describe()
            ),
        ),
    };
    check("qdisc", ok, &key, eff, expected_kind, detail)
}

/// Check 5: persistence, the value that wins at boot under each loader.
fn check_boot(
    root: &Root,
    facts: &kernel::KernelFacts,
    expected: &str,
) -> Result<Vec<Check>, HostError> {
    let file_shown = root.show(&root.bbrkit_file());
    let mut checks = Vec::new();
    for r in precedence::resolve(root, &[KEY_CC], None)? {
        let key = format!(
            "boot.{}",
            match r.loader {
                Loader::Systemd => "systemd",
                Loader::Procps => "procps",
            }
        );
        let (value, ok, detail) = match &r.winner {
            Some(w) if w.file == file_shown => (
                format!("{}:{}", w.file, w.line),
                w.value == expected,
                format!("{} sets {}", r.loader.name(), w.value),
            ),
            Some(w) => (
                format!("{}:{}", w.file, w.line),
                w.value == expected,
                format!(
                    "{} applies {} = {} from {}:{} last",
                    r.loader.name(),
                    KEY_CC,
                    w.value,
                    w.file,
                    w.line
                ),
            ),
            None => {
                let d = facts
                    .config_default_cc
                    .clone()
                    .unwrap_or_else(|| "unknown".into());
                (
                    "(no file)".to_string(),
                    d == expected,
                    format!("no file sets it: kernel default CONFIG_DEFAULT_TCP_CONG={d}"),
                )
            }
        };
        checks.push(check(
            "boot",
            ok,
            &key,
            value,
            format!("{file_shown} ({expected})"),
            detail,
        ));
    }
    Ok(checks)
}
