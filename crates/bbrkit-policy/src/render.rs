//! The compiled rules as text, for `--dry-run`: each rule in the order it
//! is matched, what it gives, and the entries of the program's maps.
//!
//! ```text
//! rule 1 "cross-border": remote 203.0.113.0/24, 2001:db8::/32 -> bbr3
//! rule 2: local_port 443 -> split cubic 50 / bbr3 50 per client
//! otherwise: the host default
//! map v4 (2): 0.0.0.0/0 {2}, 203.0.113.0/24 {1,2}
//! ...
//! ```

use std::fmt::Write;
use std::net::IpAddr;

use crate::compile::{Compiled, TrieEntry};
use crate::rule::{Action, Policy, Rule, Unit};

/// Trie entries listed one by one up to this many per map; beyond, a count.
const LIST_ENTRIES: usize = 16;

/// The policy as the program will apply it.
pub fn dry_run(policy: &Policy, compiled: &Compiled) -> String {
    let mut out = String::new();
    for (i, r) in policy.rules().iter().enumerate() {
        let _ = writeln!(out, "{}", rule_line(i, r));
    }
    out.push_str("otherwise: the host default\n");
    for (map, entries) in [
        ("v4", &compiled.v4),
        ("v6", &compiled.v6),
        ("local_port", &compiled.local_port),
        ("remote_port", &compiled.remote_port),
    ] {
        let _ = writeln!(out, "map {}", trie_text(map, entries));
    }
    let _ = writeln!(
        out,
        "map rules ({}), salt {:#018x}",
        compiled.rules.len(),
        compiled.salt
    );
    out
}

/// One rule as a line: `rule N ["name"]: conditions -> action`.
pub fn rule_line(index: usize, r: &Rule) -> String {
    let name = r
        .name
        .as_ref()
        .map(|n| format!(" {n:?}"))
        .unwrap_or_default();
    let mut cond = Vec::new();
    let join = |v: Vec<String>| v.join(", ");
    if let Some(nets) = &r.remote {
        cond.push(format!(
            "remote {}",
            join(nets.iter().map(ToString::to_string).collect())
        ));
    }
    if let Some(p) = &r.local_port {
        cond.push(format!(
            "local_port {}",
            join(p.iter().map(ToString::to_string).collect())
        ));
    }
    if let Some(p) = &r.remote_port {
        cond.push(format!(
            "remote_port {}",
            join(p.iter().map(ToString::to_string).collect())
        ));
    }
    let cond = if cond.is_empty() {
        "every connection".to_string()
    } else {
        cond.join("; ")
    };
    let action = match &r.action {
        Action::Cc { cc } => cc.clone(),
        Action::Split { arms, unit } => {
            let arms: Vec<String> = arms
                .iter()
                .map(|a| format!("{} {}", a.cc, a.weight))
                .collect();
            let per = match unit {
                Unit::Connection => "per connection",
                Unit::Client => "per client",
                Unit::Prefix => "per prefix (/24, /48)",
            };
            format!("split {} {per}", arms.join(" / "))
        }
    };
    let record = if r.record { ", recorded at close" } else { "" };
    format!("rule {}{name}: {cond} -> {action}{record}", index + 1)
}

/// `v4 (2): 0.0.0.0/0 {2}, 203.0.113.0/24 {1,2}`: each entry with the
/// rules (from 1) whose prefixes contain it.
fn trie_text(map: &str, entries: &[TrieEntry]) -> String {
    if entries.len() > LIST_ENTRIES {
        return format!("{map} ({} entries)", entries.len());
    }
    let list: Vec<String> = entries
        .iter()
        .map(|e| format!("{} {}", prefix_text(e), rules_text(e.rules)))
        .collect();
    format!("{map} ({}): {}", entries.len(), list.join(", "))
}

fn prefix_text(e: &TrieEntry) -> String {
    let addr = match e.key.len() {
        4 => <[u8; 4]>::try_from(&e.key[..]).ok().map(IpAddr::from),
        16 => <[u8; 16]>::try_from(&e.key[..]).ok().map(IpAddr::from),
        _ => None,
    };
    match addr {
        Some(a) => format!("{a}/{}", e.len),
        None => {
            let port = e.key.iter().fold(0u32, |acc, b| (acc << 8) | u32::from(*b));
            match e.len {
                0 => "any".to_string(),
                16 => port.to_string(),
                l => format!("{port}-{}", port + (1 << (16 - l)) - 1),
            }
        }
    }
}

/// `{1,3}`: the rules (numbered from 1) of a set.
fn rules_text(set: u64) -> String {
    let v: Vec<String> = (0..64)
        .filter(|i| set >> i & 1 == 1)
        .map(|i| (i + 1).to_string())
        .collect();
    format!("{{{}}}", v.join(","))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::file::parse;

    #[test]
    fn shows_rules_in_order_and_the_map_entries() {
        let p = parse(
            "t",
            r#"
[[rule]]
name = "cross-border"
remote = ["203.0.113.0/24", "2001:db8::/32"]
cc = "bbr3"
[[rule]]
local_port = [443, "8000-8007"]
split = { cubic = 50, bbr3 = 50 }
unit = "client"
record = true
"#,
        )
        .unwrap();
        let c = Compiled::new(&p, 0x2a);
        let text = dry_run(&p, &c);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines,
            [
                r#"rule 1 "cross-border": remote 203.0.113.0/24, 2001:db8::/32 -> bbr3"#,
                "rule 2: local_port 443, 8000-8007 -> split cubic 50 / bbr3 50 per client, recorded at close",
                "otherwise: the host default",
                "map v4 (2): 0.0.0.0/0 {2}, 203.0.113.0/24 {1,2}",
                "map v6 (2): ::/0 {2}, 2001:db8::/32 {1,2}",
                "map local_port (3): any {1}, 443 {1,2}, 8000-8007 {1,2}",
                "map remote_port (1): any {1,2}",
                "map rules (2), salt 0x000000000000002a",
            ]
        );
    }
}
