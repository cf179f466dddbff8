//! `bbrkit lab-server` (hidden): the server side of `bbrkit lab
//! --workload`, started by the lab itself in the server namespace and
//! cgroup (see `bbrkit_lab::workload::server`). Prints `ready <port>`,
//! serves until its standard input closes, then prints its statistics as
//! one JSON line. Must never be run by hand: it expects the namespace on
//! descriptor 3.

use std::path::PathBuf;

use bbrkit_lab::workload::server::{ServerArgs, serve};

/// Arguments the lab passes.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Descriptor of the server network namespace.
    #[arg(long)]
    netns_fd: i32,
    /// The cgroup v2 directory to join.
    #[arg(long)]
    cgroup: PathBuf,
    /// TCP_CONGESTION of the listener (none: the host decides).
    #[arg(long)]
    cc: Option<String>,
}

/// Runs the server.
pub fn run(args: Args) -> anyhow::Result<crate::Outcome> {
    let stats = serve(&ServerArgs {
        netns_fd: args.netns_fd,
        cgroup: args.cgroup,
        cc: args.cc,
    })?;
    println!("{}", serde_json::to_string(&stats)?);
    Ok(crate::Outcome::Ok)
}
