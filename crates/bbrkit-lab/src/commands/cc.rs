//! How the algorithm of a run reaches the sockets of a `--server-cmd`
//! program, which bbrkit cannot ask to call `setsockopt(TCP_CONGESTION)`:
//! a one-rule sock_ops policy (`bbrkit_bpf::sockops`, the program of
//! `bbrkit policy`) attached to the lab's cgroup sets it on every
//! connection the server side establishes, accepted or opened
//! (`bpf_setsockopt` at `PASSIVE/ACTIVE_ESTABLISHED_CB`, before the
//! algorithm is initialised).
//!
//! Why not the namespace's default (`net.ipv4.tcp_congestion_control`):
//! outside the initial namespace the kernel lets it name only the
//! algorithms of the host's `tcp_allowed_congestion_control`
//! (`tcp_set_default_congestion_control`: EPERM for the others), and
//! widening that list would change the host. A policy program runs with
//! the kernel's own rights. The attachment is not pinned: it ends when the
//! returned guard is dropped, or with the lab's process, SIGKILL included.
//!
//! A build without BPF support falls back to the namespace default and
//! says so when the kernel refuses it.

use std::path::Path;

use crate::error::{LabError, Result};
use crate::plan::HOST_CC;
use crate::tester::CcOn;
use crate::topology::Topology;

/// Holds the algorithm on the server side until dropped.
#[derive(Default)]
pub struct CcGuard {
    #[cfg(feature = "bpf")]
    _policy: Option<bbrkit_bpf::sockops::Attachment>,
}

/// Sets `cc` on the connections of the server side (the processes of
/// `cgroup` in `topo.server`) for as long as the guard lives; `--cc host`
/// and `--cc-on host` set nothing.
pub fn apply(topo: &Topology, cgroup: &Path, cc_on: CcOn, cc: &str) -> Result<CcGuard> {
    if cc == HOST_CC || matches!(cc_on, CcOn::Host) {
        return Ok(CcGuard::default());
    }
    if matches!(cc_on, CcOn::Receiver) {
        return Err(LabError::Invalid(
            "--cc-on receiver: the client command's sockets are its own; the lab sets the algorithm on the server side only"
                .into(),
        ));
    }
    attach(topo, cgroup, cc)
}

#[cfg(feature = "bpf")]
fn attach(_topo: &Topology, cgroup: &Path, cc: &str) -> Result<CcGuard> {
    use bbrkit_policy::rule::{Action, Policy, Rule};
    let rule = Rule {
        name: Some(format!("lab {cc}")),
        remote: None,
        local_port: None,
        remote_port: None,
        action: Action::Cc { cc: cc.to_string() },
        record: false,
    };
    let policy = Policy::new("lab", vec![rule])
        .map_err(|e| LabError::Invalid(format!("the lab's policy for {cc}: {e}")))?;
    let compiled = bbrkit_policy::compile::Compiled::new(&policy, 0);
    let att = bbrkit_bpf::sockops::Attachment::attach(&compiled, cgroup).map_err(|source| {
        LabError::Bpf {
            what: format!(
                "attach the lab's sock_ops program ({cc}) to {}",
                cgroup.display()
            ),
            source,
        }
    })?;
    Ok(CcGuard { _policy: Some(att) })
}

#[cfg(not(feature = "bpf"))]
fn attach(topo: &Topology, _cgroup: &Path, cc: &str) -> Result<CcGuard> {
    let ns = &topo.server;
    ns.run(|| ns.write_sysctl("net/ipv4/tcp_congestion_control", cc))
        .map_err(|e| {
            LabError::Invalid(format!(
                "{e}: a build without BPF support sets {cc} as the server namespace's default, \
                 which the kernel allows only for the host's tcp_allowed_congestion_control"
            ))
        })?;
    Ok(CcGuard::default())
}
