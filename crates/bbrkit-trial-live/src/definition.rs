//! A trial as a fleet shares it: `bbrkit trial --definition FILE`, a TOML
//! file whose keys are the flags of `bbrkit trial` (`--until-confident` is
//! `until_confident`), each optional, each read with the flag's own parser
//! and wording.
//!
//! ```toml
//! name = "edge-bbr"
//! arms = ["cubic", "bbr"]          # or "cubic,bbr"
//! split = "50/50"                  # or [50, 50]
//! unit = "client"
//! prefix = ["203.0.113.0/24"]      # or: policy = "FILE" and rule = "N|NAME"
//! port = [443, "8000-8100"]
//! until_confident = true           # or duration = "6h"
//! max_duration = "24h"
//! seed = 20260601                  # the split's salt, the same on every host
//! guardrail_goodput = "20%"
//! ```
//!
//! ```text
//!   FILE ──Definition::parse──► Definition ┐
//!   flags ─────────────────────► Definition ┴─ over ──► Definition ──spec──► TrialSpec
//! ```
//!
//! One type for both sources ([`Definition`]): the command line's fields
//! win over the file's ([`Definition::over`]), and the defaults are applied
//! once, in [`Definition::spec`]. Strict: an unknown key, a value of the
//! wrong type or shape, or two keys that exclude each other is a
//! [`DefinitionError`] naming the file and the line; nothing is attached.

use std::path::PathBuf;
use std::time::Duration;

use bbrkit_trial::{GuardrailBounds, PrefixLengths, Unit};
use serde::Deserialize;
use toml::{Spanned, Value};

use crate::{LiveError, Matching, Stop, TrialSpec};

/// `--max-duration` when none is given: an hour, a working session; a
/// trial undecided by then reports what it has.
pub const DEFAULT_MAX_DURATION: Duration = Duration::from_secs(3600);
/// `--interval` when none is given: 10 s between looks, so the stop rule's
/// 30 s minimum (`Settings::min_stop_s`) is three looks.
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(10);
/// `--ring-size` when none is given: 4 MiB, about 27 000 close records of
/// 152 bytes (144 and the ring's 8-byte header) between two reads of the
/// ring (docs/trial.md, "Benchmark").
pub const DEFAULT_RING_BYTES: u32 = 4 << 20;
/// `--groups` when none is given: the 10 groups with the most connections
/// in the table and the textfile (the textfile's stated cardinality).
pub const DEFAULT_GROUPS: usize = 10;
/// `--prefix-v4`/`--prefix-v6` when none is given: a /24 and a /48, how
/// `bbrkit advise` groups and the program's `prefix` unit draws.
pub const DEFAULT_PREFIX: PrefixLengths = PrefixLengths { v4: 24, v6: 48 };

/// A trial's definition from a file, from the flags, or both: every field
/// is one flag of `bbrkit trial`, `None` (or empty) when not given.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Definition {
    /// `--name`: the `trial` label of every exported series.
    pub name: Option<String>,
    /// `--arms A,B`.
    pub arms: Option<[String; 2]>,
    /// `--split A/B`.
    pub split: Option<[u16; 2]>,
    /// `--unit`.
    pub unit: Option<Unit>,
    /// `--prefix` (repeatable): remote prefixes as written.
    pub prefixes: Vec<String>,
    /// `--port` (repeatable): local ports or ranges as written.
    pub ports: Vec<String>,
    /// `--policy FILE`.
    pub policy: Option<PathBuf>,
    /// `--rule N|NAME`.
    pub rule: Option<String>,
    /// `--cgroup`.
    pub cgroup: Option<PathBuf>,
    /// `--duration`.
    pub duration: Option<Duration>,
    /// `--until-confident` (`Some(false)`: a file said `false`).
    pub until_confident: Option<bool>,
    /// `--max-duration`.
    pub max_duration: Option<Duration>,
    /// `--interval`.
    pub interval: Option<Duration>,
    /// `--seed`: the split's salt and the bootstrap's seed.
    pub seed: Option<u64>,
    /// `--ring-size`, bytes.
    pub ring_bytes: Option<u32>,
    /// `--prefix-v4`.
    pub prefix_v4: Option<u8>,
    /// `--prefix-v6`.
    pub prefix_v6: Option<u8>,
    /// `--guardrail-goodput`, a fraction.
    pub guardrail_goodput: Option<f64>,
    /// `--guardrail-retransmit`, a fraction.
    pub guardrail_retransmit: Option<f64>,
    /// `--groups`.
    pub groups: Option<usize>,
    /// `--textfile`.
    pub textfile: Option<PathBuf>,
}

/// What is wrong with a definition file: `FILE line N: key: problem`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{origin}{}: {problem}", line.map(|l| format!(" line {l}")).unwrap_or_default())]
pub struct DefinitionError {
    /// The file as given.
    pub origin: String,
    /// The 1-based line of the key at fault (`None`: the whole file).
    pub line: Option<usize>,
    /// What is wrong, starting with the key.
    pub problem: String,
}

/// The file as written: every key a raw value with its place.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    name: Option<Spanned<Value>>,
    arms: Option<Spanned<Value>>,
    split: Option<Spanned<Value>>,
    unit: Option<Spanned<Value>>,
    prefix: Option<Spanned<Value>>,
    port: Option<Spanned<Value>>,
    policy: Option<Spanned<Value>>,
    rule: Option<Spanned<Value>>,
    cgroup: Option<Spanned<Value>>,
    duration: Option<Spanned<Value>>,
    until_confident: Option<Spanned<Value>>,
    max_duration: Option<Spanned<Value>>,
    interval: Option<Spanned<Value>>,
    seed: Option<Spanned<Value>>,
    ring_size: Option<Spanned<Value>>,
    prefix_v4: Option<Spanned<Value>>,
    prefix_v6: Option<Spanned<Value>>,
    guardrail_goodput: Option<Spanned<Value>>,
    guardrail_retransmit: Option<Spanned<Value>>,
    groups: Option<Spanned<Value>>,
    textfile: Option<Spanned<Value>>,
}

/// Reads one key: its value with the flag's parser, or a [`DefinitionError`]
/// at its line.
struct Reader<'a> {
    origin: &'a str,
    text: &'a str,
}

impl Reader<'_> {
    fn err(&self, offset: Option<usize>, problem: String) -> DefinitionError {
        DefinitionError {
            origin: self.origin.to_string(),
            line: offset.map(|o| line_of(self.text, o)),
            problem,
        }
    }

    /// `key`'s value through `read`, which says what is wrong.
    fn key<T>(
        &self,
        key: &str,
        v: Option<Spanned<Value>>,
        read: impl FnOnce(&Value) -> Result<T, String>,
    ) -> Result<Option<T>, DefinitionError> {
        let Some(v) = v else { return Ok(None) };
        let at = v.span().start;
        read(v.get_ref())
            .map(Some)
            .map_err(|p| self.err(Some(at), format!("{key} {}: {p}", shown(v.get_ref()))))
    }
}

/// A value as the error quotes it (`"1x"`, `[1, 2]`).
fn shown(v: &Value) -> String {
    match v {
        Value::String(s) => format!("{s:?}"),
        other => other.to_string(),
    }
}

/// The 1-based line of byte `offset` of `text`.
fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

fn string(v: &Value) -> Result<String, String> {
    v.as_str()
        .map(str::to_string)
        .ok_or_else(|| "expected a string".into())
}

/// The flag's text of `v`: a string as is, an integer written out (a port,
/// a rule's number).
fn flag_text(v: &Value) -> Result<String, String> {
    match v {
        Value::String(s) => Ok(s.clone()),
        Value::Integer(n) => Ok(n.to_string()),
        _ => Err("expected a string or a number".into()),
    }
}

/// A list of flag texts (`prefix`, `port`), or one.
fn texts(v: &Value) -> Result<Vec<String>, String> {
    match v {
        Value::Array(items) => items.iter().map(flag_text).collect(),
        one => flag_text(one).map(|t| vec![t]),
    }
}

fn whole<T: TryFrom<i64>>(v: &Value, range: &str) -> Result<T, String> {
    v.as_integer()
        .and_then(|n| T::try_from(n).ok())
        .ok_or_else(|| format!("expected a whole number {range}"))
}

/// `--arms`: `"cubic,bbr"` or `["cubic", "bbr"]`.
fn arms(v: &Value) -> Result<[String; 2], String> {
    let text = match v {
        Value::Array(items) => items
            .iter()
            .map(string)
            .collect::<Result<Vec<_>, _>>()?
            .join(","),
        other => string(other)?,
    };
    crate::parse_arms(&text).map_err(|e| e.to_string())
}

/// `--split`: `"90/10"` or `[90, 10]`.
fn split(v: &Value) -> Result<[u16; 2], String> {
    let text = match v {
        Value::Array(items) => items
            .iter()
            .map(|w| whole::<u16>(w, "0-65535").map(|w| w.to_string()))
            .collect::<Result<Vec<_>, _>>()?
            .join("/"),
        other => string(other)?,
    };
    crate::parse_split(&text).map_err(|e| e.to_string())
}

fn unit(v: &Value) -> Result<Unit, String> {
    Unit::parse(&string(v)?)
        .ok_or_else(|| "expected \"connection\", \"client\" or \"prefix\"".into())
}

fn duration(v: &Value) -> Result<Duration, String> {
    positive_duration(&string(v)?)
}

fn boolean(v: &Value) -> Result<bool, String> {
    v.as_bool().ok_or_else(|| "expected true or false".into())
}

/// `--seed`: an integer, or a string for values above 2^63 (TOML's
/// integers are signed 64-bit).
fn seed(v: &Value) -> Result<u64, String> {
    match v {
        Value::String(s) => s
            .trim()
            .parse()
            .map_err(|_| "expected a whole number 0-2^64".into()),
        other => whole(other, "0-2^63 (write larger ones as a string)"),
    }
}

/// `--ring-size`: `"4mib"`, or a number of bytes.
fn ring(v: &Value) -> Result<u32, String> {
    let text = match v {
        Value::Integer(n) => format!("{n}b"),
        other => string(other)?,
    };
    parse_ring_size(&text)
}

fn percent(v: &Value) -> Result<f64, String> {
    parse_percent(&string(v)?)
}

/// A `--flag TIME` that must be above zero: `10s`, `6h`, `90m`.
pub fn positive_duration(text: &str) -> Result<Duration, String> {
    match bbrkit_vocab::units::parse_duration(text).map_err(|e| e.to_string())? {
        d if d.is_zero() => Err(format!("must be positive: '{text}'")),
        d => Ok(d),
    }
}

/// `--ring-size`: a power of two from 4 KiB (a page, the smallest BPF ring
/// buffer) to 2 GiB.
pub fn parse_ring_size(text: &str) -> Result<u32, String> {
    let b = bbrkit_vocab::size::parse_bytes(text).map_err(|e| e.to_string())?;
    u32::try_from(b)
        .ok()
        .filter(|b| b.is_power_of_two() && *b >= 4096)
        .ok_or(format!(
            "'{text}' is not a power of two from 4kib to 2gib (e.g. 4mib)"
        ))
}

/// `--guardrail-*`: a percentage above 0 and below 100 (`20%`), as a
/// fraction.
pub fn parse_percent(text: &str) -> Result<f64, String> {
    let v: Option<f64> = text.strip_suffix('%').and_then(|v| v.trim().parse().ok());
    v.filter(|v| *v > 0.0 && *v < 100.0)
        .map(|v| v / 100.0)
        .ok_or(format!(
            "'{text}' is not a percentage above 0 and below 100 (e.g. 20%)"
        ))
}

impl Definition {
    /// Reads a definition file's text; `origin` (the file) starts every
    /// error.
    pub fn parse(origin: &str, text: &str) -> Result<Definition, DefinitionError> {
        let r = Reader { origin, text };
        let raw: Raw = toml::from_str(text).map_err(|e| {
            let msg = e.message().trim().replace('\n', " ");
            r.err(e.span().map(|s| s.start), msg)
        })?;
        // Keys that exclude each other, as the flags do.
        let pairs = [
            ("policy", raw.policy.as_ref(), "prefix", raw.prefix.as_ref()),
            ("policy", raw.policy.as_ref(), "port", raw.port.as_ref()),
            (
                "duration",
                raw.duration.as_ref(),
                "until_confident",
                raw.until_confident.as_ref(),
            ),
        ];
        for (a, va, b, vb) in pairs {
            if let (Some(va), Some(vb)) = (va, vb) {
                let at = va.span().start.max(vb.span().start);
                return Err(r.err(Some(at), format!("{a} and {b}: give one, not both")));
            }
        }
        let d = Definition {
            name: r.key("name", raw.name, |v| {
                let s = string(v)?;
                bbrkit_trial::render::check_name(&s).map(|()| s)
            })?,
            arms: r.key("arms", raw.arms, arms)?,
            split: r.key("split", raw.split, split)?,
            unit: r.key("unit", raw.unit, unit)?,
            prefixes: r.key("prefix", raw.prefix, texts)?.unwrap_or_default(),
            ports: r.key("port", raw.port, texts)?.unwrap_or_default(),
            policy: r.key("policy", raw.policy, |v| string(v).map(PathBuf::from))?,
            rule: r.key("rule", raw.rule, flag_text)?,
            cgroup: r.key("cgroup", raw.cgroup, |v| string(v).map(PathBuf::from))?,
            duration: r.key("duration", raw.duration, duration)?,
            until_confident: r.key("until_confident", raw.until_confident, boolean)?,
            max_duration: r.key("max_duration", raw.max_duration, duration)?,
            interval: r.key("interval", raw.interval, duration)?,
            seed: r.key("seed", raw.seed, seed)?,
            ring_bytes: r.key("ring_size", raw.ring_size, ring)?,
            prefix_v4: r.key("prefix_v4", raw.prefix_v4, |v| {
                whole::<u8>(v, "0-32").and_then(|n| bits(n, 32))
            })?,
            prefix_v6: r.key("prefix_v6", raw.prefix_v6, |v| {
                whole::<u8>(v, "0-128").and_then(|n| bits(n, 128))
            })?,
            guardrail_goodput: r.key("guardrail_goodput", raw.guardrail_goodput, percent)?,
            guardrail_retransmit: r.key(
                "guardrail_retransmit",
                raw.guardrail_retransmit,
                percent,
            )?,
            groups: r.key("groups", raw.groups, |v| whole::<usize>(v, "0 or more"))?,
            textfile: r.key("textfile", raw.textfile, |v| string(v).map(PathBuf::from))?,
        };
        if d.policy.is_some() != d.rule.is_some() {
            let problem =
                "policy and rule go together: the policy file and its rule that is the trial";
            return Err(r.err(None, problem.into()));
        }
        Ok(d)
    }

    /// `self` (the command line) over `file`: each field given on the
    /// command line wins; a choice given on the command line replaces the
    /// file's whole choice — `--duration` or `--until-confident` the file's
    /// `duration` and `until_confident`, `--policy`/`--rule` the file's
    /// `prefix` and `port`, `--prefix`/`--port` the file's `policy` and
    /// `rule`.
    pub fn over(self, file: Definition) -> Definition {
        let flags_stop = self.duration.is_some() || self.until_confident.is_some();
        let flags_policy = self.policy.is_some() || self.rule.is_some();
        let flags_matching = !self.prefixes.is_empty() || !self.ports.is_empty();
        let (f_duration, f_until) = match flags_stop {
            true => (None, None),
            false => (file.duration, file.until_confident),
        };
        let (f_prefixes, f_ports) = match flags_policy {
            true => (Vec::new(), Vec::new()),
            false => (file.prefixes, file.ports),
        };
        let (f_policy, f_rule) = match flags_matching {
            true => (None, None),
            false => (file.policy, file.rule),
        };
        let list = |mine: Vec<String>, theirs: Vec<String>| match mine.is_empty() {
            true => theirs,
            false => mine,
        };
        Definition {
            name: self.name.or(file.name),
            arms: self.arms.or(file.arms),
            split: self.split.or(file.split),
            unit: self.unit.or(file.unit),
            prefixes: list(self.prefixes, f_prefixes),
            ports: list(self.ports, f_ports),
            policy: self.policy.or(f_policy),
            rule: self.rule.or(f_rule),
            cgroup: self.cgroup.or(file.cgroup),
            duration: self.duration.or(f_duration),
            until_confident: self.until_confident.or(f_until),
            max_duration: self.max_duration.or(file.max_duration),
            interval: self.interval.or(file.interval),
            seed: self.seed.or(file.seed),
            ring_bytes: self.ring_bytes.or(file.ring_bytes),
            prefix_v4: self.prefix_v4.or(file.prefix_v4),
            prefix_v6: self.prefix_v6.or(file.prefix_v6),
            guardrail_goodput: self.guardrail_goodput.or(file.guardrail_goodput),
            guardrail_retransmit: self.guardrail_retransmit.or(file.guardrail_retransmit),
            groups: self.groups.or(file.groups),
            textfile: self.textfile.or(file.textfile),
        }
    }

    /// `--groups`, or its default.
    pub fn groups(&self) -> usize {
        self.groups.unwrap_or(DEFAULT_GROUPS)
    }

    /// What to run, the defaults applied: `clock_seed` when no seed was
    /// given; the policy file (with `policy`) is read here.
    pub fn spec(&self, clock_seed: u64) -> Result<TrialSpec, LiveError> {
        let matching = match (&self.policy, &self.rule) {
            (Some(file), Some(rule)) => Matching::Policy {
                origin: file.display().to_string(),
                text: std::fs::read_to_string(file).map_err(|source| LiveError::ReadPolicy {
                    path: file.display().to_string(),
                    source,
                })?,
                rule: rule.clone(),
            },
            (None, None) => Matching::Flags {
                prefixes: self.prefixes.clone(),
                ports: self.ports.clone(),
            },
            _ => return Err(LiveError::PolicyWithoutRule),
        };
        let stop = match (self.duration, self.until_confident) {
            (Some(_), Some(true)) => return Err(LiveError::TwoStops),
            (Some(d), _) => Stop::For(d),
            (None, Some(true)) => Stop::UntilConfident {
                max: self.max_duration.unwrap_or(DEFAULT_MAX_DURATION),
            },
            (None, _) => return Err(LiveError::NoStop),
        };
        let guardrails = GuardrailBounds::default();
        Ok(TrialSpec {
            arms: self.arms.clone(),
            split: self.split,
            unit: self.unit,
            matching,
            cgroup: self.cgroup.clone(),
            stop,
            look_every: self.interval.unwrap_or(DEFAULT_INTERVAL),
            seed: self.seed.unwrap_or(clock_seed),
            ring_bytes: self.ring_bytes.unwrap_or(DEFAULT_RING_BYTES),
            prefix: PrefixLengths {
                v4: self.prefix_v4.unwrap_or(DEFAULT_PREFIX.v4),
                v6: self.prefix_v6.unwrap_or(DEFAULT_PREFIX.v6),
            },
            guardrails: GuardrailBounds {
                max_goodput_loss: self
                    .guardrail_goodput
                    .unwrap_or(guardrails.max_goodput_loss),
                max_retransmit_increase: self
                    .guardrail_retransmit
                    .unwrap_or(guardrails.max_retransmit_increase),
            },
        })
    }
}

/// A prefix length of at most `max` bits.
fn bits(n: u8, max: u8) -> Result<u8, String> {
    if n <= max {
        Ok(n)
    } else {
        Err(format!("expected a whole number 0-{max}"))
    }
}

#[cfg(test)]
mod tests;
