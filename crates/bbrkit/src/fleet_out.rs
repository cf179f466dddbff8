//! Rendering of `bbrkit fleet report`: the human table and the forest plot
//! (`--plot`, SVG: per group, one row per host with its interval, the
//! pooled diamond and a new host's interval below it, on a log axis).
//!
//! Owns presentation only: every number and word is the report's
//! (`bbrkit-fleet`).

use std::fmt::Write as _;

use anyhow::anyhow;
use bbrkit_fleet::report::{FleetReport, GroupReport, HostRow};
use plotters::prelude::*;

/// A ratio with three significant digits, `-` when absent.
fn ratio(r: Option<f64>) -> String {
    match r {
        Some(r) if r >= 100.0 => format!("{r:.0}x"),
        Some(r) if r >= 10.0 => format!("{r:.1}x"),
        Some(r) => format!("{r:.2}x"),
        None => "-".into(),
    }
}

fn interval(lo: Option<f64>, hi: Option<f64>) -> String {
    match (lo, hi) {
        (Some(lo), Some(hi)) => format!("[{lo:.2}, {hi:.2}]"),
        _ => "-".into(),
    }
}

/// The table: a line per group, then each group's hosts.
pub fn table(r: &FleetReport) -> String {
    let mut out = String::new();
    let arms = r.arms.as_ref().map_or(String::new(), |a| {
        format!(" (A {}, B {}: B/A is {} over {})", a.a, a.b, a.b, a.a)
    });
    let _ = writeln!(
        out,
        "bbrkit fleet report: trial {}{} at {:.0}, {} host(s) exporting it, {} stale, {} missing",
        r.trial,
        arms,
        r.at_s,
        r.hosts,
        r.stale.len(),
        r.missing.len()
    );
    let _ = writeln!(
        out,
        "{:<20} {:<17} {:>7}  {:<14} {:<14} {:>7} {:>4} {:>5}  disagree",
        "group", "verdict", "B/A", "95% interval", "new host", "tau2", "I2", "hosts"
    );
    let groups: Vec<&GroupReport> = std::iter::once(&r.overall).chain(&r.groups).collect();
    for g in &groups {
        let e = g.effect.as_ref();
        let h = g.heterogeneity.as_ref();
        let verdict = if g.trusted {
            g.verdict.as_str().to_string()
        } else {
            format!("{} (untrusted)", g.verdict.as_str())
        };
        let _ = writeln!(
            out,
            "{:<20} {:<17} {:>7}  {:<14} {:<14} {:>7} {:>4} {:>5}  {}",
            g.group,
            verdict,
            ratio(e.map(|e| e.ratio)),
            interval(e.map(|e| e.ci_low), e.map(|e| e.ci_high)),
            interval(
                e.and_then(|e| e.prediction_low),
                e.and_then(|e| e.prediction_high)
            ),
            h.map_or("-".into(), |h| format!("{:.4}", h.tau2)),
            h.map_or("-".into(), |h| format!("{:.0}%", h.i2 * 100.0)),
            format!("{}/{}", g.k, g.hosts.len()),
            if g.disagreeing.is_empty() {
                "-".into()
            } else {
                g.disagreeing.join(" ")
            }
        );
    }
    for g in &groups {
        let _ = writeln!(out, "\n{}: {}", g.group, g.reason);
        if let Some(s) = &g.sample_ratio {
            let _ = writeln!(
                out,
                "  sample ratio: {} {} / {} over {} host(s), p = {:.3}{}",
                s.test.counted,
                s.test.observed[0],
                s.test.observed[1],
                s.hosts,
                s.test.p_value,
                if s.test.mismatch {
                    " < alpha: MISMATCH"
                } else {
                    ""
                }
            );
        }
        let _ = writeln!(
            out,
            "  {:<24} {:>7}  {:<14} {:>11} {:>8}  note",
            "host", "B/A", "interval", "connections", "residual"
        );
        for h in &g.hosts {
            let note = match (&h.note, h.disagrees) {
                (Some(n), _) => n.clone(),
                (None, true) => "disagrees with the other hosts".into(),
                (None, false) => String::new(),
            };
            let _ = writeln!(
                out,
                "  {:<24} {:>7}  {:<14} {:>11} {:>8}  {}",
                h.instance,
                ratio(h.ratio),
                interval(h.ci_low, h.ci_high),
                h.connections,
                h.residual.map_or("-".into(), |z| format!("{z:+.2}")),
                note
            );
        }
    }
    out
}

fn err(e: impl std::fmt::Display) -> anyhow::Error {
    anyhow!("plot: {e}")
}

/// Pixels per row of a panel, and a panel's fixed part (caption, axis).
const ROW_PX: u32 = 22;
const PANEL_EXTRA_PX: u32 = 90;

/// The forest plot: one panel per group (overall first).
pub fn forest(r: &FleetReport) -> anyhow::Result<String> {
    let groups: Vec<&GroupReport> = std::iter::once(&r.overall).chain(&r.groups).collect();
    let rows = |g: &GroupReport| g.hosts.len() as u32 + 2;
    let heights: Vec<u32> = groups
        .iter()
        .map(|g| rows(g) * ROW_PX + PANEL_EXTRA_PX)
        .collect();
    let mut svg = String::new();
    {
        let total: u32 = heights.iter().sum();
        let root = SVGBackend::with_string(&mut svg, (900, total.max(1))).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let mut rest = root;
        for (g, h) in groups.iter().zip(&heights) {
            let (area, below) = rest.split_vertically(*h);
            panel(&area, r, g)?;
            rest = below;
        }
    }
    Ok(svg)
}

/// The x range: every host's and the pool's intervals, around 1.
fn x_range(g: &GroupReport) -> (f64, f64) {
    let mut lo = 1.0f64;
    let mut hi = 1.0f64;
    let mut see = |v: Option<f64>| {
        if let Some(v) = v.filter(|v| v.is_finite() && *v > 0.0) {
            lo = lo.min(v);
            hi = hi.max(v);
        }
    };
    for h in &g.hosts {
        see(h.ci_low);
        see(h.ci_high);
        see(h.ratio);
    }
    if let Some(e) = &g.effect {
        for v in [e.ci_low, e.ci_high] {
            see(Some(v));
        }
        see(e.prediction_low);
        see(e.prediction_high);
    }
    (lo / 1.15, hi * 1.15)
}

fn panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    r: &FleetReport,
    g: &GroupReport,
) -> anyhow::Result<()> {
    let n = g.hosts.len() as f64 + 2.0;
    let (lo, hi) = x_range(g);
    let caption = format!(
        "{} / {}: {}{}",
        r.trial,
        g.group,
        g.verdict.as_str(),
        g.heterogeneity.as_ref().map_or(String::new(), |h| format!(
            ", tau2 {:.4}, I2 {:.0}%",
            h.tau2,
            h.i2 * 100.0
        ))
    );
    let mut chart = ChartBuilder::on(area)
        .caption(caption, ("sans-serif", 16))
        .margin(10)
        .x_label_area_size(30)
        .y_label_area_size(190)
        .build_cartesian_2d((lo..hi).log_scale(), 0.0..n)
        .map_err(err)?;
    let labels: Vec<String> = g
        .hosts
        .iter()
        .map(host_label)
        .chain(["pooled (95%; line: new host)".to_string()])
        .collect();
    let label_at = move |y: &f64| -> String {
        let i = (n - 1.0 - y).round();
        if (y - y.round()).abs() > 1e-6 || i < 0.0 {
            return String::new();
        }
        labels.get(i as usize).cloned().unwrap_or_default()
    };
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(n as usize + 1)
        .y_label_formatter(&label_at)
        .x_desc("B/A (log scale)")
        .draw()
        .map_err(err)?;
    chart
        .draw_series(LineSeries::new(
            [(1.0, 0.0), (1.0, n)],
            BLACK.mix(0.4).stroke_width(1),
        ))
        .map_err(err)?;
    for (i, h) in g.hosts.iter().enumerate() {
        let y = n - 1.0 - i as f64;
        let colour = if !h.pooled {
            RGBColor(150, 150, 150)
        } else if h.disagrees {
            RGBColor(200, 40, 40)
        } else {
            RGBColor(30, 90, 180)
        };
        if let (Some(a), Some(b)) = (h.ci_low, h.ci_high) {
            chart
                .draw_series(LineSeries::new([(a, y), (b, y)], colour.stroke_width(2)))
                .map_err(err)?;
        }
        if let Some(x) = h.ratio {
            chart
                .draw_series([Rectangle::new(
                    [(x / 1.012, y - 0.2), (x * 1.012, y + 0.2)],
                    colour.filled(),
                )])
                .map_err(err)?;
        }
    }
    if let Some(e) = &g.effect {
        let y = n - 1.0 - g.hosts.len() as f64;
        if let (Some(a), Some(b)) = (e.prediction_low, e.prediction_high) {
            chart
                .draw_series(LineSeries::new([(a, y), (b, y)], BLACK.stroke_width(1)))
                .map_err(err)?;
        }
        chart
            .draw_series([Polygon::new(
                vec![
                    (e.ci_low, y),
                    (e.ratio, y + 0.35),
                    (e.ci_high, y),
                    (e.ratio, y - 0.35),
                ],
                BLACK.filled(),
            )])
            .map_err(err)?;
    }
    Ok(())
}

fn host_label(h: &HostRow) -> String {
    let mark = match (&h.note, h.disagrees) {
        (Some(_), _) if h.stale => " (stale)",
        (Some(_), _) => " (not pooled)",
        (None, true) => " (disagrees)",
        (None, false) => "",
    };
    format!("{}{mark}", h.instance)
}
