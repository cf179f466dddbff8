//! `bbrkit doctor`: each finding with evidence and the fix.
//! Renders `bbrkit_host::doctor::diagnose`; holds no logic.

use std::path::PathBuf;

use std::fmt::Write as _;

use bbrkit_host::doctor::{DoctorReport, Level};
use bbrkit_host::{LinuxHost, Root};

use crate::{Global, Outcome, print_report};

/// Arguments of `bbrkit doctor`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Alternate filesystem root for every file read.
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
}

/// Runs `bbrkit doctor`.
pub fn run(args: Args, global: Global) -> anyhow::Result<Outcome> {
    let root = Root::from_option(args.root.as_deref())?;
    let r = bbrkit_host::doctor::diagnose(&LinuxHost::new(root))?;
    print_report(global, &r, render)?;
    Ok(Outcome::from_problem(r.problem))
}

fn render(r: &DoctorReport) -> String {
    let mut out = String::new();
    if r.findings.is_empty() {
        out.push_str("no findings\n");
    }
    for f in &r.findings {
        let level = match f.level {
            Level::Info => "info",
            Level::Warning => "WARNING",
            Level::Error => "ERROR",
        };
        let _ = writeln!(out, "{level} [{}] {}", f.id, f.title);
        for e in &f.evidence {
            let _ = writeln!(out, "    evidence: {e}");
        }
        let _ = writeln!(out, "    fix: {}", f.fix);
    }
    out
}
