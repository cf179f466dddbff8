//! Human-readable tables for `bbrkit sim`.

use std::fmt::Write;

use super::Document;

pub use crate::units::{bytes, pct, rate};

fn rtt(p: Option<bbrkit_sim::Percentiles>) -> String {
    p.map(|p| format!("{:.1}/{:.1}/{:.1}", p.p50, p.p95, p.p99))
        .unwrap_or_else(|| "-".into())
}

fn header(doc: &Document) -> String {
    let p = &doc.path;
    let burst = if p.loss_burst_packets > 1.0 {
        format!(", loss bursts of {} packets", p.loss_burst_packets)
    } else {
        String::new()
    };
    let ecn = p
        .ecn_threshold_bytes
        .map(|b| format!(", ECN CE above {}", bytes(b)))
        .unwrap_or_default();
    format!(
        "{} bottleneck, RTT {} ms, buffer {}{}, {} s simulated, seed {}{}{}",
        rate(p.bits_per_second as f64),
        p.rtt_ms,
        bytes(p.buffer_bytes),
        ecn,
        p.duration_s,
        p.seed,
        burst,
        if p.pace_loss_based {
            ", Reno/CUBIC paced"
        } else {
            ""
        }
    )
}

/// Flow-completion time in seconds, `-` for bulk flows and flows that did
/// not finish within the run.
fn fct(t: Option<f64>) -> String {
    t.map(|t| format!("{t:.3}")).unwrap_or_else(|| "-".into())
}

/// Lays out rows as left-aligned columns separated by two spaces.
pub fn columns(rows: &[Vec<String>]) -> String {
    let n = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..n)
        .map(|i| {
            rows.iter()
                .filter_map(|r| r.get(i))
                .map(|c| c.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for r in rows {
        let mut line = String::new();
        for (i, c) in r.iter().enumerate() {
            let pad = widths[i] - c.chars().count();
            line.push_str(c);
            if i + 1 < r.len() {
                line.push_str(&" ".repeat(pad + 2));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// Each algorithm alone on each condition, like the seed's table.
pub fn alone(doc: &Document) -> String {
    let mut out = format!("bbrkit sim: {}\n\n", header(doc));
    let first = doc
        .runs
        .first()
        .and_then(|r| r.report.flows.first())
        .map(|f| f.cc)
        .unwrap_or("-");
    let mut rows = vec![vec![
        "loss".to_string(),
        "cc".into(),
        "goodput".into(),
        format!("vs {first}"),
        "retrans".into(),
        "lost".into(),
        "rtt p50/p95/p99 ms".into(),
        "queue p50 ms".into(),
        "link util".into(),
    ]];
    // Finite flows (--size) also get their completion time.
    let finite = doc
        .runs
        .iter()
        .flat_map(|r| &r.report.flows)
        .any(|f| f.size_bytes.is_some());
    if finite {
        rows[0].push("fct s".into());
    }
    let mut last_loss = None;
    for run in &doc.runs {
        for f in &run.report.flows {
            let loss = if last_loss == Some(run.loss) {
                String::new()
            } else {
                pct(run.loss)
            };
            last_loss = Some(run.loss);
            rows.push(vec![
                loss,
                f.cc.to_string(),
                rate(f.bits_per_second),
                f.ratio
                    .map(|r| format!("{r:.2}x"))
                    .unwrap_or_else(|| "-".into()),
                f.retransmits.to_string(),
                pct(f.loss),
                rtt(f.rtt_ms),
                run.report
                    .link
                    .queue_delay_ms
                    .map(|q| format!("{:.1}", q.p50))
                    .unwrap_or_else(|| "-".into()),
                pct(run.report.link.utilization),
            ]);
            if finite {
                rows.last_mut().expect("just pushed").push(fct(f.fct_s));
            }
        }
    }
    out.push_str(&columns(&rows));
    out
}

/// All flows together on each condition, with shares and Jain's index.
pub fn compete(doc: &Document) -> String {
    let mut out = format!("bbrkit sim --compete: {}\n", header(doc));
    for run in &doc.runs {
        let l = &run.report.link;
        let _ = writeln!(
            out,
            "\nloss {}: link utilization {}, queue delay p50 {} ms, Jain's fairness index {:.3}",
            pct(run.loss),
            pct(l.utilization),
            l.queue_delay_ms
                .map(|q| format!("{:.1}", q.p50))
                .unwrap_or_else(|| "-".into()),
            run.report.jain_index
        );
        let mut rows = vec![vec![
            "flow".to_string(),
            "cc".into(),
            "start s".into(),
            "goodput".into(),
            "share".into(),
            "retrans".into(),
            "lost".into(),
            "rtt p50/p95/p99 ms".into(),
            "fct s".into(),
        ]];
        for f in &run.report.flows {
            rows.push(vec![
                f.flow.to_string(),
                f.cc.to_string(),
                format!("{:.1}", f.start_s),
                rate(f.bits_per_second),
                pct(f.share),
                f.retransmits.to_string(),
                pct(f.loss),
                rtt(f.rtt_ms),
                fct(f.fct_s),
            ]);
        }
        for line in columns(&rows).lines() {
            let _ = writeln!(out, "  {line}");
        }
    }
    out
}
