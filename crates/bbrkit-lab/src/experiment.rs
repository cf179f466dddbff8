//! A whole lab experiment, from plan to report: the BPF algorithms it
//! needs registered, the plan checked against the kernel, the topology
//! built (named under `/run/netns` if asked), the emulator resolved, the
//! mode run — each algorithm alone, all competing, a request/response
//! workload, or the operator's own commands (or a held path) — and everything torn down again, whatever the outcome. The one
//! call `bbrkit lab` makes. Must never print: notes and progress go to the
//! callback.

use std::sync::atomic::AtomicBool;
use std::time::Duration;

use serde::Serialize;

use crate::commands::hold::HoldReport;
use crate::commands::{Commands, CommandsReport};
use crate::compete::CompeteReport;
use crate::error::Result;
use crate::plan::{Plan, validate};
use crate::report::LabReport;
use crate::session::Event;
use crate::topology::{Topology, run_prefix};
use crate::workload::{Workload, WorkloadReport};

/// What the flows do.
#[derive(Debug, Clone)]
pub enum Mode {
    /// Each algorithm alone on the path, bulk flows (the seed experiment).
    Alone,
    /// All algorithms' bulk flows at once, starting at `starts` (one per
    /// algorithm, one for all, or none for all at once).
    Compete {
        /// Start offsets.
        starts: Vec<Duration>,
    },
    /// Request/response traffic.
    Workload(Workload),
    /// The operator's own server and client commands, or `--hold`.
    Commands(Commands),
}

/// A lab experiment.
#[derive(Debug, Clone)]
pub struct Experiment {
    /// Conditions, algorithms, runs.
    pub plan: Plan,
    /// What the flows do.
    pub mode: Mode,
    /// Name the namespaces under `/run/netns` for the run.
    pub netns_names: bool,
}

/// The report of any mode.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum Report {
    /// [`Mode::Alone`].
    Alone(LabReport),
    /// [`Mode::Compete`].
    Compete(CompeteReport),
    /// [`Mode::Workload`].
    Workload(WorkloadReport),
    /// [`Mode::Commands`].
    Commands(CommandsReport),
    /// [`Mode::Commands`] with `hold`.
    Hold(HoldReport),
}

/// Checks everything that can be checked before anything is built.
pub fn check(exp: &Experiment) -> Result<()> {
    crate::plan::check_ecn(&exp.plan)?;
    if let Mode::Workload(w) = &exp.mode {
        crate::workload::validate(w)?;
    }
    if let Mode::Commands(c) = &exp.mode {
        crate::commands::validate(c, &exp.plan)?;
    }
    if let Mode::Compete { starts } = &exp.mode {
        crate::compete::per_algorithm_starts(&exp.plan, starts)?;
    }
    Ok(())
}

/// Runs `exp`; `cancel` (set by a signal) stops it within ~20 ms.
pub fn run(
    exp: &Experiment,
    cancel: &AtomicBool,
    on_event: &mut dyn FnMut(Event<'_>),
) -> Result<Report> {
    crate::require_root()?;
    check(exp)?;
    let plan = &exp.plan;
    // bbr3/bbr2 from bbrkit-bpf, registered until `ccs` drops (or the
    // process ends); an algorithm someone else registered is used as is.
    let ccs = crate::bpf_cc::register_missing(&plan.algorithms)?;
    validate(plan)?;
    let topo = Topology::build(&run_prefix(), plan.mtu, exp.netns_names)?;
    let names = topo.names();
    if !names.is_empty() {
        let note = format!("namespaces: {}", names.join(", "));
        on_event(Event::Note(&note));
    }
    if plan.ecn_threshold.is_some() {
        topo.negotiate_ecn()?;
    }
    let kind = crate::plan::requested_emulator(plan).resolve(&topo)?;
    let mut report = run_mode(exp, &topo, kind, cancel, on_event)?;
    drop(topo);
    let held = ccs.algorithms.clone();
    drop(ccs);
    match &mut report {
        Report::Alone(r) => r.bpf_algorithms = held,
        Report::Compete(r) => r.bpf_algorithms = held,
        Report::Workload(r) => r.bpf_algorithms = held,
        Report::Commands(r) => r.bpf_algorithms = held,
        Report::Hold(_) => {}
    }
    Ok(report)
}

fn run_mode(
    exp: &Experiment,
    topo: &Topology,
    kind: crate::emulator::EmulatorKind,
    cancel: &AtomicBool,
    on_event: &mut dyn FnMut(Event<'_>),
) -> Result<Report> {
    let plan: &Plan = &exp.plan;
    Ok(match &exp.mode {
        Mode::Alone => Report::Alone(crate::session::run(plan, topo, kind, cancel, on_event)?),
        Mode::Compete { starts } => Report::Compete(crate::compete::run(
            plan, starts, topo, kind, cancel, on_event,
        )?),
        Mode::Workload(w) => {
            Report::Workload(crate::workload::run(plan, w, topo, kind, cancel, on_event)?)
        }
        Mode::Commands(c) if c.hold => Report::Hold(crate::commands::hold::hold(
            plan, c, topo, kind, cancel, on_event,
        )?),
        Mode::Commands(c) => {
            Report::Commands(crate::commands::run(plan, c, topo, kind, cancel, on_event)?)
        }
    })
}
