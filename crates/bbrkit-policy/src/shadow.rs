//! Rules that can never match: the first matching rule applies
//! ([`Policy::first_match`]), so a rule every connection of which an
//! earlier rule already matches is dead. `enable --policy` warns about
//! them (dry run and apply) with their lines.
//!
//! A rule matches the product of its keys (`remote` × `local_port` ×
//! `remote_port`, a missing key: everything), so a later rule is covered
//! by an earlier one when each of its keys is covered by the earlier
//! rule's same key: its prefixes by the union of the earlier prefixes
//! (exactly, halves included: 10.0.0.0/25 and 10.0.0.128/25 cover
//! 10.0.0.0/24), its port ranges by the union of the earlier ranges. A
//! rule covered only by several earlier rules together is not reported.

use std::fmt;

use ipnet::IpNet;

use crate::rule::{Policy, PortRange, Rule};

/// A rule an earlier rule covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shadowed {
    /// The dead rule (0-based).
    pub rule: usize,
    /// Its line in the file, if read from one.
    pub line: Option<usize>,
    /// Its name.
    pub name: Option<String>,
    /// The first earlier rule covering it (0-based).
    pub by: usize,
    /// That rule's line.
    pub by_line: Option<usize>,
}

fn place(f: &mut fmt::Formatter<'_>, i: usize, line: Option<usize>) -> fmt::Result {
    write!(f, "rule {}", i + 1)?;
    line.map_or(Ok(()), |l| write!(f, " (line {l})"))
}

impl fmt::Display for Shadowed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        place(f, self.rule, self.line)?;
        if let Some(n) = &self.name {
            write!(f, " {n:?}")?;
        }
        f.write_str(" can never match: ")?;
        place(f, self.by, self.by_line)?;
        f.write_str(" matches every connection it would, and the first matching rule applies")
    }
}

impl Policy {
    /// Every rule an earlier rule covers, in order.
    pub fn shadowed(&self) -> Vec<Shadowed> {
        let rules = self.rules();
        (1..rules.len())
            .filter_map(|j| {
                let by = (0..j).find(|&i| covers(&rules[i], &rules[j]))?;
                Some(Shadowed {
                    rule: j,
                    line: self.line(j),
                    name: rules[j].name.clone(),
                    by,
                    by_line: self.line(by),
                })
            })
            .collect()
    }
}

/// Every connection `later` matches, `earlier` matches.
pub fn covers(earlier: &Rule, later: &Rule) -> bool {
    prefixes_cover(earlier.remote.as_deref(), later.remote.as_deref())
        && ports_cover(earlier.local_port.as_deref(), later.local_port.as_deref())
        && ports_cover(earlier.remote_port.as_deref(), later.remote_port.as_deref())
}

/// Ports a connection can have (0 is never a connected socket's port).
const ALL_PORTS: PortRange = PortRange {
    first: 1,
    last: u16::MAX,
};

fn ports_cover(earlier: Option<&[PortRange]>, later: Option<&[PortRange]>) -> bool {
    let Some(earlier) = earlier else {
        return true;
    };
    let mut e = earlier.to_vec();
    e.sort();
    later
        .unwrap_or(std::slice::from_ref(&ALL_PORTS))
        .iter()
        .all(|r| range_covered(&e, *r))
}

/// `r` lies within the union of `sorted`.
fn range_covered(sorted: &[PortRange], r: PortRange) -> bool {
    let mut next = u32::from(r.first); // the first port not yet covered
    for e in sorted {
        if u32::from(e.first) > next {
            break;
        }
        next = next.max(u32::from(e.last) + 1);
        if next > u32::from(r.last) {
            return true;
        }
    }
    next > u32::from(r.last)
}

fn prefixes_cover(earlier: Option<&[IpNet]>, later: Option<&[IpNet]>) -> bool {
    let Some(earlier) = earlier else {
        return true;
    };
    let everything = [
        "0.0.0.0/0".parse().expect("a prefix"),
        "::/0".parse().expect("a prefix"),
    ];
    later
        .unwrap_or(&everything)
        .iter()
        .all(|p| prefix_covered(earlier, *p))
}

/// `p` lies within the union of `earlier`: one contains it, or both its
/// halves are covered (only worth splitting while a prefix lies inside it).
fn prefix_covered(earlier: &[IpNet], p: IpNet) -> bool {
    if earlier.iter().any(|e| e.contains(&p)) {
        return true;
    }
    if !earlier.iter().any(|e| p.contains(e)) {
        return false;
    }
    p.subnets(p.prefix_len() + 1)
        .is_ok_and(|mut halves| halves.all(|h| prefix_covered(earlier, h)))
}

#[cfg(test)]
mod tests {
    use crate::parse;

    fn warnings(text: &str) -> Vec<String> {
        parse("p.toml", text)
            .unwrap()
            .shadowed()
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn a_rule_without_match_keys_shadows_every_later_rule() {
        let text = "# catch-all first\n[[rule]]\ncc = \"cubic\"\n\n[[rule]]\nname = \"web\"\nlocal_port = [443]\ncc = \"bbr\"\n\n[[rule]]\nremote = [\"10.0.0.0/8\"]\ncc = \"reno\"\n\n[[rule]]\ncc = \"bbr\"\n";
        assert_eq!(
            warnings(text),
            [
                "rule 2 (line 5) \"web\" can never match: rule 1 (line 2) matches every connection it would, and the first matching rule applies",
                "rule 3 (line 10) can never match: rule 1 (line 2) matches every connection it would, and the first matching rule applies",
                "rule 4 (line 14) can never match: rule 1 (line 2) matches every connection it would, and the first matching rule applies",
            ]
        );
    }

    #[test]
    fn subsets_of_an_earlier_rule_are_shadowed_and_others_are_not() {
        let text = r#"
[[rule]]
remote = ["10.0.0.0/25", "10.0.0.128/25", "2001:db8::/32"]
local_port = ["400-500", "501-600"]
cc = "cubic"

[[rule]]
remote = ["10.0.0.0/24"]
local_port = [443, "450-600"]
cc = "bbr"

[[rule]]
remote = ["10.0.0.0/23"]
local_port = [443]
cc = "bbr"

[[rule]]
remote = ["2001:db8:1::/48"]
local_port = [443]
remote_port = [80]
cc = "reno"

[[rule]]
local_port = [443]
cc = "reno"

[[rule]]
remote = ["10.0.0.0/24"]
local_port = [443]
remote_port = [8080]
cc = "bbr"
"#;
        let p = parse("p.toml", text).unwrap();
        let dead: Vec<(usize, usize)> = p
            .shadowed()
            .iter()
            .map(|s| (s.rule + 1, s.by + 1))
            .collect();
        // rule 2: both halves of /24, ports 443 and 450-600 within 400-600;
        // rule 3: /23 is wider; rule 4: inside 2001:db8::/32; rule 5: every
        // address, not only rule 1's; rule 6: inside rule 1 (and rule 5).
        assert_eq!(dead, [(2, 1), (4, 1), (6, 1)]);
        assert_eq!(p.line(1), Some(7));
    }
}
