//! `enable`: persist the chosen algorithm (and fq where the kernel has it)
//! in bbrkit's own sysctl.d file, check which file wins at boot under both
//! loaders, apply the values to `/proc/sys` with read-back, re-create the
//! root qdisc of interfaces still on the old kernel default, and record a
//! before-image first. Never writes `etc/sysctl.conf`, never edits or
//! deletes other files, never installs kernels.
//!
//! Two halves: [`plan`] decides every change from what the host looks like
//! now and writes nothing (it is the dry run); [`apply`] records the
//! before-image and makes the changes ([`Step`]s) in order. [`run`] is the
//! two together.

use crate::lock::{self, HostLock};
use crate::{HostError, Root, kernel};

mod apply;
pub mod bpf;
mod ifaces;
mod plan;
mod report;
#[cfg(test)]
mod root_tests;
#[cfg(test)]
mod tests;

pub use apply::apply;
pub use ifaces::needs_recreate;
pub use plan::{Plan, Step, plan};
pub use report::*;

/// Validates `opts.cc` against what this kernel offers.
pub fn validate_cc(facts: &kernel::KernelFacts, cc: &str) -> Result<(), HostError> {
    if facts
        .available_cc
        .iter()
        .chain(&facts.loadable_cc)
        .any(|c| c == cc)
        || crate::bpfcc::is_bpf_cc(cc)
    {
        return Ok(());
    }
    let mut all: Vec<String> = facts.available_cc.clone();
    all.extend(facts.loadable_cc.iter().map(|c| format!("{c} (module)")));
    Err(HostError::UnknownCc {
        name: cc.into(),
        available: all.join(" "),
    })
}

/// Runs `enable` (or its dry run): [`plan`], then [`apply`] under the host
/// lock ([`HostLock`], waiting up to [`lock::WAIT`]). The first plan only
/// checks the options and permissions before the lock is taken; the plan
/// applied is made again under the lock, from the host as the previous
/// holder left it.
pub fn run(root: &Root, opts: &Options) -> Result<EnableReport, HostError> {
    let first = plan(root, opts)?;
    if opts.dry_run {
        return Ok(first.report);
    }
    let lock = HostLock::acquire(root, "enable", lock::WAIT)?;
    let mut plan = plan(root, opts)?;
    let mut dirs = lock.created_dirs().to_vec();
    dirs.append(&mut plan.created_dirs);
    plan.created_dirs = dirs;
    let report = apply(root, plan);
    drop(lock);
    report
}
