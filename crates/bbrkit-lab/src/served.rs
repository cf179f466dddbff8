//! What the two modes with a server side in a cgroup (`--workload`,
//! [`crate::workload`]; `--server-cmd`, [`crate::commands`]) share in
//! their reports: the header ([`ServedHeader`]), where the server side ran
//! ([`ServedCgroup`]) and a condition's shape ([`ServedCondition`]). Each
//! report flattens them into its JSON, so the keys and their order are
//! those of docs/lab.md ("`--json` of a workload run", "`--json` of a
//! commands run"). The server side's cgroup itself is
//! [`crate::workload::cgroup::ServerCgroup`] (which fills [`ServedCgroup`]).

use std::path::PathBuf;

use serde::Serialize;

use crate::emulator::EmulatorKind;
use crate::emulator::model::LinkParams;
use crate::plan::Plan;
use crate::probe::ProbeResult;
use crate::report::kernel_release;
use crate::tester::CcOn;
use crate::topology::Topology;

/// The first keys of a served mode's report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServedHeader {
    /// `workload` or `commands`.
    pub mode: &'static str,
    /// `uname -r`.
    pub kernel: String,
    /// Per-run name prefix.
    pub prefix: String,
    /// The emulator the plan resolved to.
    pub emulator: EmulatorKind,
    /// Base seed.
    pub seed: u64,
    /// Runs per condition × algorithm.
    pub runs: usize,
    /// `--duration`, seconds: with `--workload` the time new requests
    /// start per run, with commands the longest a client may run.
    pub duration_s: f64,
    /// Where the algorithm was set (`host`: nowhere).
    pub cc_on: CcOn,
}

impl ServedHeader {
    /// The header of `mode` run with `plan` on `topo` and emulator `kind`.
    pub fn new(mode: &'static str, plan: &Plan, topo: &Topology, kind: EmulatorKind) -> Self {
        ServedHeader {
            mode,
            kernel: kernel_release(),
            prefix: topo.prefix.clone(),
            emulator: kind,
            seed: plan.seed,
            runs: plan.runs,
            duration_s: plan.duration.as_secs_f64(),
            cc_on: plan.cc_on,
        }
    }
}

/// Where the server side ran.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServedCgroup {
    /// The cgroup the server side ran in.
    pub cgroup: PathBuf,
    /// Whether the lab created (and removed) it.
    pub cgroup_created: bool,
}

/// One condition of a served mode, with its per-algorithm results `R`.
#[derive(Debug, Clone, Serialize)]
pub struct ServedCondition<R> {
    /// Human label.
    pub label: String,
    /// The emulator it ran on.
    pub emulator: EmulatorKind,
    /// Its emulator parameters.
    #[serde(flatten)]
    pub link: LinkParams,
    /// The ping before the runs.
    pub probe: Option<ProbeResult>,
    /// Per algorithm, in `--cc` order.
    pub results: Vec<R>,
}

/// Every key of a JSON document, in the order written (a test's view of
/// a report's shape: `serde_json::Value` would sort them).
#[cfg(test)]
pub(crate) fn json_keys(json: &str) -> Vec<&str> {
    let parts: Vec<&str> = json.split('"').collect();
    (1..parts.len())
        .step_by(2)
        .filter(|&i| parts.get(i + 1).is_some_and(|p| p.starts_with(':')))
        .map(|i| parts[i])
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(mode: &'static str) -> ServedHeader {
        ServedHeader {
            mode,
            kernel: "6.18".into(),
            prefix: "bbrk1".into(),
            emulator: EmulatorKind::Split,
            seed: 36,
            runs: 3,
            duration_s: 30.0,
            cc_on: CcOn::Sender,
        }
    }

    #[test]
    fn keys_are_read_in_the_order_written() {
        let json = serde_json::to_string(&header("commands")).unwrap();
        assert_eq!(
            json_keys(&json),
            [
                "mode",
                "kernel",
                "prefix",
                "emulator",
                "seed",
                "runs",
                "duration_s",
                "cc_on"
            ]
        );
        assert_eq!(json_keys(r#"{"a":{"b":"c:d"},"e":[1]}"#), ["a", "b", "e"]);
    }
}
