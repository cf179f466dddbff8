//! `bbrkit rollback`: restore exactly what `enable` changed.
//! Renders `bbrkit_host::rollback::run`; holds no logic.

use std::path::PathBuf;

use bbrkit_host::Root;

use crate::{Global, Outcome, print_json};

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
    let r = bbrkit_host::rollback::run(&root, args.dry_run, args.no_apply)?;
    let outcome = if r.problem {
        Outcome::Problem
    } else {
        Outcome::Ok
    };
    if global.json {
        print_json(&r)?;
        return Ok(outcome);
    }
    if r.nothing_to_roll_back {
        println!(
            "nothing to roll back: no before-image at {}",
            r.before_image
        );
        return Ok(outcome);
    }
    for (kind, list) in [
        ("file", &r.files),
        ("sysctl", &r.runtime),
        ("iface", &r.interfaces),
        ("bpf", &r.bpf),
    ] {
        for a in list {
            println!(
                "{kind} {}: {} ({})",
                a.what,
                a.action.replace('_', " "),
                a.detail
            );
        }
    }
    if !r.still_running.is_empty() {
        println!(
            "note: {} connection(s) keep the unregistered algorithm until they close: {}",
            r.still_running.len(),
            r.still_running.join(", ")
        );
    }
    if r.dry_run {
        println!(
            "dry run: nothing changed; before-image kept at {}",
            r.before_image
        );
    } else if r.problem {
        println!(
            "incomplete: before-image kept at {} for another try",
            r.before_image
        );
    } else {
        println!("rolled back: before-image {} removed", r.before_image);
    }
    Ok(outcome)
}
