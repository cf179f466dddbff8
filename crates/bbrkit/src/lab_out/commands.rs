//! The human table of `lab --server-cmd/--client-cmd`: per condition and
//! algorithm, each run's client exit and time, what a known client (curl,
//! wrk) reported, and the lab's reading of the server's connections; and
//! the one line a held path leaves.

use std::fmt::Write;

use bbrkit_lab::commands::client_report::{ClientReport, pooled_median_ms};
use bbrkit_lab::commands::hold::HoldReport;
use bbrkit_lab::commands::{CommandResult, CommandRun, CommandsReport};
use bbrkit_lab::report::median;

use super::aligned;
use super::table::{common_kind, kind_name};

/// Renders the report.
pub fn table(r: &CommandsReport) -> String {
    let mut out = String::new();
    let kind = common_kind(r.conditions.iter().map(|c| c.emulator), r.header.emulator);
    let _ = writeln!(
        out,
        "bbrkit lab --server-cmd/--client-cmd: kernel {}, {} emulator, {} run(s), client stopped at {} s, seed {}",
        r.header.kernel,
        kind_name(kind),
        r.header.runs,
        r.header.duration_s,
        r.header.seed
    );
    let _ = writeln!(out, "server: {}", r.server_cmd);
    let _ = writeln!(out, "client: {}", r.client_cmd);
    let _ = writeln!(
        out,
        "server side in cgroup {}{}",
        r.server_side.cgroup.display(),
        if r.server_side.cgroup_created {
            " (created for the run, removed)"
        } else {
            ""
        }
    );
    for c in &r.conditions {
        let on = if c.emulator == kind {
            String::new()
        } else {
            format!(" [{}]", kind_name(c.emulator))
        };
        let _ = writeln!(out, "\n{}{on}", c.label);
        let reported = c
            .results
            .iter()
            .any(|r| r.runs.iter().any(|run| run.client_report.is_some()));
        let mut head = vec!["cc", "run", "client", "time s"];
        if reported {
            head.push("fct p50 ms");
        }
        head.extend(["conns", "acked MB", "retrans", "rtt p50 ms", "server cc"]);
        let mut rows = vec![head.into_iter().map(String::from).collect::<Vec<_>>()];
        for res in &c.results {
            for run in &res.runs {
                let k = &run.server_sockets;
                let mut client = match run.exit_code {
                    Some(code) => format!("exit {code}"),
                    None => "stopped".to_string(),
                };
                if let Some(ClientReport::Curl(r)) = &run.client_report
                    && r.failed > 0
                {
                    let _ = write!(client, ", {} of {} failed", r.failed, r.transfers);
                }
                if run.spoiled {
                    client.push_str(" (spoiled)");
                }
                let mut row = vec![
                    res.cc.clone(),
                    run.run.to_string(),
                    client,
                    format!("{:.2}", run.elapsed_s),
                ];
                if reported {
                    row.push(
                        run.client_report
                            .as_ref()
                            .and_then(ClientReport::typical_ms)
                            .map_or("-".into(), |m| format!("{m:.1}")),
                    );
                }
                row.extend([
                    k.connections.to_string(),
                    format!("{:.1}", k.bytes_acked as f64 / 1e6),
                    k.retransmits.to_string(),
                    k.median_rtt_ms.map_or("-".into(), |m| format!("{m:.1}")),
                    if k.tcp_congestion.is_empty() {
                        "-".into()
                    } else {
                        k.tcp_congestion.join(",")
                    },
                ]);
                rows.push(row);
            }
        }
        aligned(&mut out, &rows, "  ");
        out.push_str(&medians(&c.results));
        if reported {
            out.push_str(&fct_medians(&c.results));
        }
    }
    let _ = writeln!(
        out,
        "\ntime: from the client's start to its exit; conns..server cc: the server's connections \
         as the lab read them (sock_diag, every 20 ms); the client's output is in --json / --out"
    );
    if r.conditions
        .iter()
        .flat_map(|c| &c.results)
        .flat_map(|r| &r.runs)
        .any(|run| run.client_report.is_some())
    {
        let _ = writeln!(
            out,
            "fct p50 ms: the client's own report, read from its output: curl's `bbrkit-fct` \
             lines (median over its transfers), wrk's latency p50 (its mean without --latency)"
        );
    }
    out
}

/// Whether a run counts in a median: the client exited 0, not spoiled.
fn counted(run: &CommandRun) -> bool {
    run.exit_code == Some(0) && !run.spoiled
}

/// `median fct (curl): cubic 9815 ms, bbr 712 ms (bbr/cubic 0.07)`: per
/// algorithm, what its counted runs' clients reported (curl: every
/// transfer pooled; wrk: the runs' p50s), as in [`pooled_median_ms`].
fn fct_medians(results: &[CommandResult]) -> String {
    let tools: Vec<&str> = results
        .iter()
        .flat_map(|r| &r.runs)
        .filter_map(|run| run.client_report.as_ref().map(ClientReport::tool))
        .collect();
    let tool = match tools.first() {
        None => return String::new(),
        Some(t) if tools.iter().all(|x| x == t) => *t,
        Some(_) => "mixed tools",
    };
    let m: Vec<(&str, Option<f64>)> = results
        .iter()
        .map(|r| {
            let reports = r
                .runs
                .iter()
                .filter(|run| counted(run))
                .filter_map(|run| run.client_report.as_ref());
            (r.cc.as_str(), pooled_median_ms(reports))
        })
        .collect();
    format!(
        "  median fct ({tool}, exit 0, not spoiled): {}\n",
        ratios(&m, "ms", 1)
    )
}

/// `median time: cubic 11.35 s, bbr 0.95 s (bbr/cubic 0.08)`: per
/// algorithm the median client time of its runs that exited 0 and were not
/// spoiled, each later one as a ratio to the first.
fn medians(results: &[CommandResult]) -> String {
    let m: Vec<(&str, Option<f64>)> = results
        .iter()
        .map(|r| {
            let t: Vec<f64> = r
                .runs
                .iter()
                .filter(|run| counted(run))
                .map(|run| run.elapsed_s)
                .collect();
            (r.cc.as_str(), (!t.is_empty()).then(|| median(t)))
        })
        .collect();
    format!(
        "  median time (exit 0, not spoiled): {}\n",
        ratios(&m, "s", 2)
    )
}

/// `cubic 11.35 s, bbr 0.95 s (bbr/cubic 0.08)`: each value with `unit`
/// and `decimals`, each later one also as a ratio to the first.
fn ratios(m: &[(&str, Option<f64>)], unit: &str, decimals: usize) -> String {
    let mut parts = Vec::new();
    for (i, (cc, t)) in m.iter().enumerate() {
        let Some(t) = t else {
            parts.push(format!("{cc} -"));
            continue;
        };
        let mut p = format!("{cc} {t:.decimals$} {unit}");
        if let (true, (first, Some(f))) = (i > 0, m[0])
            && f > 0.0
        {
            let _ = write!(p, " ({cc}/{first} {:.2})", t / f);
        }
        parts.push(p);
    }
    parts.join(", ")
}

/// What a held path leaves on stdout.
pub fn hold(r: &HoldReport) -> String {
    let mut out = format!(
        "held {}, {}, on the {} emulator",
        r.condition,
        r.cc,
        kind_name(r.emulator)
    );
    if let Some(code) = r.server_exit_code {
        let _ = write!(out, "; the server command had exited with code {code}");
    }
    out.push_str("; path removed\n");
    out
}
