//! `bbrkit sim` (placeholder until its issue lands).

use crate::{Global, Outcome};

/// Arguments of `bbrkit sim`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `bbrkit sim`.
pub fn run(_args: Args, _global: Global) -> anyhow::Result<Outcome> {
    anyhow::bail!("'sim' is not implemented yet")
}
