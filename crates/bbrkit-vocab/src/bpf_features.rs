//! What a BPF congestion control needs from a kernel and a process, as
//! data: one [`Feature`] per requirement with its evidence, and whether a
//! registration can work ([`Features::can_register`]). `bbrkit-bpf` probes
//! them (`bbrkit_bpf::features::detect`, with libbpf); the host commands
//! and the lab judge and show them, also in a build without BPF support
//! (cargo feature `bpf` of the `bbrkit` crate), which probes nothing and
//! says why with [`WITHOUT_BPF`].

/// The reason every BPF answer of a bbrkit built without its cargo feature
/// `bpf` (no libbpf, no BPF objects) gives.
pub const WITHOUT_BPF: &str = "this bbrkit was built without BPF support (cargo feature `bpf`)";

/// The congestion controls bbrkit's BPF object offers (its struct_ops
/// maps), for a build that does not carry the object: `bbrkit-bpf`'s tests
/// check them against the object.
pub const BPF_ALGORITHMS: &[&str] = &["bbr3", "bbr2"];

/// One thing the BPF side needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FeatureId {
    /// Kernel BTF at `/sys/kernel/btf/vmlinux`.
    KernelBtf,
    /// `tcp_congestion_ops` can be implemented as a BPF struct_ops.
    StructOpsTcp,
    /// A BPF CA may write `sk_pacing_rate` and `sk_pacing_status`.
    PacingWrites,
    /// struct_ops maps registered through links (`.struct_ops.link`);
    /// without them (Linux < 6.4) bbrkit registers by map update.
    StructOpsLink,
    /// `cong_control` in a form bbrkit carries an object for: 4 arguments
    /// `(sk, ack, flag, rs)` (Linux >= 6.10) or 2 `(sk, rs)` (6.0–6.9).
    CongControl,
    /// bpffs mounted at `/sys/fs/bpf` (only needed to pin).
    Bpffs,
    /// Kernel lockdown mode (informational).
    Lockdown,
    /// The process may load and register struct_ops.
    Privileges,
}

impl FeatureId {
    /// The first mainline kernel with the feature (`None`: not a kernel feature).
    pub fn since(self) -> Option<&'static str> {
        match self {
            FeatureId::KernelBtf => Some("5.4"),
            FeatureId::StructOpsTcp => Some("5.6"),
            FeatureId::PacingWrites => Some("6.0"),
            FeatureId::StructOpsLink => Some("6.4"),
            FeatureId::CongControl => None,
            FeatureId::Bpffs | FeatureId::Lockdown | FeatureId::Privileges => None,
        }
    }

    /// Short name for a human line (`check`).
    pub fn label(self) -> &'static str {
        match self {
            FeatureId::KernelBtf => "kernel BTF",
            FeatureId::StructOpsTcp => "struct_ops tcp_congestion_ops",
            FeatureId::PacingWrites => "pacing writes",
            FeatureId::StructOpsLink => "struct_ops links",
            FeatureId::CongControl => "cong_control with 2 or 4 arguments",
            FeatureId::Bpffs => "bpffs",
            FeatureId::Lockdown => "lockdown",
            FeatureId::Privileges => "privileges",
        }
    }

    /// Whether loading bbr3 is impossible without it (bpffs is only needed
    /// to pin; lockdown is reported, not required; without struct_ops
    /// links bbrkit registers by map update).
    pub fn required(self) -> bool {
        !matches!(
            self,
            FeatureId::Bpffs | FeatureId::Lockdown | FeatureId::StructOpsLink
        )
    }
}

/// The outcome of one probe.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Feature {
    /// What was probed.
    pub id: FeatureId,
    /// Whether it is there.
    pub present: bool,
    /// Evidence when present, the one-line reason when absent.
    pub detail: String,
}

/// Every probe, in the order of `bbrkit_bpf::features`' table.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Features {
    /// `/proc/sys/kernel/osrelease`.
    pub kernel: String,
    /// One entry per [`FeatureId`].
    pub features: Vec<Feature>,
}

impl Features {
    /// The entry for `id`.
    pub fn get(&self, id: FeatureId) -> Option<&Feature> {
        self.features.iter().find(|f| f.id == id)
    }

    /// Ok when every required feature is present, else the first missing
    /// one, whose `Display` is its reason.
    pub fn can_register(&self) -> Result<(), Missing> {
        match self.features.iter().find(|f| f.id.required() && !f.present) {
            None => Ok(()),
            Some(f) => Err(Missing {
                id: f.id,
                detail: f.detail.clone(),
            }),
        }
    }
}

/// A required feature this kernel or process lacks: a registration cannot work.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{detail}")]
pub struct Missing {
    /// Which feature.
    pub id: FeatureId,
    /// Why it is missing, with its evidence (the feature's `detail`).
    pub detail: String,
}
