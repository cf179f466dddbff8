//! `check`: what this kernel offers, each fact with its evidence. A report
//! of a [`Snapshot`]. Only reads.

use serde::Serialize;

use crate::HostError;
use crate::algorithm::Registration;
use crate::env::Environment;
use crate::host::Host;
use crate::kernel::KernelFacts;
use crate::qdisc::InterfaceQdisc;
use crate::snapshot::{Scope, Snapshot};

/// The `check` report (also the `--json` document).
#[derive(Debug, Clone, Serialize)]
pub struct CheckReport {
    /// Kernel facts: release, algorithms, BBR, qdisc support.
    pub kernel: KernelFacts,
    /// Root qdisc of every interface (rtnetlink); empty if netlink failed.
    pub interfaces: Vec<InterfaceQdisc>,
    /// Why the interface list is missing, if it is.
    pub interfaces_error: Option<String>,
    /// Container / virtualisation / namespace facts.
    pub environment: Environment,
    /// Whether this kernel can run bbrkit's BPF congestion controls (bbr3 bbr2).
    pub bpf: BpfSupport,
}

/// What a BPF congestion control (bbr3) needs, each requirement with its
/// evidence, and whether it is registered now.
#[derive(Debug, Clone, Serialize)]
pub struct BpfSupport {
    /// `bbrkit-bpf`'s probes (kernel BTF, struct_ops, pacing writes, links,
    /// the form of `cong_control`, bpffs, lockdown, privileges).
    pub features: Option<crate::bpf::Features>,
    /// `None` when bbr3 can be registered (and pinned) here, else the
    /// first missing requirement.
    pub missing: Option<String>,
    /// The registration of each BPF algorithm bbrkit ships.
    pub registrations: Vec<Registration>,
}

/// Reads `host` and reports what it offers.
pub fn inspect(host: &dyn Host) -> Result<CheckReport, HostError> {
    Ok(report(&Snapshot::read(host, &Scope::check())?))
}

/// The report of `snap`.
pub fn report(snap: &Snapshot) -> CheckReport {
    let (interfaces, interfaces_error) = match &snap.interfaces {
        Ok(l) => (l.clone(), None),
        Err(e) => (Vec::new(), Some(e.clone())),
    };
    CheckReport {
        kernel: snap.kernel.clone(),
        interfaces,
        interfaces_error,
        environment: snap.environment.clone(),
        bpf: BpfSupport {
            features: snap.bpf.features.clone(),
            missing: snap.bpf.missing.clone(),
            registrations: snap.bpf.registrations.clone(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algorithm::Holding;
    use crate::testing::{DEBIAN, Fixture};

    /// The whole report of a fixture host, pinned (`cargo insta review`
    /// after an intended change).
    #[test]
    fn report_of_a_fixture_host() {
        let mut f = Fixture::new(DEBIAN);
        f.live()
            .register("bbr3", Holding::BbrkitLink { link_id: 9 });
        f.live().interfaces = Err("Operation not permitted".into());
        let r = report(&f.snap());
        assert_eq!(
            r.interfaces_error.as_deref(),
            Some("netlink: recv: Operation not permitted")
        );
        insta::assert_snapshot!(f.redact(&serde_json::to_string_pretty(&r).unwrap()));
    }
}
