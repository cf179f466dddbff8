//! `bbrkit fleet report`: a trial across a fleet, pooled from the series
//! every host's `bbrkit trial --textfile` exports, read back through
//! Prometheus' HTTP API (`/api/v1/query`).
//!
//! Owns the flags and the HTTP requests (ureq, blocking, plain HTTP); the
//! queries, the answers' reading and the statistics are `bbrkit-fleet`'s,
//! the table and the forest plot [`crate::fleet_out`]'s. Changes nothing.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context as _, bail};
use bbrkit_fleet::prom::{self, Family};
use bbrkit_fleet::{Settings, analyse};

use crate::output::OutFile;
use crate::units::{positive_duration, trial_name};
use crate::{Global, Outcome};

/// Arguments of `bbrkit fleet`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub command: Command,
}

/// `bbrkit fleet` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// A trial pooled over its hosts: per group and overall, the effect across hosts with a
    /// 95% interval, heterogeneity, a new host's interval, hosts that disagree or are stale.
    Report(ReportArgs),
}

/// Arguments of `bbrkit fleet report`.
#[derive(Debug, clap::Args)]
pub struct ReportArgs {
    /// Prometheus' base URL (`http://prometheus:9090`); plain HTTP.
    #[arg(long, value_name = "URL")]
    pub prometheus: String,
    /// The trial's name (the hosts' `bbrkit trial --name`).
    #[arg(long, value_name = "NAME", value_parser = trial_name)]
    pub trial: String,
    /// Evaluate at this Unix time (default: now).
    #[arg(long, value_name = "UNIX_SECONDS", value_parser = unix_time)]
    pub time: Option<f64>,
    /// A host not scraped, or whose running trial has not looked, for this
    /// long is stale and left out of the pool.
    #[arg(long, value_name = "TIME", default_value = "2m", value_parser = positive_duration)]
    pub stale_after: Duration,
    /// Hosts scraped within this window but not now are listed as missing.
    #[arg(long, value_name = "TIME", default_value = "1h", value_parser = positive_duration)]
    pub lookback: Duration,
    /// Give up on a query after this long.
    #[arg(long, value_name = "TIME", default_value = "30s", value_parser = positive_duration)]
    pub timeout: Duration,
    /// How the between-host variance tau2 is estimated.
    #[arg(long, value_enum, default_value = "dl")]
    pub tau2: Tau2Arg,
    /// Also write a forest plot (SVG): per group, one row per host and the pooled diamond.
    #[arg(long, value_name = "FILE")]
    pub plot: Option<PathBuf>,
}

/// `--tau2`.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum Tau2Arg {
    /// DerSimonian-Laird (method of moments).
    Dl,
    /// Restricted maximum likelihood (less biased with few hosts).
    Reml,
}

fn unix_time(text: &str) -> Result<f64, String> {
    text.parse::<f64>()
        .ok()
        .filter(|t| t.is_finite() && *t > 0.0)
        .ok_or(format!(
            "'{text}' is not a Unix time in seconds (e.g. 1800000000)"
        ))
}

/// Runs `bbrkit fleet`.
pub fn run(args: Args, global: Global) -> anyhow::Result<Outcome> {
    match args.command {
        Command::Report(a) => report(a, global),
    }
}

/// The query endpoint of `base`, refusing what the client cannot reach.
fn endpoint(base: &str) -> anyhow::Result<String> {
    let base = base.trim_end_matches('/');
    if base.starts_with("https://") {
        bail!(
            "--prometheus '{base}': https is not supported (this build has no TLS client): \
             use http:// on a private network or a local TLS proxy"
        );
    }
    let Some(rest) = base.strip_prefix("http://") else {
        bail!("--prometheus '{base}' is not an http:// URL (e.g. http://127.0.0.1:9090)");
    };
    if rest.is_empty() || rest.starts_with('/') || rest.contains(['?', '#', ' ']) {
        bail!("--prometheus '{base}' has no host, or has a query or fragment");
    }
    Ok(format!("{base}/api/v1/query"))
}

fn report(args: ReportArgs, global: Global) -> anyhow::Result<Outcome> {
    let url = endpoint(&args.prometheus)?;
    let plot = match &args.plot {
        Some(p) => Some(OutFile::create(p, "--plot")?),
        None => None,
    };
    let at_s = args.time.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64())
    });
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(args.timeout))
        .http_status_as_error(false)
        .build()
        .into();
    let time = format!("{at_s:.3}");
    let mut answers = Vec::new();
    for family in Family::ALL {
        let q = family.query(&args.trial, args.lookback.as_secs().max(1));
        let mut resp = agent
            .get(&url)
            .query("query", &q)
            .query("time", &time)
            .call()
            .with_context(|| format!("query {url}"))?;
        let status = resp.status();
        let text = resp
            .body_mut()
            .read_to_string()
            .with_context(|| format!("read the answer of {url} (HTTP {status})"))?;
        let samples = prom::parse(&text).with_context(|| format!("{url} `{q}` (HTTP {status})"))?;
        answers.push((family, samples));
    }
    let fleet = prom::assemble(&args.trial, at_s, &answers);
    if fleet.hosts.is_empty() {
        bail!(
            "no host exports trial '{}' at {time} or within --lookback (query {})",
            args.trial,
            Family::Seen.query(&args.trial, args.lookback.as_secs().max(1))
        );
    }
    let settings = Settings {
        stale_after_s: args.stale_after.as_secs_f64(),
        tau2: match args.tau2 {
            Tau2Arg::Dl => bbrkit_fleet::Tau2::DerSimonianLaird,
            Tau2Arg::Reml => bbrkit_fleet::Tau2::Reml,
        },
        ..Settings::default()
    };
    let report = analyse(&fleet, &settings);
    if let Some(f) = plot {
        f.write_and_commit(crate::fleet_out::forest(&report)?.as_bytes())?;
    }
    if global.json {
        crate::print_json(&report)?;
    } else {
        crate::emit(&crate::fleet_out::table(&report))?;
    }
    Ok(Outcome::Ok)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_http_urls_are_taken() {
        assert_eq!(
            endpoint("http://127.0.0.1:9090/").unwrap(),
            "http://127.0.0.1:9090/api/v1/query"
        );
        assert_eq!(
            endpoint("http://prom.example/prometheus").unwrap(),
            "http://prom.example/prometheus/api/v1/query"
        );
        assert!(
            endpoint("https://p:9090")
                .unwrap_err()
                .to_string()
                .contains("TLS")
        );
        assert!(endpoint("prom:9090").is_err());
        assert!(endpoint("http://").is_err());
        assert!(endpoint("http://p:9090/?x=1").is_err());
    }
}
