//! `bbrkit lab-exec` (hidden): the wrapper `bbrkit lab --server-cmd` /
//! `--client-cmd` runs each command under (see
//! `bbrkit_lab::commands::exec`): enters the namespace on descriptor 3,
//! joins the cgroup, runs `sh -c CMD` as process 1 of a new PID namespace
//! and exits with its status. With `--janitor PATH` it is instead the
//! janitor of the lab's cgroup (`bbrkit_lab::commands::janitor`). Must
//! never be run by hand: it expects the namespace on descriptor 3, or the
//! lab on its standard input.

use std::path::PathBuf;

use bbrkit_lab::commands::exec::{ExecArgs, exec};

/// Arguments the lab passes.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Descriptor of the network namespace to enter.
    #[arg(long, required_unless_present = "janitor")]
    netns_fd: Option<i32>,
    /// The cgroup v2 directory to join.
    #[arg(long)]
    cgroup: Option<PathBuf>,
    /// Remove this cgroup (created by the lab) once standard input ends.
    #[arg(long, conflicts_with_all = ["netns_fd", "cgroup", "command"])]
    janitor: Option<PathBuf>,
    /// The shell command.
    #[arg(last = true, required_unless_present = "janitor")]
    command: Option<String>,
}

/// Runs the command; exits with its code.
pub fn run(args: Args) -> anyhow::Result<crate::Outcome> {
    if let Some(cg) = &args.janitor {
        bbrkit_lab::commands::janitor::watch(cg);
        return Ok(crate::Outcome::Ok);
    }
    let (Some(netns_fd), Some(command)) = (args.netns_fd, args.command) else {
        anyhow::bail!("lab-exec: --netns-fd and a command, or --janitor");
    };
    let code = exec(&ExecArgs {
        netns_fd,
        cgroup: args.cgroup,
        command,
    })?;
    std::process::exit(code)
}
