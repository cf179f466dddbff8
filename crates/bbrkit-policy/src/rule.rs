//! A validated policy: ordered [`Rule`]s, each matching connections by
//! remote prefix, local (service) port and remote port, and giving them one
//! algorithm or a weighted split. The first rule that matches wins; a
//! connection no rule matches keeps the host default.
//!
//! This module holds the meaning ([`Policy::first_match`] is the reference
//! the compiled tables are tested against) and every check that needs no
//! host; whether an algorithm is registered is the caller's check, on
//! [`Policy::algorithms`].

use std::collections::BTreeSet;
use std::fmt;
use std::net::IpAddr;

use ipnet::{IpNet, Ipv4Net};
use serde::Serialize;

use crate::error::{At, PolicyError, Problem};

/// Rules a policy may hold: the program keeps the set of rules a prefix or
/// port belongs to as one `u64` bit set.
pub const MAX_RULES: usize = 64;
/// Arms of a split: the program keeps a rule's weights as four `u16` in one
/// `u64`, so user space rewrites them in one store.
pub const MAX_ARMS: usize = 4;
/// Entries the program's address tries hold, per family (an LPM trie
/// allocates per entry, so this is a limit, not memory held).
pub const ADDR_TRIE_CAPACITY: usize = 1 << 18;
/// Port ranges per key of one rule. A range is at most 30 trie entries, so
/// 64 rules x 64 ranges fit in [`PORT_TRIE_CAPACITY`].
pub const MAX_PORT_RANGES: usize = 64;
/// Entries each port trie holds.
pub const PORT_TRIE_CAPACITY: usize = 1 << 17;
/// Longest algorithm name: `TCP_CA_NAME_MAX` (16, include/net/tcp.h) less
/// the terminating NUL.
pub const MAX_CC_NAME: usize = 15;

/// An inclusive range of ports (`443` is `443..=443`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PortRange {
    /// First port.
    pub first: u16,
    /// Last port (>= `first`).
    pub last: u16,
}

impl PortRange {
    /// One port.
    pub fn one(port: u16) -> PortRange {
        PortRange {
            first: port,
            last: port,
        }
    }

    /// Whether `port` is in the range.
    pub fn contains(&self, port: u16) -> bool {
        (self.first..=self.last).contains(&port)
    }
}

impl fmt::Display for PortRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.first == self.last {
            write!(f, "{}", self.first)
        } else {
            write!(f, "{}-{}", self.first, self.last)
        }
    }
}

impl Serialize for PortRange {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// How a split draws each connection's arm.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    /// A fresh draw per connection (keyed by the socket cookie).
    #[default]
    Connection,
    /// A hash of the remote address: all connections of a client share an arm.
    Client,
    /// A hash of the remote /24 (IPv4) or /48 (IPv6): a whole network shares an arm.
    Prefix,
}

impl Unit {
    /// The spelling in the file.
    pub fn as_str(self) -> &'static str {
        match self {
            Unit::Connection => "connection",
            Unit::Client => "client",
            Unit::Prefix => "prefix",
        }
    }

    /// The plural people read in a report: `connections`, `clients`,
    /// `prefixes`.
    pub fn plural(self) -> &'static str {
        match self {
            Unit::Connection => "connections",
            Unit::Client => "clients",
            Unit::Prefix => "prefixes",
        }
    }

    /// Parses the spelling in the file.
    pub fn parse(s: &str) -> Option<Unit> {
        [Unit::Connection, Unit::Client, Unit::Prefix]
            .into_iter()
            .find(|u| u.as_str() == s)
    }
}

/// One arm of a rule: an algorithm and its weight.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct Arm {
    /// The algorithm's kernel name.
    pub cc: String,
    /// Relative weight (0 = no new connection goes there).
    pub weight: u16,
}

/// What a matching rule does.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Action {
    /// Every matching connection gets this algorithm (`cc = "bbr3"`).
    Cc {
        /// The algorithm.
        cc: String,
    },
    /// Each matching connection draws an arm (`split = { cubic = 50, bbr3 = 50 }`).
    Split {
        /// Arms in the order written (arm 0 first).
        arms: Vec<Arm>,
        /// What the draw is keyed by.
        unit: Unit,
    },
}

/// One rule. A key that is `None` matches everything.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Rule {
    /// An optional label for output and metrics.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Remote prefixes (IPv4-mapped IPv6 prefixes are stored as IPv4).
    pub remote: Option<Vec<IpNet>>,
    /// Local ports (the service this host offers or connects from).
    pub local_port: Option<Vec<PortRange>>,
    /// Remote ports.
    pub remote_port: Option<Vec<PortRange>>,
    /// The algorithm or split.
    pub action: Action,
    /// Record every matching connection when it closes (a trial).
    pub record: bool,
}

impl Rule {
    /// The arms, in order (one for `cc`).
    pub fn arms(&self) -> Vec<Arm> {
        match &self.action {
            Action::Cc { cc } => vec![Arm {
                cc: cc.clone(),
                weight: 1,
            }],
            Action::Split { arms, .. } => arms.clone(),
        }
    }

    /// The draw's unit (per connection for `cc`).
    pub fn unit(&self) -> Unit {
        match &self.action {
            Action::Cc { .. } => Unit::Connection,
            Action::Split { unit, .. } => *unit,
        }
    }

    /// Whether a connection with this remote address (canonical: IPv4-mapped
    /// as IPv4) and ports matches.
    pub fn matches(&self, remote: IpAddr, local_port: u16, remote_port: u16) -> bool {
        let remote = remote.to_canonical();
        self.remote
            .as_ref()
            .is_none_or(|v| v.iter().any(|n| n.contains(&remote)))
            && self
                .local_port
                .as_ref()
                .is_none_or(|v| v.iter().any(|r| r.contains(local_port)))
            && self
                .remote_port
                .as_ref()
                .is_none_or(|v| v.iter().any(|r| r.contains(remote_port)))
    }
}

/// An ordered, validated list of rules.
#[derive(Debug, Clone, Serialize)]
pub struct Policy {
    rules: Vec<Rule>,
    /// The line each rule's `[[rule]]` table starts on (empty: built in
    /// code). Not part of what the policy means: equality ignores it.
    #[serde(skip)]
    lines: Vec<usize>,
    /// The explicit salt of the draws (top-level `salt = "..."`); `None`:
    /// the salt is the hash of the split-relevant content ([`crate::salt`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    salt: Option<String>,
}

impl PartialEq for Policy {
    fn eq(&self, other: &Policy) -> bool {
        self.rules == other.rules && self.salt == other.salt
    }
}

impl Eq for Policy {}

impl Policy {
    /// Validates `rules` (from a file named `origin`, or built in code):
    /// at most [`MAX_RULES`], each with a valid action, no empty lists.
    pub fn new(origin: &str, rules: Vec<Rule>) -> Result<Policy, PolicyError> {
        let err = |at, problem| PolicyError::new(origin, at, problem);
        if rules.is_empty() {
            return Err(err(At::default(), Problem::NoRules));
        }
        if rules.len() > MAX_RULES {
            let msg = format!("{} rules; the program holds {MAX_RULES}", rules.len());
            return Err(err(At::rule(MAX_RULES), Problem::TooMany(msg)));
        }
        for (i, r) in rules.iter().enumerate() {
            check_rule(i, r).map_err(|(at, p)| err(at, p))?;
        }
        for v4 in [true, false] {
            let n: usize = rules
                .iter()
                .flat_map(|r| r.remote.iter().flatten())
                .filter(|n| matches!(n, IpNet::V4(_)) == v4)
                .count();
            if n >= ADDR_TRIE_CAPACITY {
                let family = if v4 { "IPv4" } else { "IPv6" };
                let msg = format!(
                    "{n} {family} prefixes; the program holds {}",
                    ADDR_TRIE_CAPACITY - 1
                );
                return Err(err(At::default(), Problem::TooMany(msg)));
            }
        }
        Ok(Policy {
            rules,
            lines: Vec::new(),
            salt: None,
        })
    }

    /// The same policy, its rules starting on `lines` of its file.
    pub fn with_lines(mut self, lines: Vec<usize>) -> Policy {
        self.lines = lines;
        self
    }

    /// The same policy with an explicit salt (`None`: derived from its content).
    pub fn with_salt(mut self, salt: Option<String>) -> Policy {
        self.salt = salt;
        self
    }

    /// The explicit salt, if the file wrote one.
    pub fn salt(&self) -> Option<&str> {
        self.salt.as_deref()
    }

    /// The line of the file rule `index` (0-based) starts on, if read from one.
    pub fn line(&self, index: usize) -> Option<usize> {
        self.lines.get(index).copied()
    }

    /// The rules in order.
    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// The index of the first rule a connection matches (`None`: the host
    /// default applies). The meaning the compiled tables implement.
    pub fn first_match(&self, remote: IpAddr, local_port: u16, remote_port: u16) -> Option<usize> {
        self.rules
            .iter()
            .position(|r| r.matches(remote, local_port, remote_port))
    }

    /// Every algorithm a rule can give a connection (arms of weight 0
    /// included: a guardrail may move connections there), so the caller can
    /// refuse a policy naming one that is not registered.
    pub fn algorithms(&self) -> BTreeSet<String> {
        self.rules
            .iter()
            .flat_map(|r| r.arms().into_iter().map(|a| a.cc))
            .collect()
    }
}

type RuleCheck = Result<(), (At, Problem)>;

fn check_rule(i: usize, r: &Rule) -> RuleCheck {
    let empty = |key: &str, len: Option<usize>| match len {
        Some(0) => Err((At::key(i, key), Problem::EmptyList)),
        _ => Ok(()),
    };
    empty("remote", r.remote.as_ref().map(Vec::len))?;
    empty("local_port", r.local_port.as_ref().map(Vec::len))?;
    empty("remote_port", r.remote_port.as_ref().map(Vec::len))?;
    for (key, ranges) in [
        ("local_port", &r.local_port),
        ("remote_port", &r.remote_port),
    ] {
        if ranges.as_ref().is_some_and(|v| v.len() > MAX_PORT_RANGES) {
            let msg = format!("more than {MAX_PORT_RANGES} ports or ranges");
            return Err((At::key(i, key), Problem::TooMany(msg)));
        }
        for p in ranges.iter().flatten() {
            check_port_range(*p).map_err(|m| (At::value(i, key, p.to_string()), m))?;
        }
    }
    match &r.action {
        Action::Cc { cc } => check_cc_name(cc).map_err(|p| (At::value(i, "cc", cc), p)),
        Action::Split { arms, .. } => check_arms(i, arms),
    }
}

pub(crate) fn check_port_range(p: PortRange) -> Result<(), Problem> {
    if p.first == 0 {
        return Err(Problem::Port(
            "port 0: an established connection never has it".into(),
        ));
    }
    if p.first > p.last {
        return Err(Problem::Port(format!(
            "range ends before it starts ({} > {})",
            p.first, p.last
        )));
    }
    Ok(())
}

fn check_arms(i: usize, arms: &[Arm]) -> RuleCheck {
    let at = || At::key(i, "split");
    if arms.is_empty() {
        return Err((at(), Problem::EmptyList));
    }
    if arms.len() > MAX_ARMS {
        let msg = format!("{} arms; a split holds {MAX_ARMS}", arms.len());
        return Err((at(), Problem::TooMany(msg)));
    }
    for a in arms {
        check_cc_name(&a.cc).map_err(|p| (At::value(i, "split", &a.cc), p))?;
    }
    if arms.iter().all(|a| a.weight == 0) {
        return Err((at(), Problem::Weights("every weight is 0".into())));
    }
    Ok(())
}

/// A name the kernel could register: 1 to [`MAX_CC_NAME`] bytes of ASCII
/// letters, digits, `_`, `-` or `.`.
pub fn check_cc_name(name: &str) -> Result<(), Problem> {
    let ok_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.');
    if name.is_empty() {
        Err(Problem::AlgorithmName("empty".into()))
    } else if name.len() > MAX_CC_NAME {
        Err(Problem::AlgorithmName(format!(
            "longer than the kernel's {MAX_CC_NAME} bytes"
        )))
    } else if !name.chars().all(ok_char) {
        Err(Problem::AlgorithmName(
            "only letters, digits, '_', '-' and '.'".into(),
        ))
    } else {
        Ok(())
    }
}

/// An IPv6 prefix inside `::ffff:0:0/96` (IPv4-mapped) as the IPv4 prefix
/// it means; every other prefix unchanged. An IPv6 prefix shorter than /96
/// (`::/0`) stays IPv6: it does not match IPv4 peers.
pub fn canonical_prefix(net: IpNet) -> IpNet {
    match net {
        IpNet::V6(n) if n.prefix_len() >= 96 => match n.addr().to_ipv4_mapped() {
            Some(v4) => Ipv4Net::new(v4, n.prefix_len() - 96)
                .map(IpNet::V4)
                .unwrap_or(net),
            None => net,
        },
        _ => net,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(remote: Option<&[&str]>, lport: Option<&[u16]>, cc: &str) -> Rule {
        Rule {
            name: None,
            remote: remote.map(|v| v.iter().map(|s| s.parse().unwrap()).collect()),
            local_port: lport.map(|v| v.iter().copied().map(PortRange::one).collect()),
            remote_port: None,
            action: Action::Cc { cc: cc.into() },
            record: false,
        }
    }

    #[test]
    fn first_matching_rule_wins_and_missing_keys_match_everything() {
        let p = Policy::new(
            "t",
            vec![
                rule(Some(&["203.0.113.0/24", "2001:db8::/32"]), None, "bbr3"),
                rule(None, Some(&[443]), "bbr"),
            ],
        )
        .unwrap();
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        assert_eq!(p.first_match(ip("203.0.113.9"), 443, 5000), Some(0));
        assert_eq!(p.first_match(ip("2001:db8::1"), 80, 5000), Some(0));
        assert_eq!(p.first_match(ip("::ffff:203.0.113.9"), 80, 1), Some(0));
        assert_eq!(p.first_match(ip("198.51.100.1"), 443, 5000), Some(1));
        assert_eq!(p.first_match(ip("198.51.100.1"), 80, 5000), None);
        assert_eq!(
            p.algorithms().into_iter().collect::<Vec<_>>(),
            ["bbr", "bbr3"]
        );
    }

    #[test]
    fn mapped_prefixes_become_ipv4_and_short_ipv6_prefixes_stay_ipv6() {
        let c = |s: &str| canonical_prefix(s.parse().unwrap()).to_string();
        assert_eq!(c("::ffff:10.0.0.0/104"), "10.0.0.0/8");
        assert_eq!(c("::ffff:0:0/96"), "0.0.0.0/0");
        assert_eq!(c("::/0"), "::/0");
        assert_eq!(c("2001:db8::/32"), "2001:db8::/32");
    }

    #[test]
    fn refuses_what_the_program_cannot_hold() {
        let many = vec![rule(None, None, "cubic"); MAX_RULES + 1];
        let e = Policy::new("t", many).unwrap_err();
        assert_eq!(e.to_string(), "t: rule 65: 65 rules; the program holds 64");
        let e = Policy::new("t", vec![rule(Some(&[]), None, "bbr")]).unwrap_err();
        assert_eq!(e.problem, Problem::EmptyList);
        let e = Policy::new("t", vec![rule(None, None, "a_name_longer_than_15")]).unwrap_err();
        assert!(
            e.to_string().contains("cc \"a_name_longer_than_15\""),
            "{e}"
        );
        let zero = Rule {
            action: Action::Split {
                arms: vec![Arm {
                    cc: "cubic".into(),
                    weight: 0,
                }],
                unit: Unit::Client,
            },
            ..rule(None, None, "x")
        };
        let e = Policy::new("t", vec![zero]).unwrap_err();
        assert_eq!(e.to_string(), "t: rule 1: split: every weight is 0");
        let e = Policy::new("t", vec![rule(None, Some(&[0]), "bbr")]).unwrap_err();
        assert!(e.to_string().contains("local_port \"0\": port 0"), "{e}");
    }
}
