//! The policy file: TOML with ordered `[[rule]]` tables.
//!
//! ```toml
//! [[rule]]
//! name = "cross-border"
//! remote = ["203.0.113.0/24", "2001:db8::/32"]
//! cc = "bbr3"
//!
//! [[rule]]
//! local_port = [443, "8000-8100"]
//! split = { cubic = 50, bbr3 = 50 }
//! unit = "client"
//! ```
//!
//! The top level holds the rules and an optional `salt = "..."`, which
//! keys the split draws instead of the content ([`crate::salt()`]).
//!
//! Keys of a rule: `name`, `remote`, `local_port`, `remote_port`, `cc` or
//! `split`, `unit` (with `split`), `record`. Every value is read here with
//! its own message (the rule, the key and the value at fault); the checks
//! that do not depend on the spelling are [`Policy::new`]'s.

use ipnet::IpNet;
use serde::Deserialize;
use toml::Value;

use crate::error::{At, PolicyError, Problem};
use crate::rule::{Action, Arm, Policy, PortRange, Rule, Unit, canonical_prefix};

/// One `[[rule]]` table as written: every key a raw TOML value, read by
/// the functions below so each error names its key.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRule {
    name: Option<Value>,
    remote: Option<Value>,
    local_port: Option<Value>,
    remote_port: Option<Value>,
    cc: Option<Value>,
    split: Option<Value>,
    unit: Option<Value>,
    record: Option<Value>,
}

/// The top level: `rule` and the optional `salt`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPolicy {
    #[serde(default)]
    rule: Vec<toml::Spanned<toml::Table>>,
    salt: Option<Value>,
}

type Read<T> = Result<T, (At, Problem)>;

/// Parses and validates a policy file's text; `origin` (the file name)
/// starts every error message.
pub fn parse(origin: &str, text: &str) -> Result<Policy, PolicyError> {
    let err = |at, problem| PolicyError::new(origin, at, problem);
    let raw: RawPolicy = toml::from_str(text).map_err(|e| {
        let line = e
            .span()
            .map(|s| text[..s.start.min(text.len())].lines().count().max(1));
        let msg = e.message().trim().replace('\n', " ");
        let msg = match line {
            Some(l) => format!("line {l}: {msg}"),
            None => msg,
        };
        err(At::default(), Problem::Syntax(msg))
    })?;
    let lines: Vec<usize> = raw
        .rule
        .iter()
        .map(|t| line_of(text, t.span().start))
        .collect();
    let at_line = |mut e: PolicyError| {
        e.at.line =
            e.at.rule
                .and_then(|i| lines.get(i as usize))
                .map(|&l| l as u32);
        e
    };
    let salt = match raw.salt {
        None => None,
        Some(Value::String(s)) if !s.is_empty() => Some(s),
        Some(_) => {
            let at = At {
                key: Some("salt".into()),
                ..At::default()
            };
            return Err(err(at, Problem::Type("a non-empty string")));
        }
    };
    let rules = raw
        .rule
        .into_iter()
        .enumerate()
        .map(|(i, t)| read_rule(i, t.into_inner()).map_err(|(at, p)| at_line(err(at, p))))
        .collect::<Result<Vec<_>, _>>()?;
    Policy::new(origin, rules)
        .map(|p| p.with_lines(lines.clone()).with_salt(salt))
        .map_err(at_line)
}

/// The 1-based line of byte `offset` of `text`.
fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

fn read_rule(i: usize, table: toml::Table) -> Read<Rule> {
    let raw = RawRule::deserialize(Value::Table(table)).map_err(|e| {
        let msg = e.message().trim().replace('\n', " ");
        (At::rule(i), Problem::Syntax(msg))
    })?;
    let action = match (raw.cc, raw.split) {
        (Some(_), Some(_)) => return Err((At::rule(i), Problem::BothActions)),
        (None, None) => return Err((At::rule(i), Problem::NoAction)),
        (Some(cc), None) => {
            if raw.unit.is_some() {
                return Err((At::key(i, "unit"), Problem::UnitWithoutSplit));
            }
            Action::Cc {
                cc: string(i, "cc", cc)?,
            }
        }
        (None, Some(split)) => Action::Split {
            arms: arms(i, split)?,
            unit: raw
                .unit
                .map(|u| unit(i, u))
                .transpose()?
                .unwrap_or_default(),
        },
    };
    Ok(Rule {
        name: raw.name.map(|v| string(i, "name", v)).transpose()?,
        remote: raw
            .remote
            .map(|v| list(i, "remote", v, prefix))
            .transpose()?,
        local_port: raw
            .local_port
            .map(|v| list(i, "local_port", v, port_range))
            .transpose()?,
        remote_port: raw
            .remote_port
            .map(|v| list(i, "remote_port", v, port_range))
            .transpose()?,
        action,
        record: match raw.record {
            None => false,
            Some(Value::Boolean(b)) => b,
            Some(_) => return Err((At::key(i, "record"), Problem::Type("true or false"))),
        },
    })
}

fn string(i: usize, key: &str, v: Value) -> Read<String> {
    match v {
        Value::String(s) => Ok(s),
        _ => Err((At::key(i, key), Problem::Type("a string"))),
    }
}

/// An array whose items `item` reads; an error names the item as written.
fn list<T>(i: usize, key: &str, v: Value, item: fn(&Value) -> Result<T, Problem>) -> Read<Vec<T>> {
    let Value::Array(items) = v else {
        return Err((
            At::key(i, key),
            Problem::Type("an array, like [\"...\", ...]"),
        ));
    };
    items
        .iter()
        .map(|x| item(x).map_err(|p| (At::value(i, key, as_written(x)), p)))
        .collect()
}

fn as_written(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// `203.0.113.0/24`, `2001:db8::/32`, `::ffff:10.0.0.0/104` (stored as
/// `10.0.0.0/8`), or one address (`/32`, `/128`).
fn prefix(v: &Value) -> Result<IpNet, Problem> {
    let s = v.as_str().ok_or(Problem::Type("a prefix string"))?;
    let (addr, len) = match s.split_once('/') {
        Some((a, l)) => (a, Some(l)),
        None => (s, None),
    };
    let addr: std::net::IpAddr = addr.trim().parse().map_err(|_| Problem::Address)?;
    let max: u8 = if addr.is_ipv4() { 32 } else { 128 };
    let len = match len {
        None => u32::from(max),
        Some(l) => l.trim().parse::<u32>().map_err(|_| Problem::Address)?,
    };
    let short = u8::try_from(len)
        .ok()
        .filter(|l| *l <= max)
        .ok_or(Problem::PrefixLength { len, max })?;
    let net = IpNet::new(addr, short).map_err(|_| Problem::PrefixLength { len, max })?;
    if net.trunc() != net {
        return Err(Problem::HostBits {
            network: net.trunc().to_string(),
        });
    }
    Ok(canonical_prefix(net))
}

/// `443`, or `"8000-8100"` (inclusive).
fn port_range(v: &Value) -> Result<PortRange, Problem> {
    const SHAPE: &str = "a port (443) or a range (\"8000-8100\")";
    let port = |n: i64| {
        u16::try_from(n)
            .ok()
            .filter(|p| *p > 0)
            .ok_or_else(|| Problem::Port(format!("port {n} is not 1-65535")))
    };
    let number = |s: &str| {
        s.trim()
            .parse::<i64>()
            .map_err(|_| Problem::Port(format!("expected {SHAPE}")))
            .and_then(port)
    };
    match v {
        Value::Integer(n) => port(*n).map(PortRange::one),
        Value::String(s) => match s.split_once('-') {
            Some((a, b)) => Ok(PortRange {
                first: number(a)?,
                last: number(b)?,
            }),
            None => number(s).map(PortRange::one),
        },
        _ => Err(Problem::Port(format!("expected {SHAPE}"))),
    }
}

/// `{ cubic = 50, bbr3 = 50 }`, arms in the order written.
fn arms(i: usize, v: Value) -> Read<Vec<Arm>> {
    let Value::Table(t) = v else {
        return Err((
            At::key(i, "split"),
            Problem::Type("a table, like { cubic = 50, bbr3 = 50 }"),
        ));
    };
    t.into_iter()
        .map(|(cc, w)| {
            let weight = w
                .as_integer()
                .and_then(|n| u16::try_from(n).ok())
                .ok_or_else(|| {
                    let msg = format!("weight {w} is not a whole number 0-65535");
                    (At::value(i, "split", &cc), Problem::Weights(msg))
                })?;
            Ok(Arm { cc, weight })
        })
        .collect()
}

/// One remote prefix as a command line writes it (`203.0.113.0/24`,
/// `2001:db8::/32`, one address): the file's rules and wording, for
/// commands that build a rule from flags (`bbrkit trial --prefix`).
pub fn parse_prefix(s: &str) -> Result<IpNet, Problem> {
    prefix(&Value::String(s.to_string()))
}

/// One port or inclusive range as a command line writes it (`443`,
/// `8000-8100`): the file's rules and wording.
pub fn parse_port_range(s: &str) -> Result<PortRange, Problem> {
    let p = port_range(&Value::String(s.to_string()))?;
    crate::rule::check_port_range(p)?;
    Ok(p)
}

fn unit(i: usize, v: Value) -> Read<Unit> {
    let s = string(i, "unit", v)?;
    Unit::parse(&s).ok_or((At::value(i, "unit", s), Problem::Unit))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> String {
        parse("policy.toml", text).unwrap_err().to_string()
    }

    #[test]
    fn reads_the_issue_example() {
        let p = parse(
            "policy.toml",
            r#"
[[rule]]
name = "cross-border"
remote = ["203.0.113.0/24", "2001:db8::/32", "::ffff:198.51.100.0/120"]
cc = "bbr3"

[[rule]]
local_port = [443, "8000-8100"]
remote_port = ["1024-65535"]
split = { cubic = 50, bbr3 = 30, bbr = 20 }
unit = "prefix"
record = true
"#,
        )
        .unwrap();
        let r = p.rules();
        assert_eq!(r.len(), 2);
        assert_eq!(r[0].name.as_deref(), Some("cross-border"));
        let remote: Vec<String> = r[0]
            .remote
            .as_ref()
            .unwrap()
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            remote,
            ["203.0.113.0/24", "2001:db8::/32", "198.51.100.0/24"]
        );
        assert_eq!(r[0].action, Action::Cc { cc: "bbr3".into() });
        assert!(!r[0].record);
        assert_eq!(
            r[1].local_port.as_deref(),
            Some(
                &[
                    PortRange::one(443),
                    PortRange {
                        first: 8000,
                        last: 8100
                    }
                ][..]
            )
        );
        let arms: Vec<(String, u16)> = r[1].arms().into_iter().map(|a| (a.cc, a.weight)).collect();
        let want = [("cubic", 50), ("bbr3", 30), ("bbr", 20)].map(|(c, w)| (c.to_string(), w));
        assert_eq!(arms, want, "arms in the order written");
        assert_eq!(r[1].unit(), Unit::Prefix);
        assert!(r[1].record);
    }

    #[test]
    fn errors_name_the_rule_the_key_and_the_value() {
        let two = |body: &str| format!("[[rule]]\ncc = \"bbr\"\n\n[[rule]]\n{body}\n");
        assert_eq!(
            err(&two("remote = [\"10.0.0.0/33\"]\ncc = \"bbr\"")),
            r#"policy.toml: rule 2 (line 4): remote "10.0.0.0/33": prefix length 33 > 32"#
        );
        assert_eq!(
            err(&two("remote = [\"10.0.0.1/8\"]\ncc = \"bbr\"")),
            r#"policy.toml: rule 2 (line 4): remote "10.0.0.1/8": host bits set after the prefix length; did you mean 10.0.0.0/8?"#
        );
        assert_eq!(
            err(&two("remote = [\"2001:db8::/129\"]\ncc = \"bbr\"")),
            r#"policy.toml: rule 2 (line 4): remote "2001:db8::/129": prefix length 129 > 128"#
        );
        assert!(
            err(&two("remote = [\"example.com\"]\ncc = \"bbr\"")).contains("not an IP address")
        );
        assert_eq!(
            err(&two("local_port = [70000]\ncc = \"bbr\"")),
            r#"policy.toml: rule 2 (line 4): local_port "70000": port 70000 is not 1-65535"#
        );
        assert_eq!(
            err(&two("remote_port = [\"9-3\"]\ncc = \"bbr\"")),
            r#"policy.toml: rule 2 (line 4): remote_port "9-3": range ends before it starts (9 > 3)"#
        );
        assert_eq!(
            err(&two("split = { cubic = 50, bbr = -1 }")),
            r#"policy.toml: rule 2 (line 4): split "bbr": weight -1 is not a whole number 0-65535"#
        );
        assert_eq!(
            err(&two("split = { cubic = 50 }\nunit = \"host\"")),
            r#"policy.toml: rule 2 (line 4): unit "host": expected "connection", "client" or "prefix""#
        );
        assert_eq!(
            err(&two("cc = \"bbr\"\nunit = \"client\"")),
            "policy.toml: rule 2 (line 4): unit: `unit` only applies to a `split`"
        );
        assert!(
            err(&two("cc = \"bbr\"\nsplit = { bbr = 1 }"))
                .ends_with("rule 2 (line 4): both `cc` and `split`: give one")
        );
        assert!(
            err(&two("remote = \"10.0.0.0/8\"\ncc = \"bbr\""))
                .contains("rule 2 (line 4): remote: expected an array")
        );
        let unknown = err(&two("remot = []\ncc = \"bbr\""));
        assert!(
            unknown.starts_with("policy.toml: rule 2 (line 4): unknown field `remot`"),
            "{unknown}"
        );
        // Policy::new's checks (after reading) name the line too.
        assert_eq!(
            err(&two("local_port = []\ncc = \"bbr\"")),
            "policy.toml: rule 2 (line 4): local_port: an empty list matches no connection; leave the key out to match every connection"
        );
        assert!(!unknown.contains('\n'));
    }

    #[test]
    fn syntax_errors_name_the_line_on_one_line() {
        let e = err("[[rule]]\ncc = \"bbr\"\nremote = [\"10.0.0.0/8\"\n");
        assert!(e.starts_with("policy.toml: line 3: "), "{e}");
        assert!(!e.contains('\n'), "{e}");
        let e = err("[[rules]]\ncc = \"bbr\"\n");
        assert!(e.contains("unknown field `rules`"), "{e}");
        assert_eq!(
            err(""),
            "policy.toml: no [[rule]] table: the policy would change nothing"
        );
    }

    #[test]
    fn flags_read_prefixes_and_ports_with_the_files_wording() {
        assert_eq!(
            parse_prefix("::ffff:10.0.0.0/104").unwrap().to_string(),
            "10.0.0.0/8"
        );
        assert_eq!(
            parse_prefix("10.0.0.1/8").unwrap_err().to_string(),
            "host bits set after the prefix length; did you mean 10.0.0.0/8?"
        );
        assert_eq!(
            parse_port_range("8000-8099").unwrap(),
            PortRange {
                first: 8000,
                last: 8099
            }
        );
        assert_eq!(
            parse_port_range("9000-8000").unwrap_err().to_string(),
            "range ends before it starts (9000 > 8000)"
        );
        assert!(parse_port_range("0").is_err());
    }
}
