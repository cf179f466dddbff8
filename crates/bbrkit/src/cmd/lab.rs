//! `bbrkit lab`: kernel congestion control in throwaway network namespaces
//! — each algorithm alone (the seed experiment), all competing for one
//! bottleneck (`--compete`), a request/response workload (`--workload`),
//! the operator's own server and client (`--server-cmd`, `--client-cmd`),
//! or one path held up for work by hand (`--hold`).
//!
//! Hands the flags to `bbrkit_lab::settings::Settings`, which makes the
//! `Experiment`; opens the output files before anything is built, calls
//! `experiment::run` once and renders the report (`lab_out`). Must never leave the lab behind:
//! SIGINT/SIGTERM cancel the run, the library tears it down, and the
//! process exits 130/143.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::anyhow;
use bbrkit_lab::commands::Commands;
use bbrkit_lab::emulator::EmulatorKind;
use bbrkit_lab::experiment::{self, Experiment};
use bbrkit_lab::settings::Settings;
use bbrkit_lab::tester::CcOn;
use bbrkit_lab::workload::Workload;
use bbrkit_lab::workload::server::ServerLauncher;

use crate::lab_out;
use crate::output;
use crate::{Global, Outcome};

/// Arguments of `bbrkit lab`. With no condition flags it runs the seed
/// experiment: no impairment, 10 ms + 2% loss, 10 ms + 5% loss, cubic vs bbr.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Algorithms, in table order (ratios are against the first; a name may
    /// repeat with --compete); `host` sets none and leaves it to the host.
    #[arg(long, value_name = "LIST", default_value = "cubic,bbr")]
    pub cc: String,
    /// One-way delay(s) of the data direction, e.g. `10ms` or `0,10ms,50ms`.
    #[arg(long, value_name = "LIST")]
    pub delay: Option<String>,
    /// Random loss probability(ies) of the data direction, e.g. `0,1%,2%`.
    #[arg(long, value_name = "LIST")]
    pub loss: Option<String>,
    /// Uniform delay jitter (frames are never reordered), e.g. `1ms`.
    #[arg(long, value_name = "TIME")]
    pub jitter: Option<String>,
    /// Bottleneck rate(s), e.g. `100mbit` or `100mbit,1gbit` (default: none).
    #[arg(long, value_name = "LIST")]
    pub rate: Option<String>,
    /// Drop-tail buffer at the bottleneck: `1bdp`, `100pkt`, `256kb`.
    #[arg(long, value_name = "SIZE", default_value = "1bdp")]
    pub buffer: String,
    /// CE-mark data packets arriving while more than SIZE waits at the bottleneck
    /// (as `sim --ecn-threshold`): `20pkt`, `0.2bdp`, `30kb`; needs --rate, runs on the
    /// userspace emulator, and both ends negotiate ECN (tcp_ecn=1) [default: no ECN].
    #[arg(long, value_name = "SIZE")]
    pub ecn_threshold: Option<String>,
    /// Runs per condition and algorithm (the table shows the median).
    #[arg(long, default_value_t = 3)]
    pub runs: usize,
    /// Sending time of each run (with --workload: how long new requests start).
    #[arg(long, value_name = "TIME", default_value = "6s")]
    pub duration: String,
    /// Parallel TCP flows per run (per algorithm with --compete).
    #[arg(short = 'P', long = "parallel", default_value_t = 1)]
    pub parallel: usize,
    /// All algorithms' flows share the bottleneck at once: shares, Jain's index.
    #[arg(long, conflicts_with = "workload")]
    pub compete: bool,
    /// With --compete: when each algorithm's flows start, e.g. `0,5s`.
    #[arg(long, value_name = "LIST", requires = "compete")]
    pub start: Option<String>,
    /// Request/response traffic instead of bulk flows: `10kb`, `4mb`, or `web`.
    #[arg(long, value_name = "SPEC")]
    pub workload: Option<String>,
    /// Concurrent clients of --workload.
    #[arg(long, default_value_t = 8, requires = "workload")]
    pub clients: usize,
    /// With --workload: one connection per client instead of one per request.
    #[arg(long, requires = "workload")]
    pub keepalive: bool,
    /// With --workload, --server-cmd or --hold: the cgroup v2 directory the
    /// server side runs in (created if missing; default: a new one, printed).
    #[arg(long, value_name = "PATH")]
    pub cgroup: Option<PathBuf>,
    /// Your own server: a shell command started first in the server
    /// namespace and cgroup each run (e.g. nginx; $BBRKIT_SERVER_ADDR).
    #[arg(long, value_name = "CMD", conflicts_with_all = ["workload", "compete", "timeseries", "plot"])]
    pub server_cmd: Option<String>,
    /// Your own client: a shell command run once per run in the client
    /// namespace; the run ends when it exits (at the latest at --duration).
    #[arg(long, value_name = "CMD", conflicts_with_all = ["workload", "compete", "timeseries", "plot"])]
    pub client_cmd: Option<String>,
    /// Keep one path up until Ctrl-C (with --server-cmd running, if given)
    /// and print how to enter each side.
    #[arg(long, conflicts_with_all = ["workload", "compete", "timeseries", "plot", "out", "client_cmd"])]
    pub hold: bool,
    /// Which side gets the algorithm: `sender` (matters) or `receiver` (the
    /// sender then keeps its namespace default).
    #[arg(long, value_enum, default_value = "sender")]
    pub cc_on: CcOnArg,
    /// Link emulator: kernel netem where present, else split (eBPF tcx), else userspace.
    #[arg(long, value_enum, default_value = "auto")]
    pub emulator: EmulatorArg,
    /// Seed of the loss process (default: from the clock; always reported).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Link MTU in bytes.
    #[arg(long, default_value_t = 1500)]
    pub mtu: u32,
    /// How often a run the emulator spoiled (CPU stall, own drops) is repeated.
    #[arg(long, default_value_t = 1)]
    pub retries: usize,
    /// Also write the JSON report to FILE (atomically).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Write TCP_INFO samples (every 100 ms, every flow) to FILE as CSV.
    #[arg(long, value_name = "FILE")]
    pub timeseries: Option<PathBuf>,
    /// Draw the run to FILE (SVG): goodput (or shares) over time, or FCT CDFs.
    #[arg(long, value_name = "FILE")]
    pub plot: Option<PathBuf>,
    /// Name the namespaces `/run/netns/bbrk<pid>-{client,router,server}`
    /// during the run (printed), for `ip netns exec`.
    #[arg(long)]
    pub netns_names: bool,
    /// Remove namespace names and cgroups left by a lab that was killed
    /// (SIGKILL), then exit.
    #[arg(long)]
    pub cleanup: bool,
}

/// `--cc-on`.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum CcOnArg {
    /// The data sender.
    Sender,
    /// The data receiver only.
    Receiver,
}

/// `--emulator`.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum EmulatorArg {
    /// netem if the kernel has it, else split if it has eBPF tcx, else userspace.
    Auto,
    /// Kernel netem.
    Netem,
    /// Loss and rate in the kernel (eBPF, tbf); delay on the ACK path in userspace.
    Split,
    /// bbrkit's AF_PACKET forwarder, every impairment on the data path.
    Userspace,
}

/// Builds the experiment from the flags (no system access).
pub fn experiment(args: &Args) -> anyhow::Result<Experiment> {
    let workload = |spec: &String| -> anyhow::Result<Workload> {
        Ok(Workload {
            objects: spec.parse().map_err(|e| anyhow!("--workload: {e}"))?,
            clients: args.clients,
            keepalive: args.keepalive,
            cgroup: args.cgroup.clone(),
            server: ServerLauncher {
                program: std::env::current_exe()?,
                args: vec!["lab-server".into()],
            },
        })
    };
    let commands = (args.server_cmd.is_some() || args.client_cmd.is_some() || args.hold)
        .then(|| -> anyhow::Result<Commands> {
            Ok(Commands {
                server: args.server_cmd.clone(),
                client: args.client_cmd.clone(),
                hold: args.hold,
                cgroup: args.cgroup.clone(),
                launcher: ServerLauncher {
                    program: std::env::current_exe()?,
                    args: vec!["lab-exec".into()],
                },
            })
        })
        .transpose()?;
    if args.cgroup.is_some() && args.workload.is_none() && commands.is_none() {
        anyhow::bail!("--cgroup places a server: give --workload, --server-cmd or --hold");
    }
    let settings = Settings {
        cc: &args.cc,
        delay: args.delay.as_deref(),
        loss: args.loss.as_deref(),
        jitter: args.jitter.as_deref(),
        rate: args.rate.as_deref(),
        buffer: &args.buffer,
        ecn_threshold: args.ecn_threshold.as_deref(),
        runs: args.runs,
        duration: &args.duration,
        parallel: args.parallel,
        compete: args.compete,
        start: args.start.as_deref(),
        workload: args.workload.as_ref().map(workload).transpose()?,
        commands,
        cc_on: match args.cc_on {
            CcOnArg::Sender => CcOn::Sender,
            CcOnArg::Receiver => CcOn::Receiver,
        },
        emulator: match args.emulator {
            EmulatorArg::Auto => EmulatorKind::Auto,
            EmulatorArg::Netem => EmulatorKind::Netem,
            EmulatorArg::Split => EmulatorKind::Split,
            EmulatorArg::Userspace => EmulatorKind::Userspace,
        },
        // Time passed in: the loss seed of a run without --seed.
        seed: args
            .seed
            .unwrap_or_else(|| crate::clock_seed() & 0xffff_ffff),
        mtu: args.mtu,
        retries: args.retries,
        netns_names: args.netns_names,
    };
    Ok(settings.experiment()?)
}

/// Runs `bbrkit lab`.
pub fn run(args: Args, global: Global) -> anyhow::Result<Outcome> {
    let signals = bbrkit_signals::install(bbrkit_signals::Mode::Cancel {
        grace: Duration::from_secs(5),
        note: "the kernel removes the lab",
    })?;
    bbrkit_signals::on_exit(bbrkit_lab::cleanup::remove_own).keep();
    if args.cleanup {
        bbrkit_lab::require_root()?;
        let removed = bbrkit_lab::cleanup::remove_leftovers()?;
        lab_out::print_cleanup(&removed, global.json)?;
        return Ok(Outcome::Ok);
    }
    if args.hold && global.json {
        anyhow::bail!("--hold prints how to enter the path, not a report: leave out --json");
    }
    let exp = experiment(&args)?;
    // Before anything is built: an unwritable output fails in a moment.
    let files = output::open_all(&[
        ("--out", args.out.as_deref()),
        ("--timeseries", args.timeseries.as_deref()),
        ("--plot", args.plot.as_deref()),
    ])?;
    let mut progress = lab_out::Progress::new(&exp);
    let result = experiment::run(&exp, &signals.cancel, &mut |ev| progress.event(ev));
    progress.finish();
    if args.hold && signals.exit_code().is_some() {
        // The signal is how a held path ends.
        crate::emit(&lab_out::table(&result?))?;
        return Ok(Outcome::Ok);
    }
    if let Some(code) = signals.exit_code() {
        drop(files); // exit() runs no destructor: remove the temporary files
        let message = format!("interrupted by signal {}; lab removed", code - 128);
        std::process::exit(crate::failure::fail(&message, code as u8, global.json).into());
    }
    let report = result?;
    // The results first: a file that cannot be written loses nothing.
    lab_out::deliver(&report, files, |r| {
        crate::print_report(global, r, lab_out::table)
    })?;
    Ok(Outcome::Ok)
}
