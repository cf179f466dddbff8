//! `bbrkit rollback`: restore exactly what `enable` changed.
//! Renders `bbrkit_host::rollback::run`; holds no logic.

use std::path::PathBuf;

use std::fmt::Write as _;

use bbrkit_host::change::UndoMode;
use bbrkit_host::rollback::RollbackReport;
use bbrkit_host::{LinuxHost, Root};

use crate::{Global, Outcome, print_report};

/// Arguments of `bbrkit rollback`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Show what would be restored; change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Restore files only; no /proc/sys or qdisc changes.
    #[arg(long)]
    pub no_apply: bool,
    /// Alternate filesystem root for every file read or written.
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
}

/// Runs `bbrkit rollback`.
pub fn run(args: Args, global: Global) -> anyhow::Result<Outcome> {
    let root = Root::from_option(args.root.as_deref())?;
    let mode = UndoMode {
        dry_run: args.dry_run,
        no_apply: args.no_apply,
    };
    let r = bbrkit_host::rollback::run(&mut LinuxHost::new(root), mode)?;
    print_report(global, &r, render)?;
    Ok(Outcome::from_problem(r.problem))
}

fn render(r: &RollbackReport) -> String {
    if r.nothing_to_roll_back {
        return format!(
            "nothing to roll back: no before-image at {}\n",
            r.before_image
        );
    }
    let mut out = String::new();
    for (kind, list) in [
        ("file", &r.files),
        ("sysctl", &r.runtime),
        ("iface", &r.interfaces),
        ("bpf", &r.bpf),
        ("policy", &r.policy),
    ] {
        for a in list {
            let _ = writeln!(
                out,
                "{kind} {}: {} ({})",
                a.what,
                a.action.words(),
                a.detail
            );
        }
    }
    if !r.still_running.is_empty() {
        let _ = writeln!(
            out,
            "note: {} connection(s) keep the unregistered algorithm until they close: {}",
            r.still_running.len(),
            r.still_running.join(", ")
        );
    }
    let _ = if r.dry_run {
        writeln!(
            out,
            "dry run: nothing changed; before-image kept at {}",
            r.before_image
        )
    } else if r.problem {
        writeln!(
            out,
            "incomplete: before-image kept at {} for another try",
            r.before_image
        )
    } else {
        writeln!(out, "rolled back: before-image {} removed", r.before_image)
    };
    out
}
