//! Rendering of `bbrkit sim` results: human tables, the `--json` document,
//! the `--timeseries` CSV and the `--plot` SVG (written through
//! [`crate::output`]).
//! Owns presentation only; must never simulate or change what the
//! simulator reports.

pub mod csv;
pub mod plot;
pub mod table;
pub mod trace;
pub mod workload;

use bbrkit_sim::{Plan, RunReport};
use serde::Serialize;

/// The `--json` document of `bbrkit sim`.
#[derive(Debug, Clone, Serialize)]
pub struct Document {
    /// `alone` (each algorithm by itself per condition) or `compete`.
    pub mode: &'static str,
    /// The path every run used (loss varies per run).
    pub path: PathInfo,
    /// One entry per condition (alone: per condition and algorithm).
    pub runs: Vec<Run>,
}

/// The bottleneck path settings.
#[derive(Debug, Clone, Serialize)]
pub struct PathInfo {
    /// Bottleneck rate, bits per second.
    pub bits_per_second: u64,
    /// Base round-trip time, milliseconds.
    pub rtt_ms: f64,
    /// Buffer limit, bytes.
    pub buffer_bytes: u64,
    /// Mean loss burst length in packets (1 = Bernoulli).
    pub loss_burst_packets: f64,
    /// ACK-path loss probability (0..1).
    pub ack_loss: f64,
    /// Simulated time per run, seconds.
    pub duration_s: f64,
    /// Random seed.
    pub seed: u64,
    /// Maximum segment size, bytes.
    pub mss_bytes: u32,
    /// Whether Reno/CUBIC were paced (as with fq).
    pub pace_loss_based: bool,
    /// CE-marking threshold of the bottleneck queue, bytes (only with ECN on).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ecn_threshold_bytes: Option<u64>,
}

/// One simulation run.
#[derive(Debug, Clone, Serialize)]
pub struct Run {
    /// Data-path random loss probability (0..1) of this run.
    pub loss: f64,
    /// Its results.
    #[serde(flatten)]
    pub report: RunReport,
}

/// The output document: the path, and each configuration's loss and report.
pub fn document(
    plan: &Plan,
    configs: &[(f64, bbrkit_sim::SimConfig)],
    reports: Vec<RunReport>,
) -> Document {
    let runs: Vec<Run> = configs
        .iter()
        .zip(reports)
        .map(|((loss, _), report)| Run {
            loss: *loss,
            report,
        })
        .collect();
    Document {
        mode: if plan.compete { "compete" } else { "alone" },
        path: path_info(plan),
        runs,
    }
}

/// The path every run used, as the JSON states it.
pub fn path_info(plan: &Plan) -> PathInfo {
    PathInfo {
        bits_per_second: plan.path.rate_bps,
        rtt_ms: plan.path.rtt.as_secs_f64() * 1e3,
        buffer_bytes: plan.path.buffer_bytes(bbrkit_sim::DEFAULT_MSS),
        loss_burst_packets: plan.loss_burst,
        ack_loss: plan.path.ack_loss,
        duration_s: plan.duration.as_secs_f64(),
        seed: plan.seed,
        mss_bytes: bbrkit_sim::DEFAULT_MSS,
        pace_loss_based: plan.pace_loss_based,
        ecn_threshold_bytes: plan
            .ecn_threshold
            .map(|t| plan.path.size_bytes(t, bbrkit_sim::DEFAULT_MSS)),
    }
}
