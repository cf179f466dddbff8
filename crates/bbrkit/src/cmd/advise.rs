//! `bbrkit advise`: will BBR help this server's own traffic, and by how much?
//!
//! Owns the flags, the progress bar (stderr, only on a terminal), the table
//! and the JSON document. Sampling, grouping, estimates, predictions and
//! verdicts live in `bbrkit-advise`; this module only renders them. Never
//! changes anything (sock_diag is read-only and needs no privilege).

use std::time::{Duration, Instant};

use anyhow::Context as _;
use bbrkit_advise::report::{GroupReport, Options, Report};
use bbrkit_advise::sampler::live_census;
use bbrkit_advise::{SamplePlan, SystemClock, Tracker};
use serde::Serialize;

use crate::units::rate;
use crate::units::{parse_bytes, parse_duration, parse_rate};
use crate::{Global, Outcome};

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
    /// The paths' capacity, e.g. `1gbit` (default: the highest delivery
    /// rate seen, and predicted gains are lower bounds).
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

fn positive_duration(text: &str) -> Result<Duration, String> {
    let d = parse_duration(text).map_err(|e| e.to_string())?;
    if d.is_zero() {
        return Err(format!("must be positive: '{text}'"));
    }
    Ok(d)
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
    let report = bbrkit_advise::analyze(&tracker, stats, &opts).context("analysing")?;
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
        crate::emit(&render(&report, &args, analysis_wall_s))?;
    }
    Ok(Outcome::Ok)
}

fn bytes(b: u64) -> String {
    let b = b as f64;
    if b >= 1e9 {
        format!("{:.2} GB", b / 1e9)
    } else if b >= 1e6 {
        format!("{:.1} MB", b / 1e6)
    } else if b >= 1e3 {
        format!("{:.1} kB", b / 1e3)
    } else {
        format!("{b} B")
    }
}

fn pct(x: f64) -> String {
    if x > 0.0 && x < 0.001 {
        format!("{:.3}%", x * 100.0)
    } else {
        format!("{:.1}%", x * 100.0)
    }
}

fn opt(v: Option<String>) -> String {
    v.unwrap_or_else(|| "-".into())
}

fn header(r: &Report, args: &Args, analysis_s: f64) -> String {
    let s = &r.sampling;
    let capacity = match args.path_rate {
        Some(p) => format!("capacity {} (--path-rate)", rate(p as f64)),
        None => "capacity assumed = highest delivery rate seen per group, so BBR's gains are lower bounds (give --path-rate)".into(),
    };
    format!(
        "bbrkit advise: {} censuses over {:.1} s (every {}), {} connection{}, census {:.1} ms mean / {:.1} ms max (up to {} sockets), analysis {:.2} s\n{capacity}\n\n",
        s.sweeps,
        s.elapsed_s,
        humantime(args.interval),
        r.connections,
        if r.connections == 1 { "" } else { "s" },
        s.mean_census_ms,
        s.max_census_ms,
        s.max_sockets,
        analysis_s,
    )
}

fn humantime(d: Duration) -> String {
    if d.as_secs_f64() >= 1.0 {
        format!("{} s", d.as_secs_f64())
    } else {
        format!("{} ms", d.as_secs_f64() * 1e3)
    }
}

fn row(g: &GroupReport) -> Vec<String> {
    let loss = g.loss.map(|l| {
        let [lo, hi] = g.loss_interval.unwrap_or([l, l]);
        format!("{} [{}, {}]", pct(l), pct(lo), pct(hi))
    });
    let limited = g
        .limited
        .map(|l| format!("{}/{}/{}", pct(l.rwnd), pct(l.sndbuf), pct(l.app)));
    let predicted = g
        .predicted_bits_per_second
        .map(|p| format!("{} / {} / {}", rate(p.cubic), rate(p.bbr), rate(p.bbr3)));
    vec![
        g.prefix.clone(),
        g.connections.to_string(),
        bytes(g.bytes_sent),
        bytes(g.bytes_received),
        opt(g.min_rtt_ms.map(|m| format!("{m:.2}"))),
        opt(loss),
        opt(g.throughput_bits_per_second.map(rate)),
        opt(g.cc.clone()),
        opt(limited),
        opt(predicted),
        g.verdict.name().to_string(),
    ]
}

const HEAD: [&str; 11] = [
    "PREFIX",
    "CONNS",
    "SENT",
    "RECEIVED",
    "MIN RTT ms",
    "LOSS [95%]",
    "THROUGHPUT",
    "CC",
    "RWND/SNDBUF/APP",
    "PREDICTED CUBIC / BBR / BBR3",
    "VERDICT",
];

/// The table (groups largest first), each group followed by its reason and
/// the command that acts on it.
fn render(r: &Report, args: &Args, analysis_s: f64) -> String {
    let mut out = header(r, args, analysis_s);
    if r.groups.is_empty() {
        out.push_str("no TCP connections to remote hosts were seen\n");
        return out;
    }
    let rows: Vec<Vec<String>> = r.groups.iter().map(row).collect();
    let widths: Vec<usize> = (0..HEAD.len())
        .map(|i| {
            rows.iter()
                .map(|r| r[i].chars().count())
                .chain([HEAD[i].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |cells: &[String]| {
        let parts: Vec<String> = cells
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        parts.join("  ").trim_end().to_string() + "\n"
    };
    out.push_str(&line(&HEAD.map(String::from)));
    for (g, cells) in r.groups.iter().zip(&rows) {
        out.push_str(&line(cells));
        out.push_str(&format!("    {}: {}\n", g.verdict.name(), g.reason));
        if let Some(p) = &g.prediction {
            out.push_str(&format!(
                "    gain over {}: bbr {:.2}x [{:.2}, {:.2}], bbr3 {:.2}x [{:.2}, {:.2}] ({} runs of {:.1} s simulated){}\n",
                p.baseline,
                p.gain.estimate,
                p.gain.low,
                p.gain.high,
                p.gain_bbr3.estimate,
                p.gain_bbr3.low,
                p.gain_bbr3.high,
                p.runs,
                p.simulated_s,
                g.achieved_over_predicted
                    .map(|x| format!("; achieved {x:.2}x the predicted {}", p.baseline))
                    .unwrap_or_default()
            ));
        }
        out.push_str(&format!(
            "    do: {}\n",
            g.action.unwrap_or("nothing on this host")
        ));
    }
    out
}
