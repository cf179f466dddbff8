//! `bbrkit metrics` (placeholder until its issue lands).

use crate::{Global, Outcome};

/// Arguments of `bbrkit metrics`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `bbrkit metrics`.
pub fn run(_args: Args, _global: Global) -> anyhow::Result<Outcome> {
    anyhow::bail!("'metrics' is not implemented yet")
}
