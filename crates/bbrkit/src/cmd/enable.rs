//! `bbrkit enable`: persist and apply BBR (+ fq where the kernel has it), or
//! (`--policy FILE`) attach a per-connection policy.
//! Renders `bbrkit_host::enable::run`; holds no logic.

use std::path::PathBuf;

use std::fmt::Write as _;

use bbrkit_host::enable::{EnableReport, Options, PolicyOptions, QdiscChoice};
use bbrkit_host::{LinuxHost, Root};

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
    /// Attach this per-connection policy (TOML `[[rule]]`s, docs/policy.md)
    /// instead of changing the default algorithm.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["cc", "qdisc", "tune", "no_apply", "force"])]
    pub policy: Option<PathBuf>,
    /// The cgroup v2 directory the policy governs (default: the whole
    /// host, the cgroup2 mount's root).
    #[arg(long, value_name = "PATH", requires = "policy")]
    pub cgroup: Option<PathBuf>,
    /// Alternate filesystem root for every file read or written.
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
}

/// Runs `bbrkit enable`.
pub fn run(args: Args, global: Global) -> anyhow::Result<Outcome> {
    let root = Root::from_option(args.root.as_deref())?;
    let opts = Options {
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
        policy: args.policy.map(|file| PolicyOptions {
            file,
            cgroup: args.cgroup,
        }),
        ..Options::new(&args.cc)
    };
    let r = bbrkit_host::enable::run(&mut LinuxHost::new(root), &opts)?;
    print_report(global, &r, render)?;
    Ok(Outcome::from_problem(r.problem))
}

/// The human lines of `enable --policy`: the compiled rules, the plan, the
/// outcome.
fn render_policy(r: &EnableReport) -> String {
    let mut lines = r.policy_lines();
    lines.extend(r.modules_lines());
    let mut out: String = lines.iter().map(|l| format!("{l}\n")).collect();
    for e in &r.edited {
        let _ = writeln!(
            out,
            "blocked: {} was edited since bbrkit wrote it ({}); bbrkit never replaces an edited file. Nothing was changed.",
            e.file,
            e.summary()
        );
    }
    if r.edited.is_empty() {
        let _ = match (r.changed, r.dry_run) {
            (true, true) => writeln!(
                out,
                "dry run: nothing changed; before-image would be {}",
                r.before_image
            ),
            (true, false) => writeln!(out, "changed: before-image in {}", r.before_image),
            (false, _) => writeln!(out, "nothing to change: this policy is attached already"),
        };
    }
    out
}

/// The human lines: keys, notes, the file, boot winners, interfaces, outcome.
fn render(r: &EnableReport) -> String {
    if r.policy.is_some() {
        return render_policy(r);
    }
    let mut out = String::new();
    let tag = if r.dry_run { "dry run: " } else { "" };
    for k in &r.keys {
        let status = k.runtime.words();
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
    let extra = r.modules_lines().into_iter().chain(r.retire_lines());
    for l in r.bpf_lines().into_iter().chain(extra) {
        let _ = writeln!(out, "{l}");
    }
    for n in &r.notes {
        let _ = writeln!(out, "note: {n}");
    }
    let verb = match (r.dry_run, r.file_changed, r.blocked) {
        (_, _, true) if r.edited.iter().any(|e| e.file == r.file) => {
            "not written (edited since bbrkit wrote it)"
        }
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
    for l in r.boot_lines() {
        let _ = writeln!(out, "{l}");
    }
    for i in &r.interfaces {
        let _ = writeln!(
            out,
            "iface {} ({}): {}: {}",
            i.name,
            i.before.trim(),
            i.action.words(),
            i.detail
        );
    }
    if !r.edited.is_empty() {
        for e in &r.edited {
            let _ = writeln!(
                out,
                "blocked: {} was edited since bbrkit wrote it ({}); bbrkit never replaces an edited file. Nothing was changed: move your lines to a file of your own, delete this one, then run `bbrkit enable` again.",
                e.file,
                e.summary()
            );
        }
    } else if r.blocked {
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
