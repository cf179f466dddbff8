//! Carrying out `enable`'s [`Plan`]: first the before-image (what every
//! step will change, recorded atomically), then the steps in order, each
//! one filling in its outcome in the report. Files are written atomically;
//! runtime values are read back.

use crate::qdisc::{self, InterfaceQdisc};
use crate::state::{self, BeforeImage};
use crate::sysctl::{self, WriteError};
use crate::{HostError, KEY_QDISC, Root, atomic, crash_point};

use super::ifaces::describe_interfaces;
use super::{EnableReport, KeyResult, Plan, RuntimeStatus, Step, needs_recreate};

/// The order steps run in; after each phase the crash tests' hook
/// (`BBRKIT_TEST_CRASH_AT`) may kill the process.
const PHASES: [(Phase, &str); 4] = [
    (Phase::Register, "bpf-pinned"),
    (Phase::Files, "file-written"),
    (Phase::Runtime, "runtime-applied"),
    (Phase::Interfaces, "qdisc-recreated"),
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Register,
    Files,
    Runtime,
    Interfaces,
}

impl Step {
    fn phase(&self) -> Phase {
        match self {
            Step::RegisterBpf { .. } => Phase::Register,
            Step::WriteFile { .. } | Step::WriteSymlink { .. } => Phase::Files,
            Step::SetSysctl { .. } => Phase::Runtime,
            Step::RecreateQdiscs { .. } => Phase::Interfaces,
        }
    }

    /// Adds what this step changes to the before-image (first record wins).
    fn record(&self, root: &Root, image: &mut BeforeImage) -> Result<(), HostError> {
        match self {
            Step::WriteFile { path, .. } | Step::WriteSymlink { path, .. } => {
                image.record_file(root, path)?
            }
            Step::RegisterBpf { cc, pinned_before } => image.record_bpf(cc, pinned_before.clone()),
            Step::SetSysctl { key, before, .. } => image.record_runtime(key, before.clone()),
            Step::RecreateQdiscs { interfaces, .. } => {
                for i in interfaces {
                    image.record_interface(i.clone());
                }
            }
        }
        Ok(())
    }

    /// Makes the change and writes its outcome into `report`.
    fn apply(&self, report: &mut EnableReport) -> Result<(), HostError> {
        match self {
            Step::WriteFile {
                path,
                content,
                mode,
            } => {
                if let Some(dir) = path.parent() {
                    std::fs::create_dir_all(dir).map_err(|e| HostError::io(dir, e))?;
                }
                atomic::write_atomic(path, content, *mode).map_err(|e| HostError::io(path, e))?;
            }
            Step::WriteSymlink { path, target } => {
                if let Some(dir) = path.parent() {
                    std::fs::create_dir_all(dir).map_err(|e| HostError::io(dir, e))?;
                }
                atomic::symlink_atomic(path, target).map_err(|e| HostError::io(path, e))?;
            }
            Step::RegisterBpf { cc, .. } => {
                crate::bpfcc::register_pinned(cc)
                    .map_err(|f| HostError::Bpf(format!("register {cc}: {f}")))?;
                if let Some(b) = &mut report.bpf {
                    b.registration = "registered".into();
                }
            }
            Step::SetSysctl { key, .. } => {
                if let Some(k) = report.keys.iter_mut().find(|k| &k.key == key) {
                    report.problem |= set_sysctl(k);
                }
            }
            Step::RecreateQdiscs { target, listed, .. } => {
                report.problem |= recreate_qdiscs(report, target, listed);
            }
        }
        Ok(())
    }
}

/// Carries out `plan`: records the before-image, then makes every change.
/// A plan without steps (dry run, blocked, nothing to change) changes
/// nothing and returns its report.
pub fn apply(root: &Root, plan: Plan) -> Result<EnableReport, HostError> {
    let Plan {
        mut report,
        created_dirs,
        steps,
    } = plan;
    if steps.is_empty() {
        return Ok(report);
    }
    let mut image = state::load(root)?.unwrap_or(BeforeImage {
        version: 1,
        ..Default::default()
    });
    for d in &created_dirs {
        let rel = root.relative(d);
        if !image.created_dirs.contains(&rel) {
            image.created_dirs.push(rel);
        }
    }
    for s in &steps {
        s.record(root, &mut image)?;
    }
    state::save(root, &image)?;
    crash_point("state-written");
    for (phase, done) in PHASES {
        for s in steps.iter().filter(|s| s.phase() == phase) {
            s.apply(&mut report)?;
        }
        crash_point(done);
    }
    Ok(report)
}

/// Writes one key and reads it back; true when the outcome is a problem.
fn set_sysctl(k: &mut KeyResult) -> bool {
    let before = k.before.as_deref().unwrap_or("(absent)");
    if k.key == crate::KEY_CC && crate::bpfcc::is_bpf_cc(&k.value) {
        let initial = crate::env::netns_inode() == Some(crate::env::INIT_NET_INODE);
        if let Err(why) = crate::bpfcc::default_write_allowed(&k.value, initial) {
            k.runtime = RuntimeStatus::NotPermitted;
            k.detail = why;
            return true;
        }
    }
    let (runtime, detail) = match sysctl::write(&k.key, &k.value) {
        Ok(()) => (
            RuntimeStatus::Set,
            format!("{before} -> {} (read back)", k.value),
        ),
        Err(WriteError::ValueUnknown) if k.key == KEY_QDISC => (
            RuntimeStatus::NoKernelSupport,
            format!(
                "kernel has no {}: BBR uses internal pacing (Linux >= 4.13); not a failure",
                k.value
            ),
        ),
        Err(WriteError::KeyMissing) | Err(WriteError::ReadOnly) => (
            RuntimeStatus::HostOnly,
            format!(
                "{}: the host's job (change it on the host)",
                WriteError::ReadOnly
            ),
        ),
        Err(WriteError::NotPermitted) => (
            RuntimeStatus::NotPermitted,
            format!(
                "EPERM: {} is not in net.ipv4.tcp_allowed_congestion_control of this namespace; add it on the host",
                k.value
            ),
        ),
        Err(e) => (RuntimeStatus::Failed, e.to_string()),
    };
    k.runtime = runtime;
    k.detail = detail;
    matches!(runtime, RuntimeStatus::NotPermitted | RuntimeStatus::Failed)
}

/// Re-creates the root of every interface on an older default once
/// `target` is in effect, and describes every interface; true when a
/// re-creation failed.
fn recreate_qdiscs(report: &mut EnableReport, target: &str, listed: &[InterfaceQdisc]) -> bool {
    let in_effect = sysctl::read(KEY_QDISC).ok().flatten().as_deref() == Some(target);
    let recreate = |i: &InterfaceQdisc| in_effect && needs_recreate(i, Some(target));
    report.interfaces = describe_interfaces(listed, &recreate, "recreated", Some(target));
    let mut problem = false;
    for a in &mut report.interfaces {
        if a.action == "recreated" {
            let idx = listed
                .iter()
                .find(|i| i.name == a.name)
                .map(|i| i.ifindex)
                .unwrap_or(0);
            match qdisc::recreate_root(idx) {
                Ok(()) => {
                    let now = qdisc::list()
                        .ok()
                        .and_then(|l| l.into_iter().find(|i| i.ifindex == idx))
                        .map(|i| i.describe());
                    a.detail = format!(
                        "root qdisc re-created: now {}",
                        now.unwrap_or_else(|| "?".into())
                    );
                }
                Err(e) => {
                    a.action = "failed".into();
                    a.detail = bbrkit_diag::error_chain(&e);
                    problem = true;
                }
            }
        } else if a.action == "unchanged_default" && !in_effect {
            a.detail = format!("default qdisc is not {target}: nothing to re-create");
        }
    }
    problem
}
