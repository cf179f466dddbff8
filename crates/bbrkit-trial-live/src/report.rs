//! [`LiveReport`]: the trial's statistics ([`bbrkit_trial::Report`],
//! flattened, so every key of `bbrkit-trial`'s JSON stays where it is) and,
//! under `live`, what the live side saw: the cgroup and rule, the program,
//! how the records flowed (and how many the ring dropped), how the program
//! assigned the arms, a guardrail it applied, the open connections it
//! sampled, and why the trial stopped. Its `Serialize` form is `bbrkit
//! trial --json`.

use bbrkit_bpf::sockops::cgroup::SockOpsProgram;
use bbrkit_bpf::sockops::{ArmCounters, Description, Stats};
use bbrkit_trial::Report;
use bbrkit_trial::gates::{Gate, GateInput};
use bbrkit_trial::srm::SampleRatio;
use serde::Serialize;

use crate::intake::{Applied, Intake};
use crate::open::OpenSample;
use crate::plan::{Plan, Scope};

/// Why the trial ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// Still running (a look's report).
    Running,
    /// `--duration` passed.
    Duration,
    /// `--until-confident`: the comparison over all connections is decided.
    Confident,
    /// `--until-confident`: a guardrail moved the split.
    Guardrail,
    /// `--until-confident` reached `--max-duration` undecided.
    MaxDuration,
    /// SIGINT, SIGTERM or SIGHUP.
    Interrupted,
}

impl StopReason {
    /// The JSON spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            StopReason::Running => "running",
            StopReason::Duration => "duration",
            StopReason::Confident => "confident",
            StopReason::Guardrail => "guardrail",
            StopReason::MaxDuration => "max_duration",
            StopReason::Interrupted => "interrupted",
        }
    }
}

/// How the close records flowed from the program to the statistics.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct RecordFlow {
    /// The ring buffer's size, bytes.
    pub ring_bytes: u32,
    /// Records the program wrote into the ring.
    pub written: u64,
    /// Records the program dropped because the ring was full.
    pub dropped_ring_full: u64,
    /// Connections of the rule the program could give no per-connection
    /// storage (no record at close).
    pub without_storage: u64,
    /// Closes where the kernel gave the program no `tcp_sock` (no record).
    pub without_tcp_sock: u64,
    /// Samples of the wrong size (another build of the program).
    pub malformed: u64,
    /// Records read and what happened to them.
    #[serde(flatten)]
    pub intake: Intake,
}

/// The cohort a report compares, with its denominators.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Cohort {
    /// Seconds into the trial: connections established before it are
    /// compared (the previous look; 0 at the first look: nothing yet).
    pub established_before_s: f64,
    /// Connections the program had drawn into A and B by then.
    pub drawn: [u64; 2],
    /// Closed connections of the cohort compared, A and B (the rest of
    /// `drawn` is still open, or its record was lost).
    pub compared: [u64; 2],
}

/// What the live side saw.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LiveInfo {
    /// The cgroup and rule.
    #[serde(flatten)]
    pub scope: Scope,
    /// The program's link, program and cgroup ids (the link was never
    /// pinned: it died with the trial).
    pub attachment: Option<Description>,
    /// Other sock_ops programs the cgroup's sockets ran when the trial
    /// started (they may set the algorithm after bbrkit's program).
    pub other_programs: Vec<SockOpsProgram>,
    /// Why the trial ended (`running` in a look's report).
    pub stopped: StopReason,
    /// Seconds since the program was attached.
    pub elapsed_s: f64,
    /// The records' flow.
    pub records: RecordFlow,
    /// Per arm of the trial's rule, how the program assigned it.
    pub assignment: Vec<ArmCounters>,
    /// The program's draws against the split (before a guardrail's cut;
    /// per-connection units): `crate::intake::draws_check`.
    pub draws: Option<SampleRatio>,
    /// The trust gates (`bbrkit_trial::gates`): the report is trusted only
    /// when every one passes.
    pub gates: Vec<Gate>,
    /// The cohort this report compares: the connections established
    /// before the previous look (the attach at the first), with the
    /// program's draws by then; `null` before the first report.
    pub cohort: Option<Cohort>,
    /// The guardrail decision applied to the split, if any.
    pub guardrail: Option<Applied>,
    /// Connections still open at the end (`null` in a look's report).
    pub open: Option<OpenSample>,
}

/// A trial's report: the statistics and the live side's account.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LiveReport {
    /// The statistics (bbrkit-trial's keys at the top level).
    #[serde(flatten)]
    pub report: Report,
    /// What the live side saw.
    pub live: LiveInfo,
}

impl LiveInfo {
    /// The account before anything ran: `plan`'s scope.
    pub fn new(plan: &Plan) -> LiveInfo {
        LiveInfo {
            scope: plan.scope.clone(),
            attachment: None,
            other_programs: Vec::new(),
            stopped: StopReason::Running,
            elapsed_s: 0.0,
            records: RecordFlow {
                ring_bytes: plan.ring_bytes,
                ..RecordFlow::default()
            },
            assignment: Vec::new(),
            draws: None,
            gates: Vec::new(),
            cohort: None,
            guardrail: None,
            open: None,
        }
    }

    /// Connections the program drew into A and B so far.
    pub fn drawn(&self) -> [u64; 2] {
        [0, 1].map(|i| {
            self.assignment
                .iter()
                .filter(|a| a.arm == i)
                .map(|a| a.matched)
                .sum()
        })
    }

    /// Takes the program's counters: the global ones and the trial rule's.
    pub fn counters(&mut self, stats: &Stats, arms: &[ArmCounters]) {
        self.records.written = stats.records;
        self.records.dropped_ring_full = stats.ring_full;
        self.records.without_storage = stats.no_storage;
        self.records.without_tcp_sock = stats.no_tcp_sock;
        self.assignment = arms
            .iter()
            .filter(|a| a.rule == usize::from(self.scope.rule))
            .cloned()
            .collect();
    }

    /// The gates' input: the program's counters of the trial's rule,
    /// `drawn` the draws under the split (before a guardrail's cut),
    /// `closed` the closed connections the statistics hold per arm and
    /// their mean duration ([`bbrkit_trial::Trial::closed_durations`]),
    /// `drawing_s` the seconds the split drew (to a guardrail's cut).
    pub fn gate_input(
        &self,
        def: &bbrkit_trial::TrialDef,
        drawn: [u64; 2],
        closed: [(u64, Option<f64>); 2],
        drawing_s: f64,
    ) -> GateInput {
        let per_arm = |f: fn(&ArmCounters) -> u64| {
            [0, 1].map(|i| self.assignment.iter().filter(|a| a.arm == i).map(f).sum())
        };
        GateInput {
            cc: [0, 1].map(|i| def.arms[i].cc.clone()),
            shares: [def.share(0), def.share(1)],
            drawn,
            per_connection: def.unit == bbrkit_trial::Unit::Connection,
            failed: per_arm(|a| a.failed),
            kept: per_arm(|a| a.kept_app + a.kept_route),
            written: self.records.written,
            lost: self.lost_records(),
            scope: format!(
                "cgroup {} and that they match {}",
                self.scope.cgroup, self.scope.rule_text
            ),
            closed,
            drawing_s,
        }
    }

    /// Records the program wrote that never reached the statistics' input:
    /// dropped by a full ring, or lost without storage or `tcp_sock`.
    pub fn lost_records(&self) -> u64 {
        let r = &self.records;
        r.dropped_ring_full + r.without_storage + r.without_tcp_sock + r.malformed
    }
}
