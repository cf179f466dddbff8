//! How a congestion control is provided on this host, asked once:
//! [`Provider`] — built into the kernel, a kernel module (loaded or
//! loadable), one of bbrkit's BPF algorithms (with its [`Registration`]),
//! or absent. `enable`, `verify`, `boot` and `doctor` ask
//! [`crate::Snapshot::provider`] and match on the answer; nothing else
//! decides whether a name is a BPF one.
//!
//! Also the list of BPF algorithms bbrkit ships ([`BPF_ALGORITHMS`], each
//! with its boot unit) and the host's words for who holds a registration.
//! Plain data: the BPF calls are in the `bpf` module, which uses these types.

use serde::Serialize;

/// A BPF congestion control bbrkit ships: registered from the object
/// embedded in `bbrkit-bpf`, kept across reboots by its boot unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BpfAlgorithm {
    /// The algorithm (`bbr3`), also its struct_ops map's name.
    pub name: &'static str,
    /// The shipped boot unit (`contrib/systemd/bbrkit-<name>.service`).
    pub unit: &'static str,
}

/// bbrkit's BPF algorithms: bbr3 (google/bbr v3) and bbr2 (google/bbr
/// v2alpha), both in the one embedded object. A new one is one more entry
/// here plus its unit file.
pub const BPF_ALGORITHMS: &[BpfAlgorithm] = &[
    BpfAlgorithm {
        name: "bbr3",
        unit: include_str!("../../../contrib/systemd/bbrkit-bbr3.service"),
    },
    BpfAlgorithm {
        name: "bbr2",
        unit: include_str!("../../../contrib/systemd/bbrkit-bbr2.service"),
    },
];

/// The BPF algorithm bbrkit ships under `name`, if any.
pub fn shipped_bpf(name: &str) -> Option<&'static BpfAlgorithm> {
    BPF_ALGORITHMS.iter().find(|a| a.name == name)
}

/// The names of [`BPF_ALGORITHMS`], space-separated.
pub fn bpf_names() -> String {
    BPF_ALGORITHMS
        .iter()
        .map(|a| a.name)
        .collect::<Vec<_>>()
        .join(" ")
}

/// Who holds a BPF algorithm's registration, as bbrkit acts on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Holding {
    /// Not registered.
    #[default]
    None,
    /// bbrkit's pin in bpffs.
    Pin,
    /// A link of bbrkit's own programs held by a process (a running lab):
    /// `enable` may pin it, a lab may join it.
    BbrkitLink {
        /// The link's id.
        link_id: u32,
    },
    /// Another loader's link or map, or the kernel's own algorithm: never
    /// taken over.
    Other,
}

/// A BPF algorithm's registration, judged for the host commands (also in
/// `check --json` as `bpf.registrations`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Registration {
    /// The algorithm (`bbr3`).
    pub cc: String,
    /// Listed in `tcp_available_congestion_control` now.
    pub registered: bool,
    /// Registered through bbrkit's pinned link.
    pub by_bbrkit: bool,
    /// Who holds it, in words (`bbrkit's pinned link /sys/fs/bpf/...`,
    /// `struct_ops link 7 (map 12) held by a process ...`).
    pub holder: String,
    /// bbrkit's link pin for it.
    pub pin: String,
    /// The pin exists (it may exist without holding the name: a stale pin).
    pub pin_exists: bool,
    /// struct_ops maps of that name no longer registered but still used by
    /// connections (kernel state TOBEFREE).
    pub lingering_maps: Vec<u32>,
    /// Who holds it, typed.
    #[serde(skip)]
    pub holding: Holding,
}

impl Registration {
    /// Not registered, no pin: what a host without it looks like.
    pub fn absent(cc: &str) -> Registration {
        Registration {
            cc: cc.to_string(),
            registered: false,
            by_bbrkit: false,
            holder: "nobody (not registered)".to_string(),
            pin: format!("/sys/fs/bpf/bbrkit/{cc}/link"),
            pin_exists: false,
            lingering_maps: Vec::new(),
            holding: Holding::None,
        }
    }
}

/// Why a BPF congestion control could not be loaded or registered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RegisterFailure {
    /// One line (the error and its causes).
    pub reason: String,
    /// The verifier's log when the kernel refused a program.
    pub verifier_log: Option<String>,
}

impl std::fmt::Display for RegisterFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.reason)
    }
}

/// How this host provides a congestion control.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provider<'a> {
    /// Registered by the kernel (built in, or a module already loaded
    /// where bbrkit cannot tell).
    BuiltIn,
    /// A kernel module, loaded or on disk (autoloaded when chosen).
    Module,
    /// One of bbrkit's BPF algorithms, registered or not.
    Bpf(&'a Registration),
    /// Neither the kernel nor bbrkit offers it.
    Absent,
}

impl Provider<'_> {
    /// The host offers it (possibly after registering or loading it).
    pub fn offered(self) -> bool {
        self != Provider::Absent
    }

    /// One of bbrkit's BPF algorithms.
    pub fn is_bpf(self) -> bool {
        matches!(self, Provider::Bpf(_))
    }

    /// In words, for messages (`built into this kernel`).
    pub fn words(self) -> &'static str {
        match self {
            Provider::BuiltIn => "built into this kernel",
            Provider::Module => "a kernel module",
            Provider::Bpf(_) => "one of bbrkit's BPF congestion controls",
            Provider::Absent => "not offered by this kernel",
        }
    }
}
