//! BPF congestion controls (bbrkit-bpf's bbr3, bbr2) registered for the
//! length of a lab run.
//!
//! Owns the decision the lab makes for each requested algorithm the kernel
//! does not offer: if bbrkit-bpf's embedded object has it, register it
//! through a link held by the returned [`RunCcs`], which lets go of it when
//! dropped — after a normal run, an error, or Ctrl-C (the signal thread
//! ends the run, then the caller drops it), and when the process dies
//! (SIGKILL included: the link is only a file descriptor). A name that is
//! already registered through a link (another lab's, bbrkit's pin, another
//! loader's) is joined: the run holds its own reference to that link
//! (`bbrkit_bpf::share`), so the registration lasts until the last user
//! lets go and another run's cleanup never pulls it from under this one.
//! A name registered without a link is used as it is; none is ever
//! unregistered by the lab. A build without the cargo feature `bpf`
//! replaces this file with `bpf_cc_none.rs`.

use crate::error::{LabError, Result};
use crate::tcpinfo;
use bbrkit_bpf::{bbr3, share};

pub use crate::report::BpfAlgorithm;

/// The registrations the lab made or joined; dropping this lets go of them
/// (a registration ends when nobody else holds it).
#[derive(Debug, Default)]
pub struct RunCcs {
    held: share::Held,
    /// The BPF algorithms among the requested ones.
    pub algorithms: Vec<BpfAlgorithm>,
}

/// Registers each of `wanted` that the kernel does not offer and the
/// embedded bbr3 object does, and joins the registration of each one the
/// object offers that is registered already. Names neither offers are left
/// for [`crate::plan::validate`] to report.
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
        held: share::Held::default(),
        algorithms: present
            .iter()
            .map(|n| BpfAlgorithm {
                name: n.to_string(),
                registered_by_lab: false,
            })
            .collect(),
    };
    let what = format!("register {} for the run", missing.join(", "));
    if !missing.is_empty()
        && let Err(reason) = bbrkit_bpf::features::detect().can_register()
    {
        return Err(LabError::Invalid(format!("cannot {what}: {reason}")));
    }
    let names: Vec<&str> = missing.iter().chain(&present).copied().collect();
    if names.is_empty() {
        return Ok(run);
    }
    run.held = share::hold(&names).map_err(|source| LabError::Bpf { what, source })?;
    let ours: Vec<&str> = run
        .held
        .registration
        .iter()
        .flat_map(|r| r.algorithms())
        .collect();
    for a in &mut run.algorithms {
        a.registered_by_lab = ours.contains(&a.name.as_str());
    }
    run.algorithms.extend(missing.iter().map(|n| BpfAlgorithm {
        name: n.to_string(),
        registered_by_lab: ours.contains(n),
    }));
    Ok(run)
}
