//! The salt of a policy's split draws, stable across edits that do not
//! change the split.
//!
//! ```text
//!   salt = "NAME" written at the top level   →  SHA-256("bbrkit-salt explicit\0" NAME)[..8]
//!   no salt                                  →  SHA-256("bbrkit-salt content\0" canonical)[..8]
//!   canonical = per rule, in order: remote prefixes, local and remote port
//!               ranges (as parsed: 443 and "443-443" are one), the action
//!               (cc, or the split's arms cc:weight in order and its unit)
//! ```
//!
//! Left out of the canonical content: comments, whitespace, key order,
//! `name` and `record` (neither changes which rule a connection matches nor
//! the arm it draws). Anything the canonical content keeps can move a
//! connection to another rule or arm, so changing it may re-draw; an
//! operator who wants the draws fixed across such edits too writes an
//! explicit `salt`. The first 8 bytes of the digest, big-endian, are the
//! `u64` the program mixes into every draw ([`crate::draw::mix`]).

use sha2::{Digest, Sha256};

use crate::rule::{Action, Policy, PortRange};

/// The salt of `policy`'s draws: its explicit `salt`, or its canonical
/// split-relevant content, hashed.
pub fn salt(policy: &Policy) -> u64 {
    let mut h = Sha256::new();
    match policy.salt() {
        Some(name) => {
            h.update(b"bbrkit-salt explicit\0");
            h.update(name.as_bytes());
        }
        None => {
            h.update(b"bbrkit-salt content\0");
            h.update(canonical(policy).as_bytes());
        }
    }
    let d = h.finalize();
    let mut first = [0u8; 8];
    first.copy_from_slice(&d[..8]);
    u64::from_be_bytes(first)
}

/// The split-relevant content of `policy`, one line per rule.
pub fn canonical(policy: &Policy) -> String {
    let ports = |v: &Option<Vec<PortRange>>| match v {
        None => "*".to_string(),
        Some(v) => v
            .iter()
            .map(|r| format!("{}-{}", r.first, r.last))
            .collect::<Vec<_>>()
            .join(","),
    };
    let mut out = String::new();
    for r in policy.rules() {
        let remote = match &r.remote {
            None => "*".to_string(),
            Some(v) => v
                .iter()
                .map(|n| n.to_string())
                .collect::<Vec<_>>()
                .join(","),
        };
        let action = match &r.action {
            Action::Cc { cc } => format!("cc {cc}"),
            Action::Split { arms, unit } => {
                let arms: Vec<String> = arms
                    .iter()
                    .map(|a| format!("{}:{}", a.cc, a.weight))
                    .collect();
                format!("split {} by {}", arms.join(","), unit.as_str())
            }
        };
        out.push_str(&format!(
            "remote {remote}; local_port {}; remote_port {}; {action}\n",
            ports(&r.local_port),
            ports(&r.remote_port)
        ));
    }
    out
}

#[cfg(test)]
mod tests;
