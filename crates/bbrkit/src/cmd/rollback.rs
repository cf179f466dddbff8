//! `bbrkit rollback` (placeholder until its issue lands).

use crate::{Global, Outcome};

/// Arguments of `bbrkit rollback`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `bbrkit rollback`.
pub fn run(_args: Args, _global: Global) -> anyhow::Result<Outcome> {
    anyhow::bail!("'rollback' is not implemented yet")
}
