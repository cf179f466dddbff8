//! A lab session: the conditions × runs × algorithms of a [`Plan`] carried
//! out on one topology, in an order that spreads slow drifts of a shared
//! machine over every algorithm alike (for each condition and run, every
//! algorithm in turn), each measurement on a fresh emulator, repeated while
//! the emulator's verdict says it was spoiled and a repeat may help.
//!
//! Owns the loop, the run seeds and progress events; the bulk-flow mode
//! ([`run`]) lives here, competition and workloads in their modules use
//! [`Session::measure`]. Must never print: progress goes to a callback.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bbrkit_vocab::PathConditions;

use crate::emulator::model::LinkParams;
use crate::emulator::{Emulator, EmulatorKind, EmulatorReport};
use crate::error::{LabError, Result};
use crate::plan::Plan;
use crate::probe::{ProbeResult, probe};
use crate::report::{CcResult, ConditionResult, LabReport, RunResult, kernel_release, summarise};
use crate::tester::{TestSpec, run_test};
use crate::topology::Topology;
use crate::verdict::{condition_emulator, spoiled};

/// What a finished run measured, for progress lines.
#[derive(Debug, Clone)]
pub enum Outcome<'a> {
    /// Goodput summed over the run's flows, bits per second.
    Goodput(f64),
    /// Per algorithm of a competition: its share of the goodput (0..1).
    Shares(&'a [(String, f64)]),
    /// Requests of a workload run.
    Requests {
        /// Completed.
        completed: u64,
        /// Failed or cut off by the end of the run.
        failed: u64,
    },
    /// The client command of a `--client-cmd` run.
    Client {
        /// Its exit code (`None`: stopped at the run's limit).
        exit_code: Option<i32>,
        /// How long it ran, seconds.
        elapsed_s: f64,
    },
}

/// Progress events.
#[derive(Debug, Clone)]
pub enum Event<'a> {
    /// A run finished (`done` of `total` runs, repeats not counted).
    RunDone {
        /// Finished runs.
        done: usize,
        /// All runs.
        total: usize,
        /// Condition label.
        condition: &'a str,
        /// The algorithm (or algorithms, joined by `+`, when competing).
        cc: &'a str,
        /// 1-based run number.
        run: usize,
        /// What it measured.
        outcome: Outcome<'a>,
        /// Why the emulator spoiled it, if it did (after the last attempt).
        spoiled: Option<&'a str>,
    },
    /// Something the operator should know while the run goes (the
    /// namespaces' names, the server side's cgroup).
    Note(&'a str),
    /// A spoiled run is being repeated.
    Repeat {
        /// Why.
        reason: &'a str,
    },
}

/// One measurement on a fresh emulator, and the emulator's verdict on it.
#[derive(Debug)]
pub struct Measured<T> {
    /// What the measurement returned.
    pub value: T,
    /// The emulator's account.
    pub emulator: EmulatorReport,
    /// Why the run is spoiled, if it is.
    pub spoiled: Option<String>,
    /// Attempts made (1 = not repeated).
    pub attempts: usize,
}

/// The plan in progress on one topology, and how far it got.
pub struct Session<'a> {
    /// What to run.
    pub plan: &'a Plan,
    /// Where.
    pub topo: &'a Topology,
    /// Set by a signal: stop at the next check.
    pub cancel: &'a AtomicBool,
    on_event: &'a mut dyn FnMut(Event<'_>),
    /// Runs finished (repeats not counted), of `total`.
    done: usize,
    total: usize,
}

impl<'a> Session<'a> {
    /// A session of `total` runs.
    pub fn new(
        plan: &'a Plan,
        topo: &'a Topology,
        cancel: &'a AtomicBool,
        on_event: &'a mut dyn FnMut(Event<'_>),
        total: usize,
    ) -> Self {
        Session {
            plan,
            topo,
            cancel,
            on_event,
            done: 0,
            total,
        }
    }

    /// A 50-probe ping through the path of `link` on a fresh emulator.
    pub fn probe(&self, kind: EmulatorKind, link: LinkParams) -> Result<ProbeResult> {
        let emu = Emulator::start_kind(self.topo, kind, link, self.plan.seed ^ 0x9e37)?;
        let p = probe(
            self.topo,
            50,
            Duration::from_millis(4),
            Duration::from_millis(200) + link.delay * 2,
        );
        drop(emu);
        p
    }

    /// Runs `body` on a fresh emulator of `kind` impairing `link` with
    /// loss seed `seed`, repeating it (up to `plan.retries` times) while
    /// the emulator spoiled it in a way a repeat may cure. `body` gets the
    /// CPU the traffic should stay off, if any.
    pub fn measure<T>(
        &mut self,
        kind: EmulatorKind,
        link: LinkParams,
        seed: u64,
        body: &mut dyn FnMut(&Topology, Option<usize>) -> Result<T>,
    ) -> Result<Measured<T>> {
        let mut attempts = 0;
        loop {
            attempts += 1;
            if self.cancel.load(Ordering::Relaxed) {
                return Err(LabError::Interrupted);
            }
            let emu = Emulator::start_kind(self.topo, kind, link, seed)?;
            // With a rate limit the machine has CPU to spare, and the
            // sender's transmit path (tbf-paced) landing on the ACK
            // forwarder's CPU made 15-22% of ACKs > 500 µs late at 10 ms +
            // 1 Gbit/s; keeping the senders off that CPU brings it to
            // ~0.1%. Without a rate the CPUs are the bottleneck: pinning
            // would cost ~10% of BBR's 10 ms + 2% throughput (2.21 vs 2.46
            // Gbit/s), for 0.3-1.5% late ACKs that remain counted.
            let off = emu.forwarder_cpu().filter(|_| link.rate_bps.is_some());
            let value = body(self.topo, off);
            let rep = emu.stop()?;
            let value = value?;
            let verdict = spoiled(&rep);
            if let Some((reason, true)) = &verdict
                && attempts <= self.plan.retries
            {
                (self.on_event)(Event::Repeat { reason });
                continue;
            }
            return Ok(Measured {
                value,
                emulator: rep,
                spoiled: verdict.map(|v| v.0),
                attempts,
            });
        }
    }

    /// Reports a finished run.
    pub fn finished(
        &mut self,
        condition: &str,
        cc: &str,
        run: usize,
        outcome: Outcome<'_>,
        spoiled: Option<&str>,
    ) {
        self.done += 1;
        (self.on_event)(Event::RunDone {
            done: self.done,
            total: self.total,
            condition,
            cc,
            run,
            outcome,
            spoiled,
        });
    }
}

/// The seed of run `run_no` of algorithm `ai` under condition `ci`.
pub fn run_seed(base: u64, ci: usize, run_no: usize, ai: usize) -> u64 {
    base.wrapping_add((ci as u64) << 32)
        .wrapping_add((run_no as u64) << 16)
        .wrapping_add(ai as u64)
}

/// Runs `plan` on `topo` with the resolved emulator `kind`: each algorithm
/// alone on the path, `plan.flows` bulk flows per run.
pub fn run(
    plan: &Plan,
    topo: &Topology,
    kind: EmulatorKind,
    cancel: &AtomicBool,
    on_event: &mut dyn FnMut(Event<'_>),
) -> Result<LabReport> {
    if kind == EmulatorKind::Auto {
        return Err(LabError::Invalid("resolve the emulator kind first".into()));
    }
    let total = plan.conditions.len() * plan.algorithms.len() * plan.runs;
    let mut session = Session::new(plan, topo, cancel, on_event, total);
    let mut conditions = Vec::new();
    for (ci, cond) in plan.conditions.iter().enumerate() {
        let kind = condition_emulator(plan.emulator, kind, cond);
        conditions.push(alone(&mut session, ci, cond, kind)?);
    }
    Ok(LabReport {
        prefix: topo.prefix.clone(),
        kernel: kernel_release(),
        emulator: kind,
        seed: plan.seed,
        runs: plan.runs,
        duration_s: plan.duration.as_secs_f64(),
        flows: plan.flows,
        cc_on: plan.cc_on,
        mtu: plan.mtu,
        conditions,
        bpf_algorithms: Vec::new(),
    })
}

/// Probes condition number `ci` on emulator `kind`, then runs every
/// algorithm `plan.runs` times, in turn.
fn alone(
    s: &mut Session<'_>,
    ci: usize,
    cond: &PathConditions,
    kind: EmulatorKind,
) -> Result<ConditionResult> {
    let plan = s.plan;
    let link = plan.link(cond);
    let label = cond.label();
    let probe_result = Some(s.probe(kind, link)?);
    let mut results: Vec<CcResult> = plan
        .algorithms
        .iter()
        .map(|cc| CcResult {
            cc: cc.clone(),
            bits_per_second: 0.0,
            retransmits: 0.0,
            ratio: None,
            runs: Vec::new(),
        })
        .collect();
    for run_no in 1..=plan.runs {
        for (ai, cc) in plan.algorithms.iter().enumerate() {
            let seed = run_seed(plan.seed, ci, run_no, ai);
            let result = bulk_run(s, kind, link, cc, seed, run_no)?;
            s.finished(
                &label,
                cc,
                run_no,
                Outcome::Goodput(result.bits_per_second),
                result.spoiled_reason.as_deref(),
            );
            results[ai].runs.push(result);
        }
    }
    let ratio = summarise(&mut results);
    Ok(ConditionResult {
        label,
        emulator: kind,
        link,
        probe: probe_result,
        results,
        ratio,
    })
}

/// One bulk run of `cc` (repeated while spoiled).
fn bulk_run(
    s: &mut Session<'_>,
    kind: EmulatorKind,
    link: LinkParams,
    cc: &str,
    seed: u64,
    run_no: usize,
) -> Result<RunResult> {
    let spec = TestSpec::uniform(cc, s.plan.flows, s.plan.cc_on, s.plan.duration);
    let cancel = s.cancel;
    let m = s.measure(kind, link, seed, &mut |topo, off| {
        let spec = TestSpec {
            keep_off_cpu: off,
            ..spec.clone()
        };
        run_test(topo, &spec, cancel)
    })?;
    let test = m.value;
    Ok(RunResult {
        run: run_no,
        seed,
        bits_per_second: test.bits_per_second,
        bytes: test.bytes,
        retransmits: test.retransmits,
        sender_cpu_s: test.sender_cpu_s,
        flows: test.flows,
        emulator: Some(m.emulator),
        spoiled: m.spoiled.is_some(),
        spoiled_reason: m.spoiled,
        attempts: m.attempts,
    })
}
