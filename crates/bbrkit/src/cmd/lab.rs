//! `bbrkit lab` (placeholder until its issue lands).

use crate::{Global, Outcome};

/// Arguments of `bbrkit lab`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `bbrkit lab`.
pub fn run(_args: Args, _global: Global) -> anyhow::Result<Outcome> {
    anyhow::bail!("'lab' is not implemented yet")
}
