//! The Prometheus textfile of a trial for node_exporter's textfile
//! collector: low cardinality — per group (at most `max_groups` of them,
//! plus `all`) and arm, never per connection. Written with the one
//! exposition writer (`bbrkit_diag::prom`), which checks names and labels.
//!
//! Families (labels `group`, and `arm` + `cc` where per arm):
//! `bbrkit_trial_split_share`, `bbrkit_trial_connections_total`,
//! `bbrkit_trial_open_connections`, `bbrkit_trial_bytes_acked_total`,
//! `bbrkit_trial_goodput_bytes_per_second` (`stat` p10/median/p90, the
//! JSON keys; `quantile` is reserved for summaries, and Prometheus' base
//! unit is bytes, as in `bbrkit metrics`),
//! `bbrkit_trial_retransmit_ratio`, `bbrkit_trial_rtt_inflation_ratio`
//! (median), `bbrkit_trial_effect_ratio` and its `_ci_low`/`_ci_high`,
//! `bbrkit_trial_verdict` (`verdict`, 1 for the current one),
//! `bbrkit_trial_trusted`, `bbrkit_trial_sample_ratio_p_value`,
//! `bbrkit_trial_sample_ratio_mismatch`, `bbrkit_trial_guardrail_tripped`
//! (`metric`, `arm`).

use bbrkit_diag::prom::{Exposition, MetricType};

use crate::TrialError;
use crate::definition::ARM_NAMES;
use crate::describe::ArmSummary;
use crate::report::{GroupReport, Report};
use crate::verdict::Verdict;

use MetricType::{Counter, Gauge};

/// The textfile of `report` with `all` and at most `max_groups` groups
/// (those with the most connections).
pub fn textfile(report: &Report, max_groups: usize) -> Result<String, TrialError> {
    textfile_with(report, max_groups, None)
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
pub fn textfile_with(
    report: &Report,
    max_groups: usize,
    live: Option<&LiveStatus>,
) -> Result<String, TrialError> {
    let groups: Vec<&GroupReport> = std::iter::once(&report.overall)
        .chain(report.groups.iter().take(max_groups))
        .collect();
    let mut w = Writer(Exposition::new());
    w.family(
        "bbrkit_trial_split_share",
        Gauge,
        "Share of new connections each arm is assigned (0..1).",
    )?;
    for (i, s) in report.split.iter().enumerate() {
        let share = live.map_or(s.share, |l| l.shares[i]);
        w.sample(&[("arm", s.arm), ("cc", &s.cc)], share)?;
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
    effect(&mut w, &groups)?;
    verdicts(&mut w, &groups)?;
    trust(&mut w, report, &groups)?;
    guardrails(&mut w, &groups)?;
    Ok(w.0.finish())
}

/// The exposition writer with errors as [`TrialError`].
struct Writer(Exposition);

impl Writer {
    fn family(&mut self, name: &str, kind: MetricType, help: &str) -> Result<(), TrialError> {
        self.0
            .family(name, kind, help)
            .map_err(TrialError::Exposition)
    }

    fn sample(&mut self, labels: &[(&str, &str)], value: f64) -> Result<(), TrialError> {
        self.0.sample(labels, value).map_err(TrialError::Exposition)
    }
}

fn per_arm(
    w: &mut Writer,
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

fn effect(w: &mut Writer, groups: &[&GroupReport]) -> Result<(), TrialError> {
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
