//! `rollback`: undo every change the before-image records — files
//! byte-identical (or absent again, symlinks as symlinks), runtime values,
//! interface root qdiscs, BPF registrations — then forget the image. Each
//! kind of change plans its own undo (`crate::change`); a file an operator
//! edited since bbrkit wrote it is kept (the rollback is then incomplete
//! and the image stays). Works after a reboot because the image lives on
//! disk under the root. Never touches anything the image does not name.

use serde::Serialize;

use crate::change::{Undo, UndoMode, bpf, file, policy, qdisc, sysctl};
use crate::host::HostMut;
use crate::image::{self, BeforeImage, Recorded};
use crate::lock::{self, HostLock};
use crate::outcome::Action;
use crate::snapshot::{Scope, Snapshot};
use crate::{HostError, Root};

/// The `rollback` report (also the `--json` document).
#[derive(Debug, Clone, Serialize)]
pub struct RollbackReport {
    /// There was no before-image: nothing to roll back.
    pub nothing_to_roll_back: bool,
    /// `--dry-run`.
    pub dry_run: bool,
    /// Where the before-image is (or was).
    pub before_image: String,
    /// Files.
    pub files: Vec<Action>,
    /// Runtime values.
    pub runtime: Vec<Action>,
    /// Interfaces.
    pub interfaces: Vec<Action>,
    /// BPF congestion controls unregistered (their pins removed).
    pub bpf: Vec<Action>,
    /// Per-connection policies detached (their pin directories).
    pub policy: Vec<Action>,
    /// Connections still running an algorithm rollback unregistered
    /// (`local -> remote (cc)`): they keep it until they close.
    pub still_running: Vec<String>,
    /// Something could not be restored, or an edited file was kept (the
    /// image is kept for another try).
    pub problem: bool,
}

/// What `rollback` would do: the report with every change as `would_*`
/// (with `--dry-run`, exactly what it prints) and the steps, in order, each
/// with the index of its line in its group of the report.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The report; [`apply`] fills in each step's outcome.
    pub report: RollbackReport,
    /// The changes, in order (empty for a dry run).
    pub steps: Vec<(Undo, Option<usize>)>,
    /// The algorithms the image registered (their connections are named
    /// after the unregistration).
    pub registered: Vec<String>,
    /// Forget the image and these (empty) directories at the end, unless
    /// something went wrong.
    pub discard: Option<Vec<String>>,
}

/// The runtime keys an image names.
fn keys(image: Option<&BeforeImage>) -> Vec<String> {
    image
        .into_iter()
        .flat_map(|i| &i.changes)
        .filter_map(|c| match c {
            Recorded::Sysctl { key, .. } => Some(key.clone()),
            _ => None,
        })
        .collect()
}

/// Reads `host` and the before-image and plans.
fn plan_now(host: &dyn HostMut, mode: UndoMode) -> Result<Plan, HostError> {
    let image = image::load(host.root())?;
    let scope = Scope {
        interfaces: true,
        keys: keys(image.as_ref()),
        ..Scope::default()
    };
    let snap = Snapshot::read(host, &scope)?;
    plan(&snap, image.as_ref(), mode)
}

/// Restores the before-image: [`plan`], then [`apply`].
///
/// Runs under the host lock ([`HostLock`], waiting up to [`lock::WAIT`]);
/// the plan applied is made under it. With no before-image and no
/// permission to take the lock, there is nothing to do and it says so.
pub fn run(host: &mut dyn HostMut, mode: UndoMode) -> Result<RollbackReport, HostError> {
    let first = plan_now(host, mode)?;
    if mode.dry_run {
        return Ok(first.report);
    }
    let root = host.root().clone();
    let mut lock = match HostLock::acquire(&root, "rollback", lock::WAIT) {
        Ok(l) => l,
        Err(HostError::Permission(_)) if first.report.nothing_to_roll_back => {
            return Ok(first.report);
        }
        Err(e) => return Err(e),
    };
    let plan = plan_now(host, mode)?;
    if let Some(dirs) = &plan.discard {
        lock.remove_on_release(dirs.iter().map(|d| root.path(d)));
    }
    let report = apply(host, plan);
    drop(lock);
    report
}

/// Decides what `rollback` would restore from `snap` and `image`; writes
/// nothing. Errors (exit 2) when a change it needs is not permitted.
pub fn plan(
    snap: &Snapshot,
    image: Option<&BeforeImage>,
    mode: UndoMode,
) -> Result<Plan, HostError> {
    let root = &snap.root;
    let mut report = RollbackReport {
        nothing_to_roll_back: false,
        dry_run: mode.dry_run,
        before_image: root.show(&root.state_file()),
        files: Vec::new(),
        runtime: Vec::new(),
        interfaces: Vec::new(),
        bpf: Vec::new(),
        policy: Vec::new(),
        still_running: Vec::new(),
        problem: false,
    };
    let mut steps = Vec::new();
    let Some(image) = image else {
        report.nothing_to_roll_back = true;
        if !mode.dry_run {
            // An enable killed while saving the image leaves only temp files.
            for path in [root.state_file(), root.bbrkit_file()] {
                let best_effort = true;
                steps.push((Undo::RemoveTemp { path, best_effort }, None));
            }
        }
        return Ok(Plan {
            report,
            steps,
            registered: Vec::new(),
            discard: None,
        });
    };
    if !mode.dry_run {
        preflight(snap, image, mode)?;
    }
    let kept = file::plan_undo(image, root, mode.dry_run, &mut report.files, &mut steps)?;
    sysctl::plan_undo(image, snap, mode, &mut report.runtime, &mut steps);
    qdisc::plan_undo(image, snap, mode, &mut report.interfaces, &mut steps);
    policy::plan_undo(image, snap, mode, &mut report.policy, &mut steps);
    bpf::plan_undo(image, snap, mode, &mut report.bpf, &mut steps);
    report.problem = kept;
    if mode.dry_run {
        steps.clear();
    }
    Ok(Plan {
        report,
        steps,
        registered: bpf::recorded(image),
        discard: (!mode.dry_run).then(|| image.created_dirs.clone()),
    })
}

/// The permissions the changes need, checked before any of them.
fn preflight(snap: &Snapshot, image: &BeforeImage, mode: UndoMode) -> Result<(), HostError> {
    let root = &snap.root;
    for c in &image.changes {
        let Recorded::File { path, .. } = c else {
            continue;
        };
        let p = root.path(path);
        let dir = p.parent().unwrap_or(root.base());
        if dir.exists() && nix::unistd::access(dir, nix::unistd::AccessFlags::W_OK).is_err() {
            return Err(HostError::Permission(format!(
                "cannot write {}",
                dir.display()
            )));
        }
    }
    let needs_runtime = image.changes.iter().any(|c| {
        matches!(c, Recorded::Sysctl { key, prior: Some(p) }
            if snap.runtime(key) != Some(p.as_str()))
    });
    let writable = snap.access(crate::KEY_CC) == crate::host::KeyAccess::Writable;
    if needs_runtime && !mode.no_apply && !writable {
        return Err(HostError::Permission(format!(
            "cannot write {}; run as root, or use --no-apply to restore files only",
            crate::sysctl::proc_path(crate::KEY_CC).display()
        )));
    }
    Ok(())
}

/// The report line a step turns from `would_*` into its outcome.
fn line<'a>(
    report: &'a mut RollbackReport,
    undo: &Undo,
    at: Option<usize>,
) -> Option<&'a mut Action> {
    let group = match undo {
        Undo::RestoreFile(_) | Undo::RemoveTemp { .. } => &mut report.files,
        Undo::SetSysctl { .. } => &mut report.runtime,
        Undo::RecreateQdisc(_) => &mut report.interfaces,
        Undo::Unregister { .. } => &mut report.bpf,
        Undo::DetachPolicy { .. } => &mut report.policy,
    };
    group.get_mut(at?)
}

/// Carries out a [`plan`]: makes each change in order and records its
/// outcome, names the connections left on an unregistered algorithm, and
/// forgets the image only when everything was restored.
pub fn apply(host: &mut dyn HostMut, plan: Plan) -> Result<RollbackReport, HostError> {
    let Plan {
        mut report,
        steps,
        registered,
        discard,
    } = plan;
    for (undo, at) in steps {
        let a = line(&mut report, &undo, at);
        let failed = undo.apply(host, a)?;
        report.problem |= failed;
    }
    if !registered.is_empty() {
        report.still_running = bpf::still_running(host, &registered);
    }
    if let Some(dirs) = discard
        && !report.problem
    {
        discard_image(host.root(), dirs)?;
    }
    Ok(report)
}

/// Forgets the image and removes the (empty) directories enable created.
fn discard_image(root: &Root, mut dirs: Vec<String>) -> Result<(), HostError> {
    image::discard(root)?;
    dirs.sort_by_key(|d| std::cmp::Reverse(d.matches('/').count()));
    for d in dirs {
        let _ = std::fs::remove_dir(root.path(&d)); // only if empty
    }
    Ok(())
}

#[cfg(test)]
#[path = "rollback_tests.rs"]
mod tests;
