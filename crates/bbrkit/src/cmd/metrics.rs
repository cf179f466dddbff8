//! `bbrkit metrics`: the host's congestion-control state in the Prometheus
//! text exposition format, for a scrape or node_exporter's textfile collector.
//!
//! Owns the flags and printing. The inputs are gathered once by
//! `bbrkit_host::metrics`; every family and the JSON form are
//! `bbrkit_diag::metrics`'; the `--textfile` goes through the CLI's one
//! output module (opened before anything is read, written atomically).
//! Never changes anything except the `--textfile` it is given.

use std::path::PathBuf;

use anyhow::Context as _;
use bbrkit_diag::metrics::{self, FamilyJson};
use bbrkit_host::Root;
use serde::Serialize;

use crate::output::OutFile;
use crate::{Global, Outcome};

/// Arguments of `bbrkit metrics`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Write the exposition to PATH atomically (temporary file in the same
    /// directory, then rename) instead of stdout, for node_exporter's textfile
    /// collector (e.g. /var/lib/prometheus/node-exporter/bbrkit.prom).
    #[arg(long, value_name = "PATH")]
    pub textfile: Option<PathBuf>,
    /// Alternate filesystem root for the on-disk files the host facts and
    /// checks read (`etc/sysctl.d`, kernel config, ...).
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
}

/// The `--json` document: where the text went and the families as written.
#[derive(Debug, Serialize)]
struct Document {
    textfile: Option<String>,
    families: Vec<FamilyJson>,
}

/// Runs `bbrkit metrics`.
pub fn run(args: Args, global: Global) -> anyhow::Result<Outcome> {
    let root = Root::from_option(args.root.as_deref())?;
    let textfile = args
        .textfile
        .as_deref()
        .map(|p| OutFile::create(p, "--textfile"))
        .transpose()?;
    let inputs = bbrkit_host::metrics::gather(&root).context("taking the socket census")?;
    for w in &inputs.warnings {
        eprintln!("bbrkit: metrics: {w}");
    }
    let exp = metrics::exposition(&inputs)?;
    if let Some(f) = textfile {
        f.write_and_commit(exp.text().as_bytes())?;
    }
    if global.json {
        crate::print_json(&Document {
            textfile: args.textfile.as_deref().map(|p| p.display().to_string()),
            families: metrics::families_json(&exp),
        })?;
    } else if args.textfile.is_none() {
        crate::emit(exp.text())?;
    }
    Ok(Outcome::Ok)
}
