//! `bbrkit advise`: will BBR help this server's own traffic, and by how much?
//!
//! Owns the flags, the progress bar (stderr, only on a terminal), the table
//! and the JSON document. Sampling, grouping, estimates, predictions and
//! verdicts live in `bbrkit-advise`; this module only renders them. Never
//! changes anything (sock_diag is read-only and needs no privilege).

use std::time::{Duration, Instant};

use anyhow::Context as _;
use bbrkit_advise::report::{Options, Report};
use bbrkit_advise::sampler::{live_census, live_links};
use bbrkit_advise::{SamplePlan, SystemClock, Tracker};
use serde::Serialize;

use crate::units::{parse_bytes, parse_rate, positive_duration};
use crate::{Global, Outcome};

mod table;

/// Arguments of `bbrkit advise`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// How long to sample the host's TCP connections.
    #[arg(long, value_name = "TIME", default_value = "60s", value_parser = positive_duration)]
    pub duration: Duration,
    /// Time between two censuses (one sock_diag dump each).
    #[arg(long, value_name = "TIME", default_value = "1s", value_parser = positive_duration)]
    pub interval: Duration,
    /// Only connections whose local or remote port is N (e.g. 443).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub port: Option<u16>,
    /// Bytes (sent + received) a group needs for a verdict, e.g. `1mb`.
    #[arg(long, value_name = "SIZE", default_value = "1mb", value_parser = byte_size)]
    pub min_bytes: u64,
    /// The paths' capacity, e.g. `1gbit` (default: unknown, and predictions
    /// span the highest delivery rate seen up to the speed of the interface
    /// that reaches each group).
    #[arg(long, value_name = "RATE", value_parser = |s: &str| parse_rate(s))]
    pub path_rate: Option<u64>,
    /// IPv4 prefix length of a group.
    #[arg(long, value_name = "LEN", default_value_t = 24, value_parser = clap::value_parser!(u8).range(0..=32))]
    pub prefix_v4: u8,
    /// IPv6 prefix length of a group.
    #[arg(long, value_name = "LEN", default_value_t = 48, value_parser = clap::value_parser!(u8).range(0..=128))]
    pub prefix_v6: u8,
    /// Keep connections to loopback addresses (left out by default: they
    /// never cross a network).
    #[arg(long)]
    pub include_loopback: bool,
}

fn byte_size(text: &str) -> Result<u64, String> {
    parse_bytes(text).map_err(|e| e.to_string())
}

/// The JSON document.
#[derive(Debug, Serialize)]
struct Document<'a> {
    duration_s: f64,
    interval_s: f64,
    port: Option<u16>,
    min_bytes: u64,
    path_rate_bits_per_second: Option<u64>,
    prefix_v4: u8,
    prefix_v6: u8,
    root: bool,
    analysis_wall_s: f64,
    #[serde(flatten)]
    report: &'a Report,
}

/// Runs `bbrkit advise`.
pub fn run(args: Args, global: Global) -> anyhow::Result<Outcome> {
    let plan = SamplePlan {
        duration: args.duration,
        interval: args.interval,
        port: args.port,
    };
    let opts = Options {
        prefix_v4: args.prefix_v4,
        prefix_v6: args.prefix_v6,
        min_bytes: args.min_bytes,
        path_rate_bps: args.path_rate,
        include_loopback: args.include_loopback,
        port: args.port,
    };
    plan.check()?;
    opts.check()?;
    // Hidden when stderr is not a terminal (indicatif's stderr target).
    let bar = indicatif::ProgressBar::new(plan.sweeps());
    if let Ok(style) = indicatif::ProgressStyle::with_template(
        "{bar:30} {pos}/{len} censuses  {elapsed_precise}  {msg}",
    ) {
        bar.set_style(style);
    }
    let mut tracker = Tracker::new();
    let stats = bbrkit_advise::sample(
        &plan,
        &SystemClock::start(),
        &mut live_census,
        &mut tracker,
        &mut |done, _, conns| {
            bar.set_position(done);
            bar.set_message(format!("{conns} connections"));
        },
    )
    .context("sampling")?;
    bar.finish_and_clear();
    let t0 = Instant::now();
    let report =
        bbrkit_advise::analyze(&tracker, stats, &opts, &live_links).context("analysing")?;
    let analysis_wall_s = t0.elapsed().as_secs_f64();
    if global.json {
        crate::print_json(&Document {
            duration_s: args.duration.as_secs_f64(),
            interval_s: args.interval.as_secs_f64(),
            port: args.port,
            min_bytes: args.min_bytes,
            path_rate_bits_per_second: args.path_rate,
            prefix_v4: args.prefix_v4,
            prefix_v6: args.prefix_v6,
            root: nix::unistd::geteuid().is_root(),
            analysis_wall_s,
            report: &report,
        })?;
    } else {
        crate::emit(&table::render(&report, &args, analysis_wall_s))?;
    }
    Ok(Outcome::Ok)
}
