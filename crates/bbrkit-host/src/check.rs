//! `check`: what this kernel offers, each fact with its evidence. Only reads.

use serde::Serialize;

use crate::Root;
use crate::bpfcc::{self, Registration};
use crate::env::{self, Environment};
use crate::kernel::{self, KernelFacts};
use crate::qdisc::{self, InterfaceQdisc};

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
    /// Whether this kernel can run bbrkit's BPF congestion controls (bbr3).
    pub bpf: BpfSupport,
}

/// What a BPF congestion control (bbr3) needs, each requirement with its
/// evidence, and whether it is registered now.
#[derive(Debug, Clone, Serialize)]
pub struct BpfSupport {
    /// `bbrkit-bpf`'s probes (kernel BTF, struct_ops, pacing writes, links,
    /// the 4-argument `cong_control`, bpffs, lockdown, privileges).
    pub features: bbrkit_bpf::features::Features,
    /// `None` when bbr3 can be registered (and pinned) here, else the
    /// first missing requirement.
    pub missing: Option<String>,
    /// The registration of each BPF algorithm bbrkit ships.
    pub registrations: Vec<Registration>,
}

/// Probes the BPF requirements and registrations.
pub fn bpf_support() -> BpfSupport {
    let features = bpfcc::features();
    BpfSupport {
        missing: bpfcc::missing_requirement(&features),
        features,
        registrations: bpfcc::BPF_CCS
            .iter()
            .map(|c| bpfcc::registration(c))
            .collect(),
    }
}

/// Inspects the host (live kernel; files under `root`).
pub fn inspect(root: &Root) -> CheckReport {
    let (interfaces, interfaces_error) = match qdisc::list() {
        Ok(l) => (l, None),
        Err(e) => (Vec::new(), Some(bbrkit_diag::error_chain(&e))),
    };
    CheckReport {
        kernel: kernel::gather(root),
        interfaces,
        interfaces_error,
        environment: env::detect(root),
        bpf: bpf_support(),
    }
}
