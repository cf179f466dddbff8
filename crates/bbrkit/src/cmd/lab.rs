//! `bbrkit lab`: kernel CUBIC vs BBR in throwaway network namespaces.
//!
//! Turns flags into a `bbrkit_lab::runner::Plan`, drives the progress bar and
//! renders the report (table, `--json`, `--out`, `--timeseries`, `--plot`).
//! The namespaces, emulator, tester and runner live in `bbrkit-lab`. Must
//! never leave the lab behind: SIGINT/SIGTERM cancel the run, the topology is
//! dropped, and the process exits 130/143. A BPF algorithm (`--cc bbr3`)
//! the kernel lacks is registered for the run and unregistered after it.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, bail};
use bbrkit_lab::emulator::EmulatorKind;
use bbrkit_lab::runner::{self, BufferSpec, Condition, Event, LabReport, Plan};
use bbrkit_lab::tester::CcOn;
use bbrkit_lab::topology::{Topology, run_prefix};
use bbrkit_lab::{bpf_cc, cleanup};

use crate::lab_out;
use crate::units::{Size, parse_duration, parse_fraction, parse_list, parse_rate, parse_size};
use crate::{Global, Outcome};

/// Arguments of `bbrkit lab`. With no condition flags it runs the seed
/// experiment: no impairment, 10 ms + 2% loss, 10 ms + 5% loss, cubic vs bbr.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Algorithms to compare, in table order (the ratio is last ÷ first).
    #[arg(long, value_name = "LIST", default_value = "cubic,bbr")]
    pub cc: String,
    /// One-way delay(s) of the data direction, e.g. `10ms` or `0,10ms,50ms`.
    #[arg(long, value_name = "LIST")]
    pub delay: Option<String>,
    /// Random loss probability(ies) of the data direction, e.g. `0,1%,2%`.
    #[arg(long, value_name = "LIST")]
    pub loss: Option<String>,
    /// Uniform delay jitter (frames are never reordered), e.g. `1ms`.
    #[arg(long, value_name = "TIME")]
    pub jitter: Option<String>,
    /// Bottleneck rate(s), e.g. `100mbit` or `100mbit,1gbit` (default: none).
    #[arg(long, value_name = "LIST")]
    pub rate: Option<String>,
    /// Drop-tail buffer at the bottleneck: `1bdp`, `100pkt`, `256kb`.
    #[arg(long, value_name = "SIZE", default_value = "1bdp")]
    pub buffer: String,
    /// Runs per condition and algorithm (the table shows the median).
    #[arg(long, default_value_t = 3)]
    pub runs: usize,
    /// Sending time of each run.
    #[arg(long, value_name = "TIME", default_value = "6s")]
    pub duration: String,
    /// Parallel TCP flows per run.
    #[arg(short = 'P', long = "parallel", default_value_t = 1)]
    pub parallel: usize,
    /// Which side gets the algorithm: `sender` (matters) or `receiver` (the
    /// sender then keeps its namespace default).
    #[arg(long, value_enum, default_value = "sender")]
    pub cc_on: CcOnArg,
    /// Link emulator: kernel netem where present, else split (eBPF tcx), else userspace.
    #[arg(long, value_enum, default_value = "auto")]
    pub emulator: EmulatorArg,
    /// Seed of the loss process (default: from the clock; always reported).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Link MTU in bytes.
    #[arg(long, default_value_t = 1500)]
    pub mtu: u32,
    /// How often a run the emulator spoiled (CPU stall, own drops) is repeated.
    #[arg(long, default_value_t = 1)]
    pub retries: usize,
    /// Also write the JSON report to FILE (atomically).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Write TCP_INFO samples (every 100 ms, every flow) to FILE as CSV.
    #[arg(long, value_name = "FILE")]
    pub timeseries: Option<PathBuf>,
    /// Draw goodput over time per condition to FILE (SVG).
    #[arg(long, value_name = "FILE")]
    pub plot: Option<PathBuf>,
    /// Name the namespaces `/run/netns/bbrk<pid>-{client,router,server}`
    /// during the run, for `ip netns exec`.
    #[arg(long)]
    pub netns_names: bool,
    /// Remove namespace names left by a lab that was killed (SIGKILL), then exit.
    #[arg(long)]
    pub cleanup: bool,
}

/// `--cc-on`.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum CcOnArg {
    /// The data sender.
    Sender,
    /// The data receiver only.
    Receiver,
}

/// `--emulator`.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum EmulatorArg {
    /// netem if the kernel has it, else split if it has eBPF tcx, else userspace.
    Auto,
    /// Kernel netem.
    Netem,
    /// Loss and rate in the kernel (eBPF, tbf); delay on the ACK path in userspace.
    Split,
    /// bbrkit's AF_PACKET forwarder, every impairment on the data path.
    Userspace,
}

/// Builds the plan from the flags (no system access).
pub fn plan(args: &Args) -> anyhow::Result<Plan> {
    let algorithms = algorithm_names(&args.cc)?;
    let buffer = match parse_size(&args.buffer)? {
        Size::Bytes(b) => BufferSpec::Bytes(b),
        Size::Packets(p) => BufferSpec::Packets(p),
        Size::Bdp(x) => BufferSpec::Bdp(x),
    };
    let jitter = match &args.jitter {
        Some(j) => parse_duration(j)?,
        None => Duration::ZERO,
    };
    let conditions = conditions(args, jitter, buffer)?;
    if conditions.len() > 64 {
        bail!("{} conditions is too many (at most 64)", conditions.len());
    }
    let seed = args.seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64 & 0xffff_ffff)
            .unwrap_or(1)
    });
    Ok(Plan {
        conditions,
        algorithms,
        runs: args.runs,
        duration: parse_duration(&args.duration)?,
        flows: args.parallel,
        cc_on: match args.cc_on {
            CcOnArg::Sender => CcOn::Sender,
            CcOnArg::Receiver => CcOn::Receiver,
        },
        emulator: match args.emulator {
            EmulatorArg::Auto => EmulatorKind::Auto,
            EmulatorArg::Netem => EmulatorKind::Netem,
            EmulatorArg::Split => EmulatorKind::Split,
            EmulatorArg::Userspace => EmulatorKind::Userspace,
        },
        seed,
        mtu: args.mtu,
        retries: args.retries,
    })
}

/// `--cc`: names the kernel could know (checked against it later).
fn algorithm_names(list: &str) -> anyhow::Result<Vec<String>> {
    Ok(parse_list(list, |s| {
        if s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') && s.len() < 16 {
            Ok(s.to_string())
        } else {
            Err(crate::units::UnitError(format!(
                "invalid algorithm name '{s}'"
            )))
        }
    })?)
}

/// The seed conditions when no condition flag is given, else every
/// combination of `--rate`, `--delay` and `--loss` (in that nesting).
fn conditions(args: &Args, jitter: Duration, buffer: BufferSpec) -> anyhow::Result<Vec<Condition>> {
    if args.delay.is_none() && args.loss.is_none() && args.rate.is_none() {
        return Ok(runner::seed_conditions()
            .into_iter()
            .map(|c| Condition {
                jitter,
                buffer,
                ..c
            })
            .collect());
    }
    let delays = match &args.delay {
        Some(d) => parse_list(d, parse_duration)?,
        None => vec![Duration::from_millis(10)],
    };
    let losses = match &args.loss {
        Some(l) => parse_list(l, parse_fraction)?,
        None => vec![0.0],
    };
    let rates: Vec<Option<u64>> = match &args.rate {
        Some(r) => parse_list(r, parse_rate)?.into_iter().map(Some).collect(),
        None => vec![None],
    };
    let mut v = Vec::new();
    for &rate_bps in &rates {
        for &delay in &delays {
            for &loss in &losses {
                v.push(Condition {
                    delay,
                    jitter,
                    loss,
                    rate_bps,
                    buffer,
                });
            }
        }
    }
    Ok(v)
}

/// Runs `bbrkit lab`.
pub fn run(args: Args, global: Global) -> anyhow::Result<Outcome> {
    let signals = bbrkit_signals::install(bbrkit_signals::Mode::Cancel {
        grace: Duration::from_secs(5),
        note: "the kernel removes the lab",
    })?;
    bbrkit_signals::on_exit(cleanup::remove_own).keep();
    if args.cleanup {
        bbrkit_lab::require_root()?;
        let removed = cleanup::remove_leftovers()?;
        lab_out::print_cleanup(&removed, global.json)?;
        return Ok(Outcome::Ok);
    }
    let plan = plan(&args)?;
    bbrkit_lab::require_root()?;
    // bbr3/bbr2 from bbrkit-bpf, registered until `ccs` drops (or the
    // process ends); an algorithm someone else registered is used as is.
    let ccs = bpf_cc::register_missing(&plan.algorithms)?;
    runner::validate(&plan)?;
    for path in [&args.out, &args.timeseries, &args.plot]
        .into_iter()
        .flatten()
    {
        lab_out::check_writable(path)?;
    }

    let topo = Topology::build(&run_prefix(), plan.mtu, args.netns_names)
        .context("build the lab topology")?;
    let kind = plan.emulator.resolve(&topo)?;
    let total = plan.conditions.len() * plan.algorithms.len() * plan.runs;
    let bar = lab_out::progress_bar(total as u64);
    let result = runner::run(&plan, &topo, kind, &signals.cancel, &mut |ev| match ev {
        Event::RunDone {
            done,
            condition,
            cc,
            result,
            ..
        } => {
            bar.set_position(done as u64);
            bar.set_message(format!(
                "{condition}: {cc} run {} → {}",
                result.run,
                lab_out::rate(result.bits_per_second)
            ));
        }
        Event::Repeat { reason } => bar.println(format!("repeating a spoiled run: {reason}")),
    });
    bar.finish_and_clear();
    drop(topo);
    let bpf_algorithms = ccs.algorithms.clone();
    drop(ccs);
    if let Some(code) = signals.exit_code() {
        eprintln!("bbrkit: interrupted by signal {}; lab removed", code - 128);
        std::process::exit(code);
    }
    let mut report = result?;
    report.bpf_algorithms = bpf_algorithms;
    write_report(&args, &report, global)?;
    Ok(Outcome::Ok)
}

/// Writes `--out`, `--timeseries` and `--plot`, then prints the table (or
/// the JSON).
fn write_report(args: &Args, report: &LabReport, global: Global) -> anyhow::Result<()> {
    if let Some(path) = &args.out {
        lab_out::write_json(path, report)?;
    }
    if let Some(path) = &args.timeseries {
        lab_out::write_timeseries(path, report)?;
    }
    if let Some(path) = &args.plot {
        lab_out::write_plot(path, report)?;
    }
    if global.json {
        crate::print_json(report)?;
    } else {
        crate::emit(&lab_out::table(report))?;
    }
    Ok(())
}
