//! `bbrkit conns` (placeholder until its issue lands).

use crate::{Global, Outcome};

/// Arguments of `bbrkit conns`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `bbrkit conns`.
pub fn run(_args: Args, _global: Global) -> anyhow::Result<Outcome> {
    anyhow::bail!("'conns' is not implemented yet")
}
