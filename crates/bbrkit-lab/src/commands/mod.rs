//! `lab --server-cmd CMD --client-cmd CMD`: the operator's own programs on
//! the lab's path. For every condition, run and algorithm, the server
//! command starts in the server namespace and the lab's cgroup (so `--cc`
//! ([`cc`]), a sock_ops policy or a trial on that cgroup applies to it), the lab
//! waits until something listens there, then the client command runs once
//! in the client namespace; the run ends when the client exits, or at
//! `--duration` (the client is then stopped and the run says so). Both run
//! through `sh -c` with the path's addresses in `BBRKIT_SERVER_ADDR` and
//! `BBRKIT_CLIENT_ADDR` (see [`env()`]), each as process 1 of its own PID
//! namespace ([`exec`]), so ending it ends everything it started.
//!
//! Per run the report keeps the client's exit code and the tail of its
//! standard output, what a known load generator (curl, wrk) reported in
//! it ([`client_report`]), and the lab's own reading of the server's
//! connections ([`sockets`]). `--hold` ([`hold`]) keeps one path up
//! instead, for work by hand. Must never print; must never leave a command's process or the
//! cgroup behind (both go when [`run`] returns, whatever the outcome).

pub mod cc;
pub mod client_report;
pub mod exec;
pub mod hold;
pub mod janitor;
pub mod process;
pub mod sockets;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use bbrkit_vocab::PathConditions;
use serde::Serialize;

use crate::emulator::model::LinkParams;
use crate::emulator::{EmulatorKind, EmulatorReport};
use crate::error::{LabError, Result};
use crate::plan::Plan;
use crate::served::{ServedCgroup, ServedCondition, ServedHeader};
use crate::session::{Event, Outcome, Session, run_seed};
use crate::tester::CcOn;
use crate::topology::{CLIENT_ADDR, SERVER_ADDR, Topology};
use crate::verdict::condition_emulator;
use crate::workload::cgroup::ServerCgroup;
use crate::workload::server::ServerLauncher;
use process::{CommandProcess, Spawn};
use sockets::ServerSockets;

/// How long a server command may take to listen.
pub const LISTEN_LIMIT: Duration = Duration::from_secs(10);

/// The operator's commands.
#[derive(Debug, Clone)]
pub struct Commands {
    /// Started first, in the server namespace and cgroup (`None`: only
    /// with `--hold`, nothing is started).
    pub server: Option<String>,
    /// Run once per run in the client namespace (`None` only with `--hold`).
    pub client: Option<String>,
    /// Keep one path up until a signal instead of running.
    pub hold: bool,
    /// The cgroup the server side runs in (`None`: the lab creates one).
    pub cgroup: Option<PathBuf>,
    /// How to start the `lab-exec` wrapper.
    pub launcher: ServerLauncher,
}

/// Checks the commands (and the plan they need) before anything is built.
pub fn validate(c: &Commands, plan: &Plan) -> Result<()> {
    for (flag, cmd) in [("--server-cmd", &c.server), ("--client-cmd", &c.client)] {
        if let Some(cmd) = cmd {
            if cmd.trim().is_empty() {
                return Err(LabError::Invalid(format!("{flag}: empty command")));
            }
            if cmd.contains('\0') {
                return Err(LabError::Invalid(format!("{flag}: holds a NUL byte")));
            }
        }
    }
    if matches!(plan.cc_on, CcOn::Receiver) {
        return Err(LabError::Invalid(
            "--cc-on receiver: the client command's sockets are its own; with commands the lab sets the algorithm on the server side".into(),
        ));
    }
    if c.hold {
        if c.client.is_some() {
            return Err(LabError::Invalid(
                "--hold runs no client: leave out --client-cmd and run it by hand".into(),
            ));
        }
        if plan.conditions.len() != 1 || plan.algorithms.len() != 1 {
            return Err(LabError::Invalid(format!(
                "--hold holds one path: give one condition and one --cc (got {} condition(s), {} algorithm(s))",
                plan.conditions.len(),
                plan.algorithms.len()
            )));
        }
    } else if c.server.is_none() || c.client.is_none() {
        return Err(LabError::Invalid(
            "--server-cmd and --client-cmd go together (or --hold, with or without --server-cmd)"
                .into(),
        ));
    }
    Ok(())
}

/// The environment each command gets: the addresses of both ends, the
/// algorithm of the run (`host` when the lab sets none) and the run.
pub fn env(cc: &str, run: usize) -> Vec<(&'static str, String)> {
    vec![
        ("BBRKIT_SERVER_ADDR", SERVER_ADDR.to_string()),
        ("BBRKIT_CLIENT_ADDR", CLIENT_ADDR.to_string()),
        ("BBRKIT_CC", cc.to_string()),
        ("BBRKIT_RUN", run.to_string()),
    ]
}

/// One run of one algorithm under one condition.
#[derive(Debug, Clone, Serialize)]
pub struct CommandRun {
    /// 1-based run number.
    pub run: usize,
    /// Seed of the loss process.
    pub seed: u64,
    /// The client's exit code (128 + signal if a signal ended it); `null`
    /// when the lab stopped it.
    pub exit_code: Option<i32>,
    /// The client was still running at `--duration` and was stopped.
    pub stopped: bool,
    /// From the client's start to its exit (or stop), seconds.
    pub elapsed_s: f64,
    /// The last [`process::STDOUT_TAIL`] bytes of the client's standard
    /// output, as text.
    pub stdout: String,
    /// Bytes the client wrote to standard output in all.
    pub stdout_bytes: u64,
    /// The last [`process::STDERR_TAIL`] bytes of its standard error.
    pub stderr: String,
    /// What the client reported, if its output shows it is a known load
    /// generator ([`client_report`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_report: Option<client_report::ClientReport>,
    /// The server command's exit code if it ended before the client did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_exit_code: Option<i32>,
    /// The server's connections, as the lab read them.
    pub server_sockets: ServerSockets,
    /// The emulator's account.
    pub emulator: EmulatorReport,
    /// Whether the emulator spoiled the run (after its repeats).
    pub spoiled: bool,
    /// Why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spoiled_reason: Option<String>,
    /// Attempts made (1 = not repeated).
    pub attempts: usize,
}

/// One algorithm under one condition.
#[derive(Debug, Clone, Serialize)]
pub struct CommandResult {
    /// Algorithm (`host` with `--cc host`).
    pub cc: String,
    /// Every run.
    pub runs: Vec<CommandRun>,
}

/// One condition.
pub type CommandCondition = ServedCondition<CommandResult>;

/// The report of `lab --server-cmd/--client-cmd`.
#[derive(Debug, Clone, Serialize)]
pub struct CommandsReport {
    /// `mode` (always `commands`) .. `cc_on`.
    #[serde(flatten)]
    pub header: ServedHeader,
    /// The server command.
    pub server_cmd: String,
    /// The client command.
    pub client_cmd: String,
    /// Where the server side ran.
    #[serde(flatten)]
    pub server_side: ServedCgroup,
    /// Per condition.
    pub conditions: Vec<CommandCondition>,
    /// BPF algorithms the lab registered for the run (filled by the caller).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub bpf_algorithms: Vec<crate::bpf_cc::BpfAlgorithm>,
}

/// The server side's cgroup and, if the lab created it, its janitor
/// (fields drop in order: the lab removes the cgroup, then the janitor is
/// told it has nothing left to do).
pub struct LabCgroup {
    /// The cgroup.
    pub cg: ServerCgroup,
    _janitor: Option<janitor::Janitor>,
}

/// What a run and a held path set up first: the commands checked against
/// `plan`, then the server side's cgroup opened (and said where it is).
pub fn prepare(
    c: &Commands,
    plan: &Plan,
    on_event: &mut dyn FnMut(Event<'_>),
) -> Result<LabCgroup> {
    validate(c, plan)?;
    let cg = ServerCgroup::open(c.cgroup.as_deref())?;
    on_event(Event::Note(&cg.note()));
    let janitor = if cg.created {
        Some(janitor::Janitor::start(&c.launcher, &cg.path)?)
    } else {
        None
    };
    Ok(LabCgroup {
        cg,
        _janitor: janitor,
    })
}

/// Runs the commands under every condition of `plan`.
pub fn run(
    plan: &Plan,
    c: &Commands,
    topo: &Topology,
    kind: EmulatorKind,
    cancel: &AtomicBool,
    on_event: &mut dyn FnMut(Event<'_>),
) -> Result<CommandsReport> {
    let lab_cg = prepare(c, plan, on_event)?;
    let (Some(server), Some(client)) = (&c.server, &c.client) else {
        return Err(LabError::Invalid("--server-cmd and --client-cmd".into()));
    };
    let cg = &lab_cg.cg;
    let total = plan.conditions.len() * plan.algorithms.len() * plan.runs;
    let mut s = Session::new(plan, topo, cancel, on_event, total);
    let mut conditions = Vec::new();
    for (ci, cond) in plan.conditions.iter().enumerate() {
        let ckind = condition_emulator(plan.emulator, kind, cond);
        conditions.push(condition(&mut s, c, cg, ci, cond, ckind)?);
    }
    Ok(CommandsReport {
        header: ServedHeader::new("commands", plan, topo, kind),
        server_cmd: server.clone(),
        client_cmd: client.clone(),
        server_side: ServedCgroup::from(cg),
        conditions,
        bpf_algorithms: Vec::new(),
    })
}

/// Every algorithm's runs under one condition, in turn per run.
fn condition(
    s: &mut Session<'_>,
    c: &Commands,
    cg: &ServerCgroup,
    ci: usize,
    cond: &PathConditions,
    kind: EmulatorKind,
) -> Result<CommandCondition> {
    let plan = s.plan;
    let link = plan.link(cond);
    let label = cond.label();
    let probe = s.probe(kind, link)?;
    let mut results: Vec<CommandResult> = plan
        .algorithms
        .iter()
        .map(|cc| CommandResult {
            cc: cc.clone(),
            runs: Vec::new(),
        })
        .collect();
    for run_no in 1..=plan.runs {
        for (ai, cc) in plan.algorithms.iter().enumerate() {
            let seed = run_seed(plan.seed, ci, run_no, ai);
            let r = one_run(s, c, cg, (kind, link), cc, (run_no, seed))?;
            s.finished(
                &label,
                cc,
                run_no,
                Outcome::Client {
                    exit_code: r.exit_code,
                    elapsed_s: r.elapsed_s,
                },
                r.spoiled_reason.as_deref(),
            );
            results[ai].runs.push(r);
        }
    }
    Ok(CommandCondition {
        label,
        emulator: kind,
        link,
        probe: Some(probe),
        results,
    })
}

/// What one attempt of a run measured.
struct Attempt {
    client: process::Ended,
    elapsed: Duration,
    server_exit: Option<i32>,
    sockets: ServerSockets,
}

/// One run of `cc` (repeated while the emulator spoils it).
fn one_run(
    s: &mut Session<'_>,
    c: &Commands,
    cg: &ServerCgroup,
    (kind, link): (EmulatorKind, LinkParams),
    cc: &str,
    (run, seed): (usize, u64),
) -> Result<CommandRun> {
    let (plan, cancel) = (s.plan, s.cancel);
    // Both are there: `run` checked them.
    let server_cmd = c.server.as_deref().unwrap_or_default();
    let client_cmd = c.client.as_deref().unwrap_or_default();
    let _cc = cc::apply(s.topo, &cg.path, plan.cc_on, cc)?;
    let env = env(cc, run);
    let m = s.measure(kind, link, seed, &mut |topo, _| {
        let server = Spawn::server(&c.launcher, topo, &cg.path, server_cmd, &env);
        let client = Spawn::client(&c.launcher, topo, client_cmd, &env);
        let attempt = attempt(topo, &server, &client, plan.duration, cancel);
        // Whatever the attempt did: nothing of the server may outlive it
        // (its PID namespace ends with it; the lab's own cgroup is also
        // emptied, an operator's is left to them).
        if cg.created {
            cg.kill_all()?;
        }
        attempt
    })?;
    let a = m.value;
    let stdout = a.client.stdout.text();
    let truncated = a.client.stdout.total > a.client.stdout.bytes.len() as u64;
    Ok(CommandRun {
        client_report: client_report::ClientReport::read(&stdout, truncated),
        run,
        seed,
        exit_code: a.client.exit_code,
        stopped: a.client.exit_code.is_none(),
        elapsed_s: a.elapsed.as_secs_f64(),
        stdout,
        stdout_bytes: a.client.stdout.total,
        stderr: a.client.stderr.text(),
        server_exit_code: a.server_exit,
        server_sockets: a.sockets,
        emulator: m.emulator,
        spoiled: m.spoiled.is_some(),
        spoiled_reason: m.spoiled,
        attempts: m.attempts,
    })
}

/// Starts the server command and waits until a socket listens in the
/// server namespace ([`LISTEN_LIMIT`] at most).
pub fn start_server(
    topo: &Topology,
    server: &Spawn<'_>,
    cancel: &AtomicBool,
) -> Result<CommandProcess> {
    let mut srv = CommandProcess::start(server)?;
    let listens = sockets::wait_listening(&topo.server, LISTEN_LIMIT, &mut || {
        Ok(srv.exited()?.is_some() || cancel.load(Ordering::Relaxed))
    })?;
    if cancel.load(Ordering::Relaxed) {
        return Err(LabError::Interrupted);
    }
    if !listens {
        let ended = srv.stop()?;
        let why = match ended.exit_code {
            Some(code) => format!("exited with code {code}"),
            None => format!("did not listen within {} s", LISTEN_LIMIT.as_secs()),
        };
        return Err(LabError::Invalid(format!(
            "--server-cmd {why} before any socket listened in the server namespace{}",
            stderr_note(&ended.stderr)
        )));
    }
    Ok(srv)
}

/// Server first, until it listens; the client until it exits or
/// `duration` passes, the server's connections watched meanwhile.
fn attempt(
    topo: &Topology,
    server: &Spawn<'_>,
    client: &Spawn<'_>,
    duration: Duration,
    cancel: &AtomicBool,
) -> Result<Attempt> {
    let srv = start_server(topo, server, cancel)?;
    let stop = AtomicBool::new(false);
    std::thread::scope(|sc| {
        let watcher = sc.spawn(|| sockets::watch(&topo.server, &stop));
        let started = Instant::now();
        let run = (|| {
            let mut cli = CommandProcess::start(client)?;
            cli.wait_until(started + duration, cancel)?;
            let elapsed = started.elapsed();
            Ok::<_, LabError>((cli.stop()?, elapsed))
        })();
        stop.store(true, Ordering::Relaxed);
        let sockets = watcher
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p));
        if cancel.load(Ordering::Relaxed) {
            return Err(LabError::Interrupted);
        }
        let (client, elapsed) = run?;
        // Its exit code only if it ended on its own (else the stop ends it).
        let server_exit = srv.stop()?.exit_code;
        Ok(Attempt {
            client,
            elapsed,
            server_exit,
            sockets: sockets?,
        })
    })
}

/// `: <the command's last error line(s)>` if it wrote any.
fn stderr_note(t: &process::Tail) -> String {
    let text = t.text();
    let text = text.trim();
    if text.is_empty() {
        String::new()
    } else {
        let last: Vec<&str> = text.lines().rev().take(3).collect();
        let last: Vec<&str> = last.into_iter().rev().collect();
        format!(": {}", last.join(" / "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn commands(server: Option<&str>, client: Option<&str>, hold: bool) -> Commands {
        Commands {
            server: server.map(str::to_string),
            client: client.map(str::to_string),
            hold,
            cgroup: None,
            launcher: ServerLauncher {
                program: "/bin/false".into(),
                args: Vec::new(),
            },
        }
    }

    fn plan(algorithms: &[&str], conditions: usize) -> Plan {
        Plan {
            conditions: vec![PathConditions::new(Duration::from_millis(10), 0.0); conditions],
            algorithms: algorithms.iter().map(|a| a.to_string()).collect(),
            runs: 1,
            duration: Duration::from_secs(1),
            flows: 1,
            cc_on: CcOn::Sender,
            emulator: EmulatorKind::Auto,
            seed: 1,
            mtu: 1500,
            retries: 0,
            ecn_threshold: None,
        }
    }

    #[test]
    fn commands_are_checked_before_anything_runs() {
        let two = plan(&["cubic", "bbr"], 1);
        assert!(validate(&commands(Some("srv"), Some("cli"), false), &two).is_ok());
        for (c, want) in [
            (
                commands(Some(" "), Some("cli"), false),
                "--server-cmd: empty",
            ),
            (
                commands(Some("srv"), Some(""), false),
                "--client-cmd: empty",
            ),
            (commands(Some("srv"), None, false), "go together"),
            (commands(None, Some("cli"), false), "go together"),
            (
                commands(Some("srv"), Some("cli"), true),
                "--hold runs no client",
            ),
            (commands(None, None, true), "one --cc"),
        ] {
            let e = validate(&c, &two).unwrap_err().to_string();
            assert!(e.contains(want), "{e}");
        }
        assert!(validate(&commands(None, None, true), &plan(&["bbr"], 1)).is_ok());
        let e = validate(&commands(None, None, true), &plan(&["bbr"], 2)).unwrap_err();
        assert!(e.to_string().contains("2 condition(s)"), "{e}");
    }

    /// The report's keys are those docs/lab.md documents, in its order
    /// (the shared header and cgroup flattened in their places).
    #[test]
    fn the_report_keeps_its_documented_keys_in_order() {
        let r = CommandsReport {
            header: crate::served::ServedHeader {
                mode: "commands",
                kernel: "6.18".into(),
                prefix: "bbrk1".into(),
                emulator: EmulatorKind::Split,
                seed: 36,
                runs: 3,
                duration_s: 30.0,
                cc_on: CcOn::Sender,
            },
            server_cmd: "nginx".into(),
            client_cmd: "curl".into(),
            server_side: ServedCgroup {
                cgroup: "/sys/fs/cgroup/x".into(),
                cgroup_created: true,
            },
            conditions: Vec::new(),
            bpf_algorithms: Vec::new(),
        };
        let json = serde_json::to_string(&r).unwrap();
        assert_eq!(
            crate::served::json_keys(&json),
            [
                "mode",
                "kernel",
                "prefix",
                "emulator",
                "seed",
                "runs",
                "duration_s",
                "cc_on",
                "server_cmd",
                "client_cmd",
                "cgroup",
                "cgroup_created",
                "conditions"
            ]
        );
    }

    #[test]
    fn a_command_is_told_both_addresses() {
        let e = env("bbr", 2);
        let get = |k: &str| e.iter().find(|(n, _)| *n == k).map(|(_, v)| v.as_str());
        assert_eq!(get("BBRKIT_SERVER_ADDR"), Some("198.18.0.2"));
        assert_eq!(get("BBRKIT_CLIENT_ADDR"), Some("198.18.0.1"));
        assert_eq!(
            (get("BBRKIT_CC"), get("BBRKIT_RUN")),
            (Some("bbr"), Some("2"))
        );
    }

    #[test]
    fn the_last_error_lines_are_quoted() {
        let t = process::Tail {
            bytes: b"a\nb\nc\nd\n".to_vec(),
            total: 8,
        };
        assert_eq!(stderr_note(&t), ": b / c / d");
        assert_eq!(stderr_note(&process::Tail::default()), "");
    }
}
