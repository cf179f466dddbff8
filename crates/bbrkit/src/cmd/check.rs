//! `bbrkit check` (placeholder until its issue lands).

use crate::{Global, Outcome};

/// Arguments of `bbrkit check`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `bbrkit check`.
pub fn run(_args: Args, _global: Global) -> anyhow::Result<Outcome> {
    anyhow::bail!("'check' is not implemented yet")
}
