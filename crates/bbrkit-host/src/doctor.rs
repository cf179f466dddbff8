//! `doctor`: every known pitfall found on this host, each finding with its
//! evidence and the fix. A pure judgement ([`judge`]) of a [`Snapshot`]
//! (and the before-image): the findings about bbrkit's own changes come
//! from their kinds (`crate::change`), the others from one file per group
//! here. Only reads.
//!
//! | where | findings |
//! |---|---|
//! | `change::persist` | `boot_override`, `not_persisted`, `overridden_file`, `runtime_differs`, `edited_file` |
//! | `change::qdisc` | `stale_interface_qdisc` |
//! | `change::boot_unit` | `bpf_default_without_unit`, `bpf_boot_failed`, `bpf_boot_not_run`, `bpf_unit_binary_missing` |
//! | `change::bpf` | `bpf_foreign`, `bpf_stuck_connections`, `bpf_default_unregistered` |
//! | `tools.rs` | `tuned`, `image_files` (cloud-init, ufw, rc.local) |
//! | `kernel.rs` | `no_bbr`, `no_fq` |
//! | `namespaces.rs` | `container`, `container_netns`, `container_hints`, `netns_old_cc`, `not_allowed`, `lab_leftovers` |
//! | `connections.rs` | `old_connections`, `route_congctl` |
//! | `traffic.rs` | `mostly_receives` |

use serde::Serialize;

use crate::HostError;
use crate::change::{boot_unit, bpf, persist, policy, qdisc};
use crate::host::Host;
use crate::image::{self, BeforeImage};
use crate::snapshot::{Scope, Snapshot};

mod connections;
mod kernel;
mod namespaces;
mod tools;
mod traffic;

pub use crate::outcome::{Finding, FindingId, Level};
pub use traffic::receive_finding;

/// The `doctor` report (also the `--json` document).
#[derive(Debug, Clone, Serialize)]
pub struct DoctorReport {
    /// Findings, worst first.
    pub findings: Vec<Finding>,
    /// A warning or error was found.
    pub problem: bool,
}

/// Reads `host` and runs every diagnosis.
pub fn diagnose(host: &dyn Host) -> Result<DoctorReport, HostError> {
    let snap = Snapshot::read(host, &Scope::doctor())?;
    let image = image::load(&snap.root).ok().flatten();
    Ok(judge(&snap, image.as_ref()))
}

/// Every finding for `snap` and the before-image, worst first.
pub fn judge(snap: &Snapshot, image: Option<&BeforeImage>) -> DoctorReport {
    let mut out = Vec::new();
    out.extend(kernel::no_bbr(snap));
    out.extend(persist::findings(snap, image));
    out.extend(qdisc::stale_finding(snap));
    out.extend(namespaces::container(snap));
    out.extend(connections::old_connections(snap));
    out.extend(connections::route_congctl(snap));
    out.extend(namespaces::netns_old_cc(snap));
    out.extend(namespaces::lab_leftovers(snap));
    out.extend(kernel::no_fq(snap));
    out.extend(namespaces::not_allowed(snap));
    out.extend(tools::tuned(&snap.root));
    out.extend(tools::image_files(&snap.root));
    out.extend(traffic::mostly_receives(snap));
    out.extend(boot_unit::findings(snap));
    out.extend(bpf::findings(snap));
    out.extend(policy::findings(snap));
    out.sort_by_key(|f| std::cmp::Reverse(f.level));
    let problem = out.iter().any(|x| x.level >= Level::Warning);
    DoctorReport {
        findings: out,
        problem,
    }
}

#[cfg(test)]
mod tests;
