//! The Rust mirror of `bpf/sockops.h`: map keys and values and the ring
//! record as `#[repr(C)]` types (read and written as bytes by zerocopy, no
//! unsafe), and their conversion to and from bbrkit-policy's plain values.
//! A test checks every field's offset against the object's BTF.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use bbrkit_policy::{Arm, ConnRecord, Direction, RuleEntry, TrieEntry, Unit};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// `BKPOL_MAX_ARMS`.
pub const MAX_ARMS: usize = bbrkit_policy::rule::MAX_ARMS;
/// `BKPOL_CC_LEN` (`TCP_CA_NAME_MAX`).
pub const CC_LEN: usize = bbrkit_policy::rule::MAX_CC_NAME + 1;

/// `BKPOL_RULE_RECORD`.
pub const RULE_RECORD: u8 = 1;

/// `BKPOL_F_*`: what the program did with a connection.
pub mod flags {
    /// The program set the arm's algorithm.
    pub const ASSIGNED: u8 = 1;
    /// Accepted (passive open).
    pub const PASSIVE: u8 = 2;
    /// The application (or its listener) had chosen an algorithm: kept.
    pub const APP: u8 = 4;
    /// A route's `congctl lock` had chosen: kept.
    pub const ROUTE: u8 = 8;
    /// `bpf_setsockopt` refused the name.
    pub const FAILED: u8 = 16;
    /// A record is due at close.
    pub const RECORD: u8 = 32;
    /// Every weight of the rule was 0.
    pub const NO_ARM: u8 = 64;
}

/// `struct bkpol_rule`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct RawRule {
    /// Arm i's weight in bits 16i..16i+15.
    pub weights: u64,
    /// NUL-terminated names.
    pub cc: [[u8; CC_LEN]; MAX_ARMS],
    /// Arms in use.
    pub narms: u8,
    /// `BKPOL_UNIT_*`.
    pub unit: u8,
    /// `BKPOL_RULE_*`.
    pub flags: u8,
    /// Zero.
    pub pad: [u8; 5],
}

/// `struct bkpol_cfg`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct RawCfg {
    /// The draw's salt.
    pub salt: u64,
    /// Rules in use.
    pub nrules: u32,
    /// Zero.
    pub pad: u32,
}

/// `struct bkpol_conn` (sk_storage): a recorded connection's decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct RawConn {
    /// `bpf_ktime_get_ns()` at established.
    pub start_ns: u64,
    /// Rule index.
    pub rule: u16,
    /// Arm index.
    pub arm: u8,
    /// [`flags`].
    pub flags: u8,
    /// Zero.
    pub pad: u32,
}

/// `struct bkpol_hits`.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct RawHits {
    /// Connections that matched the rule and drew the arm.
    pub matched: u64,
    /// ... whose algorithm the program set.
    pub assigned: u64,
    /// ... that kept the application's choice.
    pub kept_app: u64,
    /// ... that kept a locked route's choice.
    pub kept_route: u64,
    /// ... where `bpf_setsockopt` failed.
    pub failed: u64,
}

/// `struct bkpol_record`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct RawRecord {
    /// Socket cookie.
    pub cookie: u64,
    /// Established, ns.
    pub start_ns: u64,
    /// Closed, ns.
    pub end_ns: u64,
    /// `tp->bytes_acked`.
    pub bytes_acked: u64,
    /// `tp->bytes_received`.
    pub bytes_received: u64,
    /// `tp->bytes_retrans`.
    pub bytes_retrans: u64,
    /// Sum of the chronographs, µs.
    pub busy_us: u64,
    /// Receive-window-limited, µs.
    pub rwnd_limited_us: u64,
    /// Send-buffer-limited, µs.
    pub sndbuf_limited_us: u64,
    /// `tp->segs_out`.
    pub segs_out: u32,
    /// `tp->total_retrans`.
    pub total_retrans: u32,
    /// `tp->lost`.
    pub lost: u32,
    /// `tp->delivered`.
    pub delivered: u32,
    /// `tcp_min_rtt()`, µs.
    pub min_rtt_us: u32,
    /// `srtt_us >> 3`.
    pub srtt_us: u32,
    /// Network byte order words; IPv4 in `[0]`.
    pub remote: [u32; 4],
    /// `AF_INET` or `AF_INET6`.
    pub family: u16,
    /// Local port.
    pub local_port: u16,
    /// Remote port.
    pub remote_port: u16,
    /// Rule index.
    pub rule: u16,
    /// Arm index.
    pub arm: u8,
    /// [`flags`].
    pub flags: u8,
    /// Zero.
    pub pad: [u8; 6],
    /// `TCP_CONGESTION` at close.
    pub cc: [u8; CC_LEN],
}

/// Size of a ring record.
pub const RECORD_SIZE: usize = std::mem::size_of::<RawRecord>();

fn unit_code(u: Unit) -> u8 {
    match u {
        Unit::Connection => 0,
        Unit::Client => 1,
        Unit::Prefix => 2,
    }
}

fn unit_of(code: u8) -> Option<Unit> {
    [Unit::Connection, Unit::Client, Unit::Prefix]
        .into_iter()
        .find(|u| unit_code(*u) == code)
}

/// A NUL-terminated name out of a fixed buffer.
pub fn c_name(buf: &[u8]) -> String {
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

/// Weights as the program's one word.
pub fn weights_word(weights: &[u16]) -> u64 {
    weights
        .iter()
        .take(MAX_ARMS)
        .enumerate()
        .fold(0, |w, (i, &x)| w | u64::from(x) << (16 * i))
}

impl RawRule {
    /// A rule table row (names longer than the kernel's are the policy's
    /// error, checked before).
    pub fn from_entry(e: &RuleEntry) -> RawRule {
        let mut cc = [[0u8; CC_LEN]; MAX_ARMS];
        for (slot, arm) in cc.iter_mut().zip(&e.arms) {
            let n = arm.cc.len().min(CC_LEN - 1);
            slot[..n].copy_from_slice(&arm.cc.as_bytes()[..n]);
        }
        RawRule {
            weights: weights_word(&e.weights()),
            cc,
            narms: e.arms.len().min(MAX_ARMS) as u8,
            unit: unit_code(e.unit),
            flags: if e.record { RULE_RECORD } else { 0 },
            pad: [0; 5],
        }
    }

    /// The row back as a rule entry (`None`: not a row the loader writes).
    pub fn to_entry(&self) -> Option<RuleEntry> {
        let n = usize::from(self.narms);
        if n == 0 || n > MAX_ARMS {
            return None;
        }
        let arms = (0..n)
            .map(|i| Arm {
                cc: c_name(&self.cc[i]),
                weight: (self.weights >> (16 * i)) as u16,
            })
            .collect();
        Some(RuleEntry {
            arms,
            unit: unit_of(self.unit)?,
            record: self.flags & RULE_RECORD != 0,
        })
    }
}

/// An LPM trie key: prefix length (native order) then the key bytes.
pub fn trie_key(e: &TrieEntry) -> Vec<u8> {
    let mut k = u32::from(e.len).to_ne_bytes().to_vec();
    k.extend_from_slice(&e.key);
    k
}

/// A trie entry from a key and a value read from a map.
pub fn trie_entry(key: &[u8], value: &[u8]) -> Option<TrieEntry> {
    let len = u32::from_ne_bytes(key.get(..4)?.try_into().ok()?);
    let rules = u64::from_ne_bytes(value.get(..8)?.try_into().ok()?);
    Some(TrieEntry {
        key: key[4..].to_vec(),
        len: u8::try_from(len).ok()?,
        rules,
    })
}

/// The remote address of a record (IPv4 when `family` is `AF_INET`).
fn remote_of(r: &RawRecord) -> IpAddr {
    let b = |w: u32| w.to_ne_bytes();
    if i32::from(r.family) == libc::AF_INET {
        IpAddr::V4(Ipv4Addr::from(b(r.remote[0])))
    } else {
        let mut o = [0u8; 16];
        for (i, w) in r.remote.iter().enumerate() {
            o[4 * i..4 * i + 4].copy_from_slice(&b(*w));
        }
        IpAddr::V6(Ipv6Addr::from(o))
    }
}

impl RawConn {
    /// Decodes one connection's sk_storage value (as sock_diag's
    /// `INET_DIAG_SK_BPF_STORAGES` returns it for `bkpol_conn`).
    pub fn parse(bytes: &[u8]) -> Option<RawConn> {
        RawConn::read_from_bytes(bytes).ok()
    }
}

impl RawRecord {
    /// Decodes one ring sample (`None`: not a record of this size).
    pub fn parse(bytes: &[u8]) -> Option<RawRecord> {
        RawRecord::read_from_bytes(bytes).ok()
    }

    /// The record every consumer sees.
    pub fn to_conn_record(&self) -> ConnRecord {
        ConnRecord {
            cookie: self.cookie,
            rule: Some(self.rule),
            arm: self.arm,
            cc: c_name(&self.cc),
            assigned: self.flags & flags::ASSIGNED != 0,
            direction: if self.flags & flags::PASSIVE != 0 {
                Direction::Passive
            } else {
                Direction::Active
            },
            remote: remote_of(self),
            local_port: self.local_port,
            remote_port: self.remote_port,
            start_ns: self.start_ns,
            end_ns: self.end_ns,
            bytes_acked: self.bytes_acked,
            bytes_received: self.bytes_received,
            bytes_retrans: self.bytes_retrans,
            segs_out: self.segs_out,
            total_retrans: self.total_retrans,
            lost: self.lost,
            delivered: self.delivered,
            min_rtt_us: self.min_rtt_us,
            srtt_us: self.srtt_us,
            busy_us: self.busy_us,
            rwnd_limited_us: self.rwnd_limited_us,
            sndbuf_limited_us: self.sndbuf_limited_us,
            open: false,
        }
    }
}

#[cfg(test)]
mod tests;
