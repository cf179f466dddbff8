//! `lab --compete`: the listed algorithms' flows share the emulated
//! bottleneck at the same time (`-P` flows each, optionally starting at
//! staggered times), and each one's share of the goodput, Jain's index over
//! the flows, the RTT each saw above the path's base RTT (queueing delay)
//! and retransmits are reported, in the `--json` shape of `bbrkit sim
//! --compete` (`runs[].flows[]`, `runs[].link`, `runs[].jain_index`).
//!
//! RTTs are the senders' smoothed RTTs (`TCP_INFO`, every 100 ms); the base
//! RTT is the ping through the path before the runs. Must never print.

use std::sync::atomic::AtomicBool;
use std::time::Duration;

use bbrkit_vocab::{PathConditions, Percentiles, jain_index};
use serde::Serialize;

use crate::emulator::model::LinkParams;
use crate::emulator::{EmulatorKind, EmulatorReport};
use crate::error::{LabError, Result};
use crate::plan::Plan;
use crate::probe::ProbeResult;
use crate::report::{kernel_release, median};
use crate::session::{Event, Measured, Outcome, Session, run_seed};
use crate::tester::{CcOn, FlowResult, FlowSpec, TestResult, TestSpec, run_test};
use crate::topology::Topology;
use crate::verdict::condition_emulator;

/// One flow of a competition run (the keys of `bbrkit sim --compete`'s).
#[derive(Debug, Clone, Serialize)]
pub struct CompeteFlow {
    /// Flow index.
    pub flow: usize,
    /// Algorithm.
    pub cc: String,
    /// Start after the run's start, seconds.
    pub start_s: f64,
    /// Payload bytes the receiver read.
    pub bytes_delivered: u64,
    /// Receiver goodput over the flow's sending time.
    pub bits_per_second: f64,
    /// Share of the sum of all flows' goodput (0..1).
    pub share: f64,
    /// Sender retransmissions (`tcpi_total_retrans`).
    pub retransmits: u64,
    /// Smoothed-RTT percentiles over the flow's samples, milliseconds.
    pub rtt_ms: Option<Percentiles>,
    /// What the sending socket ran (read back).
    pub sender_tcp_congestion: String,
    /// The samples (for plots; not in JSON).
    #[serde(skip)]
    pub samples: Vec<crate::tcpinfo::TcpSample>,
}

/// One algorithm's flows of a run, together.
#[derive(Debug, Clone, Serialize)]
pub struct AlgorithmShare {
    /// Algorithm.
    pub cc: String,
    /// Its flows.
    pub flows: usize,
    /// Their goodput summed.
    pub bits_per_second: f64,
    /// Their share of all flows' goodput (0..1).
    pub share: f64,
    /// Their retransmissions summed.
    pub retransmits: u64,
    /// Median smoothed RTT of their samples minus the path's base RTT:
    /// the queueing delay they saw, milliseconds.
    pub rtt_inflation_ms: Option<f64>,
}

/// The bottleneck during a run.
#[derive(Debug, Clone, Serialize)]
pub struct CompeteLink {
    /// Bottleneck rate, bits per second (`None`: no rate limit).
    pub bits_per_second: Option<u64>,
    /// Bottleneck buffer, bytes.
    pub buffer_bytes: Option<u64>,
    /// Goodput of all flows over the rate (payload only, so a little
    /// below the simulator's busy-time utilisation).
    pub utilization: Option<f64>,
    /// Smoothed RTT minus the base RTT over every flow's samples,
    /// milliseconds.
    pub queue_delay_ms: Option<Percentiles>,
}

/// One competition run under one condition.
#[derive(Debug, Clone, Serialize)]
pub struct CompeteRun {
    /// The condition's label.
    pub label: String,
    /// Loss probability of the condition (0..1).
    pub loss: f64,
    /// 1-based run number.
    pub run: usize,
    /// Seed of the emulator's loss process.
    pub seed: u64,
    /// Sending time, seconds.
    pub duration_s: f64,
    /// Per flow.
    pub flows: Vec<CompeteFlow>,
    /// Per algorithm, in `--cc` order (a repeated name counts once).
    pub algorithms: Vec<AlgorithmShare>,
    /// The bottleneck.
    pub link: CompeteLink,
    /// Jain's fairness index over the flows' goodputs (1 = equal).
    pub jain_index: f64,
    /// The emulator's account.
    pub emulator: EmulatorReport,
    /// Whether the emulator spoiled the run (after its repeats).
    pub spoiled: bool,
    /// Why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spoiled_reason: Option<String>,
    /// Attempts made (1 = not repeated).
    pub attempts: usize,
}

/// One condition: the median over runs of each algorithm's share.
#[derive(Debug, Clone, Serialize)]
pub struct CompeteSummary {
    /// The condition's label.
    pub label: String,
    /// The emulator it ran on.
    pub emulator: EmulatorKind,
    /// Its emulator parameters.
    #[serde(flatten)]
    pub link: LinkParams,
    /// The ping before the runs (its minimum is the base RTT).
    pub probe: Option<ProbeResult>,
    /// Per algorithm: medians over runs of goodput, share, retransmits
    /// and RTT inflation.
    pub algorithms: Vec<AlgorithmShare>,
    /// Median over runs of Jain's index.
    pub jain_index: f64,
}

/// The path of the first condition, as `bbrkit sim` reports its path.
#[derive(Debug, Clone, Serialize)]
pub struct PathInfo {
    /// Bottleneck rate, bits per second.
    pub bits_per_second: Option<u64>,
    /// Base round-trip time added by the emulator, milliseconds.
    pub rtt_ms: f64,
    /// Buffer, bytes.
    pub buffer_bytes: Option<u64>,
    /// Sending time per run, seconds.
    pub duration_s: f64,
    /// Base seed.
    pub seed: u64,
}

/// The report of `lab --compete`.
#[derive(Debug, Clone, Serialize)]
pub struct CompeteReport {
    /// Always `compete`.
    pub mode: &'static str,
    /// `uname -r`.
    pub kernel: String,
    /// Per-run name prefix.
    pub prefix: String,
    /// The emulator the plan resolved to.
    pub emulator: EmulatorKind,
    /// The first condition's path.
    pub path: PathInfo,
    /// Flows per algorithm.
    pub flows_per_algorithm: usize,
    /// Start of each algorithm's flows, seconds, in `--cc` order.
    pub starts_s: Vec<f64>,
    /// Runs per condition.
    pub runs_per_condition: usize,
    /// Where the algorithms were set.
    pub cc_on: CcOn,
    /// Every run, condition by condition.
    pub runs: Vec<CompeteRun>,
    /// Per condition, medians over its runs.
    pub conditions: Vec<CompeteSummary>,
    /// BPF algorithms the lab registered for the run (filled by the caller).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub bpf_algorithms: Vec<crate::bpf_cc::BpfAlgorithm>,
}

/// Runs the competition: for every condition and run, all of
/// `plan.algorithms` at once, each with `plan.flows` flows starting at
/// `starts` (one per algorithm, one for all, or empty for all at once).
pub fn run(
    plan: &Plan,
    starts: &[Duration],
    topo: &Topology,
    kind: EmulatorKind,
    cancel: &AtomicBool,
    on_event: &mut dyn FnMut(Event<'_>),
) -> Result<CompeteReport> {
    let starts = per_algorithm_starts(plan, starts)?;
    let total = plan.conditions.len() * plan.runs;
    let mut s = Session::new(plan, topo, cancel, on_event, total);
    let names = plan.algorithms.join("+");
    let (mut runs, mut conditions) = (Vec::new(), Vec::new());
    for (ci, cond) in plan.conditions.iter().enumerate() {
        let ckind = condition_emulator(plan.emulator, kind, cond);
        let link = plan.link(cond);
        let probe = s.probe(ckind, link)?;
        let base_ms = (probe.received > 0).then_some(probe.rtt_min_ms);
        let mut mine = Vec::new();
        for run_no in 1..=plan.runs {
            let seed = run_seed(plan.seed, ci, run_no, 0);
            let spec = spec(plan, &starts);
            let m = s.measure(ckind, link, seed, &mut |topo, off| {
                let spec = TestSpec {
                    keep_off_cpu: off,
                    ..spec.clone()
                };
                run_test(topo, &spec, cancel)
            })?;
            let r = compete_run(plan, cond, &starts, base_ms, link, (run_no, seed), m);
            let shares: Vec<(String, f64)> = r
                .algorithms
                .iter()
                .map(|a| (a.cc.clone(), a.share))
                .collect();
            s.finished(
                &r.label,
                &names,
                run_no,
                Outcome::Shares(&shares),
                r.spoiled_reason.as_deref(),
            );
            mine.push(r);
        }
        conditions.push(summary(cond, ckind, link, Some(probe), &mine));
        runs.extend(mine);
    }
    let first = plan.conditions[0];
    let first_link = plan.link(&first);
    Ok(CompeteReport {
        mode: "compete",
        kernel: kernel_release(),
        prefix: topo.prefix.clone(),
        emulator: kind,
        path: PathInfo {
            bits_per_second: first.rate_bps,
            rtt_ms: first.rtt.as_secs_f64() * 1e3,
            buffer_bytes: first_link.buffer_bytes,
            duration_s: plan.duration.as_secs_f64(),
            seed: plan.seed,
        },
        flows_per_algorithm: plan.flows,
        starts_s: starts.iter().map(Duration::as_secs_f64).collect(),
        runs_per_condition: plan.runs,
        cc_on: plan.cc_on,
        runs,
        conditions,
        bpf_algorithms: Vec::new(),
    })
}

/// One start per algorithm: `starts` as given (one each), one for all, or
/// all at zero.
pub fn per_algorithm_starts(plan: &Plan, starts: &[Duration]) -> Result<Vec<Duration>> {
    let n = plan.algorithms.len();
    let v = match starts.len() {
        0 => vec![Duration::ZERO; n],
        1 => vec![starts[0]; n],
        k if k == n => starts.to_vec(),
        k => {
            return Err(LabError::Invalid(format!(
                "--start: {k} values for {n} algorithms (give one, or one per algorithm)"
            )));
        }
    };
    if let Some(s) = v.iter().find(|s| **s >= plan.duration) {
        return Err(LabError::Invalid(format!(
            "--start: {} s is not before the end of the {} s run",
            s.as_secs_f64(),
            plan.duration.as_secs_f64()
        )));
    }
    Ok(v)
}

/// The test: every algorithm's flows, in `--cc` order.
fn spec(plan: &Plan, starts: &[Duration]) -> TestSpec {
    let flows = plan
        .algorithms
        .iter()
        .zip(starts)
        .flat_map(|(cc, &start)| {
            std::iter::repeat_n(
                FlowSpec {
                    cc: cc.clone(),
                    start,
                },
                plan.flows,
            )
        })
        .collect();
    TestSpec {
        flows,
        ..TestSpec::uniform("", 0, plan.cc_on, plan.duration)
    }
}

/// A run's report from the tester's flows.
fn compete_run(
    plan: &Plan,
    cond: &PathConditions,
    starts: &[Duration],
    base_ms: Option<f64>,
    link: LinkParams,
    (run, seed): (usize, u64),
    m: Measured<TestResult>,
) -> CompeteRun {
    let total: f64 = m.value.flows.iter().map(|f| f.bits_per_second).sum();
    let flows: Vec<CompeteFlow> = m
        .value
        .flows
        .into_iter()
        .enumerate()
        .map(|(i, f)| {
            let ai = i / plan.flows.max(1);
            flow(i, &plan.algorithms[ai], starts[ai], total, f)
        })
        .collect();
    let goodputs: Vec<f64> = flows.iter().map(|f| f.bits_per_second).collect();
    let queue: Vec<f64> = flows.iter().flat_map(|f| inflation(f, base_ms)).collect();
    CompeteRun {
        label: cond.label(),
        loss: cond.loss,
        run,
        seed,
        duration_s: plan.duration.as_secs_f64(),
        algorithms: by_algorithm(&plan.algorithms, &flows, base_ms),
        link: CompeteLink {
            bits_per_second: link.rate_bps,
            buffer_bytes: link.buffer_bytes,
            utilization: link.rate_bps.map(|r| total / r as f64),
            queue_delay_ms: Percentiles::of(queue),
        },
        jain_index: jain_index(&goodputs),
        flows,
        emulator: m.emulator,
        spoiled: m.spoiled.is_some(),
        spoiled_reason: m.spoiled,
        attempts: m.attempts,
    }
}

fn flow(i: usize, cc: &str, start: Duration, total: f64, f: FlowResult) -> CompeteFlow {
    let rtts: Vec<f64> = f
        .samples
        .iter()
        .filter(|s| s.rtt > 0 && s.t_s >= start.as_secs_f64())
        .map(|s| f64::from(s.rtt) / 1e3)
        .collect();
    CompeteFlow {
        flow: i,
        cc: cc.to_string(),
        start_s: start.as_secs_f64(),
        bytes_delivered: f.bytes,
        bits_per_second: f.bits_per_second,
        share: if total > 0.0 {
            f.bits_per_second / total
        } else {
            0.0
        },
        retransmits: f.retransmits,
        rtt_ms: Percentiles::of(rtts),
        sender_tcp_congestion: f.sender_tcp_congestion,
        samples: f.samples,
    }
}

/// A flow's smoothed RTTs above the base RTT, milliseconds.
fn inflation(f: &CompeteFlow, base_ms: Option<f64>) -> Vec<f64> {
    let Some(base) = base_ms else {
        return Vec::new();
    };
    f.samples
        .iter()
        .filter(|s| s.rtt > 0 && s.t_s >= f.start_s)
        .map(|s| (f64::from(s.rtt) / 1e3 - base).max(0.0))
        .collect()
}

/// Each distinct algorithm's flows together, in `--cc` order.
fn by_algorithm(
    names: &[String],
    flows: &[CompeteFlow],
    base_ms: Option<f64>,
) -> Vec<AlgorithmShare> {
    let mut seen: Vec<&String> = Vec::new();
    for n in names {
        if !seen.contains(&n) {
            seen.push(n);
        }
    }
    seen.into_iter()
        .map(|cc| {
            let mine: Vec<&CompeteFlow> = flows.iter().filter(|f| &f.cc == cc).collect();
            let mut inf: Vec<f64> = mine.iter().flat_map(|f| inflation(f, base_ms)).collect();
            AlgorithmShare {
                cc: cc.clone(),
                flows: mine.len(),
                bits_per_second: mine.iter().map(|f| f.bits_per_second).sum(),
                share: mine.iter().map(|f| f.share).sum(),
                retransmits: mine.iter().map(|f| f.retransmits).sum(),
                rtt_inflation_ms: bbrkit_diag::summary::median(&mut inf),
            }
        })
        .collect()
}

/// Medians over a condition's runs.
fn summary(
    cond: &PathConditions,
    kind: EmulatorKind,
    link: LinkParams,
    probe: Option<ProbeResult>,
    runs: &[CompeteRun],
) -> CompeteSummary {
    let algorithms = runs
        .first()
        .map(|r| {
            r.algorithms
                .iter()
                .enumerate()
                .map(|(i, a)| {
                    let of = |f: fn(&AlgorithmShare) -> f64| {
                        median(runs.iter().map(|r| f(&r.algorithms[i])))
                    };
                    let mut inf: Vec<f64> = runs
                        .iter()
                        .filter_map(|r| r.algorithms[i].rtt_inflation_ms)
                        .collect();
                    AlgorithmShare {
                        cc: a.cc.clone(),
                        flows: a.flows,
                        bits_per_second: of(|a| a.bits_per_second),
                        share: of(|a| a.share),
                        retransmits: of(|a| a.retransmits as f64).round() as u64,
                        rtt_inflation_ms: bbrkit_diag::summary::median(&mut inf),
                    }
                })
                .collect()
        })
        .unwrap_or_default();
    CompeteSummary {
        label: cond.label(),
        emulator: kind,
        link,
        probe,
        algorithms,
        jain_index: median(runs.iter().map(|r| r.jain_index)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(algorithms: &[&str], flows: usize) -> Plan {
        Plan {
            conditions: crate::plan::seed_conditions(),
            algorithms: algorithms.iter().map(|s| s.to_string()).collect(),
            runs: 1,
            duration: Duration::from_secs(10),
            flows,
            cc_on: CcOn::Sender,
            emulator: EmulatorKind::Auto,
            seed: 1,
            mtu: 1500,
            retries: 0,
            ecn_threshold: None,
        }
    }

    #[test]
    fn each_algorithm_gets_its_flows_and_start() {
        let p = plan(&["bbr", "cubic"], 2);
        let starts = per_algorithm_starts(&p, &[Duration::ZERO, Duration::from_secs(2)]).unwrap();
        let s = spec(&p, &starts);
        let got: Vec<(&str, u64)> = s
            .flows
            .iter()
            .map(|f| (f.cc.as_str(), f.start.as_secs()))
            .collect();
        assert_eq!(got, [("bbr", 0), ("bbr", 0), ("cubic", 2), ("cubic", 2)]);
        assert_eq!(per_algorithm_starts(&p, &[]).unwrap(), [Duration::ZERO; 2]);
        assert!(per_algorithm_starts(&p, &[Duration::ZERO; 3]).is_err());
        assert!(per_algorithm_starts(&p, &[Duration::from_secs(10)]).is_err());
    }

    fn cflow(cc: &str, bps: f64, rtts_ms: &[u32]) -> CompeteFlow {
        CompeteFlow {
            flow: 0,
            cc: cc.into(),
            start_s: 0.0,
            bytes_delivered: 0,
            bits_per_second: bps,
            share: bps / 100.0,
            retransmits: 1,
            rtt_ms: None,
            sender_tcp_congestion: cc.into(),
            samples: rtts_ms
                .iter()
                .map(|&ms| crate::tcpinfo::TcpSample {
                    rtt: ms * 1000,
                    ..Default::default()
                })
                .collect(),
        }
    }

    #[test]
    fn a_repeated_name_counts_once_with_all_its_flows() {
        let flows = [
            cflow("bbr", 60.0, &[30, 30]),
            cflow("cubic", 15.0, &[40]),
            cflow("bbr", 25.0, &[30]),
        ];
        let names: Vec<String> = ["bbr", "cubic", "bbr"].map(String::from).to_vec();
        let a = by_algorithm(&names, &flows, Some(20.0));
        assert_eq!(a.len(), 2);
        assert_eq!((a[0].cc.as_str(), a[0].flows), ("bbr", 2));
        assert!((a[0].share - 0.85).abs() < 1e-9 && (a[1].share - 0.15).abs() < 1e-9);
        assert_eq!(a[0].rtt_inflation_ms, Some(10.0));
        assert_eq!(a[1].rtt_inflation_ms, Some(20.0));
        assert_eq!(a[0].retransmits, 2);
        assert!(
            by_algorithm(&names, &flows, None)[0]
                .rtt_inflation_ms
                .is_none()
        );
    }
}
