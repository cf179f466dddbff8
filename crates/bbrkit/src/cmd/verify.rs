//! `bbrkit verify`: one `ok`/`FAIL key=value expected=value` line per check.
//! Renders `bbrkit_host::verify::run`; holds no logic.

use std::path::PathBuf;

use bbrkit_host::{LinuxHost, Root};

use crate::{Global, Outcome, print_report};

/// Arguments of `bbrkit verify`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Expected algorithm (default: the one in bbrkit's file, else bbr).
    #[arg(long)]
    pub cc: Option<String>,
    /// Alternate filesystem root for every file read.
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
}

/// Runs `bbrkit verify`.
pub fn run(args: Args, global: Global) -> anyhow::Result<Outcome> {
    let root = Root::from_option(args.root.as_deref())?;
    let r = bbrkit_host::verify::run(&LinuxHost::new(root), args.cc.as_deref())?;
    print_report(global, &r, |r| {
        r.checks.iter().map(|c| c.line() + "\n").collect()
    })?;
    Ok(Outcome::from_problem(!r.ok))
}
