//! `bbrkit enable`: persist and apply BBR (+ fq where the kernel has it).
//! Renders `bbrkit_host::enable::run`; holds no logic.

use std::path::PathBuf;

use bbrkit_host::Root;
use std::fmt::Write as _;

use bbrkit_host::enable::{BootWinner, EnableReport, Options, QdiscChoice, RuntimeStatus};

use crate::{Global, Outcome, print_report};

/// `--qdisc` values.
#[derive(Debug, Clone, Copy)]
pub enum Qdisc {
    /// fq when the kernel has it, else leave the default qdisc.
    Auto,
    /// fq.
    Fq,
    /// fq_codel.
    FqCodel,
    /// Leave the default qdisc alone.
    Keep,
}

/// Parses `--qdisc`; the error names the accepted values so the one-line
/// `bbrkit: ...` message is enough to fix the command.
fn parse_qdisc(s: &str) -> Result<Qdisc, String> {
    match s {
        "auto" => Ok(Qdisc::Auto),
        "fq" => Ok(Qdisc::Fq),
        "fq_codel" => Ok(Qdisc::FqCodel),
        "keep" => Ok(Qdisc::Keep),
        _ => Err("expected one of auto, fq, fq_codel, keep".into()),
    }
}

/// Arguments of `bbrkit enable`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Congestion control algorithm to make the default.
    #[arg(long, default_value = "bbr")]
    pub cc: String,
    /// Default qdisc: auto (fq when available), fq, fq_codel, keep.
    #[arg(long, value_parser = parse_qdisc, default_value = "auto")]
    pub qdisc: Qdisc,
    /// Add the tuning set (buffers, notsent_lowat, mtu probing, no slow start after idle).
    #[arg(long)]
    pub tune: bool,
    /// Show what would change; change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Write the file only; no /proc/sys or qdisc changes.
    #[arg(long)]
    pub no_apply: bool,
    /// Proceed even if another file overrides bbrkit's value at boot.
    #[arg(long)]
    pub force: bool,
    /// Alternate filesystem root for every file read or written.
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
}

/// Runs `bbrkit enable`.
pub fn run(args: Args, global: Global) -> anyhow::Result<Outcome> {
    let root = Root::from_option(args.root.as_deref())?;
    let opts = Options {
        cc: args.cc,
        qdisc: match args.qdisc {
            Qdisc::Auto => QdiscChoice::Auto,
            Qdisc::Fq => QdiscChoice::Fq,
            Qdisc::FqCodel => QdiscChoice::FqCodel,
            Qdisc::Keep => QdiscChoice::Keep,
        },
        tune: args.tune,
        dry_run: args.dry_run,
        no_apply: args.no_apply,
        force: args.force,
    };
    let r = bbrkit_host::enable::run(&root, &opts)?;
    print_report(global, &r, render)?;
    Ok(Outcome::from_problem(r.problem))
}

/// The human lines: keys, notes, the file, boot winners, interfaces, outcome.
fn render(r: &EnableReport) -> String {
    let mut out = String::new();
    let tag = if r.dry_run { "dry run: " } else { "" };
    for k in &r.keys {
        let status = match k.runtime {
            RuntimeStatus::Set => "set",
            RuntimeStatus::AlreadySet => "already",
            RuntimeStatus::WouldSet => "would set",
            RuntimeStatus::Skipped => "skipped",
            RuntimeStatus::HostOnly => "host's job",
            RuntimeStatus::NoKernelSupport => "no kernel support",
            RuntimeStatus::NotPermitted => "EPERM",
            RuntimeStatus::Failed => "FAILED",
        };
        let _ = writeln!(out, "{tag}{} = {}  [{status}] {}", k.key, k.value, k.detail);
        let _ = writeln!(
            out,
            "    why: {}{}",
            k.rationale,
            if k.persisted {
                ""
            } else {
                " (not persisted here)"
            }
        );
    }
    if let Some(b) = &r.bpf {
        for l in bbrkit_host::enable::bpf::lines(b, r.dry_run) {
            let _ = writeln!(out, "{l}");
        }
    }
    for n in &r.notes {
        let _ = writeln!(out, "note: {n}");
    }
    let verb = match (r.dry_run, r.file_changed, r.blocked) {
        (_, _, true) => "not written (blocked)",
        (true, true, _) => "would write",
        (false, true, _) => "wrote",
        (_, false, _) => "unchanged",
    };
    let _ = writeln!(out, "file: {verb} {}", r.file);
    if r.dry_run && r.file_changed {
        for l in r.content.lines() {
            let _ = writeln!(out, "    | {l}");
        }
    }
    boot_lines(r, &mut out);
    for i in &r.interfaces {
        let _ = writeln!(
            out,
            "iface {} ({}): {}: {}",
            i.name,
            i.before.trim(),
            i.action.replace('_', " "),
            i.detail
        );
    }
    if r.blocked {
        out.push_str("blocked: another file overrides bbrkit at boot; fix it or rerun with --force. Nothing was changed.\n");
    } else if r.changed {
        let _ = writeln!(
            out,
            "{}changed: before-image in {}",
            if r.dry_run { "would be " } else { "" },
            r.before_image
        );
    } else {
        out.push_str("nothing to change: already enabled\n");
    }
    out
}

/// One line per key when both loaders agree, else one per loader.
fn boot_lines(r: &EnableReport, out: &mut String) {
    let mut keys: Vec<&str> = r.boot.iter().map(|b| b.key.as_str()).collect();
    keys.sort();
    keys.dedup();
    for key in keys {
        let rows: Vec<_> = r.boot.iter().filter(|b| b.key == key).collect();
        let who = |b: &BootWinner| match (&b.file, b.line) {
            (Some(f), Some(l)) => format!("{f}:{l} ({})", b.value.as_deref().unwrap_or("")),
            _ => "no file".into(),
        };
        let same = rows.windows(2).all(|w| who(w[0]) == who(w[1]));
        if same && rows.iter().all(|b| b.ok) {
            let _ = writeln!(
                out,
                "boot: {key}: systemd-sysctl and sysctl --system apply {}",
                who(rows[0])
            );
        } else {
            for b in rows {
                let flag = if b.ok { "" } else { "  <- overrides bbrkit" };
                let _ = writeln!(
                    out,
                    "boot: {key}: {} applies {}{flag}",
                    b.loader.name(),
                    who(b)
                );
            }
        }
    }
}
