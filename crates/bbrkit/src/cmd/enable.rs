//! `bbrkit enable` (placeholder until its issue lands).

use crate::{Global, Outcome};

/// Arguments of `bbrkit enable`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `bbrkit enable`.
pub fn run(_args: Args, _global: Global) -> anyhow::Result<Outcome> {
    anyhow::bail!("'enable' is not implemented yet")
}
