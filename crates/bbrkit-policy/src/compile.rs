//! A [`Policy`] compiled into the contents of the sock_ops program's maps,
//! as plain Rust values ([`Compiled`]); `bbrkit-bpf` writes them byte for
//! byte and reads them back into the same type, so "the maps equal the
//! file" is `==`.
//!
//! ```text
//!   remote address ──LPM──▶ v4 / v6 trie ──▶ set of rules (u64) ─┐
//!   local port    ──LPM──▶ local_port trie ─▶ set of rules ──────┼─ AND ─▶ lowest bit = first rule
//!   remote port   ──LPM──▶ remote_port trie ▶ set of rules ──────┘          │
//!                                                                rules[i]: arms, weights, unit
//!                                                                          └─▶ draw (crate::draw)
//! ```
//!
//! A longest-prefix match returns one entry, so each entry carries every
//! rule with a prefix *containing* it: prefixes that contain an address
//! are nested, and all of them contain the longest, so the longest entry's
//! set is exactly the rules whose prefixes contain the address. A key a
//! rule leaves out is the /0 prefix (every address of both families, every
//! port). Ports are 16-bit keys; a range becomes its aligned power-of-two
//! blocks (at most 30). Entries are sorted by key, then length: the output
//! depends on the policy and the salt only.

use std::collections::BTreeMap;
use std::net::IpAddr;

use ipnet::IpNet;
use serde::Serialize;

use crate::draw;
use crate::rule::{Arm, Policy, PortRange, Rule, Unit};

/// One entry of a longest-prefix-match trie.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct TrieEntry {
    /// The key, network byte order (4, 16 or 2 bytes), bits after `len` zero.
    pub key: Vec<u8>,
    /// Prefix length in bits.
    pub len: u8,
    /// Bit `i` set: rule `i` has a prefix containing this one.
    pub rules: u64,
}

/// One row of the rule table.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct RuleEntry {
    /// Arms in order: algorithm and weight.
    pub arms: Vec<Arm>,
    /// What the draw is keyed by.
    pub unit: Unit,
    /// Record matching connections when they close.
    pub record: bool,
}

impl RuleEntry {
    /// The arms' weights in order.
    pub fn weights(&self) -> Vec<u16> {
        self.arms.iter().map(|a| a.weight).collect()
    }
}

/// The contents of every map of the sock_ops program for one policy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Compiled {
    /// The draw's salt (the caller's seed).
    pub salt: u64,
    /// The rule table, index = rule.
    pub rules: Vec<RuleEntry>,
    /// IPv4 remote prefixes (4-byte keys).
    pub v4: Vec<TrieEntry>,
    /// IPv6 remote prefixes (16-byte keys).
    pub v6: Vec<TrieEntry>,
    /// Local ports (2-byte keys).
    pub local_port: Vec<TrieEntry>,
    /// Remote ports (2-byte keys).
    pub remote_port: Vec<TrieEntry>,
}

/// What the program decides for one connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Decision {
    /// The first rule that matched.
    pub rule: usize,
    /// The arm drawn (`None` when every weight of the rule is 0).
    pub arm: Option<usize>,
}

impl Compiled {
    /// Compiles `policy`; `salt` keys the draws of its splits.
    pub fn new(policy: &Policy, salt: u64) -> Compiled {
        let rules = policy.rules();
        let remote = |v4: bool| {
            trie(rules, if v4 { 32 } else { 128 }, |r| match &r.remote {
                None => vec![(0, 0)],
                Some(nets) => nets
                    .iter()
                    .filter(|n| matches!(n, IpNet::V4(_)) == v4)
                    .map(|n| (addr_bits(n.network()), n.prefix_len()))
                    .collect(),
            })
        };
        let ports = |key: fn(&Rule) -> &Option<Vec<PortRange>>| {
            trie(rules, 16, |r| match key(r) {
                None => vec![(0, 0)],
                Some(ranges) => ranges.iter().flat_map(|p| port_blocks(*p)).collect(),
            })
        };
        Compiled {
            salt,
            rules: rules
                .iter()
                .map(|r| RuleEntry {
                    arms: r.arms(),
                    unit: r.unit(),
                    record: r.record,
                })
                .collect(),
            v4: remote(true),
            v6: remote(false),
            local_port: ports(|r| &r.local_port),
            remote_port: ports(|r| &r.remote_port),
        }
    }

    /// What the program does with a connection: the tries' sets ANDed, the
    /// lowest rule, its draw. `None`: no rule matches (host default).
    pub fn decide(
        &self,
        remote: IpAddr,
        local_port: u16,
        remote_port: u16,
        cookie: u64,
    ) -> Option<Decision> {
        let remote = remote.to_canonical();
        let addr = match remote {
            IpAddr::V4(a) => lookup(&self.v4, &a.octets()),
            IpAddr::V6(a) => lookup(&self.v6, &a.octets()),
        };
        let set = addr
            & lookup(&self.local_port, &local_port.to_be_bytes())
            & lookup(&self.remote_port, &remote_port.to_be_bytes());
        let rule = (set != 0).then(|| set.trailing_zeros() as usize)?;
        let entry = &self.rules[rule];
        let arm = draw::arm(self.salt, entry.unit, &entry.weights(), cookie, remote);
        Some(Decision { rule, arm })
    }

    /// Entries per map: `(map, entries)` in the program's map order.
    pub fn sizes(&self) -> [(&'static str, usize); 5] {
        [
            ("rules", self.rules.len()),
            ("v4", self.v4.len()),
            ("v6", self.v6.len()),
            ("local_port", self.local_port.len()),
            ("remote_port", self.remote_port.len()),
        ]
    }
}

/// An address as a big-endian integer (IPv4 in the low 32 bits).
fn addr_bits(a: IpAddr) -> u128 {
    match a {
        IpAddr::V4(a) => u128::from(a.to_bits()),
        IpAddr::V6(a) => a.to_bits(),
    }
}

/// The aligned power-of-two blocks covering `p`, as `(port, len)`.
pub fn port_blocks(p: PortRange) -> Vec<(u128, u8)> {
    let (mut first, last) = (u32::from(p.first), u32::from(p.last));
    let mut out = Vec::new();
    while first <= last {
        // Largest block aligned at `first` that ends by `last`.
        let mut size = if first == 0 {
            1 << 16
        } else {
            1 << first.trailing_zeros()
        };
        while first + size - 1 > last {
            size >>= 1;
        }
        out.push((u128::from(first), 16 - size.trailing_zeros() as u8));
        first += size;
    }
    out
}

/// Whether prefix `(q, qlen)` contains `(p, plen)` in a `width`-bit space.
fn contains(width: u8, (q, qlen): (u128, u8), (p, plen): (u128, u8)) -> bool {
    let shift = u32::from(width - qlen);
    qlen <= plen && p.checked_shr(shift).unwrap_or(0) == q.checked_shr(shift).unwrap_or(0)
}

/// A trie's entries: each distinct prefix of any rule, with the set of
/// rules having a prefix that contains it (a sweep in (key, len) order
/// with a stack of the open ancestors).
fn trie(rules: &[Rule], width: u8, prefixes: impl Fn(&Rule) -> Vec<(u128, u8)>) -> Vec<TrieEntry> {
    let mut own: BTreeMap<(u128, u8), u64> = BTreeMap::new();
    for (i, r) in rules.iter().enumerate() {
        for p in prefixes(r) {
            *own.entry(p).or_default() |= 1 << i;
        }
    }
    let mut stack: Vec<((u128, u8), u64)> = Vec::new();
    let mut out = Vec::with_capacity(own.len());
    for (p, set) in own {
        while stack.last().is_some_and(|(q, _)| !contains(width, *q, p)) {
            stack.pop();
        }
        let set = set | stack.last().map_or(0, |(_, s)| *s);
        stack.push((p, set));
        let bytes = p.0.to_be_bytes();
        out.push(TrieEntry {
            key: bytes[16 - usize::from(width / 8)..].to_vec(),
            len: p.1,
            rules: set,
        });
    }
    out
}

/// The set of the longest entry containing `key` (0 when none does).
fn lookup(entries: &[TrieEntry], key: &[u8]) -> u64 {
    let width = (key.len() * 8) as u8;
    let bits = |k: &[u8]| k.iter().fold(0u128, |acc, b| (acc << 8) | u128::from(*b));
    let k = bits(key);
    entries
        .iter()
        .filter(|e| contains(width, (bits(&e.key), e.len), (k, width)))
        .max_by_key(|e| e.len)
        .map_or(0, |e| e.rules)
}

#[cfg(test)]
mod tests;
