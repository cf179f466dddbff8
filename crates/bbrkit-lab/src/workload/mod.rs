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
use crate::probe::ProbeResult;
use crate::report::kernel_release;
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
#[derive(Debug, Clone, Serialize)]
pub struct WorkloadCondition {
    /// Human label.
    pub label: String,
    /// The emulator it ran on.
    pub emulator: EmulatorKind,
    /// Its emulator parameters.
    #[serde(flatten)]
    pub link: LinkParams,
    /// The ping before the runs.
    pub probe: Option<ProbeResult>,
    /// Per algorithm, in `--cc` order.
    pub results: Vec<WorkloadResult>,
}

/// The report of `lab --workload`.
#[derive(Debug, Clone, Serialize)]
pub struct WorkloadReport {
    /// Always `workload`.
    pub mode: &'static str,
    /// `uname -r`.
    pub kernel: String,
    /// Per-run name prefix.
    pub prefix: String,
    /// The emulator the plan resolved to.
    pub emulator: EmulatorKind,
    /// Base seed.
    pub seed: u64,
    /// Runs per condition × algorithm.
    pub runs: usize,
    /// Time new requests start per run, seconds.
    pub duration_s: f64,
    /// Where the algorithm was set (`host`: nowhere).
    pub cc_on: CcOn,
    /// The workload.
    pub workload: WorkloadInfo,
    /// The cgroup the server side ran in.
    pub cgroup: PathBuf,
    /// Whether the lab created (and removed) it.
    pub cgroup_created: bool,
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
    let note = format!(
        "server side runs in cgroup {}{}",
        cg.path.display(),
        if cg.created {
            " (created for this run)"
        } else {
            ""
        }
    );
    on_event(Event::Note(&note));
    let total = plan.conditions.len() * plan.algorithms.len() * plan.runs;
    let mut s = Session::new(plan, topo, cancel, on_event, total);
    let mut conditions = Vec::new();
    for (ci, cond) in plan.conditions.iter().enumerate() {
        let ckind = condition_emulator(plan.emulator, kind, cond);
        conditions.push(condition(&mut s, w, &cg, ci, cond, ckind)?);
    }
    Ok(WorkloadReport {
        mode: "workload",
        kernel: kernel_release(),
        prefix: topo.prefix.clone(),
        emulator: kind,
        seed: plan.seed,
        runs: plan.runs,
        duration_s: plan.duration.as_secs_f64(),
        cc_on: plan.cc_on,
        workload: WorkloadInfo {
            objects: w.objects,
            clients: w.clients,
            keepalive: w.keepalive,
        },
        cgroup: cg.path.clone(),
        cgroup_created: cg.created,
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
