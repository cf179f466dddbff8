//! `bpf_cc.rs` of a build without BPF support (no cargo feature `bpf`: no
//! `bbrkit-bpf`, no libbpf). A requested BPF algorithm (bbr3, bbr2) that
//! the kernel does not offer is refused before anything is built
//! ([`LabError::NotInBuild`]); one already registered (by a build with BPF
//! support, or another loader) is used as it is, without holding its link.

use bbrkit_vocab::bpf_features::BPF_ALGORITHMS;

use crate::error::{LabError, Result};
pub use crate::report::BpfAlgorithm;
use crate::tcpinfo;

/// The BPF algorithms among the requested ones (none is registered here).
#[derive(Debug, Default)]
pub struct RunCcs {
    /// The BPF algorithms among the requested ones.
    pub algorithms: Vec<BpfAlgorithm>,
}

/// Refuses each of `wanted` that is a BPF algorithm the kernel does not
/// offer; lists those it offers already.
pub fn register_missing(wanted: &[String]) -> Result<RunCcs> {
    let available = tcpinfo::available_algorithms()
        .map_err(|e| LabError::io("read tcp_available_congestion_control", e))?;
    let mut run = RunCcs::default();
    for w in wanted
        .iter()
        .filter(|w| BPF_ALGORITHMS.contains(&w.as_str()))
    {
        if !available.contains(w) {
            return Err(LabError::NotInBuild {
                wanted: w.clone(),
                available: available.join(" "),
            });
        }
        run.algorithms.push(BpfAlgorithm {
            name: w.clone(),
            registered_by_lab: false,
        });
    }
    Ok(run)
}
