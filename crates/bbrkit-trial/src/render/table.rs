//! The human table: a header (split, unit, intervals, records, sample
//! ratio, trust), then all connections and each group with the arms side
//! by side, the effect with its interval and per size class, the verdict
//! with the numbers behind it, guardrails and connections still open; the
//! guardrail decisions last.

use std::fmt::Write as _;

use crate::describe::{ArmSummary, OpenSummary, Spread};
use crate::effect::Effect;
use crate::guardrail::{GuardrailCheck, Metric};
use crate::report::{GroupReport, Report};
use crate::srm::SampleRatio;
use crate::words::{SizeClass, bytes, pct, rate};

use super::{interval_name, ratio, ratio_interval};

/// The table of `report`, with at most `max_groups` groups after `all`.
pub fn table(report: &Report, max_groups: usize) -> String {
    let mut out = header(report);
    out.push('\n');
    out += &group(report, &report.overall);
    for g in report.groups.iter().take(max_groups) {
        out.push('\n');
        out += &group(report, g);
    }
    if report.groups.len() > max_groups {
        let _ = writeln!(
            out,
            "\n({} more groups with fewer connections: --json has them all)",
            report.groups.len() - max_groups
        );
    }
    out.push('\n');
    out += &decisions(report);
    out
}

fn header(r: &Report) -> String {
    let [a, b] = &r.split;
    let groups = match r.group_by {
        crate::Grouping::Prefix => format!("remote /{} and /{} prefixes", r.prefix_v4, r.prefix_v6),
        crate::Grouping::Rule => "policy rules".into(),
    };
    let mut s = format!(
        "trial: A {} ({}) against B {} ({}), unit {}, groups by {groups}\n",
        a.cc,
        pct(a.share),
        b.cc,
        pct(b.share),
        r.unit.as_str()
    );
    let _ = writeln!(s, "  unit: {}", r.unit_meaning);
    let _ = writeln!(
        s,
        "  {}: ratio of median goodputs B/A per size class, combined by bytes acked; bootstrap over {} ({} resamples, seed {}); equivalence margin ±{}",
        interval_name(r.confidence, r.mode),
        r.unit.plural(),
        r.resamples,
        r.seed,
        pct(r.equivalence_margin)
    );
    let c = &r.records;
    let _ = write!(
        s,
        "records: {} closed, {} open at the end (apart), {} outside the trial",
        c.closed, c.open, c.outside
    );
    if let Some(d) = r.duration_s {
        let _ = write!(s, ", over {d:.0} s");
    }
    s.push('\n');
    let [na, nb] = c.no_busy_time;
    if na + nb > 0 {
        let _ = writeln!(
            s,
            "  no busy time: A {na} / B {nb} closed connections acked data with no busy time \
             in the kernel: no goodput, left out of the goodput comparison"
        );
    }
    if let Some(e) = &r.estimand {
        let _ = writeln!(
            s,
            "estimand: {}",
            estimand_line(e, r.stop_rule.min_duration_s)
        );
    }
    if let Some(c) = &r.cohort {
        let _ = writeln!(
            s,
            "cohort: A {} / B {} closed connections established before the cut compared; \
             A {} / B {} established later wait for a later look",
            c.closed[0], c.closed[1], c.later[0], c.later[1]
        );
    }
    let sr = &r.stop_rule;
    let _ = writeln!(
        s,
        "stop rule: a decided verdict stops --until-confident after {} units per arm and {:.0} s (now A {} / B {}: {})",
        sr.min_units_per_arm,
        sr.min_duration_s,
        sr.units[0],
        sr.units[1],
        if sr.met { "met" } else { "not yet" }
    );
    let _ = writeln!(s, "sample ratio: {}", srm_line(r.sample_ratio.as_ref()));
    if r.trusted {
        s += "trusted: yes\n";
    } else {
        let _ = writeln!(s, "trusted: NO: {}", r.untrusted_because.join("; "));
    }
    s
}

/// The size classes and weights the effect combines, and since when.
pub(crate) fn estimand_line(e: &crate::Estimand, freeze_s: f64) -> String {
    let classes: Vec<String> = e
        .classes
        .iter()
        .zip(&e.weights)
        .map(|(c, w)| format!("{} {}", c.label(), pct(*w)))
        .collect();
    let when = match (e.source, e.fixed_at_s) {
        (crate::EstimandSource::Frozen, Some(s)) => format!("frozen at the look at {s:.0} s"),
        (crate::EstimandSource::Frozen, None) => "frozen at an earlier look".into(),
        (crate::EstimandSource::ThisLook, _) => format!(
            "this report's own (a live trial freezes it at its first look after {freeze_s:.0} s)"
        ),
    };
    format!(
        "B/A over {} (size class, weight by bytes acked): {when}",
        classes.join(", ")
    )
}

fn srm_line(s: Option<&SampleRatio>) -> String {
    match s {
        None => "too few units to check".into(),
        Some(s) => format!(
            "A {} / B {} {}, expected {:.0} / {:.0}: p = {} {}",
            s.observed[0],
            s.observed[1],
            s.counted,
            s.expected[0],
            s.expected[1],
            p_value(s.p_value),
            if s.mismatch {
                "MISMATCH: the assignment or the recording is broken"
            } else {
                "ok"
            }
        ),
    }
}

fn p_value(p: f64) -> String {
    if p < 0.001 {
        format!("{p:.1e}")
    } else {
        format!("{p:.3}")
    }
}

/// Rows of (label, A, B), padded into columns.
struct Rows(Vec<[String; 3]>);

impl Rows {
    fn add(&mut self, label: &str, a: String, b: String) {
        self.0.push([label.into(), a, b]);
    }

    fn render(&self, indent: &str) -> String {
        let w0 = self.0.iter().map(|r| r[0].len()).max().unwrap_or(0);
        let w1 = self
            .0
            .iter()
            .map(|r| r[1].chars().count())
            .max()
            .unwrap_or(0);
        let mut s = String::new();
        for [l, a, b] in &self.0 {
            let pad = w1 - a.chars().count();
            let _ = writeln!(s, "{indent}{l:<w0$}  {a}{}  {b}", " ".repeat(pad));
        }
        s
    }
}

fn group(r: &Report, g: &GroupReport) -> String {
    let n = g.arms[0].connections + g.arms[1].connections;
    let trust = if g.trusted { "" } else { ", UNTRUSTED" };
    let mut s = format!(
        "{}: {} ({n} connections{trust})\n",
        g.group,
        g.verdict.as_str()
    );
    let [a, b] = &g.arms;
    let mut rows = Rows(Vec::new());
    rows.add("", format!("A {}", a.cc), format!("B {}", b.cc));
    arm_rows(&mut rows, a, b);
    s += &rows.render("  ");
    if let Some(e) = &g.effect {
        s += &effect_lines(r, e);
    }
    let _ = writeln!(s, "  verdict: {}: {}", g.verdict.as_str(), g.reason);
    if let Some(sr) = g.sample_ratio.as_ref().filter(|_| g.group != "all") {
        let _ = writeln!(s, "  sample ratio: {}", srm_line(Some(sr)));
    }
    if !g.guardrails.is_empty() {
        let checks: Vec<String> = g.guardrails.iter().map(guardrail).collect();
        let _ = writeln!(s, "  guardrails: {}", checks.join("; "));
    }
    if g.open.iter().any(|o| o.connections > 0) {
        let _ = writeln!(
            s,
            "  open at the end (not above): {}, {}",
            open(&g.open[0]),
            open(&g.open[1])
        );
    }
    s
}

fn arm_rows(rows: &mut Rows, a: &ArmSummary, b: &ArmSummary) {
    let both = |f: &dyn Fn(&ArmSummary) -> String| (f(a), f(b));
    let mut add = |label: &str, (x, y): (String, String)| rows.add(label, x, y);
    add("connections", both(&|s| s.connections.to_string()));
    if a.units != a.connections || b.units != b.connections {
        add("units", both(&|s| s.units.to_string()));
    }
    if a.other_cc + b.other_cc > 0 {
        add("ran another cc", both(&|s| s.other_cc.to_string()));
    }
    add("bytes acked", both(&|s| bytes(s.bytes_acked)));
    let g = |f: fn(&Spread) -> f64| {
        move |s: &ArmSummary| opt(s.goodput_bits_per_second.as_ref().map(|x| rate(f(x))))
    };
    add("goodput p10", both(&g(|x| x.p10)));
    add("goodput median", both(&g(|x| x.median)));
    add("goodput p90", both(&g(|x| x.p90)));
    add(
        "retransmit rate",
        both(&|s| opt(s.retransmit_rate.map(pct))),
    );
    add(
        "rtt inflation median",
        both(&|s| opt(s.rtt_inflation.map(|x| format!("{:.2}", x.median)))),
    );
    add(
        "limited rwnd/sndbuf/app",
        both(&|s| {
            opt(s
                .limited
                .map(|l| format!("{} / {} / {}", pct(l.rwnd), pct(l.sndbuf), pct(l.app))))
        }),
    );
    for class in SizeClass::ALL {
        let cell = |s: &ArmSummary| {
            s.classes
                .iter()
                .find(|c| c.class == class)
                .map_or("-".into(), |c| {
                    format!(
                        "{}: {:.0} / {:.0} / {:.0} ms",
                        c.connections, c.fct_ms.p50, c.fct_ms.p90, c.fct_ms.p99
                    )
                })
        };
        add(&format!("fct {} p50/p90/p99", class.label()), both(&cell));
    }
}

fn opt(s: Option<String>) -> String {
    s.unwrap_or_else(|| "-".into())
}

fn effect_lines(r: &Report, e: &Effect) -> String {
    let over: Vec<String> = e
        .classes
        .iter()
        .filter(|c| c.weight > 0.0)
        .map(|c| format!("{} {}", c.class.label(), pct(c.weight)))
        .collect();
    let mut s = format!(
        "  effect B/A: {} ({} over {}; all sizes pooled: {})\n",
        ratio_interval(e.ratio, e.ci_low, e.ci_high),
        interval_name(r.confidence, e.interval),
        over.join(", "),
        ratio(e.pooled_ratio)
    );
    for c in &e.classes {
        let what = match (c.ratio, c.ci_low, c.ci_high) {
            (Some(x), Some(lo), Some(hi)) => ratio_interval(x, lo, hi),
            _ => "too few to compare".into(),
        };
        let _ = writeln!(
            s,
            "    {:<12} {what} ({} / {} connections)",
            c.class.label(),
            c.connections[0],
            c.connections[1]
        );
    }
    s
}

fn guardrail(c: &GuardrailCheck) -> String {
    let state = match c.tripped {
        Some(arm) => format!("TRIPPED by {arm}"),
        None => "ok".into(),
    };
    match c.metric {
        Metric::Goodput => format!(
            "goodput {} {state} (bound {})",
            ratio_interval(c.value, c.low, c.high),
            ratio(c.bound)
        ),
        Metric::RetransmitRate => format!(
            "retransmit rate B-A {:+.2} points [{:+.2}, {:+.2}] {state} (bound {:.1} points)",
            c.value * 100.0,
            c.low * 100.0,
            c.high * 100.0,
            c.bound * 100.0
        ),
    }
}

fn open(o: &OpenSummary) -> String {
    format!(
        "{} {} ({} acked)",
        o.arm,
        o.connections,
        bytes(o.bytes_acked)
    )
}

fn decisions(r: &Report) -> String {
    if r.decisions.is_empty() {
        return "guardrail decisions: none\n".into();
    }
    let mut s = String::from("guardrail decisions:\n");
    for d in &r.decisions {
        let _ = writeln!(
            s,
            "  {}: send new connections of {} to {} ({}) instead of {}: {}",
            d.scope,
            d.scope,
            d.send_to,
            d.cc,
            d.stop,
            d.because.join("; ")
        );
    }
    s
}
