//! `doctor`: every known pitfall found on this host, each finding with its
//! evidence and the fix. Only reads (sysctl files under the root, live
//! /proc, rtnetlink, sock_diag).

use serde::Serialize;

use crate::precedence::{self, Loader};
use crate::qdisc;
use crate::verify::bbrkit_value;
use bbrkit_diag::nstat::Counters;

use crate::{HostError, KEY_CC, KEY_QDISC, Root, enable, env, kernel, sysctl};

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

fn f(
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

fn enable_cmd(key: &str, value: &str) -> String {
    match key {
        KEY_CC => format!("`bbrkit enable --cc {value}`"),
        KEY_QDISC => format!("`bbrkit enable --qdisc {value}`"),
        _ => "`bbrkit enable --tune`".to_string(),
    }
}

/// Classifies traffic direction from cumulative byte counters: returns a
/// finding when the host received over 4x what it sent (and > 100 MB).
pub fn receive_finding(in_octets: u64, out_octets: u64) -> Option<Finding> {
    if in_octets < 100_000_000 || in_octets < out_octets.saturating_mul(4) {
        return None;
    }
    Some(f(
        "mostly_receives",
        Level::Info,
        "this host mostly receives: BBR only changes what it sends (its uploads)",
        vec![format!(
            "IP bytes received {in_octets}, sent {out_octets} ({:.1}x more received; /proc/net/netstat IpExt InOctets/OutOctets minus loopback)",
            in_octets as f64 / out_octets.max(1) as f64
        )],
        "enable BBR on the sending side (the server or tunnel end that uploads to you); here it helps only uploads",
    ))
}

/// Received and sent bytes of `lo` from `/proc/net/dev`.
pub fn loopback_bytes(dev: &str) -> Option<(u64, u64)> {
    let rest = dev
        .lines()
        .find_map(|l| l.trim_start().strip_prefix("lo:"))?;
    let f: Vec<u64> = rest
        .split_whitespace()
        .map(|x| x.parse().ok())
        .collect::<Option<_>>()?;
    Some((*f.first()?, *f.get(8)?))
}

/// TCP segment counters of `/proc/net/snmp` as evidence of the direction:
/// a host that mostly receives sends little more than ACKs.
fn snmp_tcp_evidence(c: &Counters) -> Option<String> {
    let (i, o) = (c.get("TcpInSegs")?, c.get("TcpOutSegs")?);
    Some(format!(
        "/proc/net/snmp Tcp InSegs={i} OutSegs={o} (loopback included)"
    ))
}

fn boot_findings(
    root: &Root,
    facts: &kernel::KernelFacts,
    out: &mut Vec<Finding>,
) -> Result<(), HostError> {
    let mut keys = vec![KEY_CC];
    if facts.default_qdisc.is_some() {
        keys.push(KEY_QDISC);
    }
    for (k, _, _) in enable::TUNING {
        if bbrkit_value(root, k).is_some() {
            keys.push(k);
        }
    }
    let res = precedence::resolve(root, &keys, None)?;
    for key in &keys {
        let k = KeyState {
            key,
            mine: root.show(&root.bbrkit_file()),
            ours: bbrkit_value(root, key),
            runtime: sysctl::read(key).ok().flatten(),
        };
        let mut lost = Lost::default();
        for r in res.iter().filter(|r| r.key == *key) {
            out.extend(k.winner_finding(r, facts, &mut lost));
            out.extend(k.overridden_findings(r));
        }
        out.extend(k.lost_finding(lost));
        out.extend(k.runtime_differs(facts));
    }
    Ok(())
}

/// One key as `doctor` sees it: bbrkit's file, its value there, the runtime.
struct KeyState<'a> {
    key: &'a str,
    mine: String,
    ours: Option<String>,
    runtime: Option<String>,
}

/// Boot files that set a runtime value bbrkit does not manage differently.
#[derive(Default)]
struct Lost {
    evidence: Vec<String>,
    files: Vec<String>,
    fix: String,
}

impl KeyState<'_> {
    /// What the winner under one loader means: bbrkit overridden, or a
    /// runtime value lost (collected in `lost`) or never persisted.
    fn winner_finding(
        &self,
        r: &precedence::Resolution,
        facts: &kernel::KernelFacts,
        lost: &mut Lost,
    ) -> Option<Finding> {
        let (key, mine) = (self.key, &self.mine);
        match (&self.ours, &r.winner) {
            (Some(v), Some(w)) if &w.file != mine && &w.value != v => Some(f(
                "boot_override",
                Level::Warning,
                format!("{} overrides bbrkit's {key} at boot", w.file),
                vec![format!(
                    "{} applies {key} = {} from {}:{} after {mine} ({v})",
                    r.loader.name(),
                    w.value,
                    w.file,
                    w.line
                )],
                format!(
                    "remove or change line {} of {} (bbrkit never edits other files), then `bbrkit verify`",
                    w.line, w.file
                ),
            )),
            (None, Some(w)) if self.runtime.as_ref().is_some_and(|rv| rv != &w.value) => {
                let rv = self.runtime.clone().unwrap_or_default();
                lost.evidence.push(format!(
                    "{}: {}:{} sets {}",
                    r.loader.name(),
                    w.file,
                    w.line,
                    w.value
                ));
                lost.files.push(format!("{} ({})", w.file, w.value));
                lost.fix = format!(
                    "persist it: {} (or change {}:{})",
                    enable_cmd(key, &rv),
                    w.file,
                    w.line
                );
                None
            }
            (None, None) if r.loader == Loader::Systemd => {
                let kdef = match key {
                    KEY_CC => facts.config_default_cc.clone(),
                    KEY_QDISC => Some("pfifo_fast".into()),
                    _ => None,
                };
                let (kd, rv) = (kdef?, self.runtime.as_ref()?);
                (&kd != rv).then(|| f(
                    "not_persisted",
                    Level::Warning,
                    format!("runtime {key} = {rv} is not persisted: no sysctl file sets it (kernel default {kd})"),
                    vec![format!("/proc/sys: {key} = {rv}"), format!("no file under sysctl.d or sysctl.conf sets {key}")],
                    format!("{} writes it to {mine}", enable_cmd(key, rv)),
                ))
            }
            _ => None,
        }
    }

    /// Files that set the key but lose at boot (systemd's order).
    fn overridden_findings(&self, r: &precedence::Resolution) -> Vec<Finding> {
        let Some(w) = r.winner.as_ref().filter(|_| r.loader == Loader::Systemd) else {
            return Vec::new();
        };
        r.overridden
            .iter()
            .filter(|o| o.value != w.value && o.file != self.mine)
            .map(|o| {
                f(
                    "overridden_file",
                    Level::Info,
                    format!(
                        "{} sets {} = {} but loses at boot",
                        o.file, self.key, o.value
                    ),
                    vec![format!(
                        "{}:{} is applied before {}:{}",
                        o.file, o.line, w.file, w.line
                    )],
                    "nothing to do; remove the line to avoid confusion",
                )
            })
            .collect()
    }

    fn lost_finding(&self, mut lost: Lost) -> Option<Finding> {
        if lost.evidence.is_empty() {
            return None;
        }
        let (key, rv) = (self.key, self.runtime.clone().unwrap_or_default());
        lost.files.dedup();
        let mut evidence = vec![format!("/proc/sys: {key} = {rv}")];
        evidence.extend(lost.evidence);
        Some(f(
            "not_persisted",
            Level::Warning,
            format!(
                "runtime {key} = {rv} is lost on reboot: boot applies {}",
                lost.files.join(", ")
            ),
            evidence,
            lost.fix,
        ))
    }

    /// The runtime value differs from bbrkit's file (a qdisc the kernel
    /// lacks excepted).
    fn runtime_differs(&self, facts: &kernel::KernelFacts) -> Option<Finding> {
        let (key, v, rv) = (self.key, self.ours.as_ref()?, self.runtime.as_ref()?);
        let lacks = key == KEY_QDISC
            && facts
                .qdisc(v)
                .is_some_and(|q| q.provision == kernel::Provision::Absent);
        (v != rv && !lacks).then(|| f(
            "runtime_differs",
            Level::Warning,
            format!("runtime {key} = {rv} differs from bbrkit's file ({v})"),
            vec![format!("/proc/sys: {key} = {rv}"), format!("{}: {key} = {v}", self.mine)],
            "`bbrkit enable` applies it again; find who changed it (tuned, a container start script, an operator)",
        ))
    }
}

fn grep_keys(root: &Root, rel: &str, out: &mut Vec<String>) {
    let p = root.path(rel);
    let files: Vec<std::path::PathBuf> = if p.is_dir() {
        std::fs::read_dir(&p)
            .map(|rd| rd.flatten().map(|e| e.path()).collect())
            .unwrap_or_default()
    } else {
        vec![p]
    };
    for file in files {
        if let Ok(t) = std::fs::read_to_string(&file) {
            for (i, l) in t.lines().enumerate() {
                if !l.trim_start().starts_with('#') && sets_a_managed_key(l) {
                    out.push(format!("{}:{}: {}", root.show(&file), i + 1, l.trim()));
                }
            }
        }
    }
}

/// The line names a key `enable` may set (dotted or `/` form).
fn sets_a_managed_key(line: &str) -> bool {
    let line = line.replace('/', ".");
    [KEY_CC, KEY_QDISC]
        .into_iter()
        .chain(enable::TUNING.iter().map(|(k, _, _)| *k))
        .any(|k| line.contains(k))
}

/// The `[sysctl]` lines of a tuned profile (`etc/tuned/<p>/tuned.conf`,
/// else `usr/lib/tuned/<p>/tuned.conf`) that set a key `enable` may set.
fn tuned_profile_keys(root: &Root, profile: &str) -> Vec<String> {
    let mut out = Vec::new();
    for dir in ["etc/tuned", "usr/lib/tuned", "usr/lib/tuned/profiles"] {
        let p = root.path(format!("{dir}/{profile}/tuned.conf"));
        let Ok(t) = std::fs::read_to_string(&p) else {
            continue;
        };
        let mut in_sysctl = false;
        for (i, l) in t.lines().enumerate() {
            let l = l.trim();
            if l.starts_with('[') {
                in_sysctl = l == "[sysctl]";
            } else if in_sysctl && !l.starts_with('#') && sets_a_managed_key(l) {
                out.push(format!("{}:{}: {l}", root.show(&p), i + 1));
            }
        }
        break;
    }
    out
}

/// `reapply_sysctl` of tuned-main.conf (tuned's default is 1).
fn tuned_reapplies(main: &str) -> bool {
    !main.lines().any(|l| {
        l.split_once('=')
            .is_some_and(|(k, v)| k.trim() == "reapply_sysctl" && v.trim() == "0")
    })
}

/// Runs every diagnosis.
pub fn diagnose(root: &Root) -> Result<DoctorReport, HostError> {
    let facts = kernel::gather_without_sockets(root);
    let environ = env::detect(root);
    let mut out = Vec::new();
    out.extend(no_bbr(&facts));
    boot_findings(root, &facts, &mut out)?;
    out.extend(stale_interface_qdisc(&facts));
    out.extend(container(&environ));
    out.extend(old_connections(&facts));
    out.extend(route_congctl(&facts));
    out.extend(netns_old_cc(&facts, &environ));
    out.extend(no_fq(&facts));
    out.extend(not_allowed(root, &facts, &environ));
    out.extend(tuned(root));
    out.extend(image_files(root));
    out.extend(mostly_receives());
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

fn no_bbr(facts: &kernel::KernelFacts) -> Option<Finding> {
    (!facts.bbr.provision.present() && facts.bbr.provision != kernel::Provision::Unknown).then(|| {
        f("no_bbr", Level::Error, "this kernel has no BBR", facts.bbr.evidence.clone(),
            "boot a distro kernel >= 4.9 with CONFIG_TCP_CONG_BBR (HWE, backports, linux-image-cloud); bbrkit never installs kernels")
    })
}

fn stale_interface_qdisc(facts: &kernel::KernelFacts) -> Option<Finding> {
    let d = facts.default_qdisc.as_ref()?;
    let list = qdisc::list().ok()?;
    let stale: Vec<String> = list
        .iter()
        .filter(|i| enable::needs_recreate(i, Some(d)))
        .map(|i| {
            format!(
                "{}: root {} while net.core.default_qdisc = {d}",
                i.name,
                i.describe()
            )
        })
        .collect();
    (!stale.is_empty()).then(|| {
        f(
            "stale_interface_qdisc",
            Level::Warning,
            "default qdisc changed but interfaces still use the old one",
            stale,
            "`bbrkit enable` re-creates kernel-default root qdiscs (mq-aware); a reboot also does",
        )
    })
}

fn container(environ: &env::Environment) -> Vec<Finding> {
    let mut out = Vec::new();
    if environ.initial_netns == Some(false) {
        out.push(f("container_netns", Level::Info, "non-initial network namespace (container): the default qdisc and module loading belong to the host",
            vec![environ.netns_evidence.clone(), format!("{KEY_QDISC} does not exist here")],
            "change net.core.default_qdisc (and load modules) on the host; this namespace owns only its tcp_congestion_control"));
    }
    if let Some(c) = &environ.container {
        out.push(f(
            "container",
            Level::Info,
            format!("running in a container ({c}): the kernel is shared with the host"),
            environ.container_evidence.clone(),
            "kernel features (BBR, fq) come from the host's kernel; change them on the host",
        ));
    } else if environ
        .container_evidence
        .iter()
        .any(|e| e.contains("hint") || e.contains("cgroup"))
        && environ.initial_netns == Some(true)
    {
        out.push(f("container_hints", Level::Info, "container hints, but this is the initial network namespace (a VM or bare metal that owns its kernel)", environ.container_evidence.clone(), "nothing to do"));
    }
    out
}

fn old_connections(facts: &kernel::KernelFacts) -> Option<Finding> {
    let cur = facts.current_cc.as_ref()?;
    let socks = crate::verify::established_sockets().ok()?;
    let old: Vec<String> = socks
        .iter()
        .filter(|s| s.cc.as_deref() != Some(cur.as_str()))
        .map(|s| {
            format!(
                "{} -> {} uses {}",
                s.local,
                s.remote,
                s.cc.as_deref().unwrap_or("?")
            )
        })
        .collect();
    let n = old.len();
    (n > 0).then(|| {
        f("old_connections", Level::Warning, format!("{n} established connection(s) not on the default {cur}"), old.into_iter().take(10).collect(),
            "they were created before the switch (or the application chose another algorithm): they move when they reconnect; restart long-lived services")
    })
}

fn route_congctl(facts: &kernel::KernelFacts) -> Option<Finding> {
    let routes = crate::routes::with_congctl().ok()?;
    if routes.is_empty() {
        return None;
    }
    let cur = facts.current_cc.clone().unwrap_or_default();
    let other = routes.iter().any(|r| r.cc != cur);
    Some(f(
        "route_congctl",
        if other { Level::Warning } else { Level::Info },
        format!(
            "{} route(s) choose their own congestion control (congctl), overriding the default {cur}",
            routes.len()
        ),
        routes
            .iter()
            .map(|r| {
                format!(
                    "{} table {} dev #{} congctl {}",
                    r.destination,
                    r.table,
                    r.oif.unwrap_or(0),
                    r.cc
                )
            })
            .collect(),
        "connections over these routes use the route's algorithm: change it with `ip route change ... congctl <algo>` or drop congctl",
    ))
}

fn netns_old_cc(facts: &kernel::KernelFacts, environ: &env::Environment) -> Option<Finding> {
    let cur = facts.current_cc.as_ref()?;
    if environ.initial_netns != Some(true) {
        return None;
    }
    let stale: Vec<String> = crate::netns::others(256)
        .into_iter()
        .filter(|n| n.cc.as_ref().is_some_and(|c| c != cur))
        .map(|n| netns_entry(&n, &facts.available_cc))
        .collect();
    let fix = if crate::bpfcc::is_bpf_cc(cur) {
        format!(
            "a namespace copies the initial namespace's default when it is created: recreate those containers or pods; {cur} is registered for every namespace and NON_RESTRICTED, so `nsenter -n -t PID sysctl -w net.ipv4.tcp_congestion_control={cur}` also switches one in place"
        )
    } else {
        "a namespace copies the initial namespace's default when it is created: recreate those containers or pods (or set it inside them)".to_string()
    };
    (!stale.is_empty()).then(|| {
        f(
            "netns_old_cc",
            Level::Warning,
            format!(
                "{} other network namespace(s) do not default to {cur}",
                stale.len()
            ),
            stale,
            fix,
        )
    })
}

/// One namespace of `netns_old_cc`; a default that is no longer registered
/// (an unregistered BPF algorithm the namespace still holds) says so.
fn netns_entry(n: &crate::netns::Namespace, available: &[String]) -> String {
    let cc = n.cc.clone().unwrap_or_default();
    let gone = if available.contains(&cc) {
        ""
    } else {
        " (no longer registered: the namespace holds the old program and its new sockets still get it)"
    };
    format!("net:[{}] {} defaults to {cc}{gone}", n.inode, n.found_at)
}

fn no_fq(facts: &kernel::KernelFacts) -> Option<Finding> {
    let fq = facts
        .qdisc("fq")
        .filter(|q| q.provision == kernel::Provision::Absent)?;
    let mut ev = fq.evidence.clone();
    ev.push("tcp_bbr.c: without fq, TCP falls back to internal pacing with one hrtimer per socket (Linux >= 4.13)".into());
    Some(f(
        "no_fq",
        Level::Info,
        "kernel has no fq: BBR uses internal pacing (not a failure)",
        ev,
        "nothing required; on busy servers a kernel with CONFIG_NET_SCH_FQ saves CPU",
    ))
}

/// The first of: the algorithm bbrkit's file sets, BBR, the current
/// default, that is available but not allowed.
fn not_allowed(
    root: &Root,
    facts: &kernel::KernelFacts,
    environ: &env::Environment,
) -> Option<Finding> {
    let mut wanted: Vec<String> = bbrkit_value(root, KEY_CC).into_iter().collect();
    wanted.push("bbr".into());
    wanted.extend(facts.current_cc.clone());
    let cc = wanted
        .iter()
        .find(|cc| facts.available_cc.contains(cc) && !facts.allowed_cc.contains(cc))?;
    let (level, why) = if environ.initial_netns == Some(false) {
        (
            Level::Warning,
            "setting it as this namespace's default fails with EPERM",
        )
    } else {
        (
            Level::Info,
            "unprivileged programs cannot select it per socket (TCP_CONGESTION)",
        )
    };
    Some(f(
        "not_allowed",
        level,
        format!("{cc} is not in net.ipv4.tcp_allowed_congestion_control: {why}"),
        vec![format!(
            "tcp_allowed_congestion_control = {}",
            facts.allowed_cc.join(" ")
        )],
        format!("on the host: add {cc} to net.ipv4.tcp_allowed_congestion_control"),
    ))
}

fn tuned(root: &Root) -> Option<Finding> {
    let p = std::fs::read_to_string(root.path("etc/tuned/active_profile")).ok()?;
    let p = p.trim();
    if p.is_empty() {
        return None;
    }
    let main = std::fs::read_to_string(root.path("etc/tuned/tuned-main.conf")).unwrap_or_default();
    let profile_keys = tuned_profile_keys(root, p);
    Some(if tuned_reapplies(&main) {
        let mut ev = vec![format!("{}: {}", root.show(&root.path("etc/tuned/active_profile")), p), "reapply_sysctl = 1 (default): /run/sysctl.d, /etc/sysctl.d, /etc/sysctl.conf re-applied, /usr/lib/sysctl.d not".into()];
        ev.extend(profile_keys);
        f(
            "tuned",
            Level::Info,
            format!("tuned profile {p} is active and re-applies sysctl files after its own values"),
            ev,
            "nothing required: bbrkit's /etc/sysctl.d file is re-applied after tuned",
        )
    } else {
        let mut ev = vec![format!(
            "{}: reapply_sysctl = 0",
            root.show(&root.path("etc/tuned/tuned-main.conf"))
        )];
        ev.extend(profile_keys);
        f(
            "tuned",
            Level::Warning,
            format!("tuned profile {p} overrides sysctl files (reapply_sysctl = 0)"),
            ev,
            "set reapply_sysctl = 1 in tuned-main.conf or make the tuned profile set the same values",
        )
    })
}

fn image_files(root: &Root) -> Option<Finding> {
    let mut hits = Vec::new();
    for rel in [
        "etc/cloud/cloud.cfg",
        "etc/cloud/cloud.cfg.d",
        "etc/ufw/sysctl.conf",
        "etc/rc.local",
    ] {
        grep_keys(root, rel, &mut hits);
    }
    (!hits.is_empty()).then(|| {
        f("image_files", Level::Warning, "cloud-init, ufw or rc.local set these keys outside sysctl.d", hits,
            "cloud-init write_files/runcmd, ufw and rc.local re-apply these values after boot: change them there to match")
    })
}

/// The direction of this namespace's traffic from its IP byte counters
/// (read with `bbrkit_diag::nstat`), loopback subtracted.
fn mostly_receives() -> Option<Finding> {
    let c = bbrkit_diag::nstat::read().ok()?;
    let (i, o) = (c.get("IpExtInOctets")?, c.get("IpExtOutOctets")?);
    // Loopback traffic is counted both ways; it says nothing about the
    // direction of this host's network traffic.
    let (lo_rx, lo_tx) = std::fs::read_to_string("/proc/net/dev")
        .ok()
        .and_then(|t| loopback_bytes(&t))
        .unwrap_or((0, 0));
    let mut fi = receive_finding(i.saturating_sub(lo_rx), o.saturating_sub(lo_tx))?;
    fi.evidence.push(format!(
        "/proc/net/netstat IpExt InOctets={i} OutOctets={o}; /proc/net/dev lo rx={lo_rx} tx={lo_tx} bytes"
    ));
    fi.evidence.extend(snmp_tcp_evidence(&c));
    Some(fi)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    #[test]
    fn receive_ratio_and_loopback_bytes() {
        assert!(receive_finding(500_000_000, 1_000_000).is_some());
        assert!(receive_finding(500_000_000, 200_000_000).is_none());
        assert!(receive_finding(1_000, 0).is_none());
        let dev = "Inter-|   Receive\n face |bytes packets errs drop fifo frame compressed multicast|bytes packets\n    lo: 1000 10 0 0 0 0 0 0 2000 20 0 0 0 0 0 0\n  eth0: 5 1 0 0 0 0 0 0 6 1 0 0 0 0 0 0\n";
        assert_eq!(loopback_bytes(dev), Some((1000, 2000)));
        assert_eq!(loopback_bytes("  eth0: 5 1\n"), None);
    }

    /// A scratch root holding `files` (path under the root, content); also
    /// used by `doctor_bpf`'s fixtures.
    pub(crate) fn root_with(files: &[(&str, &str)]) -> (tempfile::TempDir, Root) {
        let dir = tempfile::tempdir().unwrap();
        for (p, c) in files {
            let full = dir.path().join(p);
            std::fs::create_dir_all(full.parent().unwrap()).unwrap();
            std::fs::write(full, c).unwrap();
        }
        let root = Root::new(dir.path()).unwrap();
        (dir, root)
    }

    #[test]
    fn file_based_findings_name_the_file_and_line() {
        let (_d, root) = root_with(&[
            (
                "etc/sysctl.d/99-zz-bbrkit.conf",
                "net.ipv4.tcp_congestion_control = bbr\n",
            ),
            (
                "etc/sysctl.conf",
                "#\nnet.ipv4.tcp_congestion_control = cubic\n",
            ),
            (
                "usr/lib/sysctl.d/60-vendor.conf",
                "net.ipv4.tcp_congestion_control = reno\n",
            ),
            ("etc/tuned/active_profile", "network-throughput\n"),
            (
                "etc/cloud/cloud.cfg.d/90-net.cfg",
                "write_files:\n  - content: net.core.default_qdisc=fq_codel\n",
            ),
            (
                "etc/ufw/sysctl.conf",
                "net/ipv4/tcp_congestion_control=cubic\n",
            ),
        ]);
        let r = diagnose(&root).unwrap();
        let by = |id: &str| r.findings.iter().filter(|f| f.id == id).collect::<Vec<_>>();
        let o = by("boot_override");
        assert_eq!(o.len(), 1, "{:#?}", r.findings);
        assert!(
            o[0].evidence[0]
                .contains("sysctl --system applies net.ipv4.tcp_congestion_control = cubic from"),
            "{:?}",
            o[0]
        );
        assert!(
            o[0].fix.contains("line 2 of") && o[0].fix.contains("etc/sysctl.conf"),
            "{}",
            o[0].fix
        );
        assert!(
            by("overridden_file")
                .iter()
                .any(|f| f.title.contains("60-vendor.conf"))
        );
        assert_eq!(by("tuned")[0].level, Level::Info);
        let img = by("image_files");
        assert!(
            img[0].evidence.iter().any(|e| e.contains("90-net.cfg:2")),
            "{:?}",
            img
        );
        assert!(
            img[0]
                .evidence
                .iter()
                .any(|e| e.contains("ufw/sysctl.conf:1")),
            "{:?}",
            img
        );
        assert!(r.problem);
        // Worst first.
        assert!(r.findings.windows(2).all(|w| w[0].level >= w[1].level));
    }

    #[test]
    fn tuned_profile_keys_and_rc_local_are_named() {
        let (_d, root) = root_with(&[
            ("etc/tuned/active_profile", "throughput\n"),
            ("etc/tuned/tuned-main.conf", "reapply_sysctl\t= 0\n"),
            (
                "usr/lib/tuned/throughput/tuned.conf",
                "[main]\nsummary=x\n[sysctl]\n# net.ipv4.tcp_rmem=1 2 3\nnet.ipv4.tcp_rmem=4096 87380 16777216\nnet.ipv4.ip_forward=1\n[vm]\nnet.ipv4.tcp_wmem=9\n",
            ),
            (
                "etc/rc.local",
                "#!/bin/sh\n# sysctl -w net.ipv4.tcp_congestion_control=bbr\nsysctl -w net/ipv4/tcp_notsent_lowat=16384\n",
            ),
        ]);
        let r = diagnose(&root).unwrap();
        let t = r.findings.iter().find(|f| f.id == "tuned").unwrap();
        assert_eq!(t.level, Level::Warning, "a tab before = still parses");
        let hits: Vec<&String> = t
            .evidence
            .iter()
            .filter(|e| e.contains("tuned.conf"))
            .collect();
        assert_eq!(hits.len(), 1, "{:?}", t.evidence);
        assert!(
            hits[0].ends_with(":5: net.ipv4.tcp_rmem=4096 87380 16777216"),
            "{hits:?}"
        );
        let img = r.findings.iter().find(|f| f.id == "image_files").unwrap();
        assert_eq!(img.evidence.len(), 1, "{:?}", img.evidence);
        assert!(img.evidence[0].contains("rc.local:3"), "{:?}", img.evidence);
    }

    #[test]
    fn a_namespace_on_an_unregistered_default_says_so() {
        let n = crate::netns::Namespace {
            inode: 4026532300,
            found_at: "pid 42 (nginx)".into(),
            cc: Some("bbr3".into()),
        };
        let e = netns_entry(&n, &["reno".to_string(), "bbr".to_string()]);
        assert!(
            e.starts_with("net:[4026532300] pid 42 (nginx) defaults to bbr3 (no longer registered"),
            "{e}"
        );
        let e = netns_entry(&n, &["bbr3".to_string()]);
        assert_eq!(e, "net:[4026532300] pid 42 (nginx) defaults to bbr3");
    }

    #[test]
    fn tuned_without_reapply_is_a_warning() {
        let (_d, root) = root_with(&[
            ("etc/tuned/active_profile", "balanced\n"),
            ("etc/tuned/tuned-main.conf", "reapply_sysctl = 0\n"),
        ]);
        let r = diagnose(&root).unwrap();
        let t = r.findings.iter().find(|f| f.id == "tuned").unwrap();
        assert_eq!(t.level, Level::Warning);
    }
}
