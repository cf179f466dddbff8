//! `lab --workload`: request/response traffic over the emulated path. For
//! every condition, run and algorithm, a fresh server process (see
//! [`server`]) in the server namespace and cgroup answers `--clients`
//! closed-loop clients (see [`client`]); completion times are reported per
//! algorithm and transfer-size class ([`bbrkit_vocab::SizeClass`]), pooled
//! over runs, in the JSON shape `bbrkit sim --workload` shares
//! (docs/lab.md, "Request/response workloads").
//!
//! Must never print; must never leave the server process or the cgroup it
//! created behind (both go when [`run`] returns, whatever the outcome).

pub mod cgroup;
pub mod client;
pub mod server;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use bbrkit_vocab::{ClassFct, PathConditions, SizeClass, WorkloadSpec, fct_by_class};
use serde::Serialize;

use crate::emulator::model::LinkParams;
use crate::emulator::{EmulatorKind, EmulatorReport};
use crate::error::{LabError, Result};
use crate::plan::{HOST_CC, Plan};
use crate::served::{ServedCgroup, ServedCondition, ServedHeader};
use crate::session::{Event, Outcome, Session, run_seed};
use crate::tester::CcOn;
use crate::topology::{SERVER_ADDR, Topology};
use crate::verdict::condition_emulator;
use cgroup::ServerCgroup;
use client::{ClientOutcome, ClientSpec};
use server::{ServerLauncher, ServerProcess, ServerStats};

/// The workload of a lab run.
#[derive(Debug, Clone)]
pub struct Workload {
    /// What the clients fetch.
    pub objects: WorkloadSpec,
    /// Concurrent clients.
    pub clients: usize,
    /// One connection per client (else one per request).
    pub keepalive: bool,
    /// The cgroup the server side runs in (`None`: the lab creates one).
    pub cgroup: Option<PathBuf>,
    /// How to start the server process.
    pub server: ServerLauncher,
}

/// The workload as the report states it.
#[derive(Debug, Clone, Serialize)]
pub struct WorkloadInfo {
    /// Object sizes (`{"fixed": bytes}` or `"web"`).
    pub objects: WorkloadSpec,
    /// Concurrent clients.
    pub clients: usize,
    /// One connection per client.
    pub keepalive: bool,
}

/// One run of one algorithm under one condition.
#[derive(Debug, Clone, Serialize)]
pub struct WorkloadRun {
    /// 1-based run number.
    pub run: usize,
    /// Seed of the loss process and the object sizes.
    pub seed: u64,
    /// Completed requests.
    pub requests: u64,
    /// Failed requests.
    pub failed: u64,
    /// Requests still open when the drain ended.
    pub unfinished: u64,
    /// Server-side retransmissions summed over connections.
    pub retransmits: u64,
    /// Connections the server accepted.
    pub connections: u64,
    /// The emulator's account.
    pub emulator: EmulatorReport,
    /// Whether the emulator spoiled the run (after its repeats).
    pub spoiled: bool,
    /// Why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spoiled_reason: Option<String>,
    /// Attempts made (1 = not repeated).
    pub attempts: usize,
    /// Every completed request: (bytes, ms) (for plots; not in JSON).
    #[serde(skip)]
    pub fct: Vec<(u64, f64)>,
}

/// One algorithm under one condition, pooled over runs.
#[derive(Debug, Clone, Serialize)]
pub struct WorkloadResult {
    /// Algorithm (`host` with `--cc host`).
    pub cc: String,
    /// Completed requests.
    pub requests: u64,
    /// Requests that failed.
    pub failed: u64,
    /// Requests still open when a run's drain ended.
    pub unfinished: u64,
    /// Server-side retransmissions.
    pub retransmits: u64,
    /// Per size class (only classes with a completed request).
    pub classes: BTreeMap<SizeClass, ClassFct>,
    /// The algorithms the server's connections ran (read back).
    pub server_tcp_congestion: Vec<String>,
    /// Every run.
    pub runs: Vec<WorkloadRun>,
}

/// One condition.
pub type WorkloadCondition = ServedCondition<WorkloadResult>;

/// The report of `lab --workload`.
#[derive(Debug, Clone, Serialize)]
pub struct WorkloadReport {
    /// `mode` (always `workload`) .. `cc_on`.
    #[serde(flatten)]
    pub header: ServedHeader,
    /// The workload.
    pub workload: WorkloadInfo,
    /// Where the server side ran.
    #[serde(flatten)]
    pub server_side: ServedCgroup,
    /// Per condition.
    pub conditions: Vec<WorkloadCondition>,
    /// BPF algorithms the lab registered for the run (filled by the caller).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub bpf_algorithms: Vec<crate::bpf_cc::BpfAlgorithm>,
}

/// Checks the workload before anything is built.
pub fn validate(w: &Workload) -> Result<()> {
    if w.clients == 0 || w.clients > 1024 {
        return Err(LabError::Invalid("--clients must be 1..=1024".into()));
    }
    Ok(())
}

/// Runs the workload of `w` under every condition of `plan`.
pub fn run(
    plan: &Plan,
    w: &Workload,
    topo: &Topology,
    kind: EmulatorKind,
    cancel: &AtomicBool,
    on_event: &mut dyn FnMut(Event<'_>),
) -> Result<WorkloadReport> {
    validate(w)?;
    let cg = ServerCgroup::open(w.cgroup.as_deref())?;
    on_event(Event::Note(&cg.note()));
    let total = plan.conditions.len() * plan.algorithms.len() * plan.runs;
    let mut s = Session::new(plan, topo, cancel, on_event, total);
    let mut conditions = Vec::new();
    for (ci, cond) in plan.conditions.iter().enumerate() {
        let ckind = condition_emulator(plan.emulator, kind, cond);
        conditions.push(condition(&mut s, w, &cg, ci, cond, ckind)?);
    }
    Ok(WorkloadReport {
        header: ServedHeader::new("workload", plan, topo, kind),
        workload: WorkloadInfo {
            objects: w.objects,
            clients: w.clients,
            keepalive: w.keepalive,
        },
        server_side: ServedCgroup::from(&cg),
        conditions,
        bpf_algorithms: Vec::new(),
    })
}

/// Every algorithm's runs under one condition.
fn condition(
    s: &mut Session<'_>,
    w: &Workload,
    cg: &ServerCgroup,
    ci: usize,
    cond: &PathConditions,
    kind: EmulatorKind,
) -> Result<WorkloadCondition> {
    let plan = s.plan;
    let link = plan.link(cond);
    let label = cond.label();
    let probe = s.probe(kind, link)?;
    let mut runs: Vec<Vec<(WorkloadRun, ServerStats)>> = vec![Vec::new(); plan.algorithms.len()];
    for run_no in 1..=plan.runs {
        for (ai, cc) in plan.algorithms.iter().enumerate() {
            let seed = run_seed(plan.seed, ci, run_no, ai);
            let r = one_run(s, w, cg, (kind, link), cc, (run_no, seed))?;
            s.finished(
                &label,
                cc,
                run_no,
                Outcome::Requests {
                    completed: r.0.requests,
                    failed: r.0.failed + r.0.unfinished,
                },
                r.0.spoiled_reason.as_deref(),
            );
            runs[ai].push(r);
        }
    }
    let results = plan
        .algorithms
        .iter()
        .zip(runs)
        .map(|(cc, runs)| pooled(cc, runs))
        .collect();
    Ok(WorkloadCondition {
        label,
        emulator: kind,
        link,
        probe: Some(probe),
        results,
    })
}

/// One run of `cc`: a fresh server, the clients, the server's account
/// (repeated while the emulator spoils it).
fn one_run(
    s: &mut Session<'_>,
    w: &Workload,
    cg: &ServerCgroup,
    (kind, link): (EmulatorKind, LinkParams),
    cc: &str,
    (run, seed): (usize, u64),
) -> Result<(WorkloadRun, ServerStats)> {
    let duration = s.plan.duration;
    let spec = ClientSpec {
        objects: w.objects,
        clients: w.clients,
        keepalive: w.keepalive,
        duration,
        drain: duration.min(Duration::from_secs(60)),
        seed,
    };
    let cc_arg = (s.plan.cc_on != CcOn::Host && cc != HOST_CC).then_some(cc);
    let cancel = s.cancel;
    let m = s.measure(kind, link, seed, &mut |topo, _| {
        let server = ServerProcess::start(&w.server, topo.server.fd(), &cg.path, cc_arg)?;
        let addr = SocketAddr::from((SERVER_ADDR, server.port));
        let clients = client::run(topo, addr, &spec, cancel);
        let stats = server.finish();
        Ok((clients?, stats?))
    })?;
    let (c, stats): (ClientOutcome, ServerStats) = m.value;
    Ok((
        WorkloadRun {
            run,
            seed,
            requests: c.done.len() as u64,
            failed: c.failed,
            unfinished: c.unfinished,
            retransmits: stats.retransmits,
            connections: stats.connections,
            emulator: m.emulator,
            spoiled: m.spoiled.is_some(),
            spoiled_reason: m.spoiled,
            attempts: m.attempts,
            fct: c.done,
        },
        stats,
    ))
}

/// One algorithm's runs pooled: every completed request counts once.
fn pooled(cc: &str, runs: Vec<(WorkloadRun, ServerStats)>) -> WorkloadResult {
    let all: Vec<(u64, f64)> = runs.iter().flat_map(|r| r.0.fct.iter().copied()).collect();
    let mut names: Vec<String> = runs
        .iter()
        .flat_map(|r| r.1.tcp_congestion.clone())
        .collect();
    names.sort();
    names.dedup();
    let sum = |f: fn(&WorkloadRun) -> u64| runs.iter().map(|r| f(&r.0)).sum();
    WorkloadResult {
        cc: cc.to_string(),
        requests: all.len() as u64,
        failed: sum(|r| r.failed),
        unfinished: sum(|r| r.unfinished),
        retransmits: sum(|r| r.retransmits),
        classes: fct_by_class(&all),
        server_tcp_congestion: names,
        runs: runs.into_iter().map(|r| r.0).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The report's keys are those docs/lab.md documents (a schema `sim
    /// --workload` shares), in its order.
    #[test]
    fn the_report_keeps_its_documented_keys_in_order() {
        let r = WorkloadReport {
            header: ServedHeader {
                mode: "workload",
                kernel: "6.18".into(),
                prefix: "bbrk1".into(),
                emulator: EmulatorKind::Split,
                seed: 36,
                runs: 3,
                duration_s: 30.0,
                cc_on: CcOn::Sender,
            },
            workload: WorkloadInfo {
                objects: WorkloadSpec::Web,
                clients: 8,
                keepalive: false,
            },
            server_side: ServedCgroup {
                cgroup: "/sys/fs/cgroup/x".into(),
                cgroup_created: true,
            },
            conditions: Vec::new(),
            bpf_algorithms: Vec::new(),
        };
        let json = serde_json::to_string(&r).unwrap();
        assert_eq!(
            crate::served::json_keys(&json),
            [
                "mode",
                "kernel",
                "prefix",
                "emulator",
                "seed",
                "runs",
                "duration_s",
                "cc_on",
                "workload",
                "objects",
                "clients",
                "keepalive",
                "cgroup",
                "cgroup_created",
                "conditions"
            ]
        );
    }
}
