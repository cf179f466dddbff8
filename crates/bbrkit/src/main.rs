//! `bbrkit`: the command-line front end.
//!
//! Owns argument parsing, human tables, `--json` documents, progress bars and
//! plots. Must never hold logic that a library crate should own: every command
//! module in `cmd/` turns flags into a library call and renders the result.
//!
//! Exit codes (the CLI contract in `docs/cli.md`): 0 success, 1 a check ran and
//! found a problem, 2 usage error or failure to run. Errors are one line on
//! stderr, `bbrkit: ...`, with the cause chain.

mod cmd;
mod lab_out;
mod output;
mod sim_out;
#[cfg(feature = "bpf")]
mod trial_out;
mod units;

use std::process::ExitCode;
use std::sync::LazyLock;

use clap::{Parser, Subcommand};

/// Enable, verify, measure and watch TCP BBR on Linux servers.
#[derive(Debug, Parser)]
#[command(name = "bbrkit", version = version(), about, propagate_version = true)]
struct Cli {
    /// Print exactly one JSON document on stdout instead of human output.
    #[arg(long, global = true)]
    json: bool,

    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// What this kernel offers: congestion control, BBR, qdiscs, containers.
    Check(cmd::check::Args),
    /// Persist and apply BBR (+ fq where the kernel has it), recording a before-image.
    Enable(cmd::enable::Args),
    /// Prove BBR is active: sysctl, module, live sockets, qdiscs, boot persistence.
    Verify(cmd::verify::Args),
    /// Restore exactly what `enable` changed.
    Rollback(cmd::rollback::Args),
    /// Explain every known pitfall found on this host, with evidence and the fix.
    Doctor(cmd::doctor::Args),
    /// Kernel CUBIC vs BBR in throwaway network namespaces with delay, loss and rate limits.
    Lab(cmd::lab::Args),
    /// Simulate Reno, CUBIC, BBRv1/v2/v3 on a bottleneck path (no root needed).
    Sim(cmd::sim::Args),
    /// Live TCP connections with their algorithm, cwnd, RTT and rates (like `ss -tin`).
    Conns(cmd::conns::Args),
    /// Prometheus text exposition of the host's congestion-control state.
    Metrics(cmd::metrics::Args),
    /// Will BBR help this server's own traffic? Samples its connections, predicts, advises.
    Advise(cmd::advise::Args),
    /// Live A/B trial of two algorithms on this host's own connections, with confidence intervals.
    Trial(cmd::trial::Args),
    /// What bbrkit-bbr3.service runs at boot: register bbr3 (pinned), then make it the default.
    Boot(cmd::boot::Args),
    /// Print the shell completion script (bash, zsh, fish, elvish, powershell).
    Completions(cmd::completions::Args),
    /// Write one man page per command into DIR (e.g. /usr/local/share/man/man1).
    Manpages(cmd::manpages::Args),
    /// The server side of `lab --workload` (started by the lab itself).
    #[command(hide = true)]
    LabServer(cmd::lab_server::Args),
}

/// `bbrkit --version`: the package version and which BPF code the binary
/// carries (the first 12 hex digits of the embedded bbr3 object's SHA-256,
/// as `sha256sum crates/bbrkit-bpf/bpf/bbr3.bpf.o` prints it), or that it
/// was built without BPF support (cargo feature `bpf`).
fn version() -> &'static str {
    static VERSION: LazyLock<String> = LazyLock::new(|| {
        let bpf = match bbrkit_host::bpf::object_sha256() {
            Some(object) => format!("bbr3 object sha256:{}", &object[..12]),
            None => "without BPF support: no bbr3".to_string(),
        };
        format!("{} ({bpf})", env!("CARGO_PKG_VERSION"))
    });
    &VERSION
}

/// Options every command shares.
#[derive(Debug, Clone, Copy)]
pub struct Global {
    /// `--json`: one JSON document on stdout.
    pub json: bool,
}

/// How a command that ran to completion ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Exit 0: success, everything verified.
    Ok,
    /// Exit 1: a check ran and found a problem.
    Problem,
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return usage_error(e),
    };
    let global = Global { json: cli.json };
    if !matches!(cli.command, Command::Lab(_) | Command::LabServer(_)) {
        restore_sigpipe();
    }
    let result = match cli.command {
        Command::Check(a) => cmd::check::run(a, global),
        Command::Enable(a) => cmd::enable::run(a, global),
        Command::Verify(a) => cmd::verify::run(a, global),
        Command::Rollback(a) => cmd::rollback::run(a, global),
        Command::Doctor(a) => cmd::doctor::run(a, global),
        Command::Lab(a) => cmd::lab::run(a, global),
        Command::Sim(a) => cmd::sim::run(a, global),
        Command::Conns(a) => cmd::conns::run(a, global),
        Command::Metrics(a) => cmd::metrics::run(a, global),
        Command::Advise(a) => cmd::advise::run(a, global),
        Command::Trial(a) => cmd::trial::run(a, global),
        Command::Boot(a) => cmd::boot::run(a, global),
        Command::Completions(a) => cmd::completions::run(a, global),
        Command::Manpages(a) => cmd::manpages::run(a, global),
        Command::LabServer(a) => cmd::lab_server::run(a),
    };
    match result {
        Ok(Outcome::Ok) => ExitCode::SUCCESS,
        Ok(Outcome::Problem) => ExitCode::from(1),
        Err(e) => {
            eprintln!("bbrkit: {e:#}");
            ExitCode::from(2)
        }
    }
}

/// Like every Unix filter, `bbrkit conns | head` should end quietly when the
/// reader goes away instead of panicking on EPIPE: Rust ignores SIGPIPE by
/// default, so restore the default action. Not for `lab`, whose traffic
/// tester writes to TCP sockets and handles EPIPE itself.
fn restore_sigpipe() {
    // SAFETY: changes a signal disposition before any thread is started.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// Clap's own errors become the contract's one-line `bbrkit: ...` + exit 2;
/// `--help` and `--version` print as usual and exit 0.
fn usage_error(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    match e.kind() {
        ErrorKind::DisplayHelp
        | ErrorKind::DisplayVersion
        | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = e.print();
            if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS
            }
        }
        _ => {
            let rendered = e.render().to_string();
            let mut line = rendered
                .lines()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("invalid arguments")
                .trim_start_matches("error: ")
                .to_string();
            // Keep clap's list of accepted values on the same line.
            if let Some(values) = rendered
                .lines()
                .map(str::trim)
                .find(|l| l.starts_with("[possible values:"))
            {
                line = format!("{line} {values}");
            }
            eprintln!("bbrkit: {line}");
            ExitCode::from(2)
        }
    }
}

impl Outcome {
    /// [`Outcome::Problem`] when a check found a problem, else [`Outcome::Ok`].
    pub fn from_problem(problem: bool) -> Outcome {
        if problem {
            Outcome::Problem
        } else {
            Outcome::Ok
        }
    }
}

/// Prints a command's report: its JSON document with `--json`, else the
/// human lines `render` makes of it; both through [`emit`].
pub fn print_report<T: serde::Serialize>(
    global: Global,
    report: &T,
    render: impl FnOnce(&T) -> String,
) -> anyhow::Result<()> {
    if global.json {
        print_json(report)
    } else {
        emit(&render(report))
    }
}

/// A seed from the clock (nanoseconds since the epoch; 1 before it), for a
/// command run without `--seed`: the binary reads the time, the libraries
/// take the seed.
pub fn clock_seed() -> u64 {
    let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    t.map(|d| d.as_nanos() as u64).unwrap_or(1)
}

/// Prints `value` as the command's single JSON document.
pub fn print_json<T: serde::Serialize>(value: &T) -> anyhow::Result<()> {
    emit(&(serde_json::to_string_pretty(value)? + "\n"))
}

/// Writes `text` to stdout. A reader that went away (`| head`) ends bbrkit by
/// SIGPIPE (see [`restore_sigpipe`]); any other write error (a full disk) is
/// reported as an error rather than a panic as with `print!`.
pub fn emit(text: &str) -> anyhow::Result<()> {
    use anyhow::Context as _;
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .context("writing to stdout")
}
