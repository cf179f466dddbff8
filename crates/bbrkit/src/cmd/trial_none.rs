//! `trial.rs` of a build without the cargo feature `bpf`: a live trial
//! attaches a sock_ops program (`bbrkit-trial-live`, libbpf), which this
//! build does not carry, so `bbrkit trial` refuses in one line, whatever
//! its flags, and changes nothing.

use bbrkit_vocab::bpf_features::WITHOUT_BPF;

use crate::{Global, Outcome};

/// Arguments of `bbrkit trial`: taken and ignored.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Not in this build: a live trial needs BPF support (cargo feature `bpf`).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, hide = true)]
    pub ignored: Vec<String>,
}

/// Refuses: [`WITHOUT_BPF`].
pub fn run(_: Args, _: Global) -> anyhow::Result<Outcome> {
    anyhow::bail!("trial: {WITHOUT_BPF}")
}
