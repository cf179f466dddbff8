//! The experiment runner: algorithms × conditions × runs on one topology.
//!
//! Owns the plan (conditions, algorithms, runs, duration, flows, seeds), the
//! order of runs (for each condition and run, every algorithm in turn, so slow
//! drifts of the machine hit all algorithms alike), repeating runs the
//! emulator spoiled, medians, and the report. Must never print: progress is
//! reported through a callback.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde::Serialize;

use crate::emulator::model::LinkParams;
use crate::emulator::{Emulator, EmulatorKind, EmulatorReport};
use crate::error::{LabError, Result};
use crate::probe::{ProbeResult, probe};
use crate::tcpinfo;
use crate::tester::{CcOn, FlowResult, TestSpec, run_test};
use crate::topology::Topology;

/// Size of the bottleneck buffer, resolved per condition.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum BufferSpec {
    /// Bytes.
    Bytes(u64),
    /// MTU-sized frames.
    Packets(u64),
    /// Multiples of rate × delay.
    Bdp(f64),
}

/// One path condition.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Condition {
    /// One-way delay of the data direction.
    pub delay: Duration,
    /// Uniform jitter.
    pub jitter: Duration,
    /// Random loss probability.
    pub loss: f64,
    /// Bottleneck rate, bits/s.
    pub rate_bps: Option<u64>,
    /// Bottleneck buffer.
    pub buffer: BufferSpec,
}

impl Condition {
    /// The emulator parameters for links of `mtu` bytes. A buffer smaller
    /// than 10 frames is raised to 10 frames.
    pub fn params(&self, mtu: u32) -> LinkParams {
        let frame = mtu as u64 + 14;
        let buffer_bytes = self.rate_bps.map(|rate| {
            let b = match self.buffer {
                BufferSpec::Bytes(b) => b,
                BufferSpec::Packets(p) => p * frame,
                BufferSpec::Bdp(x) => (x * rate as f64 / 8.0 * self.delay.as_secs_f64()) as u64,
            };
            b.max(10 * frame)
        });
        LinkParams {
            delay: self.delay,
            jitter: self.jitter,
            loss: self.loss,
            rate_bps: self.rate_bps,
            buffer_bytes,
        }
    }

    /// A short human label, like the seed's table rows.
    pub fn label(&self) -> String {
        let mut parts = Vec::new();
        if !self.delay.is_zero() {
            parts.push(format!("{} ms", fmt_num(self.delay.as_secs_f64() * 1e3)));
        }
        if !self.jitter.is_zero() {
            parts.push(format!("±{} ms", fmt_num(self.jitter.as_secs_f64() * 1e3)));
        }
        if self.loss > 0.0 {
            parts.push(format!("{}% loss", fmt_num(self.loss * 100.0)));
        }
        if let Some(r) = self.rate_bps {
            parts.push(if r >= 1_000_000_000 {
                format!("{} Gbit/s", fmt_num(r as f64 / 1e9))
            } else {
                format!("{} Mbit/s", fmt_num(r as f64 / 1e6))
            });
        }
        if parts.is_empty() {
            "no impairment".into()
        } else {
            parts.join(" + ")
        }
    }
}

fn fmt_num(v: f64) -> String {
    let s = format!("{v:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// The whole experiment.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Path conditions, in order.
    pub conditions: Vec<Condition>,
    /// Algorithms, in order (the ratio column is last ÷ first).
    pub algorithms: Vec<String>,
    /// Runs per condition × algorithm.
    pub runs: usize,
    /// Sending time per run.
    pub duration: Duration,
    /// Parallel flows per run.
    pub flows: usize,
    /// Where the algorithm is set.
    pub cc_on: CcOn,
    /// Requested emulator.
    pub emulator: EmulatorKind,
    /// Base seed of the loss process (run seeds derive from it).
    pub seed: u64,
    /// Link MTU.
    pub mtu: u32,
    /// How often a spoiled run is repeated.
    pub retries: usize,
}

/// One run of one algorithm under one condition.
#[derive(Debug, Clone, Serialize)]
pub struct RunResult {
    /// 1-based run number.
    pub run: usize,
    /// Seed of the emulator's loss process.
    pub seed: u64,
    /// Receiver goodput summed over flows.
    pub bits_per_second: f64,
    /// Bytes received.
    pub bytes: u64,
    /// Sender retransmissions (`tcpi_total_retrans`) summed over flows.
    pub retransmits: u64,
    /// Sender CPU seconds (sending threads; softirq work done on other
    /// threads is not included).
    pub sender_cpu_s: f64,
    /// Per flow.
    pub flows: Vec<FlowResult>,
    /// The emulator's account of the run (userspace and split emulators).
    pub emulator: Option<EmulatorReport>,
    /// True when the emulator delivered too many frames late, or frames were
    /// dropped outside the emulated link (see `spoiled_reason`); such runs
    /// are repeated.
    pub spoiled: bool,
    /// Why the run counts as spoiled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spoiled_reason: Option<String>,
    /// Attempts made for this run (1 = not repeated).
    pub attempts: usize,
    /// Whether repeating a spoiled run could help (not when the emulator
    /// was at its ceiling).
    #[serde(skip)]
    pub retry_may_help: bool,
}

/// One algorithm under one condition.
#[derive(Debug, Clone, Serialize)]
pub struct CcResult {
    /// Algorithm name.
    pub cc: String,
    /// Median over runs of goodput.
    pub bits_per_second: f64,
    /// Median over runs of retransmissions.
    pub retransmits: f64,
    /// Every run.
    pub runs: Vec<RunResult>,
}

/// One condition with all its algorithms.
#[derive(Debug, Clone, Serialize)]
pub struct ConditionResult {
    /// Human label.
    pub label: String,
    /// The emulator this condition ran with (see [`condition_emulator`]).
    pub emulator: EmulatorKind,
    /// The emulator parameters.
    #[serde(flatten)]
    pub link: LinkParams,
    /// A UDP ping through the path before the runs.
    pub probe: Option<ProbeResult>,
    /// Per algorithm, in plan order.
    pub results: Vec<CcResult>,
    /// Median of the last algorithm ÷ median of the first.
    pub ratio: Option<f64>,
}

/// The experiment's report.
#[derive(Debug, Clone, Serialize)]
pub struct LabReport {
    /// Per-run name prefix.
    pub prefix: String,
    /// `uname -r`.
    pub kernel: String,
    /// The emulator used.
    pub emulator: EmulatorKind,
    /// Base seed.
    pub seed: u64,
    /// Runs per condition × algorithm.
    pub runs: usize,
    /// Sending time per run.
    pub duration_s: f64,
    /// Parallel flows.
    pub flows: usize,
    /// Where the algorithm was set.
    pub cc_on: CcOn,
    /// Link MTU in bytes.
    pub mtu: u32,
    /// Per condition.
    pub conditions: Vec<ConditionResult>,
    /// BPF congestion controls among the algorithms, and whether the lab
    /// registered them for the run (filled by the caller that held them).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub bpf_algorithms: Vec<crate::bpf_cc::BpfAlgorithm>,
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
        /// The run.
        cc: &'a str,
        /// Its result.
        result: &'a RunResult,
    },
    /// A spoiled run is being repeated.
    Repeat {
        /// Why.
        reason: &'a str,
    },
}

/// Checks the plan against the kernel before anything is built.
pub fn validate(plan: &Plan) -> Result<()> {
    let available = tcpinfo::available_algorithms()
        .map_err(|e| LabError::io("read tcp_available_congestion_control", e))?;
    for cc in &plan.algorithms {
        if !available.iter().any(|a| a == cc) {
            return Err(LabError::UnknownAlgorithm {
                wanted: cc.clone(),
                available: available.join(" "),
            });
        }
    }
    if plan.algorithms.is_empty() || plan.conditions.is_empty() || plan.runs == 0 {
        return Err(LabError::Invalid("nothing to run".into()));
    }
    if plan.flows == 0 || plan.flows > 64 {
        return Err(LabError::Invalid("parallel flows must be 1..=64".into()));
    }
    if plan.duration < Duration::from_millis(500) {
        return Err(LabError::Invalid("duration must be at least 500ms".into()));
    }
    if !(576..=9000).contains(&plan.mtu) {
        return Err(LabError::Invalid("mtu must be 576..=9000".into()));
    }
    Ok(())
}

/// Why a run's emulator report makes it untrustworthy, if it does, and
/// whether repeating it can help (a stall may not recur; an emulator at its
/// ceiling will be there again).
pub fn spoiled(rep: &EmulatorReport) -> Option<(String, bool)> {
    // The direction that holds frames (the data one, or the ACK one in the
    // split emulator) is the one whose lateness matters; judge the worse.
    let late_of = |d: &crate::emulator::forwarder::ForwarderStats| {
        if d.frames_out > 0 {
            d.late_frames as f64 / d.frames_out as f64
        } else {
            0.0
        }
    };
    let (d, late) = [&rep.data, &rep.reverse]
        .into_iter()
        .map(|d| (d, late_of(d)))
        .fold((&rep.data, 0.0), |a, b| if b.1 > a.1 { b } else { a });
    // Own drops are judged per direction: ACKs are a few percent of the
    // frames, so pooling them with the data would hide a forwarder dropping
    // many of them.
    let own = |d: &crate::emulator::forwarder::ForwarderStats| d.kernel_drops + d.overflow_drops;
    let own_drops = own(&rep.data) + own(&rep.reverse);
    let too_many_own = [&rep.data, &rep.reverse]
        .into_iter()
        .any(|d| d.frames_in > 0 && own(d) as f64 > 0.001 * d.frames_in as f64);
    if late > 0.25 {
        return Some((
            format!(
                "emulator at its ceiling: {:.0}% of frames > {} µs late, {own_drops} dropped outside the link",
                late * 100.0,
                d.late_us_threshold
            ),
            false,
        ));
    }
    if too_many_own {
        return Some((
            format!(
                "{own_drops} frames dropped outside the emulated link (the emulator's buffers \
                 or a kernel receive backlog)"
            ),
            true,
        ));
    }
    if late > 0.10 {
        return Some((
            format!(
                "{} of {} frames delivered > {} µs late (CPU stall or emulator near its ceiling)",
                d.late_frames, d.frames_out, d.late_us_threshold
            ),
            true,
        ));
    }
    None
}

/// The emulator for `cond` when the plan asked for `requested` and the
/// kernel resolved it to `resolved`. Under `auto`, a condition with a rate
/// limit runs on the userspace emulator instead of split: its link model
/// serialises each frame exactly, and against the simulator (`bbrkit sim`,
/// BBRv1, 500 Mbit/s, 10 ms, 1 BDP: 1 024 drops, RTT p50 12.6 ms) it gave
/// BBR 1 018–1 530 drops and 12.6–13.0 ms, while split's `tbf` gave
/// 6 599–9 929 drops and 18–19 ms (CUBIC agreed on all three); at
/// 1 Gbit/s on 2 cores split also left the sender CPU-bound before the
/// queue formed. Rated links rarely need more than the userspace
/// emulator's 2.5–3.8 Gbit/s; `--emulator split` still forces split.
pub fn condition_emulator(
    requested: EmulatorKind,
    resolved: EmulatorKind,
    cond: &Condition,
) -> EmulatorKind {
    if requested == EmulatorKind::Auto && resolved == EmulatorKind::Split && cond.rate_bps.is_some()
    {
        EmulatorKind::Userspace
    } else {
        resolved
    }
}

/// Runs `plan` on `topo` with the resolved emulator `kind`.
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
    let mut session = Session {
        plan,
        topo,
        cancel,
        on_event,
        done: 0,
        total: plan.conditions.len() * plan.algorithms.len() * plan.runs,
    };
    let mut conditions = Vec::new();
    for (ci, cond) in plan.conditions.iter().enumerate() {
        let kind = condition_emulator(plan.emulator, kind, cond);
        conditions.push(session.condition(ci, cond, kind)?);
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

/// One [`run`] in progress: what it runs on, and how far it got.
struct Session<'a> {
    plan: &'a Plan,
    topo: &'a Topology,
    cancel: &'a AtomicBool,
    on_event: &'a mut dyn FnMut(Event<'_>),
    /// Runs finished (repeats not counted), of `total`.
    done: usize,
    total: usize,
}

impl Session<'_> {
    /// Probes condition number `ci` on emulator `kind`, then runs every
    /// algorithm `plan.runs` times, in turn.
    fn condition(
        &mut self,
        ci: usize,
        cond: &Condition,
        kind: EmulatorKind,
    ) -> Result<ConditionResult> {
        let plan = self.plan;
        let link = cond.params(plan.mtu);
        let label = cond.label();
        let probe_result = Some(self.probe(kind, link)?);
        let mut results: Vec<CcResult> = plan
            .algorithms
            .iter()
            .map(|cc| CcResult {
                cc: cc.clone(),
                bits_per_second: 0.0,
                retransmits: 0.0,
                runs: Vec::new(),
            })
            .collect();
        for run_no in 1..=plan.runs {
            for (ai, cc) in plan.algorithms.iter().enumerate() {
                let seed = run_seed(plan.seed, ci, run_no, ai);
                let result = self.repeated_run(kind, link, cc, seed, run_no)?;
                self.done += 1;
                (self.on_event)(Event::RunDone {
                    done: self.done,
                    total: self.total,
                    condition: &label,
                    cc,
                    result: &result,
                });
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

    /// A 50-probe ping through the path of `link` on a fresh emulator.
    fn probe(&self, kind: EmulatorKind, link: LinkParams) -> Result<ProbeResult> {
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

    /// Runs `cc` once, repeating the run (up to `plan.retries` times) while
    /// it is spoiled in a way a repeat may cure.
    fn repeated_run(
        &mut self,
        kind: EmulatorKind,
        link: LinkParams,
        cc: &str,
        seed: u64,
        run_no: usize,
    ) -> Result<RunResult> {
        let spec = TestSpec {
            cc: cc.to_string(),
            cc_on: self.plan.cc_on,
            flows: self.plan.flows,
            duration: self.plan.duration,
            sample_every: Duration::from_millis(100),
            keep_off_cpu: None,
        };
        let mut attempts = 0;
        loop {
            attempts += 1;
            let r = one_run(self.topo, kind, link, &spec, seed, run_no, self.cancel)?;
            if r.spoiled && r.retry_may_help && attempts <= self.plan.retries {
                (self.on_event)(Event::Repeat {
                    reason: r.spoiled_reason.as_deref().unwrap_or(""),
                });
                continue;
            }
            return Ok(RunResult { attempts, ..r });
        }
    }
}

/// The seed of run `run_no` of algorithm `ai` under condition `ci`.
fn run_seed(base: u64, ci: usize, run_no: usize, ai: usize) -> u64 {
    base.wrapping_add((ci as u64) << 32)
        .wrapping_add((run_no as u64) << 16)
        .wrapping_add(ai as u64)
}

/// Fills in each algorithm's medians over its runs; returns the ratio of
/// the last algorithm's median goodput to the first's.
fn summarise(results: &mut [CcResult]) -> Option<f64> {
    for r in results.iter_mut() {
        r.bits_per_second = median(r.runs.iter().map(|x| x.bits_per_second).collect());
        r.retransmits = median(r.runs.iter().map(|x| x.retransmits as f64).collect());
    }
    match (results.first(), results.last()) {
        (Some(a), Some(b)) if results.len() > 1 && a.bits_per_second > 0.0 => {
            Some(b.bits_per_second / a.bits_per_second)
        }
        _ => None,
    }
}

fn one_run(
    topo: &Topology,
    kind: EmulatorKind,
    link: LinkParams,
    spec: &TestSpec,
    seed: u64,
    run_no: usize,
    cancel: &AtomicBool,
) -> Result<RunResult> {
    if cancel.load(Ordering::Relaxed) {
        return Err(LabError::Interrupted);
    }
    let emu = Emulator::start_kind(topo, kind, link, seed)?;
    // With a rate limit the machine has CPU to spare, and the sender's
    // transmit path (tbf-paced) landing on the ACK forwarder's CPU made
    // 15-22% of ACKs > 500 µs late at 10 ms + 1 Gbit/s; keeping the senders
    // off that CPU brings it to ~0.1%. Without a rate the CPUs are the
    // bottleneck: pinning would cost ~10% of BBR's 10 ms + 2% throughput
    // (2.21 vs 2.46 Gbit/s), for 0.3-1.5% late ACKs that remain counted.
    let spec = TestSpec {
        keep_off_cpu: emu.forwarder_cpu().filter(|_| link.rate_bps.is_some()),
        ..spec.clone()
    };
    let test = run_test(topo, &spec, cancel);
    let rep = emu.stop()?;
    let test = test?;
    let verdict = spoiled(&rep);
    let retry_may_help = verdict.as_ref().is_some_and(|v| v.1);
    let reason = verdict.map(|v| v.0);
    Ok(RunResult {
        run: run_no,
        seed,
        bits_per_second: test.bits_per_second,
        bytes: test.bytes,
        retransmits: test.retransmits,
        sender_cpu_s: test.sender_cpu_s,
        flows: test.flows,
        emulator: Some(rep),
        spoiled: reason.is_some(),
        spoiled_reason: reason,
        retry_may_help,
        attempts: 1,
    })
}

/// The median (mean of the middle two for an even count); 0 when empty.
pub fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn kernel_release() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// The seed experiment: no impairment, 10 ms + 2 % loss, 10 ms + 5 % loss.
pub fn seed_conditions() -> Vec<Condition> {
    let c = |ms, loss| Condition {
        delay: Duration::from_millis(ms),
        jitter: Duration::ZERO,
        loss,
        rate_bps: None,
        buffer: BufferSpec::Bdp(1.0),
    };
    vec![c(0, 0.0), c(10, 0.02), c(10, 0.05)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(median(vec![]), 0.0);
    }

    #[test]
    fn labels_follow_the_seed_table() {
        let s = seed_conditions();
        assert_eq!(s[0].label(), "no impairment");
        assert_eq!(s[1].label(), "10 ms + 2% loss");
        assert_eq!(s[2].label(), "10 ms + 5% loss");
        let mut c = s[1];
        c.rate_bps = Some(1_000_000_000);
        assert_eq!(c.label(), "10 ms + 2% loss + 1 Gbit/s");
        c.rate_bps = Some(100_000_000);
        assert_eq!(c.label(), "10 ms + 2% loss + 100 Mbit/s");
    }

    #[test]
    fn buffer_resolves_to_bytes() {
        let mut c = seed_conditions()[1];
        c.rate_bps = Some(100_000_000);
        c.buffer = BufferSpec::Bdp(1.0);
        // 100 Mbit/s × 10 ms = 125 000 bytes.
        assert_eq!(c.params(1500).buffer_bytes, Some(125_000));
        c.buffer = BufferSpec::Packets(100);
        assert_eq!(c.params(1500).buffer_bytes, Some(151_400));
        c.buffer = BufferSpec::Bytes(1);
        assert_eq!(
            c.params(1500).buffer_bytes,
            Some(15_140),
            "at least 10 frames"
        );
        c.rate_bps = None;
        assert_eq!(c.params(1500).buffer_bytes, None);
    }

    #[test]
    fn spoiled_runs_are_recognised() {
        let mut rep = EmulatorReport::default();
        rep.data.frames_in = 1000;
        rep.data.frames_out = 1000;
        assert_eq!(spoiled(&rep), None);
        rep.data.late_frames = 200;
        let (why, retry) = spoiled(&rep).unwrap();
        assert!(why.contains("late") && retry, "{why}");
        rep.data.late_frames = 300;
        let (why, retry) = spoiled(&rep).unwrap();
        assert!(why.contains("ceiling") && !retry, "{why}");
        rep.data.late_frames = 0;
        rep.data.kernel_drops = 5;
        let (why, retry) = spoiled(&rep).unwrap();
        assert!(why.contains("dropped") && retry, "{why}");
    }

    #[test]
    fn auto_runs_rated_conditions_on_the_userspace_emulator() {
        let cond = |rate_bps| Condition {
            delay: Duration::from_millis(10),
            jitter: Duration::ZERO,
            loss: 0.02,
            rate_bps,
            buffer: BufferSpec::Bdp(1.0),
        };
        use EmulatorKind::*;
        assert_eq!(condition_emulator(Auto, Split, &cond(None)), Split);
        assert_eq!(
            condition_emulator(Auto, Split, &cond(Some(1_000_000_000))),
            Userspace
        );
        assert_eq!(
            condition_emulator(Split, Split, &cond(Some(1_000_000_000))),
            Split
        );
        assert_eq!(
            condition_emulator(Auto, Netem, &cond(Some(1_000_000_000))),
            Netem
        );
        assert_eq!(condition_emulator(Auto, Userspace, &cond(None)), Userspace);
    }

    #[test]
    fn late_acks_spoil_a_split_run() {
        // Split emulator: the data direction holds nothing (no lateness),
        // the ACK direction carries the delay.
        let mut rep = EmulatorReport::default();
        rep.data.frames_in = 100_000;
        rep.data.frames_out = 98_000;
        rep.reverse.frames_in = 10_000;
        rep.reverse.frames_out = 10_000;
        rep.reverse.late_frames = 50;
        assert_eq!(spoiled(&rep), None, "0.5% late ACKs are fine");
        rep.reverse.late_frames = 1_500;
        let (why, retry) = spoiled(&rep).unwrap();
        assert!(why.contains("1500 of 10000") && retry, "{why}");
        rep.reverse.late_frames = 0;
        rep.reverse.overflow_drops = 20;
        let (why, _) = spoiled(&rep).unwrap();
        assert!(
            why.contains("20 frames"),
            "0.2% of the ACKs, though 0.02% of all frames: {why}"
        );
    }
}
