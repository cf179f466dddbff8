//! `bbrkit verify` (placeholder until its issue lands).

use crate::{Global, Outcome};

/// Arguments of `bbrkit verify`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `bbrkit verify`.
pub fn run(_args: Args, _global: Global) -> anyhow::Result<Outcome> {
    anyhow::bail!("'verify' is not implemented yet")
}
