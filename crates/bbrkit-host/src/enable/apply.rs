//! Carrying out `enable`'s [`Plan`]: first the before-image (what every
//! change will touch, recorded atomically), then the changes phase by
//! phase, each one filling in its outcome in the report.

use crate::HostError;
use crate::change::{Applied, Phase};
use crate::host::HostMut;
use crate::image::{self, BeforeImage};

use super::{EnableReport, Plan};

/// Carries out `plan` on `host`, adding to `image` (the before-image as
/// loaded, if any): records the before-image, then makes every change. A
/// plan without changes (dry run, blocked, nothing to change) changes
/// nothing and returns its report.
pub fn apply(
    host: &mut dyn HostMut,
    image: Option<BeforeImage>,
    plan: Plan,
) -> Result<EnableReport, HostError> {
    let Plan {
        mut report,
        created_dirs,
        changes,
    } = plan;
    if changes.is_empty() {
        return Ok(report);
    }
    let root = host.root().clone();
    let mut image = image.unwrap_or_default();
    image.version = image::VERSION;
    for d in &created_dirs {
        let rel = root.relative(d);
        if !image.created_dirs.contains(&rel) {
            image.created_dirs.push(rel);
        }
    }
    for c in &changes {
        c.record(&root, &mut image)?;
    }
    image::save(&root, &image)?;
    host.crash_point("state-written");
    for (phase, done) in Phase::ALL {
        for c in changes.iter().filter(|c| c.phase() == phase) {
            fold(&mut report, c.apply(host)?);
        }
        host.crash_point(done);
    }
    Ok(report)
}

/// Writes one change's outcome into the report.
fn fold(report: &mut EnableReport, applied: Applied) {
    match applied {
        Applied::Written => {}
        Applied::Sysctl(o) => {
            report.problem |= o.problem();
            if let Some(k) = report.keys.iter_mut().find(|k| k.key == o.key) {
                (k.runtime, k.detail) = (o.runtime, o.detail);
            }
        }
        Applied::Qdiscs(q) => {
            report.problem |= q.problem;
            report.interfaces = q.interfaces;
        }
        Applied::Policy(step) => {
            if let Some(p) = &mut report.policy {
                p.step = step;
            }
        }
        Applied::Loaded => {}
        Applied::Retired(cc, done, failed) => {
            report.problem |= failed;
            for r in report.retire.iter_mut().filter(|r| r.cc == cc) {
                r.done.clone_from(&done);
            }
        }
        Applied::Registered(r) => {
            if let Some(b) = report.bpf.as_mut().filter(|b| b.cc == r.1) {
                b.registration = r.0;
            }
            let policy = report.policy.iter_mut().flat_map(|p| &mut p.registers);
            for b in policy.filter(|b| b.cc == r.1) {
                b.registration = r.0;
            }
        }
    }
}
