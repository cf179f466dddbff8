//! `bbrkit trial`: a live A/B trial of two congestion controls on this
//! host's own connections, with confidence intervals and guardrails.
//!
//! Owns the flags, the table and the JSON document; the progress display
//! and the `--textfile` writes are [`crate::trial_out`]'s. The trial itself (plan, attach, records, looks, guardrails,
//! detach) is `bbrkit-trial-live`'s; SIGINT/SIGTERM/SIGHUP stop it,
//! it reports what it gathered and exits 128 + signal. `--definition FILE`
//! and the flags are one `bbrkit_trial_live::Definition` each, the flags
//! over the file; the defaults are the library's.

use std::path::PathBuf;
use std::time::Duration;

use bbrkit_trial::Unit;
use bbrkit_trial_live::definition::{parse_percent, parse_ring_size};
use bbrkit_trial_live::{Definition, Event, StopReason, render};

use crate::output::OutFile;
use crate::trial_out::{Progress, TextfileTo, write_textfile};
use crate::units::positive_duration;
use crate::{Global, Outcome};

/// Arguments of `bbrkit trial`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// A trial definition shared by a fleet (TOML; its keys are these
    /// flags' names, `until_confident` for --until-confident); a flag given
    /// here overrides the file's key.
    #[arg(long, value_name = "FILE")]
    pub definition: Option<PathBuf>,
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
    /// With --until-confident: stop undecided after this long [default: 1h].
    #[arg(long, value_name = "TIME", value_parser = positive_duration)]
    pub max_duration: Option<Duration>,
    /// Time between two looks (progress line, guardrails, --until-confident)
    /// [default: 10s].
    #[arg(long, value_name = "TIME", value_parser = positive_duration)]
    pub interval: Option<Duration>,
    /// Salt of the split's draw and seed of the bootstrap (default: from the clock, printed).
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// The close records' ring buffer: a power of two of at least 4kib
    /// [default: 4mib].
    #[arg(long, value_name = "SIZE", value_parser = parse_ring_size)]
    pub ring_size: Option<u32>,
    /// IPv4 prefix length of a remote group [default: 24].
    #[arg(long, value_name = "LEN", value_parser = clap::value_parser!(u8).range(0..=32))]
    pub prefix_v4: Option<u8>,
    /// IPv6 prefix length of a remote group [default: 48].
    #[arg(long, value_name = "LEN", value_parser = clap::value_parser!(u8).range(0..=128))]
    pub prefix_v6: Option<u8>,
    /// Guardrail: an arm whose median goodput is this much below the
    /// other's [default: 20%].
    #[arg(long, value_name = "PCT", value_parser = parse_percent)]
    pub guardrail_goodput: Option<f64>,
    /// Guardrail: an arm whose retransmit rate exceeds the other's by this
    /// much [default: 2%].
    #[arg(long, value_name = "PCT", value_parser = parse_percent)]
    pub guardrail_retransmit: Option<f64>,
    /// Groups shown in the table and the textfile (most connections first)
    /// [default: 10].
    #[arg(long, value_name = "N")]
    pub groups: Option<usize>,
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

/// The flags as a [`Definition`] (each `None` or empty when not given).
fn flags(args: &Args) -> Definition {
    Definition {
        name: args.name.clone(),
        arms: args.arms.clone(),
        split: args.split,
        unit: args.unit.map(|u| match u {
            UnitArg::Connection => Unit::Connection,
            UnitArg::Client => Unit::Client,
            UnitArg::Prefix => Unit::Prefix,
        }),
        prefixes: args.prefixes.clone(),
        ports: args.ports.clone(),
        policy: args.policy.clone(),
        rule: args.rule.clone(),
        cgroup: args.cgroup.clone(),
        duration: args.duration,
        until_confident: args.until_confident.then_some(true),
        max_duration: args.max_duration,
        interval: args.interval,
        seed: args.seed,
        ring_bytes: args.ring_size,
        prefix_v4: args.prefix_v4,
        prefix_v6: args.prefix_v6,
        guardrail_goodput: args.guardrail_goodput,
        guardrail_retransmit: args.guardrail_retransmit,
        groups: args.groups,
        textfile: args.textfile.clone(),
    }
}

/// The flags over `--definition FILE` (read and checked before anything
/// is attached).
fn definition(args: &Args) -> anyhow::Result<Definition> {
    use anyhow::Context as _;
    let Some(file) = &args.definition else {
        return Ok(flags(args));
    };
    let text = std::fs::read_to_string(file)
        .with_context(|| format!("read --definition {}", file.display()))?;
    let from_file = Definition::parse(&file.display().to_string(), &text)?;
    Ok(flags(args).over(from_file))
}

/// Runs `bbrkit trial`.
pub fn run(args: Args, global: Global) -> anyhow::Result<Outcome> {
    let signals = bbrkit_signals::install(bbrkit_signals::Mode::Cancel {
        grace: Duration::from_secs(10),
        note: "the program's link closes with the process",
    })?;
    let def = definition(&args)?;
    let plan = bbrkit_trial_live::prepare(&def.spec(crate::clock_seed())?)?;
    // Before anything is attached: an unwritable textfile fails now.
    let mut textfile = match &def.textfile {
        Some(p) => Some(OutFile::create(p, "--textfile")?),
        None => None,
    };
    let textfile_to = TextfileTo {
        path: def.textfile.clone(),
        name: def.name.clone(),
        groups: def.groups(),
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
        crate::emit(&render::table(&report, def.groups()))?;
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
