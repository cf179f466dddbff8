//! The human table of `lab --server-cmd/--client-cmd`: per condition and
//! algorithm, each run's client exit and time, and the lab's reading of
//! the server's connections; and the one line a held path leaves.

use std::fmt::Write;

use bbrkit_lab::commands::hold::HoldReport;
use bbrkit_lab::commands::{CommandResult, CommandsReport};
use bbrkit_lab::report::median;

use super::aligned;
use super::table::{common_kind, kind_name};

/// Renders the report.
pub fn table(r: &CommandsReport) -> String {
    let mut out = String::new();
    let kind = common_kind(r.conditions.iter().map(|c| c.emulator), r.emulator);
    let _ = writeln!(
        out,
        "bbrkit lab --server-cmd/--client-cmd: kernel {}, {} emulator, {} run(s), client stopped at {} s, seed {}",
        r.kernel,
        kind_name(kind),
        r.runs,
        r.duration_s,
        r.seed
    );
    let _ = writeln!(out, "server: {}", r.server_cmd);
    let _ = writeln!(out, "client: {}", r.client_cmd);
    let _ = writeln!(
        out,
        "server side in cgroup {}{}",
        r.cgroup.display(),
        if r.cgroup_created {
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
        let mut rows = vec![
            [
                "cc",
                "run",
                "client",
                "time s",
                "conns",
                "acked MB",
                "retrans",
                "rtt p50 ms",
                "server cc",
            ]
            .map(String::from)
            .to_vec(),
        ];
        for res in &c.results {
            for run in &res.runs {
                let k = &run.server_sockets;
                let mut client = match run.exit_code {
                    Some(code) => format!("exit {code}"),
                    None => "stopped".to_string(),
                };
                if run.spoiled {
                    client.push_str(" (spoiled)");
                }
                rows.push(vec![
                    res.cc.clone(),
                    run.run.to_string(),
                    client,
                    format!("{:.2}", run.elapsed_s),
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
            }
        }
        aligned(&mut out, &rows, "  ");
        out.push_str(&medians(&c.results));
    }
    let _ = writeln!(
        out,
        "\ntime: from the client's start to its exit; conns..server cc: the server's connections \
         as the lab read them (sock_diag, every 20 ms); the client's output is in --json / --out"
    );
    out
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
                .filter(|run| run.exit_code == Some(0) && !run.spoiled)
                .map(|run| run.elapsed_s)
                .collect();
            (r.cc.as_str(), (!t.is_empty()).then(|| median(t)))
        })
        .collect();
    let mut parts = Vec::new();
    for (i, (cc, t)) in m.iter().enumerate() {
        let Some(t) = t else {
            parts.push(format!("{cc} -"));
            continue;
        };
        let mut p = format!("{cc} {t:.2} s");
        if let (true, (first, Some(f))) = (i > 0, m[0])
            && f > 0.0
        {
            let _ = write!(p, " ({cc}/{first} {:.2})", t / f);
        }
        parts.push(p);
    }
    format!(
        "  median time (exit 0, not spoiled): {}\n",
        parts.join(", ")
    )
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
