//! The one module of `bbrkit-host` that calls `bbrkit-bpf` (libbpf): what
//! a BPF congestion control needs here, who holds a registration, and
//! registering, adopting, trial-loading and unregistering one; and the
//! per-connection policy's sock_ops attachments (attach, pin, read back,
//! detach). Used only by [`crate::LinuxHost`] (and the telemetry join
//! `bbrkit metrics` and `bbrkit conns` ask for), so a build without BPF
//! support (no cargo feature `bpf`) replaces this file alone: `bpf_none.rs`
//! has the same functions, each answering "not in this build".
//!
//! Registration is global to every network namespace, and pins live in the
//! live kernel's bpffs (`/sys/fs/bpf/bbrkit/<cc>/link`), never under
//! `--root`, exactly like `/proc/sys`.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

pub use bbrkit_bpf::features::{Feature, FeatureId, Features};
/// The telemetry join: a `bbrkit_diag::conns::ModelSource` of BPF sockets'
/// model state.
pub use bbrkit_bpf::sock_models::Telemetry;
use bbrkit_bpf::sockops;
use bbrkit_bpf::status::{self, Holder};
/// One socket's model state (`bpf_model` in `conns --json`).
pub use bbrkit_bpf::telemetry::ModelState as Model;
use bbrkit_bpf::{pin, share};
use bbrkit_diag::conns::{AttachedPolicy, Policies, RuleSource};
use bbrkit_diag::model::BbrState;
use bbrkit_policy::Compiled;

use crate::HostError;
use crate::algorithm::{Holding, RegisterFailure, Registration};
use crate::live::{Around, PolicyLive, PolicyPin};

/// One line naming a holder.
pub fn holder_text(h: &Holder) -> String {
    match h {
        Holder::BbrkitPin { path } if path.ends_with(pin::MAP) => format!(
            "bbrkit's pinned struct_ops map {} (registered by map update: no struct_ops links before Linux 6.4)",
            path.display()
        ),
        Holder::BbrkitPin { path } => format!("bbrkit's pinned link {}", path.display()),
        Holder::Link {
            link_id,
            map_id,
            bbrkit: false,
        } => {
            format!("struct_ops link {link_id} (map {map_id}) held by a process, not bbrkit's pin")
        }
        Holder::Link {
            link_id,
            map_id,
            bbrkit: true,
        } => format!(
            "struct_ops link {link_id} (map {map_id}) of bbrkit's programs held by a process (a running lab), not pinned"
        ),
        Holder::Map { map_id } => {
            format!("struct_ops map {map_id} registered without a link (by another loader)")
        }
        Holder::Kernel => "the kernel itself (built in or a module), not BPF".to_string(),
    }
}

/// The registration of `cc` now (reading maps and links needs
/// CAP_SYS_ADMIN; without it `holder` says so).
pub fn registration(cc: &str) -> Registration {
    let st = status::ca_status(cc);
    let pin = pin::path(cc);
    let holding = match &st.holder {
        None => Holding::None,
        Some(Holder::BbrkitPin { .. }) => Holding::Pin,
        Some(Holder::Link {
            link_id,
            bbrkit: true,
            ..
        }) => Holding::BbrkitLink { link_id: *link_id },
        Some(_) => Holding::Other,
    };
    Registration {
        cc: cc.to_string(),
        registered: st.registered,
        by_bbrkit: holding == Holding::Pin,
        holder: match &st.holder {
            Some(h) => holder_text(h),
            None => "nobody (not registered)".to_string(),
        },
        pin: pin.display().to_string(),
        pin_exists: std::fs::symlink_metadata(&pin).is_ok(),
        lingering_maps: st.lingering,
        holding,
    }
}

/// Algorithms with a link pin under `/sys/fs/bpf/bbrkit` now.
pub fn pinned() -> Vec<String> {
    pin::pinned()
}

/// bbrkit's pin of `cc`: its link (its struct_ops map on Linux < 6.4,
/// where it exists).
pub fn pin_path(cc: &str) -> PathBuf {
    pin::path(cc)
}

/// The file names and SHA-256s (lowercase hex) of the bbr3 objects this
/// build carries: the 4-argument `bbr3.bpf.o` (Linux >= 6.10) and the
/// 2-argument `bbr3-cc2.bpf.o` (6.0-6.9), in that order.
pub fn object_sha256() -> Vec<(&'static str, &'static str)> {
    use bbrkit_bpf::bbr3::Variant;
    [Variant::Cc4, Variant::Cc2]
        .into_iter()
        .map(|v| (v.file(), v.sha256()))
        .collect()
}

/// The congestion controls bbrkit's BPF object offers (`bbr3`, `bbr2`).
pub fn offered() -> Vec<String> {
    bbrkit_bpf::bbr3::algorithms().unwrap_or_default()
}

/// The one telemetry join of BPF sockets with their model state (opened
/// now: the storage maps need root, without which it says why).
pub fn telemetry() -> Telemetry {
    Telemetry::open()
}

/// The attached policies, for `conns`' rule of each socket.
pub fn policies() -> PolicyRules {
    PolicyRules
}

/// `conns`' [`RuleSource`]: the policies pinned under
/// [`sockops::PIN_ROOT`] (their maps read back) and the cgroup directories
/// of the sockets' and the policies' cgroup ids (one walk of the cgroup2
/// mount). Read when asked; a pin it cannot read is named in the note.
#[derive(Debug, Clone, Copy, Default)]
pub struct PolicyRules;

impl RuleSource for PolicyRules {
    fn policies(&self, socks: &[bbrkit_diag::Socket]) -> Policies {
        let mut out = Policies::default();
        if let Err(e) = std::fs::read_dir(sockops::PIN_ROOT)
            && e.kind() != std::io::ErrorKind::NotFound
        {
            out.note = Some(format!(
                "the attached policies under {} are unreadable ({e}): run as root",
                sockops::PIN_ROOT
            ));
            return out;
        }
        let mut unreadable = Vec::new();
        for pin in policy_pins() {
            let maps = pin.live.and_then(|l| l.maps.map(|m| (l.cgroup_id, m)));
            match maps {
                Ok((id, _)) if out.attached.iter().any(|p| p.cgroup_id == id) => {}
                Ok((cgroup_id, compiled)) => out.attached.push(AttachedPolicy {
                    cgroup: None,
                    cgroup_id,
                    compiled,
                }),
                Err(e) => unreadable.push(format!("{}: {e}", pin.dir.display())),
            }
        }
        if !unreadable.is_empty() {
            out.note = Some(format!("policy pins unreadable: {}", unreadable.join("; ")));
        }
        if out.attached.is_empty() {
            return out;
        }
        let ids: HashSet<u64> = socks
            .iter()
            .filter_map(|s| s.cgroup_id)
            .chain(out.attached.iter().map(|p| p.cgroup_id))
            .collect();
        if let Ok(Some(root)) = sockops::cgroup::cgroup2_mount() {
            out.cgroups = sockops::cgroup::paths_of(&root, &ids);
        }
        for p in &mut out.attached {
            p.cgroup = out.cgroups.get(&p.cgroup_id).cloned();
        }
        out
    }
}

/// A model's BBR state and bandwidth in bytes per second, for `metrics`.
pub fn model_state(m: &Model) -> (BbrState, u64) {
    (
        bbrkit_bpf::sock_models::bbr_state(m),
        m.bw_bits_per_second / 8,
    )
}

/// What this kernel and process offer a BPF congestion control.
pub fn features() -> Features {
    bbrkit_bpf::features::detect()
}

/// The requirement a registration needs and this host lacks, if any:
/// the kernel features, then a mounted bpffs (the pin).
pub fn missing_requirement(f: &Features) -> Option<String> {
    if let Err(why) = f.can_register() {
        return Some(why.to_string());
    }
    match f.get(FeatureId::Bpffs) {
        Some(b) if !b.present => Some(format!(
            "{} (the pin that keeps a BPF algorithm registered lives there; systemd mounts it at boot)",
            b.detail
        )),
        _ => None,
    }
}

fn failure(e: &bbrkit_bpf::BpfError) -> RegisterFailure {
    RegisterFailure {
        verifier_log: match e {
            bbrkit_bpf::BpfError::Refused { log, .. } => Some(log.clone()),
            _ => None,
        },
        reason: bbrkit_diag::error_chain(e),
    }
}

/// Loads `cc`'s object (the build kernel BTF asks for), registers it
/// through a struct_ops link and pins the link under
/// `/sys/fs/bpf/bbrkit/<cc>/`, so the registration outlives this process
/// until [`unregister`]. A process killed before the pin leaves nothing
/// registered (the link dies with it). Linux < 6.4 (no links): registered
/// by map update and the map pinned instead; a kill between the two leaves
/// it registered without a pin (`bbrkit_bpf::register`).
pub fn register_pinned(cc: &str) -> Result<Vec<PathBuf>, RegisterFailure> {
    if let Some(why) = missing_requirement(&features()) {
        return Err(RegisterFailure {
            reason: why,
            verifier_log: None,
        });
    }
    let loaded = bbrkit_bpf::bbr3::load(Some(&[cc])).map_err(|e| failure(&e))?;
    let mut reg = bbrkit_bpf::Registration::register(loaded).map_err(|e| failure(&e))?;
    crate::crash_point("bpf-registered");
    let pins = reg.pin().map_err(|e| failure(&e))?;
    drop(reg); // the pins hold the registration now
    Ok(pins)
}

/// Pins the link of a running bbrkit lab that registers `cc`, so the
/// registration outlives the lab (`bbrkit_bpf::share::adopt`).
pub fn adopt(cc: &str) -> Result<PathBuf, RegisterFailure> {
    share::adopt(cc).map_err(|e| failure(&e))
}

/// Loads `cc`'s object and frees it again, registering nothing: the
/// verifier's answer before `enable` changes anything.
pub fn trial_load(cc: &str) -> Result<(), RegisterFailure> {
    bbrkit_bpf::bbr3::load(Some(&[cc]))
        .map(drop)
        .map_err(|e| failure(&e))
}

/// Removes bbrkit's pins of `cc`, which unregisters it once no process
/// holds the link. Returns whether a link pin existed. Connections still
/// using it keep it until they close.
pub fn unregister(cc: &str) -> Result<bool, HostError> {
    pin::unpin(cc).map_err(|e| HostError::io(pin::path(cc), e))
}

/// Processes holding a link that registers `cc` now, as `pid N (comm)`.
pub fn link_holders(cc: &str) -> Vec<String> {
    match status::ca_status(cc).holder {
        Some(Holder::Link { link_id, .. }) => status::link_holders(link_id)
            .into_iter()
            .map(|(pid, comm)| format!("pid {pid} ({comm})"))
            .collect(),
        _ => Vec::new(),
    }
}

/// The id of cgroup v2 directory `path`.
pub fn cgroup_id(path: &Path) -> Result<u64, HostError> {
    sockops::cgroup::cgroup_id(path).map_err(|source| HostError::Bpf {
        what: format!("--cgroup {}", path.display()),
        source,
    })
}

/// Every directory under [`sockops::PIN_ROOT`] and what its link pin holds.
pub fn policy_pins() -> Vec<PolicyPin> {
    let Ok(rd) = std::fs::read_dir(sockops::PIN_ROOT) else {
        return Vec::new();
    };
    let mut dirs: Vec<PathBuf> = rd.flatten().map(|e| e.path()).collect();
    dirs.sort();
    dirs.into_iter()
        .map(|dir| {
            let live = policy_live(&dir).map_err(|e| bbrkit_diag::error_chain(&e));
            PolicyPin { dir, live }
        })
        .collect()
}

fn policy_live(dir: &Path) -> Result<PolicyLive, bbrkit_bpf::BpfError> {
    let a = sockops::Attachment::open(dir)?;
    let d = a.describe()?;
    let text = |e: bbrkit_bpf::BpfError| bbrkit_diag::error_chain(&e);
    Ok(PolicyLive {
        link_id: d.link_id,
        prog_id: d.prog_id,
        cgroup_id: d.cgroup_id,
        maps: a.maps().read_back().map_err(text),
        counters: a.maps().counters().map_err(text),
        layout: d.layout,
    })
}

/// The sock_ops programs attached to cgroup `path`, its ancestors up to
/// the cgroup2 mount `mount`, and its descendants.
pub fn sock_ops_around(path: &Path, mount: &Path) -> Result<Around, String> {
    sockops::cgroup::sock_ops_around(path, mount).map_err(|e| bbrkit_diag::error_chain(&e))
}

/// The cgroup whose exclusive sock_ops attachment refuses a link on
/// `path` (`path` or an ancestor up to the cgroup2 mount `mount`).
pub fn sock_ops_exclusive(path: &Path, mount: &Path) -> Result<Option<PathBuf>, String> {
    sockops::cgroup::sock_ops_exclusive(path, mount).map_err(|e| bbrkit_diag::error_chain(&e))
}

/// Attaches `compiled` to `cgroup` and pins it in `dir`: the link pin is
/// the commit point (a kill before it leaves nothing attached).
pub fn attach_policy(compiled: &Compiled, cgroup: &Path, dir: &Path) -> Result<(), HostError> {
    let bpf = |what: String| move |source| HostError::Bpf { what, source };
    let mut a = sockops::Attachment::attach(compiled, cgroup)
        .map_err(bpf(format!("attach the policy to {}", cgroup.display())))?;
    a.pin(dir)
        .map_err(bpf(format!("pin the policy at {}", dir.display())))
}

/// Detaches the policy pinned in `dir` and removes its pins, then the
/// directories above it that bbrkit made when they are empty.
pub fn detach_policy(dir: &Path) -> Result<bool, HostError> {
    let had = sockops::detach(dir).map_err(|source| HostError::Bpf {
        what: format!("detach the policy at {}", dir.display()),
        source,
    })?;
    for d in dir.ancestors().skip(1).take(2) {
        let _ = std::fs::remove_dir(d); // only when empty
    }
    Ok(had)
}
