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
mod failure;
mod fleet_out;
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
    /// A trial across a fleet, pooled through Prometheus (`fleet report`).
    Fleet(cmd::fleet::Args),
    /// What bbrkit-bbr3.service runs at boot: register bbr3 (pinned), then make it the default.
    Boot(cmd::boot::Args),
    /// Print the shell completion script (bash, zsh, fish, elvish, powershell).
    Completions(cmd::completions::Args),
    /// Write one man page per command into DIR (e.g. /usr/local/share/man/man1).
    Manpages(cmd::manpages::Args),
    /// The server side of `lab --workload` (started by the lab itself).
    #[command(hide = true)]
    LabServer(cmd::lab_server::Args),
    /// The wrapper of `lab --server-cmd/--client-cmd` (started by the lab itself).
    #[command(hide = true)]
    LabExec(cmd::lab_exec::Args),
}

/// `bbrkit --version`: the package version and which BPF code the binary
/// carries (per embedded object, the first 12 hex digits of its SHA-256, as
/// `sha256sum crates/bbrkit-bpf/bpf/*.bpf.o` prints them), or that it was
/// built without BPF support (cargo feature `bpf`).
fn version() -> &'static str {
    static VERSION: LazyLock<String> = LazyLock::new(|| {
        let objects = bbrkit_host::bpf::object_sha256();
        let bpf = if objects.is_empty() {
            "without BPF support: no bbr3".to_string()
        } else {
            let each: Vec<String> = objects
                .iter()
                .map(|(file, sha)| format!("{file} sha256:{}", &sha[..12]))
                .collect();
            each.join(", ")
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
        Command::Fleet(a) => cmd::fleet::run(a, global),
        Command::Boot(a) => cmd::boot::run(a, global),
        Command::Completions(a) => cmd::completions::run(a, global),
        Command::Manpages(a) => cmd::manpages::run(a, global),
        Command::LabServer(a) => cmd::lab_server::run(a),
        Command::LabExec(a) => cmd::lab_exec::run(a),
    };
    match result {
        Ok(Outcome::Ok) => ExitCode::SUCCESS,
        Ok(Outcome::Problem) => ExitCode::from(1),
        Err(e) => failure::exit_code(&format!("{e:#}"), 2, global.json),
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
                // The help went to stderr; --json still gets its document.
                failure::document_only(
                    "a subcommand or argument is missing (the help is on stderr)",
                    2,
                    failure::json_in_argv(),
                );
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS
            }
        }
        _ => {
            let mut line = one_line(&e.render().to_string());
            // clap names no argument for this kind: name the first one.
            if e.kind() == ErrorKind::InvalidUtf8
                && let Some(bad) = std::env::args_os().find(|a| a.to_str().is_none())
            {
                line = format!("{line}: '{}'", bad.to_string_lossy());
            }
            failure::exit_code(&line, 2, failure::json_in_argv())
        }
    }
}

/// Clap's rendered error as the contract's one line: its message, then the
/// items clap lists below it (the missing arguments, the conflicting ones,
/// the accepted values or subcommands) and its tips; the usage and the
/// `--help` hint are dropped. Every kind names what is wrong this way,
/// because clap puts the name in the message or in those items.
fn one_line(rendered: &str) -> String {
    let mut message = String::new();
    let mut items = Vec::new();
    let mut tips = Vec::new();
    for l in rendered.lines().map(str::trim) {
        if l.starts_with("Usage:") || l.starts_with("For more information") {
            break;
        }
        if l.is_empty() {
            continue;
        }
        if message.is_empty() {
            message = l.trim_start_matches("error: ").to_string();
        } else if let Some(tip) = l.strip_prefix("tip: ") {
            tips.push(tip);
        } else {
            items.push(l);
        }
    }
    if message.is_empty() {
        message = "invalid arguments".into();
    }
    if !items.is_empty() {
        let sep = if message.ends_with(':') { ", " } else { " " };
        message = format!("{message} {}", items.join(sep));
    }
    if !tips.is_empty() {
        message = format!("{message} (tip: {})", tips.join("; "));
    }
    message
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
    emit(&(serde_json::to_string_pretty(value)? + "\n"))?;
    failure::document_printed();
    Ok(())
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

#[cfg(test)]
mod tests {
    use super::one_line;
    use clap::error::ErrorKind;
    use clap::{Arg, ArgAction, Command};

    /// A command that can raise every clap error kind with context,
    /// including those bbrkit's own arguments cannot (tests/usage_cli.rs
    /// drives the binary for the rest).
    fn cmd() -> Command {
        Command::new("bbrkit")
            .arg(Arg::new("pair").long("pair").num_args(2))
            .arg(Arg::new("few").long("few").num_args(2..=3))
            .arg(Arg::new("eq").long("eq").require_equals(true))
            .arg(Arg::new("pos").num_args(1))
            .arg(
                Arg::new("a")
                    .long("a")
                    .action(ArgAction::SetTrue)
                    .conflicts_with("b"),
            )
            .arg(Arg::new("b").long("b").action(ArgAction::SetTrue))
            .arg(Arg::new("need").long("need").requires("pos"))
            .subcommand(
                Command::new("group")
                    .subcommand_required(true)
                    .subcommand(Command::new("leaf")),
            )
    }

    #[test]
    fn every_kind_names_what_is_wrong() {
        let cases: &[(&[&str], ErrorKind, &[&str])] = &[
            (
                &["--pair", "x"],
                ErrorKind::WrongNumberOfValues,
                &["'--pair <pair> <pair>'"],
            ),
            (
                &["--few", "x"],
                ErrorKind::TooFewValues,
                &["2 values required by '--few <few> <few>...'"],
            ),
            (&["--eq", "x"], ErrorKind::NoEquals, &["'--eq=<eq>'"]),
            (&["p", "q"], ErrorKind::UnknownArgument, &["'q'"]),
            (
                &["--a", "--b"],
                ErrorKind::ArgumentConflict,
                &["'--a'", "'--b'"],
            ),
            (
                &["--need", "x"],
                ErrorKind::MissingRequiredArgument,
                &["not provided: <pos>"],
            ),
            (
                &["group"],
                ErrorKind::MissingSubcommand,
                &["'bbrkit group' requires a subcommand", "[subcommands: leaf"],
            ),
            (&["--nope"], ErrorKind::UnknownArgument, &["'--nope'"]),
        ];
        for (args, kind, names) in cases {
            let e = cmd()
                .try_get_matches_from(std::iter::once("bbrkit").chain(args.iter().copied()))
                .unwrap_err();
            assert_eq!(e.kind(), *kind, "{args:?}");
            let line = one_line(&e.render().to_string());
            assert!(!line.contains('\n') && !line.contains("Usage"), "{line}");
            for n in *names {
                assert!(line.contains(n), "{args:?}: {line:?} lacks {n:?}");
            }
        }
    }

    #[test]
    fn lists_and_tips_join_the_message() {
        let rendered = "error: the following required arguments were not provided:\n  --policy <FILE>\n  --x\n\nUsage: bbrkit enable --policy <FILE>\n\nFor more information, try '--help'.\n";
        assert_eq!(
            one_line(rendered),
            "the following required arguments were not provided: --policy <FILE>, --x"
        );
        let rendered = "error: unexpected argument '--jsn' found\n\n  tip: a similar argument exists: '--json'\n\nUsage: bbrkit check\n";
        assert_eq!(
            one_line(rendered),
            "unexpected argument '--jsn' found (tip: a similar argument exists: '--json')"
        );
        assert_eq!(one_line(""), "invalid arguments");
    }
}
