//! The Prometheus textfile of a trial for node_exporter's textfile
//! collector: low cardinality — per group (at most `max_groups` of them,
//! plus `all`) and arm, never per connection. Written with the one
//! exposition writer (`bbrkit_diag::prom`), which checks names and labels.
//! Every series carries the trial's name (`trial`, [`Export::name`]), so
//! one Prometheus holds a fleet's trials apart (`bbrkit fleet report`).
//!
//! Families (labels `trial`, `group`, and `arm` + `cc` where per arm):
//! `bbrkit_trial_split_share`, `bbrkit_trial_split_weight` (the
//! definition's, not cut by a guardrail), `bbrkit_trial_connections_total`,
//! `bbrkit_trial_open_connections`, `bbrkit_trial_bytes_acked_total`,
//! `bbrkit_trial_goodput_bytes_per_second` (`stat` p10/median/p90, the
//! JSON keys; `quantile` is reserved for summaries, and Prometheus' base
//! unit is bytes, as in `bbrkit metrics`),
//! `bbrkit_trial_retransmit_ratio`, `bbrkit_trial_rtt_inflation_ratio`
//! (median), `bbrkit_trial_effect_ratio` and its `_ci_low`/`_ci_high`,
//! `bbrkit_trial_effect_log_ratio` and `bbrkit_trial_effect_log_se` (the
//! host's effect on the log scale and its standard error, what a fleet's
//! meta-analysis pools; see [`log_se`]), `bbrkit_trial_units` (units of
//! randomization per arm, label `unit`: what the sample-ratio check counts),
//! `bbrkit_trial_verdict` (`verdict`, 1 for the current one),
//! `bbrkit_trial_trusted`, `bbrkit_trial_sample_ratio_p_value`,
//! `bbrkit_trial_sample_ratio_mismatch`, `bbrkit_trial_guardrail_tripped`
//! (`metric`, `arm`); a live trial adds `bbrkit_trial_running`,
//! `bbrkit_trial_end_timestamp_seconds`, `bbrkit_trial_look_timestamp_seconds`
//! and `bbrkit_trial_drawn_total` (the program's draws per arm).
//!
//! Cardinality per trial and host, with G groups besides `all` (`--groups`,
//! 10 by default): 33 series per group (connections 2, open 2, bytes 2,
//! goodput 6, retransmits 2, RTT inflation 2, units 2, effect 5, verdict 5,
//! trusted 1, guardrails 4) and at most 11 per trial (split share 2, split
//! weight 2, draws 2, running, end, look, sample-ratio p-value and
//! mismatch; a group without an effect or a rate has fewer): at most
//! 33 (G + 1) + 11 series, 374 at the default — checked by a test.

use bbrkit_diag::prom::{Exposition, MetricType};
use statrs::distribution::{ContinuousCDF, Normal};

use crate::TrialError;
use crate::definition::ARM_NAMES;
use crate::describe::ArmSummary;
use crate::report::{GroupReport, Report};
use crate::verdict::Verdict;

use MetricType::{Counter, Gauge};

/// The textfile of `report` with `all` and at most `max_groups` groups
/// (those with the most connections).
/// Named by [`default_name`].
pub fn textfile(report: &Report, max_groups: usize) -> Result<String, TrialError> {
    textfile_with(report, max_groups, None)
}

/// The name a trial gets when it is given none: its arms, `cubic-vs-bbr`
/// (`bbrkit trial --name` overrides it).
pub fn default_name(report: &Report) -> String {
    format!("{}-vs-{}", report.split[0].cc, report.split[1].cc)
}

/// Whether `text` can name a trial: a Prometheus label value, a file name
/// and a systemd instance (`bbrkit-trial@NAME`) alike, 1 to 64 of
/// `A-Z a-z 0-9 _ . -`, not starting with `.` or `-`. The error is the
/// sentence a user reads.
pub fn check_name(text: &str) -> Result<(), String> {
    let ok = (1..=64).contains(&text.len())
        && !text.starts_with(['.', '-'])
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'));
    if ok {
        Ok(())
    } else {
        Err(format!(
            "'{text}' is not a trial name: 1 to 64 letters, digits, '_', '.' or '-', \
             not starting with '.' or '-'"
        ))
    }
}

/// What the textfile says besides the report: the trial's name and, for a
/// live trial, its status and the program's draws.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Export<'a> {
    /// The trial's name: the `trial` label of every series.
    pub name: &'a str,
    /// Groups written besides `all` (those with the most connections).
    pub max_groups: usize,
    /// A live trial's status.
    pub live: Option<&'a LiveStatus>,
    /// Connections the program drew into A and B (at a guardrail's cut,
    /// the draws at the cut: those the comparison holds).
    pub drawn: Option<[u64; 2]>,
    /// When the report was made (a look or the end), Unix seconds: a
    /// running trial whose look is old has died without saying so.
    pub look_unix_s: Option<f64>,
}

/// The standard error of the log ratio that `ci_low`/`ci_high` imply: the
/// interval read as symmetric on the log scale at `confidence`,
/// `(ln hi − ln lo) / (2 z)`, z = Φ⁻¹((1 + confidence)/2) (1.96 at 95 %).
/// The bootstrap percentile interval need not be symmetric; its width is
/// what the host measured (a fleet pools the widths, not the shapes). An
/// anytime interval (sequential mode) is wider than a fixed-horizon one,
/// so its SE is conservative: such a host weighs less in a fleet's pool.
pub fn log_se(ci_low: f64, ci_high: f64, confidence: f64) -> Option<f64> {
    let z = Normal::standard().inverse_cdf(0.5 + confidence / 2.0);
    let se = (ci_high.ln() - ci_low.ln()) / (2.0 * z);
    (se.is_finite() && se >= 0.0).then_some(se)
}

/// What a live trial adds to its textfile: the split's shares now (after
/// a guardrail's cut, the stopped arm's is 0), and whether the trial still
/// runs, so a textfile left behind does not look live.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LiveStatus {
    /// The shares new connections are drawn with now, A then B.
    pub shares: [f64; 2],
    /// The trial is running (a look), not finished or stopped.
    pub running: bool,
    /// When it finished or stopped, Unix seconds (`None` while running).
    pub ended_unix_s: Option<f64>,
}

/// [`textfile`] with a live trial's status: `bbrkit_trial_split_share`
/// from `live.shares`, and `bbrkit_trial_running` (1 running, 0 finished
/// or stopped), `bbrkit_trial_end_timestamp_seconds` once it ended.
/// Named by [`default_name`].
pub fn textfile_with(
    report: &Report,
    max_groups: usize,
    live: Option<&LiveStatus>,
) -> Result<String, TrialError> {
    let name = default_name(report);
    let export = Export {
        name: &name,
        max_groups,
        live,
        drawn: None,
        look_unix_s: None,
    };
    textfile_export(report, &export)
}

/// The textfile of `report` as `export` says: its name on every series.
pub fn textfile_export(report: &Report, export: &Export) -> Result<String, TrialError> {
    let live = export.live;
    let groups: Vec<&GroupReport> = std::iter::once(&report.overall)
        .chain(report.groups.iter().take(export.max_groups))
        .collect();
    let mut w = Writer {
        out: Exposition::new(),
        trial: export.name,
    };
    w.family(
        "bbrkit_trial_split_share",
        Gauge,
        "Share of new connections each arm is assigned (0..1).",
    )?;
    for (i, s) in report.split.iter().enumerate() {
        let share = live.map_or(s.share, |l| l.shares[i]);
        w.sample(&[("arm", s.arm), ("cc", &s.cc)], share)?;
    }
    w.family(
        "bbrkit_trial_split_weight",
        Gauge,
        "Weight of each arm in the trial's definition (a guardrail's cut does not change it).",
    )?;
    for s in &report.split {
        w.sample(&[("arm", s.arm), ("cc", &s.cc)], f64::from(s.weight))?;
    }
    if let Some(drawn) = export.drawn {
        w.family(
            "bbrkit_trial_drawn_total",
            Counter,
            "Connections the program drew into each arm (at a guardrail's cut: the draws then).",
        )?;
        for (s, n) in report.split.iter().zip(drawn) {
            w.sample(&[("arm", s.arm), ("cc", &s.cc)], n as f64)?;
        }
    }
    if let Some(t) = export.look_unix_s {
        w.family(
            "bbrkit_trial_look_timestamp_seconds",
            Gauge,
            "When the numbers were computed (a look or the end), Unix time.",
        )?;
        w.sample(&[], t)?;
    }
    if let Some(l) = live {
        w.family(
            "bbrkit_trial_running",
            Gauge,
            "1 while the trial runs, 0 once it finished or stopped (the program is detached).",
        )?;
        w.sample(&[], f64::from(u8::from(l.running)))?;
        if let Some(t) = l.ended_unix_s {
            w.family(
                "bbrkit_trial_end_timestamp_seconds",
                Gauge,
                "When the trial finished or stopped, Unix time.",
            )?;
            w.sample(&[], t)?;
        }
    }
    per_arm(
        &mut w,
        &groups,
        "bbrkit_trial_connections_total",
        Counter,
        "Connections closed during the trial.",
        |a| Some(a.connections as f64),
    )?;
    w.family(
        "bbrkit_trial_units",
        Gauge,
        "Units of randomization (label unit) among each arm's closed connections: what the sample-ratio check counts.",
    )?;
    for g in &groups {
        for a in &g.arms {
            let labels = [
                ("group", g.group.as_str()),
                ("arm", a.arm),
                ("cc", &a.cc),
                ("unit", report.unit.as_str()),
            ];
            w.sample(&labels, a.units as f64)?;
        }
    }
    w.family(
        "bbrkit_trial_open_connections",
        Gauge,
        "Connections still open, reported apart.",
    )?;
    for g in &groups {
        for (i, o) in g.open.iter().enumerate() {
            w.sample(
                &[("group", &g.group), ("arm", o.arm), ("cc", &g.arms[i].cc)],
                o.connections as f64,
            )?;
        }
    }
    per_arm(
        &mut w,
        &groups,
        "bbrkit_trial_bytes_acked_total",
        Counter,
        "Payload bytes acknowledged on closed connections.",
        |a| Some(a.bytes_acked as f64),
    )?;
    goodput(&mut w, &groups)?;
    per_arm(
        &mut w,
        &groups,
        "bbrkit_trial_retransmit_ratio",
        Gauge,
        "Retransmitted over sent segments, closed connections pooled.",
        |a| a.retransmit_rate,
    )?;
    per_arm(
        &mut w,
        &groups,
        "bbrkit_trial_rtt_inflation_ratio",
        Gauge,
        "Median smoothed over minimum RTT per connection.",
        |a| a.rtt_inflation.map(|s| s.median),
    )?;
    effect(&mut w, &groups, report.confidence)?;
    verdicts(&mut w, &groups)?;
    trust(&mut w, report, &groups)?;
    guardrails(&mut w, &groups)?;
    Ok(w.out.finish())
}

/// The exposition writer with errors as [`TrialError`], the trial's name
/// first on every sample.
struct Writer<'a> {
    out: Exposition,
    trial: &'a str,
}

impl Writer<'_> {
    fn family(&mut self, name: &str, kind: MetricType, help: &str) -> Result<(), TrialError> {
        self.out
            .family(name, kind, help)
            .map_err(TrialError::Exposition)
    }

    fn sample(&mut self, labels: &[(&str, &str)], value: f64) -> Result<(), TrialError> {
        let mut all = Vec::with_capacity(labels.len() + 1);
        all.push(("trial", self.trial));
        all.extend_from_slice(labels);
        self.out.sample(&all, value).map_err(TrialError::Exposition)
    }
}

fn per_arm(
    w: &mut Writer<'_>,
    groups: &[&GroupReport],
    name: &str,
    kind: MetricType,
    help: &str,
    value: impl Fn(&ArmSummary) -> Option<f64>,
) -> Result<(), TrialError> {
    w.family(name, kind, help)?;
    for g in groups {
        for a in &g.arms {
            if let Some(v) = value(a) {
                w.sample(&[("group", &g.group), ("arm", a.arm), ("cc", &a.cc)], v)?;
            }
        }
    }
    Ok(())
}

fn goodput(w: &mut Writer, groups: &[&GroupReport]) -> Result<(), TrialError> {
    w.family(
        "bbrkit_trial_goodput_bytes_per_second",
        Gauge,
        "Goodput of closed connections over their busy time: p10, median, p90 across connections.",
    )?;
    for g in groups {
        for a in &g.arms {
            let Some(s) = &a.goodput_bits_per_second else {
                continue;
            };
            for (stat, bits) in [("p10", s.p10), ("median", s.median), ("p90", s.p90)] {
                let labels = [
                    ("group", g.group.as_str()),
                    ("arm", a.arm),
                    ("cc", &a.cc),
                    ("stat", stat),
                ];
                w.sample(&labels, bits / 8.0)?;
            }
        }
    }
    Ok(())
}

fn effect(w: &mut Writer, groups: &[&GroupReport], confidence: f64) -> Result<(), TrialError> {
    let families = [
        (
            "bbrkit_trial_effect_ratio",
            "Size-stratified ratio of median goodputs, B over A.",
        ),
        (
            "bbrkit_trial_effect_ratio_ci_low",
            "Low end of the effect's interval (the report's mode).",
        ),
        (
            "bbrkit_trial_effect_ratio_ci_high",
            "High end of the effect's interval (the report's mode).",
        ),
    ];
    for (i, (name, help)) in families.into_iter().enumerate() {
        w.family(name, Gauge, help)?;
        for g in groups {
            if let Some(e) = &g.effect {
                w.sample(&[("group", &g.group)], [e.ratio, e.ci_low, e.ci_high][i])?;
            }
        }
    }
    w.family(
        "bbrkit_trial_effect_log_ratio",
        Gauge,
        "Natural log of the effect ratio: the host's effect for a fleet's meta-analysis.",
    )?;
    for g in groups {
        if let Some(e) = g.effect.as_ref().filter(|e| e.ratio > 0.0) {
            w.sample(&[("group", &g.group)], e.ratio.ln())?;
        }
    }
    w.family(
        "bbrkit_trial_effect_log_se",
        Gauge,
        "Standard error of the log ratio: (ln ci_high - ln ci_low) / (2 z), z = 1.96 at 95 %.",
    )?;
    for g in groups {
        let se = g
            .effect
            .as_ref()
            .and_then(|e| log_se(e.ci_low, e.ci_high, confidence));
        if let Some(se) = se {
            w.sample(&[("group", &g.group)], se)?;
        }
    }
    Ok(())
}

fn verdicts(w: &mut Writer, groups: &[&GroupReport]) -> Result<(), TrialError> {
    w.family(
        "bbrkit_trial_verdict",
        Gauge,
        "1 for the group's current verdict, 0 for the others.",
    )?;
    for g in groups {
        for v in Verdict::ALL {
            w.sample(
                &[("group", &g.group), ("verdict", v.as_str())],
                f64::from(u8::from(g.verdict == v)),
            )?;
        }
    }
    Ok(())
}

fn trust(w: &mut Writer, report: &Report, groups: &[&GroupReport]) -> Result<(), TrialError> {
    w.family("bbrkit_trial_trusted", Gauge, "1 when no sign of a broken assignment or recording, 0 when the comparison must not be acted on.")?;
    for g in groups {
        w.sample(&[("group", &g.group)], f64::from(u8::from(g.trusted)))?;
    }
    if let Some(s) = &report.sample_ratio {
        w.family(
            "bbrkit_trial_sample_ratio_p_value",
            Gauge,
            "Chi-square p-value of the arms' unit counts against the split.",
        )?;
        w.sample(&[], s.p_value)?;
        w.family(
            "bbrkit_trial_sample_ratio_mismatch",
            Gauge,
            "1 when the arms' counts do not fit the split (p below the trial's alpha).",
        )?;
        w.sample(&[], f64::from(u8::from(s.mismatch)))?;
    }
    Ok(())
}

fn guardrails(w: &mut Writer, groups: &[&GroupReport]) -> Result<(), TrialError> {
    w.family(
        "bbrkit_trial_guardrail_tripped",
        Gauge,
        "1 when the arm is worse than the other on the metric beyond its bound, with confidence.",
    )?;
    for g in groups {
        for c in &g.guardrails {
            for arm in ARM_NAMES {
                let v = f64::from(u8::from(c.tripped == Some(arm)));
                w.sample(
                    &[
                        ("group", &g.group),
                        ("metric", c.metric.as_str()),
                        ("arm", arm),
                    ],
                    v,
                )?;
            }
        }
    }
    Ok(())
}
