//! The whole analysis of a trial as plain serialisable data: the split and
//! unit, what happened to the records, the sample-ratio check and trust,
//! the comparison over all connections and per group (arms side by side,
//! effect, verdict and the numbers behind it, guardrails, connections still
//! open), and the guardrail decisions. Its `Serialize` form is the `--json`
//! document.
//!
//! ```text
//!   Trial ──groups──► per group: arms' obs ──► describe (ArmSummary ×2)
//!                                          ├─► effect::compare ──► verdict, needed
//!                                          ├─► srm::check (units per arm)
//!                                          └─► guardrails (goodput, retransmits)
//!         ──all────► the same over every connection ("all")
//!         ──────────► trust (SRM, unexpected arms, duplicates, units in both arms), decisions
//! ```

use serde::Serialize;

use crate::definition::{ARM_NAMES, Grouping, TrialDef, Unit};
use crate::describe::{ArmSummary, OpenSummary, arm_summary, open_summary};
use crate::effect::{Comparison, Effect, Estimand, Intervals, Mode, compare};
use crate::guardrail::{self, Decision, GuardrailCheck};
use crate::observe::{GroupKey, Obs, OpenObs, RecordCounts, Trial};
use crate::srm::{self, SampleRatio};
use crate::verdict::{Needed, Verdict, decide, needed_per_arm};
use crate::words::pct;

/// What one look at a trial needs besides its data: passed in, never read
/// from a clock or a global generator.
#[derive(Debug, Clone, PartialEq)]
pub struct Look {
    /// Seed of the bootstrap (each group draws its own stream from it).
    pub seed: u64,
    /// Fixed horizon (one look at the end) or sequential (any look).
    pub mode: Mode,
    /// How long the trial has run, when the caller knows (reported).
    pub duration_s: Option<f64>,
    /// Bootstrap resamples for this look (`None`: the definition's; at
    /// least 100). A
    /// progress display that looks every second may take fewer: the
    /// anytime interval's SE comes from the draws' interquartile range,
    /// which a few hundred resamples estimate well.
    pub resamples: Option<usize>,
    /// The estimand fixed at an earlier look (`Report::estimand` of the
    /// first look that had one): this look compares the same classes with
    /// the same weights. `None`: this look's own.
    pub estimand: Option<Estimand>,
    /// The cohort: only connections established before this
    /// `CLOCK_MONOTONIC` ns are compared (`None`: every connection read).
    pub established_before_ns: Option<u64>,
}

impl Look {
    /// A look with `seed` in `mode`, the definition's resamples and no
    /// duration.
    pub fn new(seed: u64, mode: Mode) -> Look {
        Look {
            seed,
            mode,
            duration_s: None,
            resamples: None,
            estimand: None,
            established_before_ns: None,
        }
    }
}

/// One arm of the split.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SplitArm {
    /// `A` or `B`.
    pub arm: &'static str,
    /// Its algorithm.
    pub cc: String,
    /// Its weight.
    pub weight: u32,
    /// Its share (0..1).
    pub share: f64,
}

/// One group's results (or all connections').
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GroupReport {
    /// `all`, a prefix (`198.51.100.0/24`) or `rule N`.
    pub group: String,
    /// The remote prefix, when grouped by prefix.
    pub prefix: Option<String>,
    /// The policy rule, when grouped by rule.
    pub rule: Option<u16>,
    /// A and B, closed connections.
    pub arms: [ArmSummary; 2],
    /// The effect of B against A, when there is enough data.
    pub effect: Option<Effect>,
    /// The verdict.
    pub verdict: Verdict,
    /// The numbers behind the verdict, in a sentence.
    pub reason: String,
    /// How much each arm needs, while `insufficient_data`.
    pub needed: Option<Needed>,
    /// Fraction of closed connections that received more than they sent.
    pub mostly_received: f64,
    /// Arm counts against the split (units of randomization).
    pub sample_ratio: Option<SampleRatio>,
    /// False when the trial's or this group's sample ratio (or recording)
    /// is broken: the comparison must not be acted on.
    pub trusted: bool,
    /// Guardrails with their intervals.
    pub guardrails: Vec<GuardrailCheck>,
    /// Connections still open at the end, A and B (never in the above).
    pub open: [OpenSummary; 2],
}

/// A trial's analysis.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// A and B.
    pub split: [SplitArm; 2],
    /// Unit of randomization.
    pub unit: Unit,
    /// What that unit means for the comparison.
    pub unit_meaning: &'static str,
    /// Groups by prefix or rule.
    pub group_by: Grouping,
    /// IPv4 prefix bits of a group (and of the prefix unit).
    pub prefix_v4: u8,
    /// IPv6 prefix bits.
    pub prefix_v6: u8,
    /// Interval coverage (0.95).
    pub confidence: f64,
    /// Equivalence margin (0.05: ±5 %).
    pub equivalence_margin: f64,
    /// How `ci_low`/`ci_high` were computed.
    pub mode: Mode,
    /// Bootstrap seed.
    pub seed: u64,
    /// Bootstrap resamples asked for (per comparison).
    pub resamples: usize,
    /// Duration of the trial so far, when known.
    pub duration_s: Option<f64>,
    /// What happened to the records.
    pub records: RecordCounts,
    /// Arm counts against the split over the whole trial.
    pub sample_ratio: Option<SampleRatio>,
    /// No sign of a broken assignment or recording.
    pub trusted: bool,
    /// Why not, when not.
    pub untrusted_because: Vec<String>,
    /// Every connection.
    pub overall: GroupReport,
    /// Per group, most connections first.
    pub groups: Vec<GroupReport>,
    /// Guardrail decisions for the live command to apply.
    pub decisions: Vec<Decision>,
    /// What the effect over all connections estimates (size classes and
    /// weights), fixed at the first look that had one; groups combine the
    /// same classes they carry information in. `null` before any.
    pub estimand: Option<Estimand>,
    /// The cohort compared, when the look set one
    /// ([`Look::established_before_ns`]).
    pub cohort: Option<Cohort>,
    /// The minimum sample and duration before `--until-confident` may
    /// stop on a decided verdict, and whether they are met.
    pub stop_rule: StopRule,
}

/// The connections a look compares: those established before a time.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Cohort {
    /// `CLOCK_MONOTONIC` ns: connections established before it.
    pub established_before_ns: u64,
    /// Closed connections of the cohort, A and B (compared).
    pub closed: [u64; 2],
    /// Closed connections established later, A and B (read, not compared
    /// at this look).
    pub later: [u64; 2],
}

/// The minimum sample and duration before a decided verdict may stop a
/// trial ([`Report::confident`]), and whether this report has them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StopRule {
    /// Units each arm needs in the compared classes
    /// ([`crate::Settings::min_stop_units`]).
    pub min_units_per_arm: u64,
    /// Seconds the trial must have run ([`crate::Settings::min_stop_s`]).
    pub min_duration_s: f64,
    /// Units each arm has in the compared classes now, A and B.
    pub units: [u64; 2],
    /// Both are met (a report with no duration is judged on units only).
    pub met: bool,
}

impl StopRule {
    fn of(def: &TrialDef, overall: &GroupReport, duration_s: Option<f64>) -> StopRule {
        let s = &def.settings;
        let units = overall.effect.as_ref().map_or([0, 0], |e| e.units);
        StopRule {
            min_units_per_arm: s.min_stop_units,
            min_duration_s: s.min_stop_s,
            units,
            met: units.iter().all(|&u| u >= s.min_stop_units)
                && duration_s.is_none_or(|d| d >= s.min_stop_s),
        }
    }
}

impl Report {
    /// `--until-confident` may stop: the comparison over all connections is
    /// decided and trusted, on at least the minimum sample and duration
    /// (`stop_rule`). Meaningful for a report made in
    /// [`Mode::Sequential`], whose verdict comes from the anytime interval;
    /// a fixed-horizon verdict checked at every look would stop on noise.
    pub fn confident(&self) -> bool {
        self.trusted && self.overall.verdict.is_decided() && self.stop_rule.met
    }
}

/// The fewest resamples a look takes (the definition's own minimum).
const MIN_RESAMPLES: usize = 100;

/// Receiver-side when more than this fraction of a group's connections
/// received more than they sent ("mostly").
const RECEIVER_SIDE_FRACTION: f64 = 0.5;

/// A stream of its own for group `i` (0: all).
fn stream(seed: u64, i: usize) -> u64 {
    seed.wrapping_add((i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15))
}

/// Everything a group's report is built from.
struct GroupInput<'a> {
    label: String,
    key: Option<&'a GroupKey>,
    obs: [Vec<&'a Obs>; 2],
    open: [Vec<&'a OpenObs>; 2],
    seed: u64,
    srm_alpha: f64,
}

impl GroupInput<'_> {
    /// Connections, closed and open.
    fn len(&self) -> usize {
        self.obs.iter().map(Vec::len).sum::<usize>() + self.open.iter().map(Vec::len).sum::<usize>()
    }
}

/// Each group's connections by arm, most connections first, each with its
/// own bootstrap stream and its share of the sample-ratio α.
fn group_inputs<'a>(t: &'a Trial, seed: u64, cut: Option<u64>) -> Vec<GroupInput<'a>> {
    let mut inputs: Vec<GroupInput> = t
        .groups
        .iter()
        .map(|key| GroupInput {
            label: key.label(),
            key: Some(key),
            obs: [Vec::new(), Vec::new()],
            open: [Vec::new(), Vec::new()],
            seed: 0,
            srm_alpha: 0.0,
        })
        .collect();
    for o in t.obs.iter().filter(|o| in_cohort(o, cut)) {
        inputs[o.group as usize].obs[o.arm].push(o);
    }
    for o in &t.open {
        inputs[o.group as usize].open[o.arm].push(o);
    }
    inputs.sort_by(|a, b| {
        let n = |g: &GroupInput| g.obs[0].len() + g.obs[1].len();
        n(b).cmp(&n(a)).then_with(|| a.label.cmp(&b.label))
    });
    let alpha = t.def.settings.srm_alpha / inputs.len().max(1) as f64;
    for (i, g) in inputs.iter_mut().enumerate() {
        g.seed = stream(seed, i + 1);
        g.srm_alpha = alpha;
    }
    inputs
}

impl Trial {
    /// The analysis of everything so far (pure: the seed and mode are in
    /// `look`). Here, not in `observe`, so the observations sit below the
    /// report that reads them (no module cycle, issue 34).
    pub fn report(&self, look: &Look) -> Report {
        assemble(self, look)
    }
}

pub(crate) fn assemble(t: &Trial, look: &Look) -> Report {
    let def = &t.def;
    let cut = look.established_before_ns;
    let inputs = group_inputs(t, look.seed, cut);
    let all = GroupInput {
        label: "all".into(),
        key: None,
        obs: by_arm(&t.obs, cut),
        open: by_arm_open(&t.open),
        seed: stream(look.seed, 0),
        srm_alpha: def.settings.srm_alpha,
    };
    let resamples = look
        .resamples
        .unwrap_or(def.settings.resamples)
        .max(MIN_RESAMPLES);
    let fixed = look.estimand.as_ref().map(Estimand::frozen);
    let mut overall = group_report(def, look.mode, resamples, &all, fixed.as_ref());
    let estimand = fixed.or_else(|| {
        let e = overall.effect.as_ref()?;
        Some(Estimand::of(e, look.duration_s))
    });
    let cohort = cut.map(|c| Cohort {
        established_before_ns: c,
        closed: [0, 1].map(|a| all.obs[a].len() as u64),
        later: [0, 1].map(|a| {
            t.obs
                .iter()
                .filter(|o| o.arm == a && !in_cohort(o, cut))
                .count() as u64
        }),
    });
    let stop_rule = StopRule::of(def, &overall, look.duration_s);
    let (trusted, untrusted_because) = trust(t, overall.sample_ratio.as_ref());
    overall.trusted = trusted;
    let total = t.obs.len() + t.open.len();
    let groups: Vec<GroupReport> = inputs
        .iter()
        .map(|g| {
            let mut r = if g.len() == total && !single_unit_groups(def) {
                // The only group holds every connection: the same analysis.
                GroupReport {
                    group: g.label.clone(),
                    prefix: None,
                    rule: None,
                    ..overall.clone()
                }
            } else {
                group_report(def, look.mode, resamples, g, estimand.as_ref())
            };
            (r.prefix, r.rule) = key_parts(g.key);
            r.trusted = trusted && r.trusted;
            r
        })
        .collect();
    Report {
        split: [0, 1].map(|i| SplitArm {
            arm: ARM_NAMES[i],
            cc: def.arms[i].cc.clone(),
            weight: def.arms[i].weight,
            share: def.share(i),
        }),
        unit: def.unit,
        unit_meaning: crate::unit_meaning(def.unit),
        group_by: def.grouping,
        prefix_v4: def.prefix.v4,
        prefix_v6: def.prefix.v6,
        confidence: def.settings.confidence,
        equivalence_margin: def.settings.equivalence_margin,
        mode: look.mode,
        seed: look.seed,
        resamples,
        duration_s: look.duration_s,
        records: t.counts.clone(),
        sample_ratio: overall.sample_ratio.clone(),
        trusted,
        untrusted_because,
        decisions: decisions(def, &overall, &groups),
        overall,
        groups,
        estimand,
        cohort,
        stop_rule,
    }
}

/// `o` belongs to the cohort established before `cut` (every one without).
fn in_cohort(o: &Obs, cut: Option<u64>) -> bool {
    cut.is_none_or(|c| o.start_ns < c)
}

fn by_arm(obs: &[Obs], cut: Option<u64>) -> [Vec<&Obs>; 2] {
    [0, 1].map(|a| {
        obs.iter()
            .filter(|o| o.arm == a && in_cohort(o, cut))
            .collect()
    })
}

fn by_arm_open(open: &[OpenObs]) -> [Vec<&OpenObs>; 2] {
    [0, 1].map(|a| open.iter().filter(|o| o.arm == a).collect())
}

/// The trial's trust and the reasons against it.
fn trust(t: &Trial, srm: Option<&SampleRatio>) -> (bool, Vec<String>) {
    let c = &t.counts;
    let mut why = Vec::new();
    if let Some(s) = srm.filter(|s| s.mismatch) {
        why.push(format!(
            "sample ratio mismatch: {} {} / {} for a {:.0}/{:.0} split (p = {:.2e} < {})",
            s.counted,
            s.observed[0],
            s.observed[1],
            t.def.share(0) * 100.0,
            t.def.share(1) * 100.0,
            s.p_value,
            s.alpha
        ));
    }
    if c.unexpected_arm > 0 {
        why.push(format!(
            "{} records with an arm the split does not have",
            c.unexpected_arm
        ));
    }
    if c.duplicate > 0 {
        why.push(format!("{} connections recorded twice", c.duplicate));
    }
    if c.units_in_both_arms > 0 {
        why.push(format!(
            "{} {} drew both arms (a per-{} split cannot)",
            c.units_in_both_arms,
            t.def.unit.plural(),
            t.def.unit.as_str()
        ));
    }
    (why.is_empty(), why)
}

fn group_report(
    def: &TrialDef,
    mode: Mode,
    resamples: usize,
    g: &GroupInput,
    fixed: Option<&Estimand>,
) -> GroupReport {
    let arms = [0, 1].map(|i| arm_summary(ARM_NAMES[i], &def.arms[i].cc, &g.obs[i]));
    let n = g.obs[0].len() + g.obs[1].len();
    let mostly_received = if n == 0 {
        0.0
    } else {
        g.obs.iter().flatten().filter(|o| o.mostly_received).count() as f64 / n as f64
    };
    let sample_ratio = srm::check(
        def.unit.plural(),
        [arms[0].units, arms[1].units],
        [def.share(0), def.share(1)],
        g.srm_alpha,
    );
    let single_unit = single_unit_groups(def) && g.key.is_some();
    let comparison = if single_unit {
        Comparison::TooFew {
            needed: Needed {
                per_arm: def.settings.min_units as u64,
                of: "prefixes (see the group all)".into(),
            },
            reason: "each prefix is one unit of randomization, in one arm: compare over all \
                     connections (the group all)"
                .into(),
        }
    } else {
        compare(def, mode, resamples, g.seed, [&g.obs[0], &g.obs[1]], fixed)
    };
    let receiver_side = mostly_received > RECEIVER_SIDE_FRACTION;
    let (effect, mut verdict, reason, needed) = judge(def, comparison);
    let mut guardrails = Vec::new();
    if receiver_side {
        verdict = Verdict::ReceiverSide;
    } else {
        let iv = Intervals::new(def);
        guardrails.extend(effect.as_ref().map(|e| guardrail::goodput(def, e)));
        guardrails.extend(guardrail::retransmits(def, &iv, [&g.obs[0], &g.obs[1]]));
    }
    let reason = if receiver_side {
        format!(
            "{} of its connections received more than they sent: congestion control acts on \
             the sender, so this group says nothing about the algorithm",
            pct(mostly_received)
        )
    } else {
        reason
    };
    let (prefix, rule) = key_parts(g.key);
    GroupReport {
        group: g.label.clone(),
        prefix,
        rule,
        trusted: !sample_ratio.as_ref().is_some_and(|s| s.mismatch),
        arms,
        effect,
        verdict,
        reason,
        needed: needed.filter(|_| verdict == Verdict::InsufficientData),
        mostly_received,
        sample_ratio,
        guardrails,
        open: [0, 1].map(|i| open_summary(ARM_NAMES[i], &g.open[i])),
    }
}

/// Each group is one unit of randomization (prefix units, prefix groups).
fn single_unit_groups(def: &TrialDef) -> bool {
    def.unit == Unit::Prefix && def.grouping == Grouping::Prefix
}

/// The prefix or rule of a group's key.
fn key_parts(key: Option<&GroupKey>) -> (Option<String>, Option<u16>) {
    match key {
        Some(GroupKey::Prefix(p)) => (Some(p.clone()), None),
        Some(GroupKey::Rule(r)) => (None, Some(*r)),
        None => (None, None),
    }
}

/// Effect, verdict, the sentence behind it and what is still needed.
fn judge(def: &TrialDef, c: Comparison) -> (Option<Effect>, Verdict, String, Option<Needed>) {
    let e = match c {
        Comparison::TooFew { needed, reason } => {
            return (None, Verdict::InsufficientData, reason, Some(needed));
        }
        Comparison::Made(e) => e,
    };
    let m = def.settings.equivalence_margin;
    let verdict = decide(e.ci_low, e.ci_high, m);
    let kind = match e.interval {
        Mode::FixedHorizon => "interval",
        Mode::Sequential => "anytime interval",
    };
    let head = format!(
        "B/A {:.3}x, {:.0}% {kind} [{:.3}, {:.3}]",
        e.ratio,
        def.settings.confidence * 100.0,
        e.ci_low,
        e.ci_high
    );
    let mut needed = None;
    let reason = match verdict {
        Verdict::Better => format!("{head} is above 1"),
        Verdict::Worse => format!("{head} is below 1"),
        Verdict::NoDifference => format!(
            "{head} is inside the equivalence margin ±{} [{:.3}, {:.3}]",
            pct(m),
            1.0 / (1.0 + m),
            1.0 + m
        ),
        _ => {
            let per_arm =
                needed_per_arm(e.ratio, e.ci_low, e.ci_high, m, e.units[0].max(e.units[1]));
            needed = Some(Needed {
                per_arm,
                of: def.unit.plural().into(),
            });
            format!(
                "{head} holds 1 and effects beyond ±{}: about {per_arm} {} per arm would decide",
                pct(m),
                def.unit.plural()
            )
        }
    };
    (Some(e), verdict, reason, needed)
}

/// Guardrail decisions: all connections when the overall comparison trips,
/// else each group that trips.
fn decisions(def: &TrialDef, overall: &GroupReport, groups: &[GroupReport]) -> Vec<Decision> {
    if let Some(d) = guardrail::decide(def, "all", &overall.guardrails) {
        return vec![d];
    }
    groups
        .iter()
        .filter_map(|g| guardrail::decide(def, &g.group, &g.guardrails))
        .collect()
}
