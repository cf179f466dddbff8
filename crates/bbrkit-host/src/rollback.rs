//! `rollback`: restore the before-image exactly: files byte-identical (or
//! absent again, symlinks as symlinks), runtime values, interface root
//! qdiscs; then forget the image. Works after a reboot because the image
//! lives on disk under the root. Never touches anything the image does not
//! name.

use serde::Serialize;

use crate::atomic;
use crate::lock::{self, HostLock};
use crate::qdisc::{self, Class};
use crate::state::{self, Prior};
use crate::{HostError, KEY_QDISC, Root, sysctl};

/// One restored item.
#[derive(Debug, Clone, Serialize)]
pub struct Action {
    /// File path, sysctl key or interface name.
    pub what: String,
    /// `restored`, `removed`, `unchanged`, `would_restore`, `would_remove`,
    /// `skipped`, `failed`.
    pub action: String,
    /// One line of detail.
    pub detail: String,
}

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
    /// Connections still running an algorithm rollback unregistered
    /// (`local -> remote (cc)`): they keep it until they close.
    pub still_running: Vec<String>,
    /// Something could not be restored (the image is kept for a retry).
    pub problem: bool,
}

fn act(what: &str, action: &str, detail: impl Into<String>) -> Action {
    Action {
        what: what.into(),
        action: action.into(),
        detail: detail.into(),
    }
}

/// What rollback does with one recorded interface.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InterfaceStep {
    /// Already as before, or no longer a kernel default (left alone).
    Unchanged,
    /// Re-create the root: the restored default gives back the old kind.
    Recreate,
    /// The old kind came from an even older default: the kernel cannot
    /// re-attach it, so the interface stays as it is (reported).
    Kept,
}

/// Decides what to do with an interface whose root was `before` when
/// `enable` ran, is `now` (class `class`) today, once the default qdisc is
/// `default_after`.
pub fn interface_step(
    now: &str,
    class: Class,
    before: &str,
    default_after: Option<&str>,
) -> InterfaceStep {
    if now == before || !matches!(class, Class::KernelDefault | Class::Multiqueue) {
        InterfaceStep::Unchanged
    } else if default_after == Some(before) {
        InterfaceStep::Recreate
    } else {
        InterfaceStep::Kept
    }
}

/// Why [`recreate_under`] did not restore an interface.
enum Momentary {
    /// The kernel refused the old kind as default (nothing changed).
    Refused(String),
    /// Re-creation or putting the default back failed.
    Failed(String),
}

/// Re-creates `ifindex`'s root so the kernel attaches `kind` (it attaches
/// only the current default): sets `default_qdisc` to `kind` for the moment
/// of the re-creation, then puts `restore` back, also when re-creation fails.
fn recreate_under(ifindex: u32, kind: &str, restore: &str) -> Result<(), Momentary> {
    sysctl::write(KEY_QDISC, kind).map_err(|e| Momentary::Refused(e.to_string()))?;
    let made = qdisc::recreate_root(ifindex);
    let back = sysctl::write(KEY_QDISC, restore);
    match (made, back) {
        (Ok(()), Ok(())) => Ok(()),
        (_, Err(e)) => Err(Momentary::Failed(format!(
            "putting default_qdisc {restore} back: {e}"
        ))),
        (Err(e), Ok(())) => Err(Momentary::Failed(format!("re-creating the root: {e}"))),
    }
}

/// One change `rollback` makes; `at` is the index of its line in the
/// report's list, which [`apply`] turns from `would_*` into the outcome.
#[derive(Debug, Clone)]
pub enum Step {
    /// Put a file back as the image recorded it.
    RestoreFile {
        /// The file.
        path: std::path::PathBuf,
        /// Its recorded state.
        prior: Prior,
        /// Index in `files`.
        at: usize,
    },
    /// Remove the leftover temporary file of an interrupted write.
    RemoveTemp {
        /// The file whose temporary sibling goes.
        path: std::path::PathBuf,
        /// Ignore a failure (nothing else to roll back).
        best_effort: bool,
    },
    /// Write a runtime sysctl back.
    SetSysctl {
        /// Dotted key.
        key: String,
        /// The recorded value.
        value: String,
        /// Index in `runtime`.
        at: usize,
    },
    /// Re-create an interface's root so the kernel attaches the restored
    /// default (`kind`), momentarily setting `default_qdisc` to `kind` when
    /// `restore` (the default to put back afterwards) is given.
    RecreateQdisc {
        /// Interface index.
        ifindex: u32,
        /// The kind it had before.
        kind: String,
        /// Its effective kind now.
        now: String,
        /// The default qdisc to put back after a momentary one.
        restore: Option<String>,
        /// Index in `interfaces`.
        at: usize,
    },
    /// Remove bbrkit's pins of a BPF congestion control (unregisters it),
    /// after the defaults are restored (a namespace's default holds it).
    Unregister {
        /// The pin directory's name (the struct_ops map).
        name: String,
        /// Index in `bpf`.
        at: usize,
    },
    /// Name the connections still on an unregistered algorithm of `ccs`.
    NameStillRunning {
        /// The algorithms enable registered.
        ccs: Vec<String>,
    },
    /// Forget the image and remove the (empty) directories enable created.
    Discard {
        /// Root-relative directories, as recorded.
        created_dirs: Vec<String>,
    },
}

/// What `rollback` would do: the report with every change as `would_*`
/// (with `--dry-run`, exactly what it prints) and the steps, in order.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The report; [`apply`] fills in each step's outcome.
    pub report: RollbackReport,
    /// The changes, in order (empty for a dry run).
    pub steps: Vec<Step>,
}

/// Restores the before-image: [`plan`], then [`apply`]. `no_apply`
/// restores files only.
///
/// Runs under the host lock ([`HostLock`], waiting up to [`lock::WAIT`]);
/// the plan applied is made under it. With no before-image and no
/// permission to take the lock, there is nothing to do and it says so.
pub fn run(root: &Root, dry_run: bool, no_apply: bool) -> Result<RollbackReport, HostError> {
    let first = plan(root, dry_run, no_apply)?;
    if dry_run {
        return Ok(first.report);
    }
    let mut lock = match HostLock::acquire(root, "rollback", lock::WAIT) {
        Ok(l) => l,
        Err(HostError::Permission(_)) if first.report.nothing_to_roll_back => {
            return Ok(first.report);
        }
        Err(e) => return Err(e),
    };
    let plan = plan(root, dry_run, no_apply)?;
    for s in &plan.steps {
        if let Step::Discard { created_dirs } = s {
            lock.remove_on_release(created_dirs.iter().map(|d| root.path(d)));
        }
    }
    let report = apply(root, plan);
    drop(lock);
    report
}

/// Decides what `rollback` would restore. Reads the image, the files,
/// `/proc/sys` and rtnetlink; writes nothing. Errors (exit 2) when a
/// change it needs is not permitted.
pub fn plan(root: &Root, dry_run: bool, no_apply: bool) -> Result<Plan, HostError> {
    let mut report = RollbackReport {
        nothing_to_roll_back: false,
        dry_run,
        before_image: root.show(&root.state_file()),
        files: Vec::new(),
        runtime: Vec::new(),
        interfaces: Vec::new(),
        bpf: Vec::new(),
        still_running: Vec::new(),
        problem: false,
    };
    let mut steps = Vec::new();
    let Some(image) = state::load(root)? else {
        report.nothing_to_roll_back = true;
        if !dry_run {
            // An enable killed while saving the image leaves only temp files.
            for path in [root.state_file(), root.bbrkit_file()] {
                steps.push(Step::RemoveTemp {
                    path,
                    best_effort: true,
                });
            }
        }
        return Ok(Plan { report, steps });
    };
    if !dry_run {
        preflight(root, &image, no_apply)?;
    }
    plan_files(root, &image, &mut report, &mut steps);
    plan_runtime(&image, (dry_run, no_apply), &mut report, &mut steps);
    plan_interfaces(&image, (dry_run, no_apply), &mut report, &mut steps);
    crate::rollback_bpf::plan(&image, (dry_run, no_apply), &mut report.bpf, &mut steps);
    if dry_run {
        steps.clear();
    } else {
        steps.push(Step::Discard {
            created_dirs: image.created_dirs.clone(),
        });
    }
    Ok(Plan { report, steps })
}

/// The permissions the changes need, checked before any of them.
fn preflight(root: &Root, image: &state::BeforeImage, no_apply: bool) -> Result<(), HostError> {
    for f in &image.files {
        let p = root.path(&f.path);
        let dir = p.parent().unwrap_or(root.base());
        if dir.exists() && nix::unistd::access(dir, nix::unistd::AccessFlags::W_OK).is_err() {
            return Err(HostError::Permission(format!(
                "cannot write {}",
                dir.display()
            )));
        }
    }
    let needs_runtime = image
        .runtime
        .iter()
        .any(|r| r.prior.is_some() && sysctl::read(&r.key).ok().flatten() != r.prior);
    if needs_runtime && !no_apply && !sysctl::writable(crate::KEY_CC) {
        return Err(HostError::Permission(format!(
            "cannot write {}; run as root, or use --no-apply to restore files only",
            sysctl::proc_path(crate::KEY_CC).display()
        )));
    }
    Ok(())
}

fn plan_files(
    root: &Root,
    image: &state::BeforeImage,
    report: &mut RollbackReport,
    steps: &mut Vec<Step>,
) {
    for f in &image.files {
        let path = root.path(&f.path);
        let shown = root.show(&path);
        if f.prior.matches(&path) {
            report
                .files
                .push(act(&shown, "unchanged", "already as before"));
            steps.push(Step::RemoveTemp {
                path,
                best_effort: false,
            });
            continue;
        }
        let (verb, detail) = match &f.prior {
            Prior::Absent => ("would_remove", "did not exist before".to_string()),
            Prior::File { content_hex, .. } => (
                "would_restore",
                format!("{} bytes as before", content_hex.len() / 2),
            ),
            Prior::Symlink { target } => {
                ("would_restore", format!("symlink to {target} as before"))
            }
        };
        steps.push(Step::RestoreFile {
            path,
            prior: f.prior.clone(),
            at: report.files.len(),
        });
        report.files.push(act(&shown, verb, detail));
    }
}

/// Runtime values: default_qdisc before the interfaces that depend on it.
fn plan_runtime(
    image: &state::BeforeImage,
    (dry_run, no_apply): (bool, bool),
    report: &mut RollbackReport,
    steps: &mut Vec<Step>,
) {
    for r in &image.runtime {
        let now = sysctl::read(&r.key).ok().flatten();
        let Some(prior) = &r.prior else {
            report
                .runtime
                .push(act(&r.key, "skipped", "key did not exist before"));
            continue;
        };
        if now.as_ref() == Some(prior) {
            report
                .runtime
                .push(act(&r.key, "unchanged", format!("already {prior}")));
            continue;
        }
        let now = now.unwrap_or_default();
        if no_apply && !dry_run {
            report.runtime.push(act(
                &r.key,
                "skipped",
                format!("--no-apply: stays {now} until reboot"),
            ));
            continue;
        }
        steps.push(Step::SetSysctl {
            key: r.key.clone(),
            value: prior.clone(),
            at: report.runtime.len(),
        });
        report
            .runtime
            .push(act(&r.key, "would_restore", format!("{now} -> {prior}")));
    }
}

/// Interfaces whose root `enable` re-created, back to their old kind.
fn plan_interfaces(
    image: &state::BeforeImage,
    (dry_run, no_apply): (bool, bool),
    report: &mut RollbackReport,
    steps: &mut Vec<Step>,
) {
    if image.interfaces.is_empty() {
        return;
    }
    let list = qdisc::list().unwrap_or_default();
    // The default once this rollback is done (dry runs included).
    let default_after = image
        .runtime
        .iter()
        .find(|r| r.key == KEY_QDISC)
        .and_then(|r| r.prior.clone())
        .or_else(|| sysctl::read(KEY_QDISC).ok().flatten());
    for ii in &image.interfaces {
        let before = ii.leaves.first().unwrap_or(&ii.root).clone();
        let Some(cur) = list.iter().find(|i| i.name == ii.name) else {
            report
                .interfaces
                .push(act(&ii.name, "skipped", "interface no longer exists"));
            continue;
        };
        let now = cur.effective().to_string();
        let step = interface_step(&now, cur.class, &before, default_after.as_deref());
        let (action, detail) = match (step, &default_after) {
            (InterfaceStep::Unchanged, _) => {
                ("unchanged", format!("root qdisc {}", cur.describe()))
            }
            (InterfaceStep::Kept, None) => (
                "kept",
                format!(
                    "was {before}, attached under an older default; the kernel re-attaches only the current default , so it stays {now}"
                ),
            ),
            (InterfaceStep::Kept, Some(_)) => (
                "would_restore",
                format!(
                    "re-create root: {now} -> {before} under a momentary default_qdisc {before}"
                ),
            ),
            (InterfaceStep::Recreate, _) => (
                "would_restore",
                format!("re-create root: {now} -> {before}"),
            ),
        };
        if action == "would_restore" && !dry_run && !no_apply {
            steps.push(Step::RecreateQdisc {
                ifindex: cur.ifindex,
                kind: before.clone(),
                now: now.clone(),
                restore: (step == InterfaceStep::Kept)
                    .then(|| default_after.clone().unwrap_or_default()),
                at: report.interfaces.len(),
            });
        }
        report.interfaces.push(act(&ii.name, action, detail));
    }
}
/// Carries out a [`plan`]: makes each change in order and records its
/// outcome; forgets the image only when everything was restored.
pub fn apply(root: &Root, plan: Plan) -> Result<RollbackReport, HostError> {
    let Plan { mut report, steps } = plan;
    for step in steps {
        match step {
            Step::RestoreFile { path, prior, at } => {
                prior.restore(&path)?;
                let a = &mut report.files[at];
                a.action = if a.action == "would_remove" {
                    "removed"
                } else {
                    "restored"
                }
                .into();
            }
            Step::RemoveTemp { path, best_effort } => {
                let r = atomic::remove_stale_temp(&path);
                if !best_effort {
                    r.map_err(|e| HostError::io(&path, e))?;
                }
            }
            Step::SetSysctl { key, value, at } => {
                let a = &mut report.runtime[at];
                match sysctl::write(&key, &value) {
                    Ok(()) => *a = act(&key, "restored", format!("{} (read back)", a.detail)),
                    Err(e) => {
                        report.problem = true;
                        *a = act(&key, "failed", format!("writing {value}: {e}"));
                    }
                }
            }
            Step::RecreateQdisc {
                ifindex,
                kind,
                now,
                restore,
                at,
            } => {
                let a = &mut report.interfaces[at];
                let (action, detail) = recreate(ifindex, &kind, &now, restore.as_deref());
                report.problem |= action == "failed";
                (a.action, a.detail) = (action.into(), detail);
            }
            Step::Unregister { name, at } => {
                report.problem |= crate::rollback_bpf::unregister(&name, &mut report.bpf[at]);
            }
            Step::NameStillRunning { ccs } => {
                report.still_running = crate::rollback_bpf::still_running(&ccs);
            }
            Step::Discard { created_dirs } => {
                if report.problem {
                    continue;
                }
                state::discard(root)?;
                let mut dirs = created_dirs;
                dirs.sort_by_key(|d| std::cmp::Reverse(d.matches('/').count()));
                for d in dirs {
                    let _ = std::fs::remove_dir(root.path(&d)); // only if empty
                }
            }
        }
    }
    Ok(report)
}

/// Re-creates one interface's root (under a momentary default when
/// `restore` is given); the outcome's action and detail.
fn recreate(ifindex: u32, kind: &str, now: &str, restore: Option<&str>) -> (&'static str, String) {
    let Some(after) = restore else {
        return match qdisc::recreate_root(ifindex) {
            Ok(()) => (
                "restored",
                format!("root re-created from default_qdisc {kind}"),
            ),
            Err(e) => ("failed", bbrkit_diag::error_chain(&e)),
        };
    };
    match recreate_under(ifindex, kind, after) {
        Ok(()) => (
            "restored",
            format!(
                "root re-created under a momentary default_qdisc {kind} (attached under an older default), then default_qdisc {after} put back"
            ),
        ),
        Err(Momentary::Refused(e)) => (
            "kept",
            format!(
                "was {kind}, attached under an older default; the kernel refuses {kind} as default_qdisc ({e}), so it stays {now}"
            ),
        ),
        Err(Momentary::Failed(e)) => ("failed", e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interface_steps() {
        let kd = Class::KernelDefault;
        assert_eq!(
            interface_step("fq", kd, "fq", Some("fq")),
            InterfaceStep::Unchanged
        );
        assert_eq!(
            interface_step("fq", kd, "pfifo_fast", Some("pfifo_fast")),
            InterfaceStep::Recreate
        );
        assert_eq!(
            interface_step("fq", Class::Multiqueue, "fq_codel", Some("fq_codel")),
            InterfaceStep::Recreate
        );
        assert_eq!(
            interface_step("htb", Class::Deliberate, "pfifo_fast", Some("pfifo_fast")),
            InterfaceStep::Unchanged
        );
        assert_eq!(
            interface_step("fq", kd, "pfifo_fast", Some("fq")),
            InterfaceStep::Kept
        );
    }
}
