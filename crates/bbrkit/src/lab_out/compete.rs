//! The human table of `lab --compete`: per condition, each algorithm's
//! share of the goodput (median, and every run), its goodput, retransmits
//! and the queueing delay its flows saw, with Jain's index over the flows.

use std::fmt::Write;

use bbrkit_lab::compete::CompeteReport;

use super::aligned;
use super::table::{json_name, kind_name};
use crate::units::{pct, rate};

/// Renders the report.
pub fn table(r: &CompeteReport) -> String {
    let mut out = String::new();
    let kind = super::table::common_kind(r.conditions.iter().map(|c| c.emulator), r.emulator);
    let _ = writeln!(
        out,
        "bbrkit lab --compete: kernel {}, {} emulator, {} run(s) x {} s, {} flow(s) per algorithm, algorithm on the {}, seed {}",
        r.kernel,
        kind_name(kind),
        r.runs_per_condition,
        r.path.duration_s,
        r.flows_per_algorithm,
        json_name(r.cc_on),
        r.path.seed
    );
    if r.starts_s.iter().any(|s| *s > 0.0) {
        let names = r.conditions.first().map(|c| &c.algorithms);
        let starts: Vec<String> = names
            .into_iter()
            .flatten()
            .zip(&r.starts_s)
            .map(|(a, s)| format!("{} at {s} s", a.cc))
            .collect();
        let _ = writeln!(out, "starts: {}", starts.join(", "));
    }
    for c in &r.conditions {
        let base = c
            .probe
            .as_ref()
            .filter(|p| p.received > 0)
            .map_or("-".into(), |p| format!("{:.2} ms", p.rtt_min_ms));
        let on = if c.emulator == kind {
            String::new()
        } else {
            format!(" [{}]", kind_name(c.emulator))
        };
        let _ = writeln!(
            out,
            "\n{}{on}: Jain's index {:.3} (median), base RTT {base}",
            c.label, c.jain_index
        );
        let mut rows = vec![vec![
            "cc".to_string(),
            "share (median; runs)".into(),
            "goodput".into(),
            "retrans".into(),
            "queue delay ms".into(),
        ]];
        let runs: Vec<_> = r.runs.iter().filter(|x| x.label == c.label).collect();
        for (i, a) in c.algorithms.iter().enumerate() {
            let each: Vec<String> = runs
                .iter()
                .map(|x| {
                    let flag = if x.spoiled { "*" } else { "" };
                    format!("{}{flag}", pct(x.algorithms[i].share))
                })
                .collect();
            rows.push(vec![
                if a.flows > 1 {
                    format!("{} x{}", a.cc, a.flows)
                } else {
                    a.cc.clone()
                },
                format!("{} ({})", pct(a.share), each.join(" / ")),
                rate(a.bits_per_second),
                a.retransmits.to_string(),
                a.rtt_inflation_ms.map_or("-".into(), |q| format!("{q:.1}")),
            ]);
        }
        aligned(&mut out, &rows, "  ");
    }
    let _ = writeln!(
        out,
        "\nshare: an algorithm's flows' goodput over all flows' (receiver bytes over each flow's sending time); \
         queue delay: median smoothed RTT (TCP_INFO every 100 ms) above the base RTT (ping before the runs)"
    );
    if r.runs.iter().any(|x| x.spoiled) {
        let _ = writeln!(
            out,
            "* spoiled run: the emulator delivered > 10% of frames late or dropped frames itself (see --json)"
        );
    }
    out
}
