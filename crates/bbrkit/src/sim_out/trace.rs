//! `bbrkit sim --timeseries/--plot`: the configurations run one after the
//! other, every sample streamed to the `--timeseries` CSV and gathered for
//! the `--plot` SVG, both written through [`crate::output`].

use anyhow::{Context, bail};
use bbrkit_cc::Duration;
use bbrkit_sim::{Plan, RunReport};

use super::plot::Series;
use super::{csv, plot, table};
use crate::output::OutFile;
use crate::units::parse_duration;

/// Most `--timeseries`/`--plot` samples per flow and run (a row is about
/// 100 bytes, so at most ~1 GB of CSV per flow).
const MAX_SAMPLES: u128 = 10_000_000;

/// `--interval` (or its default) and the decimals `time_s` needs.
pub fn sample_interval(
    flag: Option<&str>,
    duration: Duration,
) -> anyhow::Result<(Duration, usize)> {
    let interval = match flag {
        Some(s) => parse_duration(s).map_err(|e| anyhow::anyhow!("--interval: {e}"))?,
        None => (duration / 6000).max(Duration::from_millis(10)),
    };
    if interval.is_zero() {
        bail!("--interval: must be positive");
    }
    let samples = duration.as_nanos() / interval.as_nanos();
    if samples > MAX_SAMPLES {
        bail!(
            "--interval: {} s over {} s is {samples} samples per flow (at most {MAX_SAMPLES}); use a longer interval",
            interval.as_secs_f64(),
            duration.as_secs_f64()
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
    Ok((interval, decimals))
}

/// The time-series outputs of a traced run.
pub struct Trace {
    /// `--timeseries`.
    pub ts_file: Option<OutFile>,
    /// `--plot`.
    pub plot_file: Option<OutFile>,
    /// Sampling interval.
    pub interval: Duration,
    /// Decimals of `time_s`, so samples never share a timestamp.
    pub decimals: usize,
}

/// Runs the configurations one after the other, streaming every sample to
/// `--timeseries` and collecting the `--plot` series.
pub fn run_traced(
    plan: &Plan,
    configs: &[(f64, bbrkit_sim::SimConfig)],
    trace: Trace,
) -> anyhow::Result<Vec<RunReport>> {
    let Trace {
        mut ts_file,
        plot_file,
        interval,
        decimals,
    } = trace;
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
            plan.seed
        );
        let svg = plot::render(&title, plan.duration.as_secs_f64(), &series)?;
        use std::io::Write;
        f.write_all(svg.as_bytes()).context("writing --plot")?;
        f.commit()?;
    }
    if let Some(f) = ts_file {
        f.commit()?;
    }
    Ok(reports)
}
