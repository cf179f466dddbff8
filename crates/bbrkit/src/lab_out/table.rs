//! The human table of each algorithm alone: one row per condition, per
//! algorithm the median with every run in parentheses, and each later
//! algorithm's ratio to the first (columns named `bbr/cubic`, ...), as in
//! the seed.

use std::fmt::Write;

use bbrkit_lab::emulator::EmulatorKind;
use bbrkit_lab::report::{ConditionResult, LabReport};

use super::aligned;
use crate::units::rate;

fn short(bps: f64, unit_of: f64) -> String {
    if unit_of >= 1e9 {
        format!("{:.2}", bps / 1e9)
    } else if unit_of >= 1e6 {
        format!("{:.1}", bps / 1e6)
    } else {
        format!("{:.1}", bps / 1e3)
    }
}

/// The name serde gives `v` (as in the flags and the JSON).
pub(super) fn json_name(v: impl serde::Serialize) -> String {
    serde_json::to_value(v)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// The emulator's name as in `--emulator` and the JSON.
pub(super) fn kind_name(k: EmulatorKind) -> String {
    json_name(k)
}

/// Renders the report.
pub fn table(r: &LabReport) -> String {
    let mut out = String::new();
    let header_kind = common_kind(r.conditions.iter().map(|c| c.emulator), r.emulator);
    heading(&mut out, r, header_kind);
    let mut rows = vec![header_row(r)];
    rows.extend(r.conditions.iter().map(|c| condition_row(c, header_kind)));
    aligned(&mut out, &rows, "");
    footer(&mut out, r);
    out
}

/// The emulator every condition used, else the plan's (`planned`): what
/// a header names; a condition on another one says so.
pub(super) fn common_kind(
    mut kinds: impl Iterator<Item = EmulatorKind>,
    planned: EmulatorKind,
) -> EmulatorKind {
    match kinds.next() {
        Some(first) if kinds.all(|k| k == first) => first,
        _ => planned,
    }
}

/// The first lines: what ran, and the BPF algorithms the lab held.
fn heading(out: &mut String, r: &LabReport, kind: EmulatorKind) {
    let _ = writeln!(
        out,
        "bbrkit lab: kernel {}, {} emulator, {} run(s) x {} s, {} flow(s), algorithm on the {}, seed {}",
        r.kernel,
        kind_name(kind),
        r.runs,
        r.duration_s,
        r.flows,
        json_name(r.cc_on),
        r.seed
    );
    for b in &r.bpf_algorithms {
        let how = if b.registered_by_lab {
            "registered by the lab for this run, unregistered after it"
        } else {
            "already registered, used as it is"
        };
        let _ = writeln!(out, "{}: BPF struct_ops (bbrkit-bpf), {how}", b.name);
    }
}

/// The column titles, from the first condition's algorithms.
fn header_row(r: &LabReport) -> Vec<String> {
    let mut header = vec!["condition".to_string()];
    if let Some(c) = r.conditions.first() {
        for res in &c.results {
            header.push(format!("{} (median; runs)", res.cc));
        }
        let first = c.results.first().map_or("", |r| r.cc.as_str());
        for res in c.results.iter().skip(1) {
            header.push(format!("{}/{first}", res.cc));
        }
        header.push("ping RTT".into());
    }
    header
}

/// One condition's row: label, per algorithm the median and every run,
/// the ratio, the ping RTT.
fn condition_row(c: &ConditionResult, header_kind: EmulatorKind) -> Vec<String> {
    // A condition that ran on another emulator than the header's (under
    // `auto`, rated conditions run on the userspace one) says so.
    let mut row = vec![if c.emulator == header_kind {
        c.label.clone()
    } else {
        format!("{} [{}]", c.label, kind_name(c.emulator))
    }];
    for res in &c.results {
        let runs: Vec<String> = res
            .runs
            .iter()
            .map(|x| {
                let flag = if x.spoiled { "*" } else { "" };
                format!("{}{flag}", short(x.bits_per_second, res.bits_per_second))
            })
            .collect();
        row.push(format!(
            "{} ({})",
            rate(res.bits_per_second),
            runs.join(" / ")
        ));
    }
    for res in c.results.iter().skip(1) {
        row.push(match res.ratio {
            Some(x) if x >= 10.0 => format!("{x:.0}x"),
            Some(x) => format!("{x:.2}x"),
            None => "-".into(),
        });
    }
    row.push(match &c.probe {
        Some(p) if p.received > 0 => format!("{:.2} ms", p.rtt_median_ms),
        _ => "-".into(),
    });
    row
}

/// Below the table: median retransmits, what really sent (with the
/// algorithm on the receiver), and how many runs were spoiled.
fn footer(out: &mut String, r: &LabReport) {
    let _ = writeln!(out);
    let _ = writeln!(out, "retransmits (median):");
    for c in &r.conditions {
        let parts: Vec<String> = c
            .results
            .iter()
            .map(|res| format!("{} {:.0}", res.cc, res.retransmits))
            .collect();
        let _ = writeln!(out, "  {}: {}", c.label, parts.join(", "));
    }
    ecn_marks(out, r);
    let runs = || {
        r.conditions
            .iter()
            .flat_map(|c| &c.results)
            .flat_map(|res| &res.runs)
    };
    if r.cc_on != bbrkit_lab::tester::CcOn::Sender {
        // The column names the receiver's algorithm; say what really sent.
        let mut senders: Vec<&str> = runs()
            .flat_map(|x| &x.flows)
            .map(|f| f.sender_tcp_congestion.as_str())
            .collect();
        senders.sort_unstable();
        senders.dedup();
        let whose = if r.cc_on == bbrkit_lab::tester::CcOn::Host {
            "no socket's (--cc host)"
        } else {
            "the receiver's algorithm"
        };
        let _ = writeln!(
            out,
            "columns name {whose}; every sender used: {} (its namespace default)",
            senders.join(", ")
        );
    }
    let spoiled = runs().filter(|x| x.spoiled).count();
    if spoiled > 0 {
        let _ = writeln!(
            out,
            "* {spoiled} run(s) spoiled: the emulator delivered > 10% of frames late or dropped frames itself (at its ceiling, or a CPU stall that a repeat did not cure; see --json)"
        );
    }
}

/// With `--ecn-threshold`: per condition the threshold and, per
/// algorithm, the median count of data frames the emulator CE-marked.
fn ecn_marks(out: &mut String, r: &LabReport) {
    let marked = r.conditions.iter().filter_map(|c| {
        let k = c.link.ecn_threshold_bytes?;
        let parts: Vec<String> = c
            .results
            .iter()
            .map(|res| {
                let mut n: Vec<u64> = res
                    .runs
                    .iter()
                    .filter_map(|x| x.emulator.as_ref()?.data.ecn)
                    .map(|e| e.ce_marked)
                    .collect();
                n.sort_unstable();
                match n.get(n.len() / 2) {
                    Some(m) => format!("{} {m}", res.cc),
                    None => format!("{} -", res.cc),
                }
            })
            .collect();
        Some(format!(
            "  {} (CE above {}): {}",
            c.label,
            bbrkit_vocab::format::bytes(k),
            parts.join(", ")
        ))
    });
    let lines: Vec<String> = marked.collect();
    if !lines.is_empty() {
        let _ = writeln!(out, "CE-marked data frames (median):");
        for l in lines {
            let _ = writeln!(out, "{l}");
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use bbrkit_lab::emulator::model::LinkParams;
    use bbrkit_lab::report::{CcResult, summarise};
    use bbrkit_lab::tester::CcOn;

    /// A report of one condition with `ccs`' goodputs, one run each.
    pub(crate) fn report(ccs: &[(&str, f64)]) -> LabReport {
        let mut results: Vec<CcResult> = ccs
            .iter()
            .map(|(cc, bps)| CcResult {
                cc: cc.to_string(),
                bits_per_second: 0.0,
                retransmits: 0.0,
                ratio: None,
                runs: vec![bbrkit_lab::report::RunResult {
                    run: 1,
                    seed: 1,
                    bits_per_second: *bps,
                    bytes: 0,
                    retransmits: 0,
                    sender_cpu_s: 0.0,
                    flows: Vec::new(),
                    emulator: None,
                    spoiled: false,
                    spoiled_reason: None,
                    attempts: 1,
                }],
            })
            .collect();
        let ratio = summarise(&mut results);
        LabReport {
            prefix: "bbrk1".into(),
            kernel: "6.18".into(),
            emulator: EmulatorKind::Split,
            seed: 1,
            runs: 1,
            duration_s: 6.0,
            flows: 1,
            cc_on: CcOn::Sender,
            mtu: 1500,
            conditions: vec![ConditionResult {
                label: "10 ms + 2% loss".into(),
                emulator: EmulatorKind::Split,
                link: LinkParams::transparent(),
                probe: None,
                results,
                ratio,
            }],
            bpf_algorithms: Vec::new(),
        }
    }

    /// Issue 21 item 8: with three algorithms every later one gets its
    /// ratio to the first, named in the header (there was one unnamed
    /// `ratio` column, bbr3 ÷ cubic, and bbr's gain was not shown).
    #[test]
    fn one_named_ratio_column_per_algorithm_against_the_first() {
        let t = table(&report(&[("cubic", 10e6), ("bbr", 1e9), ("bbr3", 500e6)]));
        let header = t.lines().nth(1).unwrap();
        assert!(
            header.contains("bbr/cubic") && header.contains("bbr3/cubic"),
            "{t}"
        );
        assert!(!header.contains(" ratio "), "{t}");
        let row = t.lines().nth(2).unwrap();
        assert!(row.contains("100x") && row.contains("50x"), "{row}");
        let two = table(&report(&[("cubic", 10e6), ("bbr", 25e6)]));
        assert!(two.lines().nth(1).unwrap().contains("bbr/cubic"), "{two}");
        assert!(two.lines().nth(2).unwrap().contains("2.50x"), "{two}");
    }
}
