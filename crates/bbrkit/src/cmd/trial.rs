//! `bbrkit trial`: a live A/B trial of two congestion controls on this
//! host's own connections, with confidence intervals and guardrails.
//!
//! Owns the flags, the table and the JSON document; the progress display
//! and the `--textfile` writes are [`crate::trial_out`]'s. The trial itself (plan, attach, records, looks, guardrails,
//! detach) is `bbrkit-trial-live`'s; SIGINT/SIGTERM/SIGHUP stop it,
//! it reports what it gathered and exits 128 + signal.

use std::path::PathBuf;
use std::time::Duration;

use bbrkit_trial::{GuardrailBounds, PrefixLengths, Unit};
use bbrkit_trial_live::{Event, Matching, Stop, StopReason, TrialSpec, render};

use crate::output::OutFile;
use crate::trial_out::{Progress, TextfileTo, write_textfile};
use crate::units::{parse_bytes, positive_duration};
use crate::{Global, Outcome};

/// Arguments of `bbrkit trial`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The trial's name: the `trial` label of every series of --textfile,
    /// what `bbrkit fleet report --trial` pools (default: the arms,
    /// `cubic-vs-bbr`).
    #[arg(long, value_name = "NAME", value_parser = crate::units::trial_name)]
    pub name: Option<String>,
    /// The two algorithms: A (the baseline), then B (`cubic,bbr`).
    #[arg(long, value_name = "A,B", value_parser = |s: &str| bbrkit_trial_live::parse_arms(s))]
    pub arms: Option<[String; 2]>,
    /// Weights of A and B (default 50/50).
    #[arg(long, value_name = "A/B", value_parser = |s: &str| bbrkit_trial_live::parse_split(s))]
    pub split: Option<[u16; 2]>,
    /// What draws an arm: each connection, each remote address (client), or
    /// each remote /24 or /48 (prefix). Default: connection.
    #[arg(long, value_enum)]
    pub unit: Option<UnitArg>,
    /// Only connections with a remote address in this prefix (repeatable).
    #[arg(long = "prefix", value_name = "PREFIX", conflicts_with = "policy")]
    pub prefixes: Vec<String>,
    /// Only connections this host accepts on this port or range (repeatable).
    #[arg(long = "port", value_name = "PORT", conflicts_with = "policy")]
    pub ports: Vec<String>,
    /// Apply this policy file for the trial's time; its rule --rule is the trial.
    #[arg(long, value_name = "FILE", requires = "rule")]
    pub policy: Option<PathBuf>,
    /// The policy rule that is the trial: a number from 1 or its name.
    #[arg(long, value_name = "N|NAME", requires = "policy")]
    pub rule: Option<String>,
    /// The cgroup v2 directory whose connections take part (default: the
    /// cgroup2 root, the whole host).
    #[arg(long, value_name = "PATH")]
    pub cgroup: Option<PathBuf>,
    /// Run this long, then report with a fixed-horizon interval.
    #[arg(long, value_name = "TIME", value_parser = positive_duration, conflicts_with = "until_confident")]
    pub duration: Option<Duration>,
    /// Run until the comparison over all connections is decided (anytime
    /// intervals) or a guardrail moves the split.
    #[arg(long)]
    pub until_confident: bool,
    /// With --until-confident: stop undecided after this long.
    #[arg(long, value_name = "TIME", default_value = "1h", value_parser = positive_duration)]
    pub max_duration: Duration,
    /// Time between two looks (progress line, guardrails, --until-confident).
    #[arg(long, value_name = "TIME", default_value = "10s", value_parser = positive_duration)]
    pub interval: Duration,
    /// Salt of the split's draw and seed of the bootstrap (default: from the clock, printed).
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// The close records' ring buffer: a power of two of at least 4kib.
    #[arg(long, value_name = "SIZE", default_value = "4mib", value_parser = ring_size)]
    pub ring_size: u32,
    /// IPv4 prefix length of a remote group.
    #[arg(long, value_name = "LEN", default_value_t = 24, value_parser = clap::value_parser!(u8).range(0..=32))]
    pub prefix_v4: u8,
    /// IPv6 prefix length of a remote group.
    #[arg(long, value_name = "LEN", default_value_t = 48, value_parser = clap::value_parser!(u8).range(0..=128))]
    pub prefix_v6: u8,
    /// Guardrail: an arm whose median goodput is this much below the other's.
    #[arg(long, value_name = "PCT", default_value = "20%", value_parser = percent)]
    pub guardrail_goodput: f64,
    /// Guardrail: an arm whose retransmit rate exceeds the other's by this much.
    #[arg(long, value_name = "PCT", default_value = "2%", value_parser = percent)]
    pub guardrail_retransmit: f64,
    /// Groups shown in the table and the textfile (most connections first).
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub groups: usize,
    /// Also write the report for node_exporter's textfile collector, at
    /// every look and at the end (atomically).
    #[arg(long, value_name = "PATH")]
    pub textfile: Option<PathBuf>,
}

/// `--unit`.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum UnitArg {
    /// Each connection draws its arm.
    Connection,
    /// Each remote address draws one arm for all its connections.
    Client,
    /// Each remote /24 (IPv4) or /48 (IPv6) draws one arm.
    Prefix,
}

fn ring_size(text: &str) -> Result<u32, String> {
    let b = parse_bytes(text).map_err(|e| e.to_string())?;
    u32::try_from(b)
        .ok()
        .filter(|b| b.is_power_of_two() && *b >= 4096)
        .ok_or(format!(
            "'{text}' is not a power of two from 4kib to 2gib (e.g. 4mib)"
        ))
}

fn percent(text: &str) -> Result<f64, String> {
    let v: Option<f64> = text.strip_suffix('%').and_then(|v| v.trim().parse().ok());
    v.filter(|v| *v > 0.0 && *v < 100.0)
        .map(|v| v / 100.0)
        .ok_or(format!(
            "'{text}' is not a percentage above 0 and below 100 (e.g. 20%)"
        ))
}

fn spec(args: &Args) -> anyhow::Result<TrialSpec> {
    use anyhow::Context as _;
    let matching = match (&args.policy, &args.rule) {
        (Some(file), Some(rule)) => Matching::Policy {
            origin: file.display().to_string(),
            text: std::fs::read_to_string(file)
                .with_context(|| format!("read --policy {}", file.display()))?,
            rule: rule.clone(),
        },
        _ => Matching::Flags {
            prefixes: args.prefixes.clone(),
            ports: args.ports.clone(),
        },
    };
    Ok(TrialSpec {
        arms: args.arms.clone(),
        split: args.split,
        unit: args.unit.map(|u| match u {
            UnitArg::Connection => Unit::Connection,
            UnitArg::Client => Unit::Client,
            UnitArg::Prefix => Unit::Prefix,
        }),
        matching,
        cgroup: args.cgroup.clone(),
        stop: match (args.duration, args.until_confident) {
            (Some(d), _) => Stop::For(d),
            (None, true) => Stop::UntilConfident {
                max: args.max_duration,
            },
            (None, false) => anyhow::bail!("say how long: --duration TIME or --until-confident"),
        },
        look_every: args.interval,
        seed: args.seed.unwrap_or_else(crate::clock_seed),
        ring_bytes: args.ring_size,
        prefix: PrefixLengths {
            v4: args.prefix_v4,
            v6: args.prefix_v6,
        },
        guardrails: GuardrailBounds {
            max_goodput_loss: args.guardrail_goodput,
            max_retransmit_increase: args.guardrail_retransmit,
        },
    })
}

/// Runs `bbrkit trial`.
pub fn run(args: Args, global: Global) -> anyhow::Result<Outcome> {
    let signals = bbrkit_signals::install(bbrkit_signals::Mode::Cancel {
        grace: Duration::from_secs(10),
        note: "the program's link closes with the process",
    })?;
    let plan = bbrkit_trial_live::prepare(&spec(&args)?)?;
    // Before anything is attached: an unwritable textfile fails now.
    let mut textfile = match &args.textfile {
        Some(p) => Some(OutFile::create(p, "--textfile")?),
        None => None,
    };
    let textfile_to = TextfileTo {
        path: args.textfile.clone(),
        name: args.name.clone(),
        groups: args.groups,
    };
    let mut progress = Progress::new(plan.seed);
    let mut write_error = None;
    let report = bbrkit_trial_live::run(&plan, &signals.cancel, &mut |ev| {
        if let Event::Look(r) = &ev
            && let Err(e) = write_textfile(&textfile_to, &mut textfile, r)
        {
            write_error.get_or_insert(e);
        }
        progress.event(ev);
    })?;
    progress.finish();
    if global.json {
        crate::print_json(&report)?;
    } else {
        crate::emit(&render::table(&report, args.groups))?;
    }
    write_textfile(&textfile_to, &mut textfile, &report)?;
    if let Some(e) = write_error {
        return Err(e);
    }
    if let (StopReason::Interrupted, Some(code)) = (report.live.stopped, signals.exit_code()) {
        let message = format!(
            "interrupted by signal {}; trial stopped, program detached",
            code - 128
        );
        std::process::exit(crate::failure::fail(&message, code as u8, global.json).into());
    }
    Ok(Outcome::Ok)
}
