//! BPF congestion controls (bbrkit-bpf's bbr3, bbr2) registered for the
//! length of a lab run.
//!
//! Owns the decision the lab makes for each requested algorithm the kernel
//! does not offer: if bbrkit-bpf's embedded object has it, register it
//! through a link held by the returned [`RunCcs`], which unregisters when
//! dropped — after a normal run, an error, or Ctrl-C (the signal thread
//! ends the run, then the caller drops it), and when the process dies
//! (SIGKILL included: the link is only a file descriptor). A name that is
//! already registered (by the operator, a pin, or another loader) is used
//! as it is and never touched.

use bbrkit_bpf::features::Features;
use bbrkit_bpf::{Registration, bbr3};
use serde::Serialize;

use crate::error::{LabError, Result};
use crate::tcpinfo;

/// Where each BPF algorithm of the run came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BpfAlgorithm {
    /// Algorithm name.
    pub name: String,
    /// `true`: the lab registered it for the run; `false`: it was already
    /// registered (left as it was).
    pub registered_by_lab: bool,
}

/// The registrations the lab made; dropping this unregisters them.
#[derive(Debug, Default)]
pub struct RunCcs {
    registration: Option<Registration>,
    /// The BPF algorithms among the requested ones.
    pub algorithms: Vec<BpfAlgorithm>,
}

/// Registers each of `wanted` that the kernel does not offer and the
/// embedded bbr3 object does. Names neither offers are left for
/// [`crate::plan::validate`] to report.
pub fn register_missing(wanted: &[String]) -> Result<RunCcs> {
    let available = tcpinfo::available_algorithms()
        .map_err(|e| LabError::io("read tcp_available_congestion_control", e))?;
    let offered = bbr3::algorithms().map_err(|e| LabError::Bpf {
        what: "open the embedded bbr3 object".into(),
        source: e,
    })?;
    let (missing, present): (Vec<&str>, Vec<&str>) = wanted
        .iter()
        .map(String::as_str)
        .filter(|w| offered.iter().any(|o| o == w))
        .partition(|w| !available.iter().any(|a| a == w));
    let mut run = RunCcs {
        registration: None,
        algorithms: present
            .iter()
            .map(|n| BpfAlgorithm {
                name: n.to_string(),
                registered_by_lab: false,
            })
            .collect(),
    };
    if missing.is_empty() {
        return Ok(run);
    }
    let what = format!("register {} for the run", missing.join(", "));
    if let Err(reason) = Features::detect().can_register() {
        return Err(LabError::Invalid(format!("cannot {what}: {reason}")));
    }
    let registration =
        bbr3::register(Some(&missing)).map_err(|source| LabError::Bpf { what, source })?;
    run.algorithms.extend(missing.iter().map(|n| BpfAlgorithm {
        name: n.to_string(),
        registered_by_lab: true,
    }));
    run.registration = Some(registration);
    Ok(run)
}
