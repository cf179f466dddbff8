//! The human table of `lab --workload`: per condition and algorithm, the
//! requests completed and the flow completion times per size class, like
//! wrk's latency report, and what was measured.

use std::fmt::Write;

use std::collections::BTreeMap;

use bbrkit_lab::workload::WorkloadReport;
use bbrkit_vocab::{ClassFct, SizeClass};

use super::aligned;
use super::table::kind_name;

/// Renders the report.
pub fn table(r: &WorkloadReport) -> String {
    let mut out = String::new();
    let w = &r.workload;
    let kind =
        super::table::common_kind(r.conditions.iter().map(|c| c.emulator), r.header.emulator);
    let conn = if w.keepalive {
        "one connection per client (keep-alive)"
    } else {
        "a new connection per request"
    };
    let _ = writeln!(
        out,
        "bbrkit lab --workload: kernel {}, {} emulator, {} client(s) fetching {}, {conn}, {} run(s) x {} s, seed {}",
        r.header.kernel,
        kind_name(kind),
        w.clients,
        w.objects.label(),
        r.header.runs,
        r.header.duration_s,
        r.header.seed
    );
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
        let mut rows = vec![fct_header()];
        for res in &c.results {
            let name = if res.server_tcp_congestion.is_empty() || res.cc != "host" {
                res.cc.clone()
            } else {
                format!("host ({})", res.server_tcp_congestion.join(", "))
            };
            rows.extend(fct_rows(&name, &res.classes));
        }
        aligned(&mut out, &rows, "  ");
        let _ = writeln!(out, "  not completed, retransmits:");
        for res in &c.results {
            let spoiled = res.runs.iter().filter(|x| x.spoiled).count();
            let _ = writeln!(
                out,
                "    {}: {} failed, {} unfinished, {} retransmits{}",
                res.cc,
                res.failed,
                res.unfinished,
                res.retransmits,
                if spoiled > 0 {
                    format!(", {spoiled} spoiled run(s)")
                } else {
                    String::new()
                }
            );
        }
    }
    let from = if w.keepalive {
        "from the request's write"
    } else {
        "from before connect() (the handshake counts)"
    };
    let _ = writeln!(
        out,
        "\nfct: flow completion time {from} to the object's last byte at the client, pooled over runs; \
         each client fetches one object at a time for the run's duration, then in-flight requests may finish"
    );
    out
}

/// The columns of an FCT table (lab and sim).
pub fn fct_header() -> Vec<String> {
    [
        "cc",
        "size class",
        "requests",
        "fct p50 ms",
        "p90 ms",
        "p99 ms",
    ]
    .map(String::from)
    .to_vec()
}

/// One algorithm's rows of an FCT table: one per size class, the name on
/// the first (a `-` row when nothing completed).
pub fn fct_rows(name: &str, classes: &BTreeMap<SizeClass, ClassFct>) -> Vec<Vec<String>> {
    if classes.is_empty() {
        return vec![[name, "-", "0", "-", "-", "-"].map(String::from).to_vec()];
    }
    classes
        .iter()
        .enumerate()
        .map(|(i, (class, f))| {
            vec![
                if i == 0 {
                    name.to_string()
                } else {
                    String::new()
                },
                class.label().into(),
                f.requests.to_string(),
                format!("{:.1}", f.fct_ms.p50),
                format!("{:.1}", f.fct_ms.p90),
                format!("{:.1}", f.fct_ms.p99),
            ]
        })
        .collect()
}
