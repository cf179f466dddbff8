//! `bbrkit sim --workload`: the JSON document (the shape `bbrkit lab
//! --workload` prints: `conditions[].results[].classes.<class>.{requests,
//! fct_ms}`) and its table.

use std::fmt::Write;

use bbrkit_sim::{Plan, Workload, WorkloadResult};
use bbrkit_vocab::{PathConditions, WorkloadSpec};
use serde::Serialize;

use super::PathInfo;
use crate::units::rate;

/// The document.
#[derive(Debug, Serialize)]
pub struct WorkloadDocument {
    /// Always `workload`.
    pub mode: &'static str,
    /// What the clients fetch.
    pub workload: Info,
    /// The path (loss varies per condition).
    pub path: PathInfo,
    /// Per loss condition.
    pub conditions: Vec<Condition>,
}

/// The workload.
#[derive(Debug, Serialize)]
pub struct Info {
    /// Object sizes.
    pub objects: WorkloadSpec,
    /// Concurrent clients.
    pub clients: usize,
    /// One connection per client.
    pub keepalive: bool,
}

/// One condition, with the lab's keys.
#[derive(Debug, Serialize)]
pub struct Condition {
    /// Human label.
    pub label: String,
    /// Base RTT (the lab's one-way delay of the data direction), ms.
    pub delay_ms: f64,
    /// Jitter (none in the simulator), ms.
    pub jitter_ms: f64,
    /// Data-path loss probability (0..1).
    pub loss: f64,
    /// Bottleneck rate.
    pub rate_bits_per_second: u64,
    /// Bottleneck buffer, bytes.
    pub buffer_bytes: u64,
    /// Per algorithm.
    pub results: Vec<WorkloadResult>,
}

/// The document of `runs` (as [`Plan::workloads`] listed them) and their
/// results.
pub fn document(
    plan: &Plan,
    runs: &[(f64, Workload)],
    results: Vec<WorkloadResult>,
) -> WorkloadDocument {
    let first = runs.first().map(|r| &r.1);
    let mut conditions: Vec<Condition> = Vec::new();
    for ((loss, _), r) in runs.iter().zip(results) {
        if conditions.last().is_none_or(|c| c.loss != *loss) {
            let cond = PathConditions {
                loss: *loss,
                ..plan.path.conditions()
            };
            conditions.push(Condition {
                label: cond.label(),
                delay_ms: plan.path.rtt.as_secs_f64() * 1e3,
                jitter_ms: 0.0,
                loss: *loss,
                rate_bits_per_second: plan.path.rate_bps,
                buffer_bytes: plan.path.buffer_bytes(bbrkit_sim::DEFAULT_MSS),
                results: Vec::new(),
            });
        }
        if let Some(c) = conditions.last_mut() {
            c.results.push(r);
        }
    }
    WorkloadDocument {
        mode: "workload",
        workload: Info {
            objects: first.map_or(WorkloadSpec::Web, |w| w.objects),
            clients: first.map_or(0, |w| w.clients),
            keepalive: first.is_some_and(|w| w.keepalive),
        },
        path: super::path_info(plan),
        conditions,
    }
}

/// The table: per condition and algorithm, FCT quantiles per size class.
pub fn table(doc: &WorkloadDocument) -> String {
    let w = &doc.workload;
    let conn = if w.keepalive {
        "one connection per client (keep-alive)"
    } else {
        "a new connection per request"
    };
    let mut out = format!(
        "bbrkit sim --workload: {} bottleneck, RTT {} ms, {} client(s) fetching {}, {conn}, {} s + drain, seed {}\n",
        rate(doc.path.bits_per_second as f64),
        doc.path.rtt_ms,
        w.clients,
        w.objects.label(),
        doc.path.duration_s,
        doc.path.seed
    );
    for c in &doc.conditions {
        let _ = writeln!(out, "\n{}", c.label);
        let mut header = crate::lab_out::fct_header();
        header.push("unfinished".into());
        let mut rows = vec![header];
        for r in &c.results {
            let mut mine = crate::lab_out::fct_rows(r.cc, &r.classes);
            mine[0].push(r.unfinished.to_string());
            rows.extend(mine);
        }
        for line in super::table::columns(&rows).lines() {
            let _ = writeln!(out, "  {line}");
        }
    }
    out.push_str(
        "\nfct: from the request (before the handshake on a new connection) to the object's last byte; \
         every request starts a fresh connection in slow start (keep-alive only skips the handshake)\n",
    );
    out
}
