//! The types `enable` takes and returns: its options and its report (also
//! the `--json` document). The per-change outcomes inside the report are
//! the change kinds' own types (`crate::change`), re-exported here. Pure
//! data; no I/O.

use std::path::PathBuf;

use serde::Serialize;

pub use crate::change::boot_unit::{UnitFile, UnitFileAction};
pub use crate::change::bpf::{BpfPlan, RegistrationStep, Retiring};
pub use crate::change::file::Edit;
pub use crate::change::modules::ModulesPlan;
pub use crate::change::persist::BootWinner;
pub use crate::change::policy::{PolicyOptions, PolicyPlan, PolicyRegistration, PolicyStep};
pub use crate::change::qdisc::{InterfaceAction, InterfaceVerb};
pub use crate::change::sysctl::{KeyResult, RuntimeStatus, TUNING};

/// `--qdisc`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum QdiscChoice {
    /// fq when the kernel has it, else leave the default qdisc alone.
    Auto,
    /// fq.
    Fq,
    /// fq_codel.
    FqCodel,
    /// Do not touch the default qdisc.
    Keep,
}

/// What `enable` should do.
#[derive(Debug, Clone)]
pub struct Options {
    /// Congestion control algorithm (`bbr`).
    pub cc: String,
    /// Default qdisc choice.
    pub qdisc: QdiscChoice,
    /// Add the seeds' tuning set.
    pub tune: bool,
    /// Show what would happen; change nothing.
    pub dry_run: bool,
    /// Write files only; no runtime writes.
    pub no_apply: bool,
    /// Proceed although another file overrides bbrkit's value at boot.
    pub force: bool,
    /// The bbrkit binary a boot unit would run a copy of (None: this one).
    pub exe: Option<PathBuf>,
    /// `--policy FILE [--cgroup PATH]`: attach a per-connection policy
    /// instead (the default algorithm, qdisc and tuning are left alone).
    pub policy: Option<PolicyOptions>,
}

impl Options {
    /// `cc` with every other option at its default (`--qdisc auto`).
    pub fn new(cc: &str) -> Options {
        Options {
            cc: cc.into(),
            qdisc: QdiscChoice::Auto,
            tune: false,
            dry_run: false,
            no_apply: false,
            force: false,
            exe: None,
            policy: None,
        }
    }
}

/// The `enable` report (also the `--json` document).
#[derive(Debug, Clone, Serialize)]
pub struct EnableReport {
    /// bbrkit's sysctl.d file.
    pub file: String,
    /// Its (planned) content.
    pub content: String,
    /// The file is (or would be) written because it differs.
    pub file_changed: bool,
    /// Per-key outcome.
    pub keys: Vec<KeyResult>,
    /// Winner at boot for each persisted key under each loader.
    pub boot: Vec<BootWinner>,
    /// Notes (fq absent, namespace limits, ...).
    pub notes: Vec<String>,
    /// Interfaces.
    pub interfaces: Vec<InterfaceAction>,
    /// Nothing was written because another file overrides bbrkit at boot
    /// (and `--force` was not given) or an operator edited one of bbrkit's
    /// files (`edited`).
    pub blocked: bool,
    /// bbrkit's files an operator edited since bbrkit wrote them: never
    /// replaced.
    pub edited: Vec<Edit>,
    /// Anything changed (or would change with `--dry-run`).
    pub changed: bool,
    /// `--dry-run`.
    pub dry_run: bool,
    /// Where the before-image is.
    pub before_image: String,
    /// A problem that makes the command exit 1.
    pub problem: bool,
    /// The BPF part (`--cc bbr3`): registration, unit; `null` otherwise.
    pub bpf: Option<BpfPlan>,
    /// The policy part (`--policy`): compiled rules, cgroup, pins; `null`
    /// otherwise.
    pub policy: Option<PolicyPlan>,
    /// The kernel modules of the algorithms relied on (`--cc bbr` or a
    /// policy naming `bbr` where `tcp_bbr` is a module): bbrkit's
    /// modules-load.d file and the loads; `null` when none is a module.
    pub modules: Option<ModulesPlan>,
    /// bbrkit's BPF algorithms registered for an earlier default that this
    /// one replaces: unregistered, their boot units removed (issue 33.9).
    pub retire: Vec<Retiring>,
}

impl EnableReport {
    /// The human `boot:` lines (see [`crate::change::persist::boot_lines`]):
    /// bbrkit's file *would* apply when this run does not write it.
    pub fn boot_lines(&self) -> Vec<String> {
        let planned = self.file_changed && (self.dry_run || self.blocked);
        crate::change::persist::boot_lines(&self.boot, &self.file, planned)
    }

    /// The human lines of the BPF part.
    pub fn bpf_lines(&self) -> Vec<String> {
        self.bpf
            .as_ref()
            .map(|b| crate::change::bpf::lines(b, self.dry_run))
            .unwrap_or_default()
    }

    /// The human lines of what is retired.
    pub fn retire_lines(&self) -> Vec<String> {
        crate::change::bpf::retire_lines(&self.retire, self.dry_run)
    }

    /// The human lines of the modules part.
    pub fn modules_lines(&self) -> Vec<String> {
        self.modules
            .as_ref()
            .map(|m| crate::change::modules::lines(m, self.dry_run))
            .unwrap_or_default()
    }

    /// The human lines of the policy part.
    pub fn policy_lines(&self) -> Vec<String> {
        self.policy
            .as_ref()
            .map(|p| crate::change::policy::lines(p, self.dry_run))
            .unwrap_or_default()
    }
}
