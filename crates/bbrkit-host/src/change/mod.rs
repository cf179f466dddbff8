//! The change model: everything bbrkit changes on a host is a [`Change`],
//! and each kind of change answers the same five questions in its own
//! module — what the before-image records for it (its prior state and what
//! bbrkit put there), how it is applied, how `verify` checks it, what
//! `doctor` finds about it, and how `rollback` undoes it. Each answer is a
//! pure decision over a [`Snapshot`] plus an effect through [`HostMut`].
//!
//! ```text
//!            Snapshot (read once)                       HostMut
//!                 │                                        ▲
//!   enable ──plan─┼─► [Change] ──record──► BeforeImage ────┤ apply
//!                 │      │                 [Recorded]      │
//!   verify ───────┼─► checks   (per kind)      │           │
//!   doctor ───────┼─► findings (per kind)      │           │
//!   rollback ─────┴─► undo plan ◄──────────────┘ ──► [Undo]┘
//!
//!   kind            module     records                 checks / findings
//!   file, symlink   file       prior + what bbrkit     edited_file
//!                              wrote (sha256)
//!   sysctl.d file   persist    (a file)                boot.* / boot_override,
//!                                                      not_persisted, ...
//!   runtime sysctl  sysctl     prior value             sysctl / runtime_differs
//!   root qdiscs     qdisc      prior root + leaves     qdisc.* / stale_interface_qdisc
//!   BPF register    bpf        pins before             bpf.* / bpf_foreign, ...
//!   (and retire)               (an earlier default's
//!                              pin and unit removed)
//!   module load     modules    (its modules-load.d     -
//!                              file is a file)
//!   boot unit       unit       (its files, binary)     unit.*, boot_run.* / bpf_boot_*
//!   sock_ops policy policy     cgroup + id (its copy   policy.* / policy_*
//!                              is a file)
//! ```
//!
//! A new kind is one more module here (as `policy`, the per-connection
//! policy's sock_ops attachment, is), one more variant of [`Change`],
//! [`Recorded`](crate::image::Recorded) and [`Undo`], and its checks and findings called from
//! `verify` and `doctor`; see `docs/architecture.md`.

use std::path::PathBuf;

use crate::host::HostMut;
use crate::image::BeforeImage;
use crate::outcome::Action;
use crate::{HostError, Root};

pub mod boot_unit;
pub mod bpf;
pub mod file;
pub mod modules;
pub mod persist;
pub mod policy;
pub mod qdisc;
pub mod sysctl;

#[cfg(doc)]
use crate::Snapshot;

/// One change `enable` makes.
#[derive(Debug, Clone)]
pub enum Change {
    /// Replace a file under the root atomically.
    File(file::WriteFile),
    /// Create (or replace) a symlink atomically.
    Symlink(file::WriteSymlink),
    /// Write a runtime sysctl and read it back.
    Sysctl(sysctl::SetSysctl),
    /// Re-create the root qdisc of interfaces still on an older default.
    Qdiscs(qdisc::RecreateQdiscs),
    /// Register a BPF congestion control with a pinned link (or pin a
    /// lab's live link).
    BpfRegistration(bpf::Register),
    /// Attach and pin a per-connection policy (replacing bbrkit's previous one).
    Policy(policy::Attach),
    /// Load a congestion control's kernel module now (its modules-load.d
    /// line is a file change).
    LoadModule(modules::Load),
    /// Unregister a BPF algorithm bbrkit registered for an earlier default
    /// (after the new default is set).
    Retire(bpf::Retire),
    /// Remove a file bbrkit wrote earlier (the retired algorithm's unit).
    Remove(file::RemoveFile),
}

/// The order changes are made in; after each phase the crash tests' hook
/// (`BBRKIT_TEST_CRASH_AT`) may kill the process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Module loads and BPF registrations (`bpf-pinned`).
    Register,
    /// Files and symlinks (`file-written`).
    Files,
    /// Runtime sysctls (`runtime-applied`).
    Runtime,
    /// Root qdiscs (`qdisc-recreated`).
    Interfaces,
    /// The sock_ops policy, after its copy (`policy-attached`).
    Policy,
    /// What an earlier default left: its registration and boot unit
    /// (`bpf-retired`).
    Retire,
}

impl Phase {
    /// Every phase, in order, with the crash point after it.
    pub const ALL: [(Phase, &'static str); 6] = [
        (Phase::Register, "bpf-pinned"),
        (Phase::Files, "file-written"),
        (Phase::Runtime, "runtime-applied"),
        (Phase::Interfaces, "qdisc-recreated"),
        (Phase::Policy, "policy-attached"),
        (Phase::Retire, "bpf-retired"),
    ];
}

/// What applying one change did, for the report.
#[derive(Debug, Clone)]
pub enum Applied {
    /// A file or symlink was written.
    Written,
    /// A runtime key's outcome.
    Sysctl(sysctl::KeyOutcome),
    /// Every interface, after the re-creations.
    Qdiscs(qdisc::QdiscOutcome),
    /// The registration was made.
    Registered(bpf::Registered),
    /// The policy was attached.
    Policy(policy::PolicyStep),
    /// A module was loaded.
    Loaded,
    /// An earlier algorithm was unregistered (its name, the outcome,
    /// whether it failed).
    Retired(String, String, bool),
}

impl Change {
    /// When it is made.
    pub fn phase(&self) -> Phase {
        match self {
            Change::BpfRegistration(_) | Change::LoadModule(_) => Phase::Register,
            Change::File(_) | Change::Symlink(_) => Phase::Files,
            Change::Sysctl(_) => Phase::Runtime,
            Change::Qdiscs(_) => Phase::Interfaces,
            Change::Policy(_) => Phase::Policy,
            Change::Retire(_) | Change::Remove(_) => Phase::Retire,
        }
    }

    /// Adds what this change touches to the before-image: its prior state
    /// (first record wins) and, for a file, what bbrkit writes now.
    pub fn record(&self, root: &Root, image: &mut BeforeImage) -> Result<(), HostError> {
        match self {
            Change::File(f) => f.record(root, image),
            Change::Symlink(l) => l.record(root, image),
            Change::Sysctl(s) => {
                image.record(s.record());
                Ok(())
            }
            Change::Qdiscs(q) => {
                q.record().into_iter().for_each(|r| image.record(r));
                Ok(())
            }
            Change::BpfRegistration(b) => {
                image.record(b.record());
                Ok(())
            }
            Change::Policy(p) => {
                image.record(p.record());
                Ok(())
            }
            // A loaded module stays loaded (see `modules`).
            Change::LoadModule(_) => Ok(()),
            // Recorded when it was registered (`pinned_before`).
            Change::Retire(_) => Ok(()),
            Change::Remove(r) => r.record(root, image),
        }
    }

    /// Makes the change.
    pub fn apply(&self, host: &mut dyn HostMut) -> Result<Applied, HostError> {
        match self {
            Change::File(f) => f.apply().map(|()| Applied::Written),
            Change::Symlink(l) => l.apply().map(|()| Applied::Written),
            Change::Sysctl(s) => Ok(Applied::Sysctl(s.apply(host))),
            Change::Qdiscs(q) => Ok(Applied::Qdiscs(q.apply(host))),
            Change::BpfRegistration(b) => b.apply(host).map(Applied::Registered),
            Change::Policy(p) => p.apply(host).map(Applied::Policy),
            Change::LoadModule(m) => host.load_cc_module(&m.cc).map(|()| Applied::Loaded),
            Change::Retire(r) => Ok(r.apply(host)),
            Change::Remove(r) => r.apply().map(|()| Applied::Written),
        }
    }
}

/// How `rollback` runs: a dry run changes nothing; `--no-apply` restores
/// files only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct UndoMode {
    /// `--dry-run`.
    pub dry_run: bool,
    /// `--no-apply`.
    pub no_apply: bool,
}

impl UndoMode {
    /// Runtime changes are skipped (`--no-apply` of a real run).
    pub fn files_only(self) -> bool {
        self.no_apply && !self.dry_run
    }
}

/// One step of undoing recorded changes.
#[derive(Debug, Clone)]
pub enum Undo {
    /// Put a file back as the image recorded it.
    RestoreFile(file::Restore),
    /// Remove the leftover temporary file of an interrupted write.
    RemoveTemp {
        /// The file whose temporary sibling goes.
        path: PathBuf,
        /// Ignore a failure (nothing else to roll back).
        best_effort: bool,
    },
    /// Write a runtime sysctl back.
    SetSysctl {
        /// Dotted key.
        key: String,
        /// The recorded value.
        value: String,
    },
    /// Re-create an interface's root so the kernel attaches its old kind.
    RecreateQdisc(qdisc::Recreate),
    /// Remove bbrkit's pins of a BPF congestion control (unregisters it).
    Unregister {
        /// The pin directory's name (the struct_ops map).
        name: String,
    },
    /// Detach a policy and remove its pins.
    DetachPolicy {
        /// Its pin directory.
        dir: PathBuf,
    },
}

impl Undo {
    /// Makes the step; `line` is its report line (`would_*`), turned into
    /// the outcome. Returns whether the outcome is a problem.
    pub fn apply(
        self,
        host: &mut dyn HostMut,
        line: Option<&mut Action>,
    ) -> Result<bool, HostError> {
        match (self, line) {
            (Undo::RestoreFile(r), Some(a)) => r.apply(a).map(|()| false),
            (Undo::RemoveTemp { path, best_effort }, _) => {
                file::remove_temp(&path, best_effort).map(|()| false)
            }
            (Undo::SetSysctl { key, value }, Some(a)) => Ok(sysctl::restore(host, &key, &value, a)),
            (Undo::RecreateQdisc(r), Some(a)) => Ok(r.apply(host, a)),
            (Undo::Unregister { name }, Some(a)) => Ok(bpf::unregister(host, &name, a)),
            (Undo::DetachPolicy { dir }, Some(a)) => Ok(policy::detach(host, &dir, a)),
            (_, None) => Ok(false),
        }
    }
}
