//! The small, stable set of host facts a metrics exporter publishes
//! (`bbrkit_info`, `bbrkit_interface_root_qdisc_info`). Only reads.

use serde::Serialize;

use crate::{Root, kernel, qdisc};

/// One interface's root qdisc, flattened for a label set.
#[derive(Debug, Clone, Serialize)]
pub struct InterfaceFact {
    /// Interface name.
    pub dev: String,
    /// Root qdisc kind.
    pub kind: String,
    /// Leaf kind under mq (else equal to `kind`).
    pub effective: String,
}

/// Host facts for `bbrkit metrics`.
#[derive(Debug, Clone, Serialize)]
pub struct HostFacts {
    /// Kernel release.
    pub kernel: String,
    /// Default congestion control of this network namespace.
    pub default_cc: Option<String>,
    /// `net.core.default_qdisc` (None outside the initial namespace).
    pub default_qdisc: Option<String>,
    /// BBR version (`unknown` unless `/sys/module/tcp_bbr/version` exists).
    pub bbr_version: String,
    /// BBR present (built in or module).
    pub bbr_present: bool,
    /// Root qdisc per interface.
    pub interfaces: Vec<InterfaceFact>,
}

/// Gathers the facts; interfaces are empty when rtnetlink fails. Takes no
/// socket census (`bbr_version` comes from `/sys/module/tcp_bbr/version`
/// only): a caller that walks the sockets reads the version from them.
pub fn gather(root: &Root) -> HostFacts {
    let k = kernel::gather_without_sockets(root);
    HostFacts {
        kernel: k.release,
        default_cc: k.current_cc,
        default_qdisc: k.default_qdisc,
        bbr_version: k.bbr_version,
        bbr_present: k.bbr.provision.present(),
        interfaces: qdisc::list()
            .unwrap_or_default()
            .into_iter()
            .map(|i| InterfaceFact {
                effective: i.effective().to_string(),
                dev: i.name,
                kind: i.root,
            })
            .collect(),
    }
}
