//! `bbrkit sim`: hands its flags to [`bbrkit_sim::Settings`], which makes
//! the experiment plan ([`bbrkit_sim::Plan`]; units, presets, sweeps and
//! parallel runs live in `bbrkit-sim`), runs it and renders the results.
//! Owns flag syntax and output; must never hold simulation or experiment
//! logic. Output files are checked before simulating and written
//! atomically.

use std::path::PathBuf;

use anyhow::{Context, bail};
use bbrkit_sim::{Plan, RunReport, Settings};

use crate::output;
use crate::sim_out::{document, table, trace, workload};
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

/// The plan: the preset's (or the default) with every given flag applied.
fn plan(a: &Args) -> anyhow::Result<Plan> {
    let base = match a.preset {
        None => Plan::default(),
        Some(Preset::Seed) => bbrkit_sim::Preset::Seed.plan(),
        Some(Preset::Fairness) => bbrkit_sim::Preset::Fairness.plan(),
        Some(Preset::Bufferbloat) => bbrkit_sim::Preset::Bufferbloat.plan(),
    };
    let settings = Settings {
        cc: a.cc.as_deref(),
        rate: a.rate.as_deref(),
        rtt: a.rtt.as_deref(),
        loss: a.loss.as_deref(),
        loss_burst: a.loss_burst,
        ack_loss: a.ack_loss.as_deref(),
        buffer: a.buffer.as_deref(),
        duration: a.duration.as_deref(),
        seed: a.seed,
        compete: a.compete,
        start: a.start.as_deref(),
        size: a.size.as_deref(),
        extra_rtt: a.extra_rtt.as_deref(),
        pace: a.pace,
        ecn_threshold: a.ecn_threshold.as_deref(),
        no_tlp: a.no_tlp,
        rwnd: a.rwnd.as_deref(),
    };
    // A setting's name is its flag's.
    settings.plan(base).map_err(|e| anyhow::anyhow!("--{e}"))
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
