//! `enable`: persist the chosen algorithm (and fq where the kernel has it)
//! in bbrkit's own sysctl.d file, check which file wins at boot under both
//! loaders, apply the values to `/proc/sys` with read-back, re-create the
//! root qdisc of interfaces still on the old kernel default, register a BPF
//! algorithm with its boot unit, and record a before-image first. Never
//! writes `etc/sysctl.conf`, never edits or deletes other files (nor one
//! of its own an operator edited), never installs kernels.
//!
//! Two halves: [`plan`] decides every change from a [`Snapshot`] and
//! writes nothing (it is the dry run); [`apply`] records the before-image
//! and makes the changes in order. [`run`] is the two together.

use std::path::PathBuf;

use crate::HostError;
use crate::host::HostMut;
use crate::image::{self, BeforeImage};
use crate::lock::{self, HostLock};
use crate::snapshot::{Scope, Snapshot};

mod apply;
mod plan;
mod report;
#[cfg(test)]
mod root_tests;
#[cfg(test)]
mod tests;

pub use apply::apply;
pub use plan::{Plan, plan, validate_cc};
pub use report::*;

/// What `enable` reads.
pub fn scope() -> Scope {
    Scope {
        interfaces: true,
        bpf_features: true,
        ..Scope::default()
    }
}

/// The binary a boot unit runs a copy of.
fn exe(opts: &Options) -> Result<PathBuf, HostError> {
    match &opts.exe {
        Some(e) => Ok(e.clone()),
        None => std::env::current_exe().map_err(|e| HostError::io("/proc/self/exe", e)),
    }
}

/// Reads `host` and the before-image and plans.
fn plan_now(
    host: &mut dyn HostMut,
    opts: &Options,
) -> Result<(Plan, Option<BeforeImage>), HostError> {
    let snap = Snapshot::read(host, &scope())?;
    let image = image::load(&snap.root)?;
    let p = plan(&snap, image.as_ref(), opts, host, &exe(opts)?)?;
    Ok((p, image))
}

/// Runs `enable` (or its dry run): [`plan`], then [`apply`] under the host
/// lock ([`HostLock`], waiting up to [`lock::WAIT`]). The first plan only
/// checks the options and permissions before the lock is taken; the plan
/// applied is made again under the lock, from the host as the previous
/// holder left it.
pub fn run(host: &mut dyn HostMut, opts: &Options) -> Result<EnableReport, HostError> {
    let (first, _) = plan_now(host, opts)?;
    if opts.dry_run {
        return Ok(first.report);
    }
    let root = host.root().clone();
    let lock = HostLock::acquire(&root, "enable", lock::WAIT)?;
    let (mut plan, image) = plan_now(host, opts)?;
    let mut dirs = lock.created_dirs().to_vec();
    dirs.append(&mut plan.created_dirs);
    plan.created_dirs = dirs;
    let report = apply(host, image, plan);
    drop(lock);
    report
}
