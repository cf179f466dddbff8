//! `bbrkit lab-exec` (hidden): the wrapper `bbrkit lab --server-cmd` /
//! `--client-cmd` runs each command under (see
//! `bbrkit_lab::commands::exec`): enters the namespace on descriptor 3,
//! joins the cgroup, runs `sh -c CMD` as process 1 of a new PID namespace
//! and exits with its status. Must never be run by hand: it expects the
//! namespace on descriptor 3.

use std::path::PathBuf;

use bbrkit_lab::commands::exec::{ExecArgs, exec};

/// Arguments the lab passes.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Descriptor of the network namespace to enter.
    #[arg(long)]
    netns_fd: i32,
    /// The cgroup v2 directory to join.
    #[arg(long)]
    cgroup: Option<PathBuf>,
    /// The shell command.
    #[arg(last = true, required = true)]
    command: String,
}

/// Runs the command; exits with its code.
pub fn run(args: Args) -> anyhow::Result<crate::Outcome> {
    let code = exec(&ExecArgs {
        netns_fd: args.netns_fd,
        cgroup: args.cgroup,
        command: args.command,
    })?;
    std::process::exit(code)
}
