//! [`PolicyError`]: what is wrong with a policy, and where — the file, the
//! rule (numbered from 1 in the order written), the key and the value — so
//! the CLI prints one line such as
//! `policy.toml: rule 2 (line 4): remote "10.0.0.0/33": prefix length 33 > 32`.

use std::fmt;

/// One problem in a policy.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{origin}: {at}{problem}")]
pub struct PolicyError {
    /// Where the policy came from (a file name, or `policy` when built in code).
    pub origin: String,
    /// The rule, key and value at fault.
    pub at: At,
    /// What is wrong.
    pub problem: Problem,
}

/// The place of a [`PolicyError`] inside the policy.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct At {
    /// Rule index (0-based; shown as `rule N` with N = index + 1; `u32`
    /// keeps the error small, and a policy holds at most `MAX_RULES`).
    pub rule: Option<u32>,
    /// The line of the file its `[[rule]]` table starts on (shown as
    /// `rule N (line L)`; `None`: built in code).
    pub line: Option<u32>,
    /// The key (`remote`, `local_port`, `split`, ...).
    pub key: Option<String>,
    /// The offending value as written.
    pub value: Option<String>,
}

impl At {
    /// Rule `index` (0-based), no key.
    pub fn rule(index: usize) -> At {
        At {
            rule: Some(index as u32),
            ..At::default()
        }
    }

    /// `key` of rule `index`.
    pub fn key(index: usize, key: &str) -> At {
        At {
            rule: Some(index as u32),
            key: Some(key.to_string()),
            ..At::default()
        }
    }

    /// `value` of `key` of rule `index`.
    pub fn value(index: usize, key: &str, value: impl Into<String>) -> At {
        At {
            rule: Some(index as u32),
            key: Some(key.to_string()),
            value: Some(value.into()),
            line: None,
        }
    }
}

impl fmt::Display for At {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.rule, self.line) {
            (Some(r), Some(l)) => write!(f, "rule {} (line {l}): ", r + 1)?,
            (Some(r), None) => write!(f, "rule {}: ", r + 1)?,
            (None, _) => {}
        }
        match (&self.key, &self.value) {
            (Some(k), Some(v)) => write!(f, "{k} {v:?}: "),
            (Some(k), None) => write!(f, "{k}: "),
            (None, _) => Ok(()),
        }
    }
}

/// What is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Problem {
    /// The text is not TOML, or a key has the wrong shape (the TOML
    /// parser's or serde's message, with its line).
    #[error("{0}")]
    Syntax(String),
    /// Not an IP address.
    #[error("not an IP address or prefix (like 203.0.113.0/24 or 2001:db8::/32)")]
    Address,
    /// A prefix length beyond the family's width.
    #[error("prefix length {len} > {max}")]
    PrefixLength {
        /// As written.
        len: u32,
        /// 32 or 128.
        max: u8,
    },
    /// Bits set after the prefix length.
    #[error("host bits set after the prefix length; did you mean {network}?")]
    HostBits {
        /// The prefix with those bits cleared.
        network: String,
    },
    /// A port that is not 1..=65535, or a range written backwards.
    #[error("{0}")]
    Port(String),
    /// `remote = []` and the like.
    #[error("an empty list matches no connection; leave the key out to match every connection")]
    EmptyList,
    /// Neither `cc` nor `split`.
    #[error("no action: give `cc = \"NAME\"` or `split = {{ NAME = WEIGHT, ... }}`")]
    NoAction,
    /// Both `cc` and `split`.
    #[error("both `cc` and `split`: give one")]
    BothActions,
    /// `unit` on a rule without a split.
    #[error("`unit` only applies to a `split`")]
    UnitWithoutSplit,
    /// An algorithm name the kernel could never accept.
    #[error("not an algorithm name: {0}")]
    AlgorithmName(String),
    /// Bad weights.
    #[error("{0}")]
    Weights(String),
    /// More than the program's tables hold.
    #[error("{0}")]
    TooMany(String),
    /// An unknown `unit`.
    #[error("expected \"connection\", \"client\" or \"prefix\"")]
    Unit,
    /// A value of the wrong type for its key.
    #[error("expected {0}")]
    Type(&'static str),
    /// A file without any `[[rule]]`.
    #[error("no [[rule]] table: the policy would change nothing")]
    NoRules,
}

impl PolicyError {
    /// An error at `at` of the policy from `origin`.
    pub fn new(origin: &str, at: At, problem: Problem) -> PolicyError {
        PolicyError {
            origin: origin.to_string(),
            at,
            problem,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_file_rule_key_and_value_once() {
        let e = PolicyError::new(
            "policy.toml",
            At::value(1, "remote", "10.0.0.0/33"),
            Problem::PrefixLength { len: 33, max: 32 },
        );
        assert_eq!(
            e.to_string(),
            r#"policy.toml: rule 2: remote "10.0.0.0/33": prefix length 33 > 32"#
        );
        let e = PolicyError::new("p", At::rule(0), Problem::NoAction);
        assert!(e.to_string().starts_with("p: rule 1: no action"), "{e}");
        let e = PolicyError::new("p", At::default(), Problem::NoRules);
        assert_eq!(
            e.to_string(),
            "p: no [[rule]] table: the policy would change nothing"
        );
    }
}
