//! `lab --hold`: one path (one condition, one algorithm) kept up until a
//! signal, for work by hand. The optional `--server-cmd` runs in the
//! server namespace and cgroup meanwhile (listening before anything is
//! printed); the operator enters either side
//! with the `nsenter` lines the lab sends as notes (the namespaces are
//! reached through the lab's own descriptors, `/proc/<pid>/fd/<n>`, so
//! nothing is named and a killed lab leaves no name behind).
//!
//! On the signal the server command ends, the lab's cgroup is emptied
//! (shells entered on the server side with the printed line end with it)
//! and the path is torn down as after any run. A shell entered by hand on
//! the client side keeps its namespace until it exits. Must never print.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde::Serialize;

use super::process::{CommandProcess, Spawn};
use super::{Commands, cc, env, prepare, start_server};
use crate::emulator::{Emulator, EmulatorKind};
use crate::error::Result;
use crate::netns::Netns;
use crate::plan::Plan;
use crate::session::Event;
use crate::topology::Topology;
use crate::verdict::condition_emulator;

/// What a held path was, once it is gone.
#[derive(Debug, Clone, Serialize)]
pub struct HoldReport {
    /// Always `hold`.
    pub mode: &'static str,
    /// Per-run name prefix.
    pub prefix: String,
    /// The path.
    pub condition: String,
    /// The emulator it ran on.
    pub emulator: EmulatorKind,
    /// The algorithm (`host`: the namespace default was left alone).
    pub cc: String,
    /// The server command's exit code if it ended while the path was held.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_exit_code: Option<i32>,
}

/// The line that enters `ns` with the path's addresses set; with a cgroup,
/// the shell joins it first.
pub fn enter_line(ns: &Netns, cgroup: Option<&Path>, cc: &str) -> String {
    let vars: Vec<String> = env(cc, 1)
        .into_iter()
        .filter(|(k, _)| k.ends_with("_ADDR"))
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    let at = format!(
        "nsenter --net=/proc/{}/fd/{}",
        std::process::id(),
        ns.raw_fd()
    );
    match cgroup {
        None => format!("{at} env {} sh", vars.join(" ")),
        Some(cg) => format!(
            "{at} sh -c 'echo $$ > {}/cgroup.procs && exec env {} sh'",
            cg.display(),
            vars.join(" ")
        ),
    }
}

/// Holds the path of `plan` (one condition, one algorithm) until `cancel`.
pub fn hold(
    plan: &Plan,
    c: &Commands,
    topo: &Topology,
    kind: EmulatorKind,
    cancel: &AtomicBool,
    on_event: &mut dyn FnMut(Event<'_>),
) -> Result<HoldReport> {
    let lab_cg = prepare(c, plan, on_event)?;
    let (cond, cc) = (&plan.conditions[0], &plan.algorithms[0]);
    let kind = condition_emulator(plan.emulator, kind, cond);
    let cg = &lab_cg.cg;
    let cc_guard = cc::apply(topo, &cg.path, plan.cc_on, cc)?;
    let emu = Emulator::start_kind(topo, kind, plan.link(cond), plan.seed)?;
    let env = env(cc, 1);
    let mut server = match &c.server {
        Some(cmd) => Some(start_server(
            topo,
            &Spawn::server(&c.launcher, topo, &cg.path, cmd, &env),
            cancel,
        )?),
        None => None,
    };
    let label = cond.label();
    for line in [
        format!("holding {label}, {cc}, until Ctrl-C"),
        format!(
            "client side ({}): {}",
            crate::topology::CLIENT_ADDR,
            enter_line(&topo.client, None, cc)
        ),
        format!(
            "server side ({}): {}",
            crate::topology::SERVER_ADDR,
            enter_line(&topo.server, Some(&cg.path), cc)
        ),
    ] {
        on_event(Event::Note(&line));
    }
    let mut server_exit = None;
    while !cancel.load(Ordering::Relaxed) {
        if let Some(s) = server.as_mut()
            && s.exited()?.is_some()
        {
            let ended = server.take().map(CommandProcess::stop).transpose()?;
            server_exit = ended.and_then(|e| e.exit_code);
            let note = format!(
                "the server command exited with code {}; the path stays up",
                server_exit.unwrap_or(-1)
            );
            on_event(Event::Note(&note));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    drop(server);
    // Without the `bpf` feature the guard holds nothing (no Drop).
    #[allow(clippy::drop_non_drop)]
    drop(cc_guard);
    if cg.created {
        cg.kill_all()?;
    }
    emu.stop()?;
    Ok(HoldReport {
        mode: "hold",
        prefix: topo.prefix.clone(),
        condition: label,
        emulator: kind,
        cc: cc.clone(),
        server_exit_code: server_exit,
    })
}
