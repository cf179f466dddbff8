//! `bbrkit sim`: turns flags into simulator runs (`bbrkit-sim`) and renders
//! them. Owns flag parsing, presets and the choice of runs; must never hold
//! simulation logic. Output files are checked before simulating and written
//! atomically.

use std::path::PathBuf;

use anyhow::{Context, bail};
use bbrkit_cc::{Algorithm, Duration};
use bbrkit_sim::{BufferSize, FlowConfig, LossModel, PathConfig, RunReport, SimConfig};

use crate::sim_out::atomic::OutFile;
use crate::sim_out::plot::Series;
use crate::sim_out::{Document, PathInfo, Run, csv, plot, table};
use crate::units::{Size, parse_duration, parse_fraction, parse_list, parse_rate, parse_size};
use crate::{Global, Outcome, print_json};

/// Ready-made scenarios from the seed articles; explicit flags override them.
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
}

/// Most `--timeseries`/`--plot` samples per flow and run (a row is about
/// 100 bytes, so at most ~1 GB of CSV per flow).
const MAX_SAMPLES: u128 = 10_000_000;

/// Flag values after presets and defaults.
struct Plan {
    algorithms: Vec<Algorithm>,
    path: PathConfig,
    losses: Vec<f64>,
    loss_burst: f64,
    duration: Duration,
    compete: bool,
    starts: Vec<Duration>,
    sizes: Vec<Option<u64>>,
    extra: Vec<Duration>,
    rwnd: Option<u64>,
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
    let (p_cc, p_rate, p_rtt, p_loss, p_buf, p_dur, p_compete) = match a.preset {
        None => ("cubic,bbr1", "100mbit", "10ms", "0", "1bdp", "10s", false),
        Some(Preset::Seed) => (
            "cubic,bbr1",
            "1gbit",
            "10ms",
            "0,2%,5%",
            "1bdp",
            "10s",
            false,
        ),
        Some(Preset::Fairness) => ("cubic,bbr1", "100mbit", "40ms", "0", "1bdp", "30s", true),
        Some(Preset::Bufferbloat) => ("cubic,bbr1", "100mbit", "20ms", "0", "10bdp", "30s", false),
    };
    let cc = a.cc.as_deref().unwrap_or(p_cc);
    let algorithms = cc
        .split(',')
        .map(|s| {
            if s.trim().is_empty() {
                bail!("--cc: empty item in list '{cc}'");
            }
            s.parse::<Algorithm>()
                .map_err(|e| anyhow::anyhow!("--cc: {e}"))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let rate_bps = ctx("rate", parse_rate(a.rate.as_deref().unwrap_or(p_rate)))?;
    let rtt = ctx("rtt", parse_duration(a.rtt.as_deref().unwrap_or(p_rtt)))?;
    let losses = ctx(
        "loss",
        parse_list(a.loss.as_deref().unwrap_or(p_loss), parse_fraction),
    )?;
    if let Some(&l) = losses.iter().find(|&&l| l >= 1.0) {
        bail!(
            "--loss: {}% would drop every packet (use less than 100%)",
            l * 100.0
        );
    }
    let ack_loss = ctx(
        "ack-loss",
        parse_fraction(a.ack_loss.as_deref().unwrap_or("0")),
    )?;
    if ack_loss >= 1.0 {
        bail!("--ack-loss: 100% would drop every ACK");
    }
    if !(a.loss_burst.is_finite() && a.loss_burst >= 1.0) {
        bail!("--loss-burst: must be a number of packets >= 1");
    }
    let buffer = match ctx("buffer", parse_size(a.buffer.as_deref().unwrap_or(p_buf)))? {
        Size::Bytes(b) => BufferSize::Bytes(b),
        Size::Packets(n) => BufferSize::Packets(n),
        Size::Bdp(m) => BufferSize::Bdp(m),
    };
    let duration = ctx(
        "duration",
        parse_duration(a.duration.as_deref().unwrap_or(p_dur)),
    )?;
    if duration.is_zero() {
        bail!("--duration: must be positive");
    }
    let compete = a.compete || p_compete;
    let n = algorithms.len();
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
                    Size::Bytes(0) | Size::Packets(0) => bail!("--size: '{t}' is empty"),
                    Size::Bytes(b) => Ok(Some(b)),
                    Size::Packets(p) => Ok(Some(p * u64::from(bbrkit_sim::DEFAULT_MSS))),
                    Size::Bdp(_) => bail!("--size: give bytes or packets, not '{t}'"),
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
    let rwnd = match &a.rwnd {
        None => None,
        Some(s) => match ctx("rwnd", parse_size(s))? {
            Size::Bytes(b) if b > 0 => Some(b),
            Size::Packets(p) if p > 0 => Some(p * u64::from(bbrkit_sim::DEFAULT_MSS)),
            _ => bail!("--rwnd: give a positive byte or packet count"),
        },
    };
    Ok(Plan {
        algorithms,
        path: PathConfig {
            rate_bps,
            rtt,
            buffer,
            loss: LossModel::None,
            ack_loss,
        },
        losses,
        loss_burst: a.loss_burst,
        duration,
        compete,
        starts,
        sizes,
        extra,
        rwnd,
    })
}

/// Runs `bbrkit sim`.
pub fn run(args: Args, global: Global) -> anyhow::Result<Outcome> {
    let plan = plan(&args)?;
    if let (Some(ts), Some(pl)) = (&args.timeseries, &args.plot)
        && same_target(ts, pl)
    {
        bail!(
            "--timeseries and --plot name the same file '{}'",
            pl.display()
        );
    }
    let interval = match &args.interval {
        Some(s) => ctx("interval", parse_duration(s))?,
        None => (plan.duration / 6000).max(Duration::from_millis(10)),
    };
    if interval.is_zero() {
        bail!("--interval: must be positive");
    }
    let samples = plan.duration.as_nanos() / interval.as_nanos();
    if samples > MAX_SAMPLES {
        bail!(
            "--interval: {} s over {} s is {samples} samples per flow (at most {MAX_SAMPLES}); use a longer interval",
            interval.as_secs_f64(),
            plan.duration.as_secs_f64()
        );
    }
    // Enough decimals in time_s that samples never share a timestamp.
    let decimals = if interval >= Duration::from_millis(1) {
        3
    } else if interval >= Duration::from_micros(1) {
        6
    } else {
        9
    };
    // Prove the outputs are writable before spending time simulating.
    let mut ts_file = args
        .timeseries
        .as_deref()
        .map(|p| OutFile::create(p, "--timeseries"))
        .transpose()?;
    let plot_file = args
        .plot
        .as_deref()
        .map(|p| OutFile::create(p, "--plot"))
        .transpose()?;
    let tracing = ts_file.is_some() || plot_file.is_some();

    // One config per run: (loss, flows).
    let flow = |i: usize| FlowConfig {
        algorithm: plan.algorithms[i],
        start: plan.starts[i],
        size: plan.sizes[i],
        extra_rtt: plan.extra[i],
    };
    let mut configs = Vec::new();
    for &loss in &plan.losses {
        let mut path = plan.path.clone();
        path.loss = LossModel::bursty(loss, plan.loss_burst);
        let groups: Vec<Vec<FlowConfig>> = if plan.compete {
            vec![(0..plan.algorithms.len()).map(flow).collect()]
        } else {
            (0..plan.algorithms.len()).map(|i| vec![flow(i)]).collect()
        };
        for flows in groups {
            let mut cfg = SimConfig::new(path.clone(), flows, plan.duration, args.seed);
            cfg.pace_loss_based = args.pace;
            cfg.rwnd = plan.rwnd;
            cfg.sample_interval = tracing.then_some(interval);
            cfg.validate().context("invalid scenario")?;
            configs.push((loss, cfg));
        }
    }

    let reports: Vec<RunReport> = if tracing {
        if let Some(f) = ts_file.as_mut() {
            use std::io::Write;
            writeln!(f, "{}", csv::HEADER).context("--timeseries")?;
        }
        let expected = (plan.duration.as_nanos() / interval.as_nanos().max(1)) as usize + 1;
        let mut series: Vec<Series> = Vec::new();
        let mut reports = Vec::new();
        for (run_idx, (loss, cfg)) in configs.iter().enumerate() {
            let first = series.len();
            for (i, f) in cfg.flows.iter().enumerate() {
                let label = if configs.len() > 1 {
                    format!("loss {} {}#{}", table::pct(*loss), f.algorithm, i)
                } else {
                    format!("{}#{}", f.algorithm, i)
                };
                series.push(Series::new(label, expected));
            }
            let mut io_err = None;
            let report = bbrkit_sim::run(cfg, &mut |row| {
                if let Some(f) = ts_file.as_mut()
                    && let Err(e) = csv::write_row(f, run_idx, *loss, decimals, row)
                {
                    io_err.get_or_insert(e);
                }
                series[first + row.flow as usize].push(row);
            })?;
            if let Some(e) = io_err {
                return Err(e).context("writing --timeseries");
            }
            reports.push(report);
        }
        if let Some(mut f) = plot_file {
            let title = format!(
                "bbrkit sim: {}, RTT {} ms, seed {}",
                table::rate(plan.path.rate_bps as f64),
                plan.path.rtt.as_secs_f64() * 1e3,
                args.seed
            );
            let svg = plot::render(&title, plan.duration.as_secs_f64(), &series)?;
            use std::io::Write;
            f.write_all(svg.as_bytes()).context("writing --plot")?;
            f.commit()?;
        }
        if let Some(f) = ts_file {
            f.commit()?;
        }
        reports
    } else {
        run_parallel(&configs)?
    };

    let mut runs: Vec<Run> = configs
        .iter()
        .zip(reports)
        .map(|((loss, _), report)| Run {
            loss: *loss,
            report,
        })
        .collect();
    if !plan.compete {
        // Ratio of each algorithm's goodput to the first one's on the same condition.
        let per = plan.algorithms.len();
        for chunk in runs.chunks_mut(per) {
            let base = chunk[0].report.flows[0].bits_per_second;
            for r in chunk.iter_mut() {
                let f = &mut r.report.flows[0];
                f.ratio = (base > 0.0).then(|| f.bits_per_second / base);
            }
        }
    }
    let doc = Document {
        mode: if plan.compete { "compete" } else { "alone" },
        path: PathInfo {
            bits_per_second: plan.path.rate_bps,
            rtt_ms: plan.path.rtt.as_secs_f64() * 1e3,
            buffer_bytes: plan.path.buffer_bytes(bbrkit_sim::DEFAULT_MSS),
            loss_burst_packets: plan.loss_burst,
            ack_loss: plan.path.ack_loss,
            duration_s: plan.duration.as_secs_f64(),
            seed: args.seed,
            mss_bytes: bbrkit_sim::DEFAULT_MSS,
            pace_loss_based: args.pace,
        },
        runs,
    };
    if global.json {
        print_json(&doc)?;
    } else if plan.compete {
        crate::emit(&table::compete(&doc))?;
    } else {
        crate::emit(&table::alone(&doc))?;
    }
    Ok(Outcome::Ok)
}

/// Whether two output paths name the same file (so writing both would
/// clobber one with the other): compared after resolving the directory.
fn same_target(a: &std::path::Path, b: &std::path::Path) -> bool {
    let resolve = |p: &std::path::Path| {
        let dir = match p.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let dir = dir.canonicalize().unwrap_or(dir);
        match p.file_name() {
            Some(name) => dir.join(name),
            None => p.to_path_buf(),
        }
    };
    let (ra, rb) = (resolve(a), resolve(b));
    if ra == rb {
        return true;
    }
    // Hard links or symlinks to one file.
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(&ra), std::fs::metadata(&rb)) {
        (Ok(ma), Ok(mb)) => ma.dev() == mb.dev() && ma.ino() == mb.ino(),
        _ => false,
    }
}

/// Runs independent configurations on all cores; results in input order
/// (each run is deterministic on its own, so threads do not change output).
fn run_parallel(configs: &[(f64, SimConfig)]) -> anyhow::Result<Vec<RunReport>> {
    let workers = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(configs.len())
        .max(1);
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut results: Vec<Option<RunReport>> = vec![None; configs.len()];
    let slots = std::sync::Mutex::new(&mut results);
    let mut first_err = None;
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                s.spawn(|| -> Result<(), bbrkit_sim::ConfigError> {
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some((_, cfg)) = configs.get(i) else {
                            return Ok(());
                        };
                        let r = bbrkit_sim::run(cfg, &mut |_| {})?;
                        slots.lock().expect("no panics while holding")[i] = Some(r);
                    }
                })
            })
            .collect();
        for h in handles {
            match h.join() {
                Ok(Ok(())) => {}
                Ok(Err(e)) => {
                    first_err.get_or_insert(anyhow::Error::from(e));
                }
                Err(_) => {
                    first_err.get_or_insert(anyhow::anyhow!("a simulation thread panicked"));
                }
            }
        }
    });
    if let Some(e) = first_err {
        return Err(e);
    }
    Ok(results
        .into_iter()
        .map(|r| r.expect("every run finished"))
        .collect())
}
