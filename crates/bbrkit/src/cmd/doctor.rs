//! `bbrkit doctor`: each finding with evidence and the fix.
//! Renders `bbrkit_host::doctor::diagnose`; holds no logic.

use std::path::PathBuf;

use bbrkit_host::Root;
use bbrkit_host::doctor::Level;

use crate::{Global, Outcome, print_json};

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
    let r = bbrkit_host::doctor::diagnose(&root)?;
    let outcome = if r.problem {
        Outcome::Problem
    } else {
        Outcome::Ok
    };
    if global.json {
        print_json(&r)?;
        return Ok(outcome);
    }
    if r.findings.is_empty() {
        println!("no findings");
    }
    for f in &r.findings {
        let level = match f.level {
            Level::Info => "info",
            Level::Warning => "WARNING",
            Level::Error => "ERROR",
        };
        println!("{level} [{}] {}", f.id, f.title);
        for e in &f.evidence {
            println!("    evidence: {e}");
        }
        println!("    fix: {}", f.fix);
    }
    Ok(outcome)
}
