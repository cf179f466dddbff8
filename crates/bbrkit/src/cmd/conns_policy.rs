//! `conns`' rendering of the per-connection policy: the table of governed
//! sockets by cgroup, rule and the rule's algorithm, and the `rule:N=cc`
//! part of a socket's detail line.

use bbrkit_diag::conns::{PolicyRow, Report};
use bbrkit_host::bpf::Model;

use super::opt;

/// The sockets attached policies govern, by cgroup, rule and the rule's
/// algorithm (nothing when none does).
pub(super) fn policy_table(r: &Report<Model>) -> String {
    if r.policy_summary.is_empty() {
        return String::new();
    }
    let w = r
        .policy_summary
        .iter()
        .map(|p| p.cgroup.len())
        .max()
        .unwrap_or(0)
        .max("POLICY CGROUP".len());
    let mut o = format!(
        "\n{:<w$} {:>4} {:<8} {:>7} {:>6}\n",
        "POLICY CGROUP", "RULE", "RULE CC", "SOCKETS", "DIFFER"
    );
    for p in &r.policy_summary {
        o.push_str(&format!(
            "{:<w$} {:>4} {:<8} {:>7} {:>6}\n",
            p.cgroup,
            opt(p.rule),
            p.cc.as_deref().unwrap_or("default"),
            p.sockets,
            p.differ
        ));
    }
    o.push_str("DIFFER: sockets on another algorithm than their rule's (the application's own choice, a locked route, or established before the policy)\n");
    o
}

/// `rule:N=cc` of a governed socket (`rule:-` when no rule matched,
/// `(differs)` when it runs another algorithm).
pub(super) fn rule_part(p: &PolicyRow) -> String {
    let cc = p.cc.as_deref().unwrap_or("default");
    let differs = if p.differs { "(differs)" } else { "" };
    match p.rule {
        Some(n) => format!("rule:{n}={cc}{differs}"),
        None => "rule:-=default".to_string(),
    }
}
