//! The boot unit of a BPF congestion control (`bbrkit-bbr3.service`) as a
//! kind of change that expands to files: the unit, its enabling
//! `sysinit.target.wants/` symlink and the binary it runs ([`plan`]), each
//! a file change of its own in the before-image. The unit never runs a
//! build tree: when this bbrkit is the package's `/usr/bin/bbrkit` the unit
//! runs that; otherwise `enable` installs a copy at
//! `usr/local/lib/bbrkit/bbrkit` under the root (rollback removes it) and
//! says so. `verify` checks the unit and this boot's run of it
//! ([`checks`]); `doctor` explains a default nothing registers at boot, a
//! failed or missing run, a unit whose binary is gone ([`findings`]).

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::Change;
use super::file::{WriteFile, WriteSymlink};
use crate::image::{BeforeImage, Present};
use crate::outcome::{Check, CheckName, Finding, FindingId, Level};
use crate::snapshot::{Snapshot, UnitView};
use crate::unit::{self, UnitState};
use crate::{HostError, KEY_CC, Root};

/// Where the Debian package installs bbrkit (what the shipped unit runs).
pub const PACKAGE_EXE: &str = unit::SHIPPED_EXE;
/// Where `enable` installs a copy of any other bbrkit for the unit to run.
pub const INSTALLED_EXE: &str = "/usr/local/lib/bbrkit/bbrkit";

/// What `enable` does with one file of the unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum UnitFileAction {
    /// Copy the running bbrkit to the stable path the unit runs.
    Install,
    /// Write the unit file.
    Write,
    /// Create the enabling symlink.
    Link,
    /// Already as it should be.
    Unchanged,
}

/// One file `enable` writes for the unit, as the report shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UnitFile {
    /// The path under the root.
    pub file: String,
    /// What happens to it (a dry run reports the same plan).
    pub action: UnitFileAction,
    /// What it is.
    pub detail: String,
}

/// The human lines of the unit's files.
pub fn lines(files: &[UnitFile], dry_run: bool) -> Vec<String> {
    files
        .iter()
        .map(|u| {
            let verb = match (u.action, dry_run) {
                (UnitFileAction::Unchanged, _) => "unchanged",
                (UnitFileAction::Install, true) => "would install",
                (UnitFileAction::Install, false) => "installed",
                (UnitFileAction::Write, true) => "would write",
                (UnitFileAction::Write, false) => "wrote",
                (UnitFileAction::Link, true) => "would link",
                (UnitFileAction::Link, false) => "linked",
            };
            format!("unit: {verb} {} ({})", u.file, u.detail)
        })
        .collect()
}

/// Where an operator without systemd runs `cmd` at every boot (issue 33:
/// "a documented command the operator's own boot hook runs"): OpenRC runs
/// the executable `*.start` files of /etc/local.d from its `local` service
/// (late in the `default` runlevel, after `sysctl`); sysvinit's rc.local
/// runs at the end of the multi-user runlevels. docs/policy.md and
/// docs/host.md, "Without systemd".
pub fn boot_hook(cmd: &str) -> String {
    format!(
        "run `{cmd}` at every boot: OpenRC: a line in /etc/local.d/bbrkit.start (chmod +x) and `rc-update add local default`; sysvinit: a line in /etc/rc.local (before its `exit 0`)"
    )
}

/// The evidence that the root boots with systemd, or the refusal: without
/// systemd nothing would register `cc` after a reboot.
pub fn require_systemd(snap: &Snapshot, cc: &str) -> Result<String, HostError> {
    let (systemd, why) = &snap.systemd;
    if *systemd {
        return Ok(why.clone());
    }
    Err(HostError::BpfRefused {
        cc: cc.into(),
        reason: format!(
            "{why}: bbrkit keeps {cc} across reboots with a systemd unit; without systemd {} (docs/host.md)",
            boot_hook(&format!("bbrkit boot --cc {cc}"))
        ),
    })
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
        _ => false,
    }
}

/// The binary the unit runs, as the booted system names it, with the
/// report line of the installed copy and the change that installs it.
struct Binary {
    at_boot: PathBuf,
    line: Option<UnitFile>,
    install: Option<Change>,
}

/// Which binary the unit runs (see the module documentation).
fn binary(root: &Root, image: Option<&BeforeImage>, exe: &Path) -> Result<Binary, HostError> {
    let runs = |at_boot: &str, line, install| Binary {
        at_boot: at_boot.into(),
        line,
        install,
    };
    let stable = root.path(INSTALLED_EXE);
    if same_file(exe, &root.path(PACKAGE_EXE)) {
        return Ok(runs(PACKAGE_EXE, None, None));
    }
    if same_file(exe, &stable) {
        return Ok(runs(INSTALLED_EXE, None, None));
    }
    let bytes = std::fs::read(exe).map_err(|e| HostError::io(exe, e))?;
    let now = Present::read(&stable)?;
    let shown = root.show(&stable);
    let line = |action, detail: String| UnitFile {
        file: shown.clone(),
        action,
        detail,
    };
    if matches!(&now, Present::File { bytes: b, .. } if *b == bytes) {
        let detail = format!("the copy of {} the unit runs", exe.display());
        let l = line(UnitFileAction::Unchanged, detail);
        return Ok(runs(INSTALLED_EXE, Some(l), None));
    }
    let known = image
        .and_then(|i| i.file(&root.relative(&stable)))
        .is_some();
    let edited = super::file::edit(image, root, &stable, &now).is_some();
    if now != Present::Absent && (!known || edited) {
        return Err(HostError::NotOurs {
            path: shown,
            reason: "exists and bbrkit did not install it (the before-image has no record of it): move it away, then run `bbrkit enable` again".into(),
        });
    }
    let detail = format!(
        "a copy of {}: the unit runs this installed copy, never a build tree or wherever bbrkit was run from; rollback removes it",
        exe.display()
    );
    let l = line(UnitFileAction::Install, detail);
    let change = Change::File(WriteFile {
        path: stable,
        content: bytes,
        mode: 0o755,
    });
    Ok(runs(INSTALLED_EXE, Some(l), Some(change)))
}

/// The unit's files for `cc` and the changes they need: the binary the
/// unit runs, `etc/systemd/system/bbrkit-<cc>.service` and its
/// `sysinit.target.wants/` symlink.
pub fn plan(
    root: &Root,
    image: Option<&BeforeImage>,
    cc: &str,
    exe: &Path,
) -> Result<(Vec<UnitFile>, Vec<Change>), HostError> {
    let Binary {
        at_boot,
        line,
        install,
    } = binary(root, image, exe)?;
    let text = unit::render(cc, &at_boot).ok_or_else(|| HostError::BpfRefused {
        cc: cc.into(),
        reason: "bbrkit has no unit for it".into(),
    })?;
    let unit_path = unit::unit_path(root, cc);
    let wants = unit::wants_path(root, cc);
    let target = unit::wants_target(cc);
    let unit_same = std::fs::symlink_metadata(&unit_path).is_ok_and(|m| m.is_file())
        && std::fs::read(&unit_path).ok().as_deref() == Some(text.as_bytes());
    let wants_same = std::fs::read_link(&wants).is_ok_and(|t| t == target);
    let mut files: Vec<UnitFile> = line.into_iter().collect();
    let mut changes: Vec<Change> = install.into_iter().collect();
    files.push(UnitFile {
        file: root.show(&unit_path),
        action: if unit_same {
            UnitFileAction::Unchanged
        } else {
            UnitFileAction::Write
        },
        detail: format!(
            "runs `{} boot {}` after systemd-sysctl{}, before sysinit.target",
            at_boot.display(),
            unit::boot_args(cc),
            if cc == unit::POLICY {
                " and bbrkit's BPF algorithms' units"
            } else {
                ""
            }
        ),
    });
    files.push(UnitFile {
        file: root.show(&wants),
        action: if wants_same {
            UnitFileAction::Unchanged
        } else {
            UnitFileAction::Link
        },
        detail: format!(
            "-> {} (enables it, as `systemctl enable` would)",
            target.display()
        ),
    });
    if !unit_same {
        changes.push(Change::File(WriteFile {
            path: unit_path,
            content: text.into_bytes(),
            mode: 0o644,
        }));
    }
    if !wants_same {
        changes.push(Change::Symlink(WriteSymlink {
            path: wants,
            target,
        }));
    }
    Ok((files, changes))
}

/// The binary `ExecStart` runs is missing (under the root or at its path).
fn binary_missing(root: &Root, st: &UnitState) -> Option<PathBuf> {
    let e = st.exe()?;
    (!e.exists() && !root.path(&e).exists()).then_some(e)
}

/// `verify`'s checks of the unit of BPF algorithm `cc`: installed, enabled,
/// ordered after systemd-sysctl, running `bbrkit boot` with a binary that
/// exists; and, when it ran this boot, that it succeeded.
pub fn checks(snap: &Snapshot, cc: &str) -> Vec<Check> {
    let Some(v) = snap.unit(cc) else {
        return Vec::new();
    };
    let mut out = vec![unit_check(snap, &v.unit, cc)];
    let rec = v
        .record
        .clone()
        .filter(|r| r.boot_id.is_some() && r.boot_id == snap.boot_id);
    if let Some(r) = rec {
        out.push(Check::new(
            CheckName::BootRun,
            r.ok,
            format!("boot_run.{cc}"),
            if r.ok { "ok" } else { "failed" },
            "ok",
            format!(
                "{} this boot: {}",
                snap.root.show(&unit::record_path(&snap.root, cc)),
                r.error.unwrap_or_else(|| r.steps.join("; "))
            ),
        ));
    }
    out
}

/// `verify`'s check of the policies' unit (`bbrkit-policy.service`), when
/// the root boots with systemd (without it `enable --policy` writes none).
pub fn policy_check(snap: &Snapshot) -> Option<Check> {
    snap.systemd
        .0
        .then(|| unit_check(snap, &snap.policy.unit, unit::POLICY))
}

/// What the unit `cc` does at boot, for the detail of its check.
fn does(cc: &str) -> (String, String) {
    if cc == unit::POLICY {
        (
            "re-attaches the recorded policies".into(),
            "nothing re-attaches the policies at boot".into(),
        )
    } else {
        (
            format!("registers {cc}, then sets the default"),
            format!("nothing registers {cc} at boot"),
        )
    }
}

fn unit_check(snap: &Snapshot, st: &UnitState, cc: &str) -> Check {
    let (systemd, sd_why) = &snap.systemd;
    let active = st.file.is_some() && !st.masked;
    let problems: Vec<String> = [
        (!systemd).then(|| sd_why.clone()),
        st.file.is_none().then(|| "not installed".to_string()),
        st.masked.then(|| "masked".to_string()),
        (st.file.is_some() && st.enabled_by.is_empty()).then(|| "not enabled".to_string()),
        (active && !st.after_sysctl())
            .then(|| "not ordered After=systemd-sysctl.service".to_string()),
        (active && !st.runs_boot(cc)).then(|| {
            format!(
                "ExecStart does not run `bbrkit boot {}`",
                unit::boot_args(cc)
            )
        }),
        (active && st.runs_boot(cc))
            .then(|| binary_missing(&snap.root, st))
            .flatten()
            .map(|e| format!("ExecStart's {} does not exist", e.display())),
    ]
    .into_iter()
    .flatten()
    .collect();
    let ok = problems.is_empty();
    let (does, nothing) = does(cc);
    let detail = if ok {
        format!(
            "{}, enabled by {}: after systemd-sysctl, before sysinit.target, runs `{}` ({does})",
            st.file.clone().unwrap_or_default(),
            st.enabled_by.join(", "),
            st.exec_start.clone().unwrap_or_default()
        )
    } else {
        format!("{}: {nothing}", problems.join("; "))
    };
    Check::new(
        CheckName::Unit,
        ok,
        format!("unit.{}", st.name),
        if ok {
            "enabled".to_string()
        } else {
            problems.first().cloned().unwrap_or_default()
        },
        "enabled",
        detail,
    )
}

fn unit_words(st: &UnitState) -> String {
    match (&st.file, st.masked, st.enabled_by.is_empty()) {
        (None, _, _) => format!("{} is not installed", st.name),
        (Some(f), true, _) => format!("{} is masked ({f} -> /dev/null)", st.name),
        (Some(f), false, true) => format!("{} is installed ({f}) but not enabled", st.name),
        (Some(f), false, false) => format!("{} is enabled ({f})", st.name),
    }
}

/// `doctor`'s findings about the boot units.
pub fn findings(snap: &Snapshot) -> Vec<Finding> {
    let mut out = default_without_unit(snap);
    for v in &snap.units {
        out.extend(boot_failed(snap, v));
        out.extend(binary_gone(snap, v));
    }
    out
}

/// A sysctl file sets a BPF algorithm as the boot default, and no enabled
/// unit registers it: at boot the line fails (ENOENT) and the host stays
/// on the kernel's default without anyone noticing.
fn default_without_unit(snap: &Snapshot) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut seen = Vec::new();
    let (systemd, sd_why) = &snap.systemd;
    for r in &snap.resolve(&[KEY_CC], None) {
        let Some(w) = &r.winner else { continue };
        let Some(v) = snap.unit(&w.value) else {
            continue; // not one of bbrkit's BPF algorithms
        };
        if seen.contains(&(w.file.clone(), w.line)) {
            continue;
        }
        seen.push((w.file.clone(), w.line));
        let st = &v.unit;
        if st.enabled() && *systemd {
            continue;
        }
        let cc = &w.value;
        let fix = if *systemd {
            format!(
                "`bbrkit enable --cc {cc}` installs and enables {} (it registers {cc} after systemd-sysctl, then sets the default); or change {}:{}",
                st.name, w.file, w.line
            )
        } else {
            format!(
                "this host does not boot with systemd: {} (docs/host.md), or change {}:{}",
                boot_hook(&format!("bbrkit boot --cc {cc}")),
                w.file,
                w.line
            )
        };
        out.push(Finding::new(
            FindingId::BpfDefaultWithoutUnit,
            Level::Warning,
            format!("{} makes {cc} the default at boot, but nothing registers {cc} then", w.file),
            vec![
                format!("{}: {}:{} sets {KEY_CC} = {cc}", r.loader.name(), w.file, w.line),
                format!("{cc} is a BPF congestion control: it exists only once registered; until then the write fails with ENOENT (systemd-sysctl ignores it)"),
                unit_words(st),
                sd_why.clone(),
            ],
            fix,
        ));
    }
    out
}

/// The unit is there but this boot's registration failed, or it did not run.
fn boot_failed(snap: &Snapshot, v: &UnitView) -> Option<Finding> {
    let (st, cc) = (&v.unit, &v.cc);
    let rec = v.record.clone().filter(|r| r.boot_id == snap.boot_id);
    let registered = snap.kernel.available_cc.iter().any(|c| c == cc);
    let shown = snap.root.show(&unit::record_path(&snap.root, cc));
    match rec {
        Some(r) if !r.ok => {
            let mut ev = vec![format!(
                "{shown}: {} (registration {})",
                r.error.clone().unwrap_or_default(),
                r.registration.as_str()
            )];
            ev.extend(r.steps.iter().map(|s| format!("{shown}: {s}")));
            if let Some(t) = &r.verifier_log_tail {
                let verdict = t.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("");
                ev.push(format!("verifier log (last line): {verdict}"));
            }
            if let Some(m) = &snap.bpf.missing {
                ev.push(format!("requirement missing now: {m}"));
            }
            ev.push(format!(
                "{cc} {} registered now; {KEY_CC} = {}",
                if registered { "is" } else { "is not" },
                snap.kernel.current_cc.as_deref().unwrap_or("?")
            ));
            Some(Finding::new(
                FindingId::BpfBootFailed,
                Level::Error,
                format!(
                    "{} failed this boot: {cc} was not made the default",
                    st.name
                ),
                ev,
                format!(
                    "`bbrkit check` lists what {cc} needs (Linux >= 6.10 with BTF, struct_ops, no lockdown refusing BPF); fix that, then `systemctl restart {}`; `bbrkit rollback` returns to the previous default",
                    st.name
                ),
            ))
        }
        None if st.enabled() && !registered && snap.systemd.0 => Some(Finding::new(
            FindingId::BpfBootNotRun,
            Level::Warning,
            format!(
                "{} is enabled but has not registered {cc} this boot",
                st.name
            ),
            vec![
                unit_words(st),
                format!(
                    "{shown}: no record from this boot ({})",
                    snap.boot_id.as_deref().unwrap_or("boot id unknown")
                ),
                format!("{cc} is not in tcp_available_congestion_control"),
            ],
            format!(
                "`systemctl status {}` says why it did not run; `systemctl start {}` registers {cc} now",
                st.name, st.name
            ),
        )),
        _ => None,
    }
}

/// An enabled unit runs a binary that is not there: the next boot
/// registers nothing.
fn binary_gone(snap: &Snapshot, v: &UnitView) -> Option<Finding> {
    let (st, cc) = (&v.unit, &v.cc);
    if !st.enabled() || !st.runs_boot(cc) {
        return None;
    }
    let exe = binary_missing(&snap.root, st)?;
    Some(Finding::new(
        FindingId::BpfUnitBinaryMissing,
        Level::Warning,
        format!(
            "{} runs {}, which does not exist: nothing registers {cc} at the next boot",
            st.name,
            exe.display()
        ),
        vec![
            format!(
                "{}: ExecStart={}",
                st.file.clone().unwrap_or_default(),
                st.exec_start.clone().unwrap_or_default()
            ),
            format!(
                "{} does not exist (a build tree removed, or a copy deleted)",
                exe.display()
            ),
        ],
        format!(
            "`bbrkit enable --cc {cc}` installs bbrkit at {INSTALLED_EXE} and points the unit at it (or install the bbrkit package, whose unit runs {PACKAGE_EXE})"
        ),
    ))
}
