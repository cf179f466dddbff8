//! `doctor`'s findings about network namespaces and containers: a
//! container or non-initial namespace (`container*`), other namespaces on
//! an old default (`netns_old_cc`), an algorithm that is not allowed
//! (`not_allowed`), namespaces a killed lab left (`lab_leftovers`).

use crate::netns::Namespace;
use crate::outcome::{Finding, FindingId, Level};
use crate::snapshot::Snapshot;
use crate::{KEY_CC, KEY_QDISC};

pub(super) fn container(snap: &Snapshot) -> Vec<Finding> {
    let environ = &snap.environment;
    let mut out = Vec::new();
    if environ.initial_netns == Some(false) {
        out.push(Finding::new(FindingId::ContainerNetns, Level::Info, "non-initial network namespace (container): the default qdisc and module loading belong to the host",
            vec![environ.netns_evidence.clone(), qdisc_evidence(snap)],
            "change net.core.default_qdisc (and load modules) on the host; this namespace owns only its tcp_congestion_control"));
    }
    if let Some(c) = &environ.container {
        out.push(Finding::new(
            FindingId::Container,
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
        out.push(Finding::new(FindingId::ContainerHints, Level::Info, "container hints, but this is the initial network namespace (a VM or bare metal that owns its kernel)", environ.container_evidence.clone(), "nothing to do"));
    }
    out
}

/// What this namespace shows of `net.core.default_qdisc` (the kernel
/// registers it in `init_net` only), as read, never assumed.
fn qdisc_evidence(snap: &Snapshot) -> String {
    match &snap.kernel.default_qdisc {
        None => format!("{KEY_QDISC} does not exist here"),
        Some(q) => format!("{KEY_QDISC} = {q} here"),
    }
}

pub(super) fn netns_old_cc(snap: &Snapshot) -> Option<Finding> {
    let cur = snap.kernel.current_cc.as_ref()?;
    if snap.environment.initial_netns != Some(true) {
        return None;
    }
    let stale: Vec<String> = snap
        .doctor
        .namespaces
        .iter()
        .filter(|n| n.cc.as_ref().is_some_and(|c| c != cur))
        .map(|n| netns_entry(n, &snap.kernel.available_cc))
        .collect();
    let fix = if snap.provider(cur).is_bpf() {
        format!(
            "a namespace copies the initial namespace's default when it is created: recreate those containers or pods; {cur} is registered for every namespace and NON_RESTRICTED, so `nsenter -n -t PID sysctl -w net.ipv4.tcp_congestion_control={cur}` also switches one in place"
        )
    } else {
        "a namespace copies the initial namespace's default when it is created: recreate those containers or pods (or set it inside them)".to_string()
    };
    (!stale.is_empty()).then(|| {
        Finding::new(
            FindingId::NetnsOldCc,
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
pub(super) fn netns_entry(n: &Namespace, available: &[String]) -> String {
    let cc = n.cc.clone().unwrap_or_default();
    let gone = if available.contains(&cc) {
        ""
    } else {
        " (no longer registered: the namespace holds the old program and its new sockets still get it)"
    };
    format!("net:[{}] {} defaults to {cc}{gone}", n.inode, n.found_at)
}

/// The first of: the algorithm bbrkit's file sets, BBR, the current
/// default, that is available but not allowed.
pub(super) fn not_allowed(snap: &Snapshot) -> Option<Finding> {
    let facts = &snap.kernel;
    let mut wanted: Vec<String> = snap.bbrkit_value(KEY_CC).into_iter().collect();
    wanted.push("bbr".into());
    wanted.extend(facts.current_cc.clone());
    let cc = wanted
        .iter()
        .find(|cc| facts.available_cc.contains(cc) && !facts.allowed_cc.contains(cc))?;
    let (level, why) = if snap.environment.initial_netns == Some(false) {
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
    Some(Finding::new(
        FindingId::NotAllowed,
        level,
        format!("{cc} is not in net.ipv4.tcp_allowed_congestion_control: {why}"),
        vec![format!(
            "tcp_allowed_congestion_control = {}",
            facts.allowed_cc.join(" ")
        )],
        format!("on the host: add {cc} to net.ipv4.tcp_allowed_congestion_control"),
    ))
}

/// Named namespaces (`bbrkit lab --netns-names`) of a lab that was killed:
/// each holds a namespace with its interfaces until removed.
pub(super) fn lab_leftovers(snap: &Snapshot) -> Option<Finding> {
    let labs = &snap.doctor.labs;
    (!labs.is_empty()).then(|| {
        Finding::new(
            FindingId::LabLeftovers,
            Level::Warning,
            format!(
                "{} network namespace(s) left by a bbrkit lab that was killed",
                labs.len()
            ),
            labs.iter()
                .map(|l| format!("{}: its lab (pid {}) no longer runs", l.path, l.pid))
                .collect(),
            "`bbrkit lab --cleanup` removes them (only those whose lab no longer runs)",
        )
    })
}
