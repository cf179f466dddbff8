//! `bbrkit doctor` (placeholder until its issue lands).

use crate::{Global, Outcome};

/// Arguments of `bbrkit doctor`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `bbrkit doctor`.
pub fn run(_args: Args, _global: Global) -> anyhow::Result<Outcome> {
    anyhow::bail!("'doctor' is not implemented yet")
}
