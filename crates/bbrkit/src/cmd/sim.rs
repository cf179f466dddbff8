//! `bbrkit sim`: turns flags into an experiment plan
//! ([`bbrkit_sim::Plan`]; presets, sweeps and parallel runs live in
//! `bbrkit-sim`) and renders the results. Owns flag parsing and output;
//! must never hold simulation or experiment logic. Output files are checked
//! before simulating and written atomically.

use std::path::PathBuf;

use anyhow::{Context, bail};
use bbrkit_cc::{Algorithm, Duration};
use bbrkit_sim::{BufferSize, Plan, RunReport};

use crate::output;
use crate::sim_out::{Document, PathInfo, Run, table, trace, workload};
use crate::units::{parse_duration, parse_list, parse_loss, parse_rate, parse_size};
use crate::{Global, Outcome, print_json};

/// Ready-made scenarios from the seed articles ([`bbrkit_sim::Preset`]);
/// explicit flags override them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Preset {
    /// The seed experiment: CUBIC vs BBRv1, 1 Gbit/s, 10 ms, loss 0, 2%, 5%.
    Seed,
    /// CUBIC and BBRv1 sharing 100 Mbit/s, 40 ms, 1 BDP buffer (--compete).
    Fairness,
    /// CUBIC vs BBRv1 alone on 100 Mbit/s, 20 ms, with a 10 BDP buffer.
    Bufferbloat,
}

/// Arguments of `bbrkit sim`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Algorithms, comma-separated: reno, cubic, bbr1 (= bbr), bbr2, bbr3 [default: cubic,bbr1].
    #[arg(long, allow_hyphen_values = true)]
    cc: Option<String>,
    /// Bottleneck rate, e.g. 100mbit, 1gbit [default: 100mbit].
    #[arg(long, allow_hyphen_values = true)]
    rate: Option<String>,
    /// Base round-trip time, e.g. 10ms [default: 10ms].
    #[arg(long, allow_hyphen_values = true)]
    rtt: Option<String>,
    /// Random loss on the data path; a list runs each condition, e.g. 0,2%,5% [default: 0].
    #[arg(long, allow_hyphen_values = true)]
    loss: Option<String>,
    /// Mean loss burst length in packets (Gilbert-Elliott); 1 = independent losses.
    #[arg(long, default_value_t = 1.0)]
    loss_burst: f64,
    /// Random loss on the ACK path, e.g. 1% [default: 0].
    #[arg(long, allow_hyphen_values = true)]
    ack_loss: Option<String>,
    /// Drop-tail buffer: 1bdp, 100pkt, 64kb [default: 1bdp].
    #[arg(long, allow_hyphen_values = true)]
    buffer: Option<String>,
    /// Simulated time per run, e.g. 30s [default: 10s].
    #[arg(long, allow_hyphen_values = true)]
    duration: Option<String>,
    /// Seed for every random stream.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Put all listed flows on the bottleneck at once (a name may repeat).
    #[arg(long)]
    compete: bool,
    /// Per-flow start times, e.g. 0,5s (one value applies to all flows).
    #[arg(long, allow_hyphen_values = true)]
    start: Option<String>,
    /// Per-flow sizes: bulk, or bytes/packets like 10mb, 500pkt.
    #[arg(long, allow_hyphen_values = true)]
    size: Option<String>,
    /// Per-flow extra RTT for RTT-fairness runs, e.g. 0,40ms.
    #[arg(long, allow_hyphen_values = true)]
    extra_rtt: Option<String>,
    /// Pace Reno/CUBIC at Linux's ratios, as with the fq qdisc (BBR always paces).
    #[arg(long)]
    pace: bool,
    /// CE-mark packets arriving while more than this waits at the bottleneck
    /// (step-threshold ECN, DCTCP/L4S style), e.g. 20pkt, 0.2bdp, 30kb [default: no ECN].
    #[arg(long, allow_hyphen_values = true)]
    ecn_threshold: Option<String>,
    /// No tail-loss probes (Linux tcp_early_retrans=0): a tail loss waits for the RTO.
    #[arg(long)]
    no_tlp: bool,
    /// Receive window, e.g. 4mb [default: unlimited].
    #[arg(long, allow_hyphen_values = true)]
    rwnd: Option<String>,
    /// Write a per-flow time series (CSV) here.
    #[arg(long)]
    timeseries: Option<PathBuf>,
    /// Draw throughput, cwnd and RTT over time (SVG) here.
    #[arg(long)]
    plot: Option<PathBuf>,
    /// Sampling interval of --timeseries/--plot [default: 10ms, or duration/6000 if longer].
    #[arg(long, allow_hyphen_values = true)]
    interval: Option<String>,
    /// A ready-made scenario.
    #[arg(long, value_enum)]
    preset: Option<Preset>,
    /// Request/response traffic instead of bulk flows: `10kb`, `4mb`, or `web`.
    #[arg(long, value_name = "SPEC", conflicts_with_all = ["compete", "timeseries", "plot"])]
    workload: Option<String>,
    /// Concurrent clients of --workload.
    #[arg(long, default_value_t = 8, requires = "workload")]
    clients: usize,
    /// With --workload: reuse each client's connection (no handshake per request).
    #[arg(long, requires = "workload")]
    keepalive: bool,
}

fn ctx<T>(flag: &str, r: Result<T, crate::units::UnitError>) -> anyhow::Result<T> {
    r.map_err(|e| anyhow::anyhow!("--{flag}: {e}"))
}

/// Expands a per-flow list: one value for all, or exactly one per flow.
fn per_flow<T: Clone>(flag: &str, v: Vec<T>, n: usize, default: T) -> anyhow::Result<Vec<T>> {
    match v.len() {
        0 => Ok(vec![default; n]),
        1 => Ok(vec![v[0].clone(); n]),
        k if k == n => Ok(v),
        k => bail!("--{flag}: {k} values for {n} flows (give one, or one per flow)"),
    }
}

fn plan(a: &Args) -> anyhow::Result<Plan> {
    let base = match a.preset {
        None => Plan::default(),
        Some(Preset::Seed) => bbrkit_sim::Preset::Seed.plan(),
        Some(Preset::Fairness) => bbrkit_sim::Preset::Fairness.plan(),
        Some(Preset::Bufferbloat) => bbrkit_sim::Preset::Bufferbloat.plan(),
    };
    let algorithms = match a.cc.as_deref() {
        None => base.algorithms.clone(),
        Some(cc) => algorithms(cc)?,
    };
    let rate_bps = match a.rate.as_deref() {
        None => base.path.rate_bps,
        Some(r) => ctx("rate", parse_rate(r))?,
    };
    let rtt = match a.rtt.as_deref() {
        None => base.path.rtt,
        Some(r) => ctx("rtt", parse_duration(r))?,
    };
    let (losses, ack_loss) = losses(a, &base)?;
    let buffer = match a.buffer.as_deref() {
        None => base.path.buffer,
        Some(b) => buffer_size("buffer", b)?,
    };
    let duration = match a.duration.as_deref() {
        None => base.duration,
        Some(d) => ctx("duration", parse_duration(d))?,
    };
    if duration.is_zero() {
        bail!("--duration: must be positive");
    }
    let compete = a.compete || base.compete;
    let (starts, sizes, extra) = per_flow_lists(a, algorithms.len(), duration)?;
    let rwnd = match &a.rwnd {
        None => None,
        Some(s) => Some(rwnd(s)?),
    };
    let ecn_threshold = match &a.ecn_threshold {
        None => None,
        Some(s) => Some(buffer_size("ecn-threshold", s)?),
    };
    let mut path = base.path;
    (path.rate_bps, path.rtt, path.buffer, path.ack_loss) = (rate_bps, rtt, buffer, ack_loss);
    Ok(Plan {
        algorithms,
        path,
        losses,
        loss_burst: a.loss_burst,
        duration,
        compete,
        starts,
        sizes,
        extra_rtt: extra,
        rwnd,
        ecn_threshold,
        pace_loss_based: a.pace,
        tlp: !a.no_tlp,
        seed: a.seed,
    })
}

/// `--cc`: algorithm names, comma-separated.
fn algorithms(cc: &str) -> anyhow::Result<Vec<Algorithm>> {
    cc.split(',')
        .map(|s| {
            if s.trim().is_empty() {
                bail!("--cc: empty item in list '{cc}'");
            }
            s.parse::<Algorithm>()
                .map_err(|e| anyhow::anyhow!("--cc: {e}"))
        })
        .collect()
}

/// `--loss` (or the preset's), `--ack-loss`, and a check of `--loss-burst`:
/// each probability below 100%.
fn losses(a: &Args, base: &Plan) -> anyhow::Result<(Vec<f64>, f64)> {
    let losses = match a.loss.as_deref() {
        None => base.losses.clone(),
        Some(l) => ctx("loss", parse_list(l, parse_loss))?,
    };
    if let Some(&l) = losses.iter().find(|&&l| l >= 1.0) {
        bail!(
            "--loss: {}% would drop every packet (use less than 100%)",
            l * 100.0
        );
    }
    let ack_loss = ctx("ack-loss", parse_loss(a.ack_loss.as_deref().unwrap_or("0")))?;
    if ack_loss >= 1.0 {
        bail!("--ack-loss: 100% would drop every ACK");
    }
    if !(a.loss_burst.is_finite() && a.loss_burst >= 1.0) {
        bail!("--loss-burst: must be a number of packets >= 1");
    }
    Ok((losses, ack_loss))
}

/// `--rwnd` in bytes.
fn rwnd(s: &str) -> anyhow::Result<u64> {
    match ctx("rwnd", parse_size(s))? {
        BufferSize::Bytes(b) if b > 0 => Ok(b),
        BufferSize::Packets(p) if p > 0 => Ok(p * u64::from(bbrkit_sim::DEFAULT_MSS)),
        _ => bail!("--rwnd: give a positive byte or packet count"),
    }
}

/// Per-flow start times, sizes and extra RTTs.
type PerFlow = (Vec<Duration>, Vec<Option<u64>>, Vec<Duration>);

/// `--start`, `--size`, `--extra-rtt`: one value for all flows or one each.
fn per_flow_lists(a: &Args, n: usize, duration: Duration) -> anyhow::Result<PerFlow> {
    let starts = match &a.start {
        Some(s) => ctx("start", parse_list(s, parse_duration))?,
        None => vec![],
    };
    let starts = per_flow("start", starts, n, Duration::ZERO)?;
    if let Some((i, s)) = starts.iter().enumerate().find(|(_, s)| **s >= duration) {
        bail!(
            "--start: flow {i} would start at {} s, not before the end of the {} s run",
            s.as_secs_f64(),
            duration.as_secs_f64()
        );
    }
    let sizes = match &a.size {
        Some(s) => s
            .split(',')
            .map(|item| match item.trim() {
                "bulk" | "inf" => Ok(None),
                t => match ctx("size", parse_size(t))? {
                    BufferSize::Bytes(0) | BufferSize::Packets(0) => {
                        bail!("--size: '{t}' is empty")
                    }
                    BufferSize::Bytes(b) => Ok(Some(b)),
                    BufferSize::Packets(p) => Ok(Some(p * u64::from(bbrkit_sim::DEFAULT_MSS))),
                    BufferSize::Bdp(_) => bail!("--size: give bytes or packets, not '{t}'"),
                },
            })
            .collect::<anyhow::Result<Vec<_>>>()?,
        None => vec![],
    };
    let sizes = per_flow("size", sizes, n, None)?;
    let extra = match &a.extra_rtt {
        Some(s) => ctx("extra-rtt", parse_list(s, parse_duration))?,
        None => vec![],
    };
    let extra = per_flow("extra-rtt", extra, n, Duration::ZERO)?;
    Ok((starts, sizes, extra))
}

/// A size flag in BDP multiples, packets or bytes.
fn buffer_size(flag: &str, s: &str) -> anyhow::Result<BufferSize> {
    ctx(flag, parse_size(s))
}

/// Runs `bbrkit sim`.
pub fn run(args: Args, global: Global) -> anyhow::Result<Outcome> {
    let plan = plan(&args)?;
    if let Some(spec) = &args.workload {
        let objects = spec
            .parse()
            .map_err(|e| anyhow::anyhow!("--workload: {e}"))?;
        if args.clients == 0 {
            bail!("--clients: at least one client");
        }
        let runs = plan.workloads(objects, args.clients, args.keepalive);
        let only: Vec<_> = runs.iter().map(|(_, w)| w.clone()).collect();
        let results = bbrkit_sim::experiment::run_workloads(&only)?;
        let doc = workload::document(&plan, &runs, results);
        crate::print_report(global, &doc, workload::table)?;
        return Ok(Outcome::Ok);
    }
    let (interval, decimals) = trace::sample_interval(args.interval.as_deref(), plan.duration)?;
    // Prove the outputs are writable before spending time simulating.
    let mut files = output::open_all(&[
        ("--timeseries", args.timeseries.as_deref()),
        ("--plot", args.plot.as_deref()),
    ])?
    .into_iter();
    let (ts_file, plot_file) = (files.next().flatten(), files.next().flatten());
    let tracing = ts_file.is_some() || plot_file.is_some();

    // One config per run: (loss, flows), in the plan's order.
    let configs = plan
        .configs(tracing.then_some(interval))
        .context("invalid scenario")?;

    let reports: Vec<RunReport> = if tracing {
        let trace = trace::Trace {
            ts_file,
            plot_file,
            interval,
            decimals,
        };
        trace::run_traced(&plan, &configs, trace)?
    } else {
        let only: Vec<_> = configs.iter().map(|(_, c)| c.clone()).collect();
        bbrkit_sim::run_parallel(&only)?
    };
    let mut reports = reports;
    plan.set_ratios(&mut reports);

    let doc = document(&plan, &configs, reports);
    if global.json {
        print_json(&doc)?;
    } else if plan.compete {
        crate::emit(&table::compete(&doc))?;
    } else {
        crate::emit(&table::alone(&doc))?;
    }
    Ok(Outcome::Ok)
}

/// The output document: the path, and each configuration's loss and report.
fn document(
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
