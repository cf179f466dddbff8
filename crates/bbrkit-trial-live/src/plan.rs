//! From what the operator asked for ([`TrialSpec`]: arms, split, unit,
//! which connections, the cgroup, how long) to what the run needs
//! ([`Plan`]: the policy rule compiled for the program, the statistics'
//! [`TrialDef`], the cgroup), refusing anything that cannot run before
//! anything is attached.
//!
//! ```text
//!   --arms A,B --split 50/50 --unit U --prefix P.. --port N..   --policy FILE --rule N|NAME
//!        │ one rule: remote P.., local_port N.., split, unit,        │ the file's rules; the
//!        │ record = true (no key: every connection of the cgroup)    │ trial's rule records,
//!        ▼                                                           ▼ no other rule does
//!   Policy ──► algorithms registered? ──► Compiled::new(policy, seed) + TrialDef (A = first arm)
//!   cgroup: --cgroup, else the cgroup2 mount's root (the whole host) ──► a cgroup v2 directory?
//! ```
//!
//! [`plan`] is pure (the host's facts are passed in: [`HostFacts`]);
//! [`prepare`] reads them and checks the cgroup directory.

use std::path::PathBuf;
use std::time::Duration;

use bbrkit_policy::{Action, Compiled, Policy, Rule, parse_port_range, parse_prefix};
use bbrkit_trial::{Arm, Grouping, GuardrailBounds, PrefixLengths, Settings, TrialDef, Unit};
use serde::Serialize;

use crate::LiveError;

/// Which connections are in the trial.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Matching {
    /// `--prefix` (remote prefixes) and `--port` (this host's service
    /// ports, of the connections it accepts), each repeatable: one rule of
    /// both; none of either matches every connection of the cgroup.
    Flags {
        /// Remote prefixes as written.
        prefixes: Vec<String>,
        /// Local ports or ranges as written.
        ports: Vec<String>,
    },
    /// `--policy FILE --rule N|NAME`: the whole policy is applied for the
    /// trial's time, and its rule N (from 1, or by name), a two-arm split,
    /// is the trial.
    Policy {
        /// The file's name (starts its errors).
        origin: String,
        /// Its text.
        text: String,
        /// The rule: a number from 1 or a rule's `name`.
        rule: String,
    },
}

/// When the trial ends (besides a cancel).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Stop {
    /// After this long (`--duration`): the final interval is a fixed
    /// horizon's.
    For(Duration),
    /// When the comparison over all connections is decided with its anytime
    /// interval (`--until-confident`) or a guardrail moved the split, at
    /// most after `max` (`--max-duration`).
    UntilConfident {
        /// The cap.
        max: Duration,
    },
}

/// What the operator asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct TrialSpec {
    /// `--arms A,B` (`None` with `--policy`).
    pub arms: Option<[String; 2]>,
    /// `--split A/B` weights (`None`: 50/50, or the policy rule's).
    pub split: Option<[u16; 2]>,
    /// `--unit` (`None`: per connection, or the policy rule's).
    pub unit: Option<Unit>,
    /// Which connections.
    pub matching: Matching,
    /// `--cgroup` (`None`: the cgroup2 root, the whole host).
    pub cgroup: Option<PathBuf>,
    /// How long.
    pub stop: Stop,
    /// How often to look (progress line, guardrails, `--until-confident`).
    pub look_every: Duration,
    /// Salt of the split's draw and seed of the bootstrap.
    pub seed: u64,
    /// Size of the close records' ring buffer, bytes (a power of two).
    pub ring_bytes: u32,
    /// Prefix lengths of a remote group.
    pub prefix: PrefixLengths,
    /// Guardrail bounds.
    pub guardrails: GuardrailBounds,
}

/// What [`plan`] needs to know about the host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostFacts {
    /// `tcp_available_congestion_control`.
    pub available: Vec<String>,
    /// The cgroup2 mount (the whole host's cgroup), if mounted.
    pub cgroup2_root: Option<PathBuf>,
}

/// What the trial governs, for the report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Scope {
    /// The cgroup v2 directory the program is attached to.
    pub cgroup: String,
    /// It is the cgroup2 root: every process of the host.
    pub whole_host: bool,
    /// The trial's rule index in the attached policy (0-based, as in
    /// records).
    pub rule: u16,
    /// The rule as the policy's dry run writes it.
    pub rule_text: String,
    /// The policy file, with `--policy`.
    pub policy: Option<String>,
}

/// A trial ready to run.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The statistics' definition: A is the first arm.
    pub def: TrialDef,
    /// The program's maps.
    pub compiled: Compiled,
    /// What it governs.
    pub scope: Scope,
    /// The cgroup directory.
    pub cgroup: PathBuf,
    /// How long.
    pub stop: Stop,
    /// How often to look.
    pub look_every: Duration,
    /// Salt and seed.
    pub seed: u64,
    /// Ring buffer size, bytes.
    pub ring_bytes: u32,
}

/// What is wrong with a flag's value (the caller names the flag and the
/// value).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct BadValue(pub &'static str);

/// `--arms A,B`: two algorithm names, A the baseline. The same name twice
/// is an A/A trial, the platform check: its verdict must come out
/// `no_difference` or undecided, `better`/`worse` at about the interval's
/// error rate (5 %), by the statistics alone.
pub fn parse_arms(s: &str) -> Result<[String; 2], BadValue> {
    let bad = BadValue;
    let names: Vec<String> = s.split(',').map(|n| n.trim().to_string()).collect();
    let [a, b] = <[String; 2]>::try_from(names)
        .map_err(|_| bad("give two algorithms, A (the baseline) and B, like cubic,bbr"))?;
    if a.is_empty() || b.is_empty() {
        return Err(bad("an empty algorithm name"));
    }
    for n in [&a, &b] {
        bbrkit_policy::rule::check_cc_name(n).map_err(|_| bad("not an algorithm name"))?;
    }
    Ok([a, b])
}

/// `--split A/B`: two positive weights up to 65535 (`50/50`, `90/10`).
pub fn parse_split(s: &str) -> Result<[u16; 2], BadValue> {
    let bad = BadValue;
    let (a, b) = s
        .split_once('/')
        .ok_or(bad("give the weights of A and B, like 50/50 or 90/10"))?;
    let w = |x: &str| {
        x.trim()
            .parse::<u16>()
            .map_err(|_| bad("each weight is a whole number 0-65535"))
    };
    let split = [w(a)?, w(b)?];
    if split.contains(&0) {
        return Err(bad("a weight of 0 leaves an arm empty: a trial needs both"));
    }
    Ok(split)
}

/// The plan of `spec` on a host with `facts` (pure).
pub fn plan(spec: &TrialSpec, facts: &HostFacts) -> Result<Plan, LiveError> {
    let (policy, rule, unit, origin) = trial_policy(spec)?;
    let registered = |name: &str| facts.available.iter().any(|a| a == name);
    if let Some(name) = policy.algorithms().into_iter().find(|n| !registered(n)) {
        return Err(LiveError::Unregistered {
            fix: fix_for(&name),
            name,
            available: facts.available.join(" "),
        });
    }
    let cgroup = match (&spec.cgroup, &facts.cgroup2_root) {
        (Some(c), _) => c.clone(),
        (None, Some(root)) => root.clone(),
        (None, None) => return Err(LiveError::NoCgroup2),
    };
    if unit == Unit::Prefix && (spec.prefix.v4, spec.prefix.v6) != (PROGRAM_V4, PROGRAM_V6) {
        return Err(LiveError::PrefixUnitLengths);
    }
    let arms = policy.rules()[rule].arms();
    let def = TrialDef {
        arms: [0, 1].map(|i| Arm {
            cc: arms[i].cc.clone(),
            weight: u32::from(arms[i].weight),
        }),
        unit,
        grouping: Grouping::Prefix,
        prefix: spec.prefix,
        settings: Settings::default(),
        guardrails: spec.guardrails.clone(),
    };
    def.validate().map_err(LiveError::Trial)?;
    let scope = Scope {
        whole_host: facts.cgroup2_root.as_ref() == Some(&cgroup),
        cgroup: cgroup.display().to_string(),
        rule: rule as u16,
        rule_text: bbrkit_policy::render::rule_line(rule, &policy.rules()[rule]),
        policy: origin,
    };
    Ok(Plan {
        compiled: Compiled::new(&policy, spec.seed),
        def,
        scope,
        cgroup,
        stop: spec.stop,
        look_every: spec.look_every,
        seed: spec.seed,
        ring_bytes: spec.ring_bytes,
    })
}

/// The program's `prefix` unit draws per /24 and /48
/// (`bbrkit_policy::draw`); the trial's units must be the same prefixes.
const PROGRAM_V4: u8 = bbrkit_policy::draw::PREFIX_V4;
const PROGRAM_V6: u8 = bbrkit_policy::draw::PREFIX_V6;

/// The policy to attach, the trial's rule in it, the unit and the file.
fn trial_policy(spec: &TrialSpec) -> Result<(Policy, usize, Unit, Option<String>), LiveError> {
    match &spec.matching {
        Matching::Flags { prefixes, ports } => {
            let arms = spec.arms.clone().ok_or(LiveError::NoArms)?;
            let unit = spec.unit.unwrap_or(Unit::Connection);
            let rule = flags_rule(arms, spec.split.unwrap_or([50, 50]), unit, prefixes, ports)?;
            let policy = Policy::new("bbrkit trial", vec![rule])?;
            Ok((policy, 0, unit, None))
        }
        Matching::Policy { origin, text, rule } => {
            if spec.arms.is_some() || spec.split.is_some() || spec.unit.is_some() {
                return Err(LiveError::PolicyConflict);
            }
            let policy = bbrkit_policy::parse(origin, text)?;
            let (i, unit) = policy_rule(&policy, origin, rule)?;
            let rules = policy
                .rules()
                .iter()
                .enumerate()
                .map(|(j, r)| Rule {
                    record: j == i,
                    ..r.clone()
                })
                .collect();
            Ok((Policy::new(origin, rules)?, i, unit, Some(origin.clone())))
        }
    }
}

/// The rule `--prefix`/`--port` describe.
fn flags_rule(
    arms: [String; 2],
    split: [u16; 2],
    unit: Unit,
    prefixes: &[String],
    ports: &[String],
) -> Result<Rule, LiveError> {
    let remote = prefixes
        .iter()
        .map(|p| {
            parse_prefix(p).map_err(|source| LiveError::Prefix {
                given: p.clone(),
                source,
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let local_port = ports
        .iter()
        .map(|p| {
            parse_port_range(p).map_err(|source| LiveError::Port {
                given: p.clone(),
                source,
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let [a, b] = arms;
    Ok(Rule {
        name: Some("trial".into()),
        remote: (!remote.is_empty()).then_some(remote),
        local_port: (!local_port.is_empty()).then_some(local_port),
        remote_port: None,
        action: Action::Split {
            arms: vec![
                bbrkit_policy::Arm {
                    cc: a,
                    weight: split[0],
                },
                bbrkit_policy::Arm {
                    cc: b,
                    weight: split[1],
                },
            ],
            unit,
        },
        record: true,
    })
}

/// Rule `which` (a number from 1, or a name) of `policy`: a two-arm split.
fn policy_rule(policy: &Policy, origin: &str, which: &str) -> Result<(usize, Unit), LiveError> {
    let rules = policy.rules();
    let bad = |problem: String| LiveError::Rule {
        origin: origin.to_string(),
        given: which.to_string(),
        problem,
    };
    let i = match which.parse::<usize>() {
        Ok(n) if (1..=rules.len()).contains(&n) => n - 1,
        Ok(_) => return Err(bad(format!("the file has rules 1 to {}", rules.len()))),
        Err(_) => rules
            .iter()
            .position(|r| r.name.as_deref() == Some(which))
            .ok_or_else(|| bad("no rule has this name".into()))?,
    };
    match &rules[i].action {
        Action::Split { arms, unit } if arms.len() == 2 => Ok((i, *unit)),
        Action::Split { arms, .. } => Err(bad(format!(
            "splits {} arms; a trial compares two",
            arms.len()
        ))),
        Action::Cc { cc } => Err(bad(format!(
            "gives every connection {cc}; a trial needs a split of two arms"
        ))),
    }
}

/// How to get an algorithm the kernel does not offer.
fn fix_for(name: &str) -> String {
    match name {
        "bbr3" | "bbr2" => format!("run `bbrkit enable --cc {name}` first"),
        _ => format!("load its module (modprobe tcp_{name}) or choose another algorithm"),
    }
}

/// Reads the host's facts, plans, and checks that the cgroup is a cgroup
/// v2 directory. Attaches nothing.
pub fn prepare(spec: &TrialSpec) -> Result<Plan, LiveError> {
    let facts = HostFacts {
        available: bbrkit_diag::algorithms::available().map_err(LiveError::Diag)?,
        cgroup2_root: bbrkit_bpf::sockops::cgroup::cgroup2_mount().map_err(LiveError::Mountinfo)?,
    };
    let plan = plan(spec, &facts)?;
    bbrkit_bpf::sockops::cgroup::check_cgroup2(&plan.cgroup)?;
    Ok(plan)
}

#[cfg(test)]
mod tests;
