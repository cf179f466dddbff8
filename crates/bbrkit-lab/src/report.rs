//! The report of a bulk-flow lab run (each algorithm alone on the path):
//! every run, the medians per condition and algorithm, and each
//! algorithm's goodput ratio to the first algorithm's.
//!
//! Owns the report's shape (the `--json` contract in docs/lab.md) and its
//! statistics. Must never run anything.

use serde::Serialize;

use crate::emulator::model::LinkParams;
use crate::emulator::{EmulatorKind, EmulatorReport};
use crate::probe::ProbeResult;
use crate::tester::{CcOn, FlowResult};

/// Where each BPF algorithm of the run came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BpfAlgorithm {
    /// Algorithm name.
    pub name: String,
    /// `true`: the lab registered it for the run; `false`: it was already
    /// registered (left as it was).
    pub registered_by_lab: bool,
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
    /// Median goodput ÷ the first algorithm's (`None` for the first, or
    /// when the first delivered nothing).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ratio: Option<f64>,
    /// Every run.
    pub runs: Vec<RunResult>,
}

/// One condition with all its algorithms.
#[derive(Debug, Clone, Serialize)]
pub struct ConditionResult {
    /// Human label.
    pub label: String,
    /// The emulator this condition ran with (see
    /// [`crate::verdict::condition_emulator`]).
    pub emulator: EmulatorKind,
    /// The emulator parameters.
    #[serde(flatten)]
    pub link: LinkParams,
    /// A UDP ping through the path before the runs.
    pub probe: Option<ProbeResult>,
    /// Per algorithm, in plan order.
    pub results: Vec<CcResult>,
    /// Median of the last algorithm ÷ median of the first (each result's
    /// `ratio` has every algorithm's).
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
    pub bpf_algorithms: Vec<BpfAlgorithm>,
}

/// Fills in each algorithm's medians over its runs and its ratio to the
/// first; returns the ratio of the last algorithm's median goodput to the
/// first's.
pub fn summarise(results: &mut [CcResult]) -> Option<f64> {
    for r in results.iter_mut() {
        r.bits_per_second = median(r.runs.iter().map(|x| x.bits_per_second));
        r.retransmits = median(r.runs.iter().map(|x| x.retransmits as f64));
    }
    let base = results.first().map(|r| r.bits_per_second).unwrap_or(0.0);
    for r in results.iter_mut().skip(1) {
        r.ratio = (base > 0.0).then(|| r.bits_per_second / base);
    }
    if results.len() > 1 {
        results.last().and_then(|r| r.ratio)
    } else {
        None
    }
}

/// bbrkit's one median ([`bbrkit_diag::summary::median`]); a run list is
/// never empty here, so an empty one reads as 0.
pub fn median(values: impl IntoIterator<Item = f64>) -> f64 {
    let mut v: Vec<f64> = values.into_iter().collect();
    bbrkit_diag::summary::median(&mut v).unwrap_or(0.0)
}

/// The running kernel's release (`uname -r`).
pub fn kernel_release() -> String {
    nix::sys::utsname::uname()
        .map(|u| u.release().to_string_lossy().into_owned())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(cc: &str, goodputs: &[f64]) -> CcResult {
        CcResult {
            cc: cc.into(),
            bits_per_second: 0.0,
            retransmits: 0.0,
            ratio: None,
            runs: goodputs
                .iter()
                .enumerate()
                .map(|(i, &g)| RunResult {
                    run: i + 1,
                    seed: 0,
                    bits_per_second: g,
                    bytes: 0,
                    retransmits: i as u64,
                    sender_cpu_s: 0.0,
                    flows: Vec::new(),
                    emulator: None,
                    spoiled: false,
                    spoiled_reason: None,
                    attempts: 1,
                })
                .collect(),
        }
    }

    #[test]
    fn every_algorithm_gets_its_ratio_to_the_first() {
        let mut r = vec![
            result("cubic", &[3.0, 1.0, 2.0]),
            result("bbr", &[40.0, 20.0]),
            result("bbr3", &[8.0]),
        ];
        let last = summarise(&mut r);
        assert_eq!(r[0].bits_per_second, 2.0);
        assert_eq!(r[1].bits_per_second, 30.0, "mean of the middle two");
        assert_eq!(r[0].ratio, None);
        assert_eq!(r[1].ratio, Some(15.0));
        assert_eq!(r[2].ratio, Some(4.0));
        assert_eq!(last, Some(4.0));
        assert_eq!(r[0].retransmits, 1.0);
    }

    #[test]
    fn the_kernel_release_is_read() {
        assert!(!kernel_release().is_empty());
    }
}
