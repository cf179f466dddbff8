//! `bpf.rs` of a build without BPF support (no cargo feature `bpf`: no
//! `bbrkit-bpf`, no libbpf): the same functions, each answering "not in
//! this build" with [`WITHOUT_BPF`], so `check`, `enable` (`--cc bbr3` and
//! `--policy` are refused), `verify`, `doctor`, `rollback`, `boot` and
//! `metrics` run and say it once.
//!
//! Probes nothing and changes nothing. What needs no libbpf is still read
//! as it is: whether a name is listed in `tcp_available_congestion_control`
//! and which of bbrkit's pins exist (a registration or a policy made by a
//! build with BPF support), so `verify` and `rollback` do not report one as
//! gone when it is not.

use std::path::{Path, PathBuf};

use bbrkit_diag::conns::{ModelNote, ModelSource, Models};
use bbrkit_diag::model::BbrState;
use bbrkit_policy::Compiled;
use bbrkit_policy::attached::PIN_ROOT;
use bbrkit_vocab::bpf_features::BPF_ALGORITHMS;
pub use bbrkit_vocab::bpf_features::{Feature, FeatureId, Features, WITHOUT_BPF};

use crate::HostError;
use crate::algorithm::{self, RegisterFailure, Registration};
use crate::live::{Around, PolicyPin};

/// One socket's model state: none in this build.
pub type Model = ();

/// The telemetry join of a build without BPF: no model for any socket, and
/// a note saying why when a socket runs one of bbrkit's BPF algorithms.
#[derive(Debug, Clone, Copy, Default)]
pub struct Telemetry;

impl ModelSource for Telemetry {
    type Model = Model;
    fn models(&self, socks: &[bbrkit_diag::Socket]) -> Models<Model> {
        let bpf = |c: &str| BPF_ALGORITHMS.contains(&c);
        match socks
            .iter()
            .find_map(|s| s.cc.as_deref().filter(|c| bpf(c)))
        {
            None => Models::default(),
            Some(cc) => {
                let note = format!("no {cc} model state: {WITHOUT_BPF}");
                Models::new([], Some(ModelNote::Unreadable(note)))
            }
        }
    }
}

/// None: this build carries no BPF object.
pub fn object_sha256() -> Vec<(&'static str, &'static str)> {
    Vec::new()
}

/// The congestion controls a build with BPF support would offer.
pub fn offered() -> Vec<String> {
    BPF_ALGORITHMS.iter().map(|a| a.to_string()).collect()
}

/// The telemetry join: knows no model.
pub fn telemetry() -> Telemetry {
    Telemetry
}

/// The attached policies: none can be attached in this build.
pub fn policies() -> bbrkit_diag::conns::NoRules {
    bbrkit_diag::conns::NoRules
}

/// A model's BBR state and bandwidth (there are none in this build).
pub fn model_state(_: &Model) -> (BbrState, u64) {
    (BbrState::Unknown, 0)
}

/// No probe: the kernel release and no feature.
pub fn features() -> Features {
    Features {
        kernel: std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .map(|s| s.trim().to_string())
            .unwrap_or_default(),
        features: Vec::new(),
    }
}

/// Always [`WITHOUT_BPF`]: this build cannot register anything.
pub fn missing_requirement(_: &Features) -> Option<String> {
    Some(WITHOUT_BPF.to_string())
}

/// `cc` as far as a build without libbpf can see: listed or not, bbrkit's
/// pin there or not; who holds it is unknown.
pub fn registration(cc: &str) -> Registration {
    let mut r = Registration::absent(cc);
    r.pin_exists = std::fs::symlink_metadata(&r.pin).is_ok();
    r.registered = bbrkit_diag::algorithms::available()
        .unwrap_or_default()
        .iter()
        .any(|a| a == cc);
    if r.registered {
        r.holder = format!("not known ({WITHOUT_BPF})");
    }
    r
}

/// Algorithms with a link pin of bbrkit's now.
pub fn pinned() -> Vec<String> {
    algorithm::BPF_ALGORITHMS
        .iter()
        .filter(|a| registration(a.name).pin_exists)
        .map(|a| a.name.to_string())
        .collect()
}

fn refused() -> RegisterFailure {
    RegisterFailure {
        reason: WITHOUT_BPF.to_string(),
        verifier_log: None,
    }
}

/// Refused: [`WITHOUT_BPF`].
pub fn register_pinned(_: &str) -> Result<Vec<PathBuf>, RegisterFailure> {
    Err(refused())
}

/// Refused: [`WITHOUT_BPF`].
pub fn adopt(_: &str) -> Result<PathBuf, RegisterFailure> {
    Err(refused())
}

/// Refused: [`WITHOUT_BPF`].
pub fn trial_load(_: &str) -> Result<(), RegisterFailure> {
    Err(refused())
}

/// Refused: [`WITHOUT_BPF`] (a build with BPF support removes the pins).
pub fn unregister(cc: &str) -> Result<bool, HostError> {
    let why = std::io::Error::new(std::io::ErrorKind::Unsupported, WITHOUT_BPF);
    Err(HostError::io(Registration::absent(cc).pin, why))
}

/// Unknown without libbpf: nobody named.
pub fn link_holders(_: &str) -> Vec<String> {
    Vec::new()
}

fn policy_refused() -> HostError {
    HostError::PolicyRefused {
        reason: WITHOUT_BPF.to_string(),
    }
}

/// Refused: a policy needs BPF support.
pub fn cgroup_id(_: &Path) -> Result<u64, HostError> {
    Err(policy_refused())
}

/// Every directory under [`PIN_ROOT`] (a policy a build with BPF support
/// attached), none read.
pub fn policy_pins() -> Vec<PolicyPin> {
    let Ok(rd) = std::fs::read_dir(PIN_ROOT) else {
        return Vec::new();
    };
    let mut dirs: Vec<PathBuf> = rd.flatten().map(|e| e.path()).collect();
    dirs.sort();
    dirs.into_iter()
        .map(|dir| PolicyPin {
            dir,
            live: Err(WITHOUT_BPF.to_string()),
        })
        .collect()
}

/// Not read: [`WITHOUT_BPF`].
pub fn sock_ops_around(_: &Path, _: &Path) -> Result<Around, String> {
    Err(WITHOUT_BPF.to_string())
}

/// None: nothing is read without BPF support (attaching is refused).
pub fn sock_ops_exclusive(_: &Path, _: &Path) -> Result<Option<PathBuf>, String> {
    Ok(None)
}

/// Refused: [`WITHOUT_BPF`].
pub fn attach_policy(_: &Compiled, _: &Path, _: &Path) -> Result<(), HostError> {
    Err(policy_refused())
}

/// Refused: [`WITHOUT_BPF`] (a build with BPF support detaches it).
pub fn detach_policy(dir: &Path) -> Result<bool, HostError> {
    let why = std::io::Error::new(std::io::ErrorKind::Unsupported, WITHOUT_BPF);
    Err(HostError::io(dir, why))
}
