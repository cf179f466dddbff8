//! `rollback`: restore the before-image exactly: files byte-identical (or
//! absent again, symlinks as symlinks), runtime values, interface root
//! qdiscs; then forget the image. Works after a reboot because the image
//! lives on disk under the root. Never touches anything the image does not
//! name.

use serde::Serialize;

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
pub enum Step {
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
pub fn interface_step(now: &str, class: Class, before: &str, default_after: Option<&str>) -> Step {
    if now == before || !matches!(class, Class::KernelDefault | Class::Multiqueue) {
        Step::Unchanged
    } else if default_after == Some(before) {
        Step::Recreate
    } else {
        Step::Kept
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

/// Restores the before-image. `no_apply` restores files only.
pub fn run(root: &Root, dry_run: bool, no_apply: bool) -> Result<RollbackReport, HostError> {
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
    let Some(image) = state::load(root)? else {
        report.nothing_to_roll_back = true;
        if !dry_run {
            // An enable killed while saving the image leaves only temp files.
            for p in [root.state_file(), root.bbrkit_file()] {
                let _ = crate::atomic::remove_stale_temp(&p);
            }
        }
        return Ok(report);
    };
    let needs_runtime = image
        .runtime
        .iter()
        .any(|r| r.prior.is_some() && sysctl::read(&r.key).ok().flatten() != r.prior);
    if !dry_run {
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
        if needs_runtime && !no_apply && !sysctl::writable(crate::KEY_CC) {
            return Err(HostError::Permission(format!(
                "cannot write {}; run as root, or use --no-apply to restore files only",
                sysctl::proc_path(crate::KEY_CC).display()
            )));
        }
    }

    for f in &image.files {
        let p = root.path(&f.path);
        let shown = root.show(&p);
        if f.prior.matches(&p) {
            report
                .files
                .push(act(&shown, "unchanged", "already as before"));
            if !dry_run {
                crate::atomic::remove_stale_temp(&p).map_err(|e| HostError::io(&p, e))?;
            }
            continue;
        }
        let (verb, detail) = match &f.prior {
            Prior::Absent => ("remove", "did not exist before".to_string()),
            Prior::File { content_hex, .. } => (
                "restore",
                format!("{} bytes as before", content_hex.len() / 2),
            ),
            Prior::Symlink { target } => ("restore", format!("symlink to {target} as before")),
        };
        if dry_run {
            report
                .files
                .push(act(&shown, &format!("would_{verb}"), detail));
        } else {
            f.prior.restore(&p)?;
            report.files.push(act(
                &shown,
                if verb == "remove" {
                    "removed"
                } else {
                    "restored"
                },
                detail,
            ));
        }
    }

    // Runtime values: default_qdisc before the interfaces that depend on it.
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
        } else if dry_run {
            report.runtime.push(act(
                &r.key,
                "would_restore",
                format!("{} -> {prior}", now.unwrap_or_default()),
            ));
        } else if no_apply {
            report.runtime.push(act(
                &r.key,
                "skipped",
                format!("--no-apply: stays {} until reboot", now.unwrap_or_default()),
            ));
        } else {
            match sysctl::write(&r.key, prior) {
                Ok(()) => report.runtime.push(act(
                    &r.key,
                    "restored",
                    format!("{} -> {prior} (read back)", now.unwrap_or_default()),
                )),
                Err(e) => {
                    report.problem = true;
                    report
                        .runtime
                        .push(act(&r.key, "failed", format!("writing {prior}: {e}")));
                }
            }
        }
    }

    if !image.interfaces.is_empty() {
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
            match interface_step(cur.effective(), cur.class, &before, default_after.as_deref()) {
                Step::Unchanged => report.interfaces.push(act(
                    &ii.name,
                    "unchanged",
                    format!("root qdisc {}", cur.describe()),
                )),
                Step::Kept if default_after.is_some() && (dry_run || no_apply) => {
                    report.interfaces.push(act(
                        &ii.name,
                        "would_restore",
                        format!(
                            "re-create root: {} -> {before} under a momentary default_qdisc {before}",
                            cur.effective()
                        ),
                    ))
                }
                Step::Kept if default_after.is_some() => {
                    let after = default_after.clone().unwrap_or_default();
                    match recreate_under(cur.ifindex, &before, &after) {
                        Ok(()) => report.interfaces.push(act(
                            &ii.name,
                            "restored",
                            format!(
                                "root re-created under a momentary default_qdisc {before} (attached under an older default), then default_qdisc {after} put back"
                            ),
                        )),
                        Err(Momentary::Refused(e)) => report.interfaces.push(act(
                            &ii.name,
                            "kept",
                            format!(
                                "was {before}, attached under an older default; the kernel refuses {before} as default_qdisc ({e}), so it stays {}",
                                cur.effective()
                            ),
                        )),
                        Err(Momentary::Failed(e)) => {
                            report.problem = true;
                            report.interfaces.push(act(&ii.name, "failed", e));
                        }
                    }
                }
                Step::Kept => report.interfaces.push(act(
                    &ii.name,
                    "kept",
                    format!(
                        "was {before}, attached under an older default; the kernel re-attaches only the current default {}, so it stays {}",
                        default_after.clone().unwrap_or_default(),
                        cur.effective()
                    ),
                )),
                Step::Recreate if dry_run || no_apply => report.interfaces.push(act(
                    &ii.name,
                    "would_restore",
                    format!("re-create root: {} -> {before}", cur.effective()),
                )),
                Step::Recreate => match qdisc::recreate_root(cur.ifindex) {
                    Ok(()) => report.interfaces.push(act(
                        &ii.name,
                        "restored",
                        format!("root re-created from default_qdisc {before}"),
                    )),
                    Err(e) => {
                        report.problem = true;
                        report
                            .interfaces
                            .push(act(&ii.name, "failed", e.to_string()));
                    }
                },
            }
        }
    }

    // After the defaults are back (a namespace's default holds its
    // algorithm): unregister what enable registered.
    let b = crate::rollback_bpf::run(&image, dry_run, no_apply);
    report.bpf = b.actions;
    report.still_running = b.still_running;
    report.problem |= b.problem;

    if !dry_run && !report.problem {
        state::discard(root)?;
        let mut dirs = image.created_dirs.clone();
        dirs.sort_by_key(|d| std::cmp::Reverse(d.matches('/').count()));
        for d in dirs {
            let _ = std::fs::remove_dir(root.path(&d)); // only if empty
        }
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interface_steps() {
        let kd = Class::KernelDefault;
        assert_eq!(interface_step("fq", kd, "fq", Some("fq")), Step::Unchanged);
        assert_eq!(
            interface_step("fq", kd, "pfifo_fast", Some("pfifo_fast")),
            Step::Recreate
        );
        assert_eq!(
            interface_step("fq", Class::Multiqueue, "fq_codel", Some("fq_codel")),
            Step::Recreate
        );
        assert_eq!(
            interface_step("htb", Class::Deliberate, "pfifo_fast", Some("pfifo_fast")),
            Step::Unchanged
        );
        assert_eq!(
            interface_step("fq", kd, "pfifo_fast", Some("fq")),
            Step::Kept
        );
    }
}
