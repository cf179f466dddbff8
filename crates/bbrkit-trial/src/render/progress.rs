//! The one-line running estimate a live trial prints while it runs: how
//! many connections closed in each arm, the effect over all connections
//! with its anytime interval (valid however often the line is read), the
//! verdict that interval gives, the sample-ratio check and guardrails.

use crate::report::Report;
use crate::verdict::decide;

use crate::effect::Mode;

use super::ratio_interval;

/// `anytime 95%` (a sequential look), `95%` (fixed horizon): the line
/// prints the report's own interval, the one its table prints.
fn progress_interval(confidence: f64, mode: Mode) -> String {
    match mode {
        Mode::Sequential => format!("anytime {:.0}%", confidence * 100.0),
        Mode::FixedHorizon => format!("{:.0}%", confidence * 100.0),
    }
}

/// The progress line of `report` (no newline).
pub fn progress_line(report: &Report) -> String {
    let o = &report.overall;
    let mut s = String::new();
    if let Some(d) = report.duration_s {
        s += &format!("{d:.0} s: ");
    }
    s += &format!(
        "{} closed (A {} / B {}), {} open, {} groups",
        report.records.closed,
        o.arms[0].connections,
        o.arms[1].connections,
        report.records.open,
        report.groups.len()
    );
    s += &match &o.effect {
        Some(e) => format!(
            " | B/A {} {}: {}",
            ratio_interval(e.ratio, e.ci_low, e.ci_high),
            progress_interval(report.confidence, e.interval),
            decide(e.ci_low, e.ci_high, report.equivalence_margin).as_str()
        ),
        None => format!(" | B/A -: {}", o.reason),
    };
    s += match &report.sample_ratio {
        Some(sr) if sr.mismatch => " | sample ratio MISMATCH",
        Some(_) => " | sample ratio ok",
        None => " | sample ratio -",
    };
    if !report.trusted && !report.sample_ratio.as_ref().is_some_and(|sr| sr.mismatch) {
        s += " | UNTRUSTED";
    }
    if report.decisions.is_empty() {
        s += " | guardrails ok";
    } else {
        for d in &report.decisions {
            s += &format!(" | guardrail: {} {} -> {}", d.scope, d.stop, d.send_to);
        }
    }
    s
}
