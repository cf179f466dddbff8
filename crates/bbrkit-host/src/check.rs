//! `check`: what this kernel offers, each fact with its evidence. Only reads.

use serde::Serialize;

use crate::Root;
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
    }
}
