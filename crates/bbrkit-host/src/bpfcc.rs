//! BPF congestion controls (bbr3) as the host commands see them: which
//! names bbrkit ships, whether a name is registered now and by whom
//! (bbrkit's pin or something else), registering one with a pinned link
//! and unregistering it (removing the pin), and whether this kernel can run
//! it at all. A thin adapter over `bbrkit-bpf`, which owns the BPF side;
//! this module only turns its answers into what `enable`, `verify`,
//! `rollback`, `doctor`, `check`, `boot` and `metrics` need.
//!
//! Registration is global to every network namespace, and pins live in
//! the live kernel's bpffs (`/sys/fs/bpf/bbrkit/<cc>/link`), never under
//! `--root`, exactly like `/proc/sys`.

use std::path::PathBuf;

pub use bbrkit_bpf::features::{FeatureId, Features};
use bbrkit_bpf::pin;
use bbrkit_bpf::status::{self, Holder};
use serde::Serialize;

use bbrkit_diag::model::BbrState;

use crate::HostError;

/// The BPF congestion controls bbrkit ships, each with a boot unit.
pub const BPF_CCS: [&str; 1] = ["bbr3"];

/// True for a name bbrkit registers itself (`bbr3`).
pub fn is_bpf_cc(cc: &str) -> bool {
    BPF_CCS.contains(&cc)
}

/// A BPF congestion control's registration, judged for the host commands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Registration {
    /// The algorithm (`bbr3`).
    pub cc: String,
    /// Listed in `tcp_available_congestion_control` now.
    pub registered: bool,
    /// Registered through bbrkit's pinned link.
    pub by_bbrkit: bool,
    /// Who holds it, in words (`bbrkit's pin /sys/fs/bpf/...`, `link 7 (map 12) held by a process`, ...).
    pub holder: String,
    /// bbrkit's link pin for it.
    pub pin: String,
    /// The pin exists (it may exist without holding the name: a stale pin).
    pub pin_exists: bool,
    /// struct_ops maps of that name no longer registered but still used by
    /// connections (kernel state TOBEFREE).
    pub lingering_maps: Vec<u32>,
}

/// One line naming a holder.
pub fn holder_text(h: &Holder) -> String {
    match h {
        Holder::BbrkitPin { path } => format!("bbrkit's pinned link {}", path.display()),
        Holder::Link { link_id, map_id } => {
            format!("struct_ops link {link_id} (map {map_id}) held by a process, not bbrkit's pin")
        }
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
    let pin = pin::link_path(cc);
    let by_bbrkit = matches!(st.holder, Some(Holder::BbrkitPin { .. }));
    Registration {
        cc: cc.to_string(),
        registered: st.registered,
        by_bbrkit,
        holder: match &st.holder {
            Some(h) => holder_text(h),
            None => "nobody (not registered)".to_string(),
        },
        pin: pin.display().to_string(),
        pin_exists: std::fs::symlink_metadata(&pin).is_ok(),
        lingering_maps: st.lingering,
    }
}

/// bbrkit's link pin of `cc`.
pub fn pin_path(cc: &str) -> PathBuf {
    pin::link_path(cc)
}

/// Removes bbrkit's pins of `cc`, which unregisters it once no process
/// holds the link. Returns whether a link pin existed. Connections still
/// using it keep it until they close.
pub fn unregister(cc: &str) -> Result<bool, HostError> {
    pin::unpin(cc).map_err(|e| HostError::io(pin::link_path(cc), e))
}

/// Why a BPF congestion control could not be registered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RegisterFailure {
    /// One line.
    pub reason: String,
    /// The verifier's log when the kernel refused a program.
    pub verifier_log: Option<String>,
}

impl std::fmt::Display for RegisterFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.reason)
    }
}

/// What this kernel and process offer a BPF congestion control, each
/// requirement with its evidence (`bbrkit-bpf`'s probes).
pub fn features() -> Features {
    Features::detect()
}

/// The requirement a registration needs and this host lacks, if any:
/// the kernel features, then a mounted bpffs (the pin).
pub fn missing_requirement(f: &Features) -> Option<String> {
    if let Err(why) = f.can_register() {
        return Some(why);
    }
    match f.get(FeatureId::Bpffs) {
        Some(b) if !b.present => Some(format!(
            "{} (the pin that keeps bbr3 registered lives there; systemd mounts it at boot)",
            b.detail
        )),
        _ => None,
    }
}

/// Short name of a requirement for the human `check` line.
pub fn feature_label(id: FeatureId) -> &'static str {
    match id {
        FeatureId::KernelBtf => "kernel BTF",
        FeatureId::StructOpsTcp => "struct_ops tcp_congestion_ops",
        FeatureId::PacingWrites => "pacing writes",
        FeatureId::StructOpsLink => "struct_ops links",
        FeatureId::CongControl4 => "4-argument cong_control",
        FeatureId::Bpffs => "bpffs",
        FeatureId::Lockdown => "lockdown",
        FeatureId::Privileges => "privileges",
    }
}

/// Loads `cc` (only that struct_ops map and the programs it uses) from the
/// object embedded in `bbrkit-bpf`.
fn load(cc: &str) -> Result<bbrkit_bpf::Loaded, bbrkit_bpf::BpfError> {
    bbrkit_bpf::bbr3::load(Some(&[cc]))
}

/// Loads `cc`'s object, registers it through a struct_ops link and pins the
/// link (and the telemetry map) under `/sys/fs/bpf/bbrkit/<cc>/`, so the
/// registration outlives this process until [`unregister`]. A process
/// killed before the pin leaves nothing registered (the link dies with it).
pub fn register_pinned(cc: &str) -> Result<Vec<PathBuf>, RegisterFailure> {
    let f = features();
    if let Some(why) = missing_requirement(&f) {
        return Err(RegisterFailure {
            reason: why,
            verifier_log: None,
        });
    }
    let fail = |e: bbrkit_bpf::BpfError| RegisterFailure {
        verifier_log: match &e {
            bbrkit_bpf::BpfError::Refused { log, .. } => Some(log.clone()),
            _ => None,
        },
        reason: error_chain(&e),
    };
    let loaded = load(cc).map_err(fail)?;
    let mut reg = bbrkit_bpf::Registration::register(loaded).map_err(fail)?;
    crate::crash_point("bpf-registered");
    let pins = reg.pin().map_err(fail)?;
    drop(reg); // the pins hold the registration now
    Ok(pins)
}

/// `e` and its causes on one line.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(c) = src {
        s.push_str(": ");
        s.push_str(&c.to_string());
        src = c.source();
    }
    s
}

/// One BPF socket's model as the telemetry map has it.
#[derive(Debug, Clone, PartialEq)]
pub struct SocketModel {
    /// Local address.
    pub local: std::net::SocketAddr,
    /// Remote address.
    pub remote: std::net::SocketAddr,
    /// The model state.
    pub state: bbrkit_diag::model::BbrState,
    /// The max-filtered bandwidth estimate, bytes per second.
    pub bw_bytes_per_second: u64,
}

/// The model state of every BPF socket of the calling thread's network
/// namespace from the telemetry maps (reading them needs CAP_SYS_ADMIN).
pub fn telemetry_here() -> Result<Vec<SocketModel>, String> {
    let own = std::fs::read_link("/proc/thread-self/ns/net")
        .ok()
        .and_then(|t| {
            let t = t.to_string_lossy().into_owned();
            t.strip_prefix("net:[")?
                .strip_suffix(']')?
                .parse::<u64>()
                .ok()
        });
    let all = bbrkit_bpf::telemetry::read_kernel().map_err(|e| error_chain(&e))?;
    Ok(all
        .into_iter()
        .filter(|m| own == Some(u64::from(m.socket.netns_ino)))
        .map(|m| SocketModel {
            local: m.socket.local,
            remote: m.socket.remote,
            state: model_state(&m.state),
            bw_bytes_per_second: m.state.bw_bits_per_second / 8,
        })
        .collect())
}

/// The metrics state of a telemetry entry: the same [`BbrState`] that a
/// kernel BBR's `tcp_bbr_info` gives ([`BbrState::of`]).
pub fn model_state(m: &bbrkit_bpf::telemetry::ModelState) -> BbrState {
    use bbrkit_bpf::telemetry::{Mode, Phase};
    match (m.mode, m.phase) {
        (Some(Mode::Startup), _) => BbrState::Startup,
        (Some(Mode::Drain), _) => BbrState::Drain,
        (Some(Mode::ProbeBw), Some(Phase::Up)) => BbrState::ProbeBwUp,
        (Some(Mode::ProbeBw), Some(Phase::Down)) => BbrState::ProbeBwDown,
        (Some(Mode::ProbeBw), Some(Phase::Cruise)) => BbrState::ProbeBwCruise,
        (Some(Mode::ProbeBw), Some(Phase::Refill)) => BbrState::ProbeBwRefill,
        (Some(Mode::ProbeRtt), _) => BbrState::ProbeRtt,
        _ => BbrState::Unknown,
    }
}

/// Algorithms with a link pin under `/sys/fs/bpf/bbrkit` now.
pub fn pinned() -> Vec<String> {
    pin::pinned()
}

/// Established sockets of this namespace running one of `ccs`, as
/// `local -> remote (cc)`: connections keep their algorithm until they
/// close, also after it is unregistered.
pub fn sockets_on(ccs: &[&str]) -> Vec<String> {
    crate::verify::established_sockets()
        .unwrap_or_default()
        .into_iter()
        .filter(|s| s.cc.as_deref().is_some_and(|c| ccs.contains(&c)))
        .map(|s| format!("{} -> {} ({})", s.local, s.remote, s.cc.unwrap_or_default()))
        .collect()
}

/// Loads `cc`'s object and frees it again, registering nothing: the
/// verifier's answer before `enable` changes anything.
pub fn trial_load(cc: &str) -> Result<(), RegisterFailure> {
    load(cc).map(drop).map_err(|e| RegisterFailure {
        verifier_log: match &e {
            bbrkit_bpf::BpfError::Refused { log, .. } => Some(log.clone()),
            _ => None,
        },
        reason: error_chain(&e),
    })
}

/// Whether writing `cc` as this namespace's default is safe: outside the
/// initial namespace the kernel answers EPERM for an algorithm missing from
/// `tcp_allowed_congestion_control`, and on that path
/// `tcp_set_default_congestion_control` (Linux 6.18 `net/ipv4/tcp_cong.c`)
/// keeps the reference it took: a BPF struct_ops map would then live until
/// reboot. So bbrkit never makes that write.
pub fn default_write_allowed(cc: &str, initial_netns: bool) -> Result<(), String> {
    let allowed = bbrkit_diag::algorithms::allowed().unwrap_or_default();
    if initial_netns || allowed.iter().any(|a| a == cc) {
        Ok(())
    } else {
        Err(format!(
            "{cc} is not in net.ipv4.tcp_allowed_congestion_control ({}) of this network namespace: not written (the kernel would answer EPERM and keep a reference to {cc} until reboot)",
            allowed.join(" ")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bbrkit_bpf::telemetry::{ModelState, RawState};

    /// The BPF bbr3 and a v3 kernel number the same state differently: the
    /// telemetry map's phase is `(cycle_idx + 3) & 3` (DOWN 0 .. UP 3,
    /// bbr3.bpf.c), the kernel's `bbr_phase` is `enum tcp_bbr_phase` (1
    /// STARTUP .. 7 PROBE_BW_REFILL). Both must decode to one state.
    #[test]
    fn bpf_telemetry_and_kernel_tcp_bbr_phase_agree_on_every_state() {
        let bpf = |mode: u8, phase: u8| {
            model_state(&ModelState::from(&RawState {
                mode,
                phase,
                ..RawState::default()
            }))
        };
        // google's enum bbr_pacing_gain_phase: UP 0, DOWN 1, CRUISE 2, REFILL 3;
        // bbr_get_phase reports them as BBR_PHASE_PROBE_BW_UP (4) + cycle_idx.
        for cycle_idx in 0u8..4 {
            let kernel = BbrState::from_tcp_bbr_phase(4 + cycle_idx);
            assert_eq!(bpf(2, (cycle_idx + 3) & 3), kernel, "cycle_idx {cycle_idx}");
            assert_ne!(kernel, BbrState::Unknown);
        }
        // STARTUP, DRAIN, PROBE_RTT: bbr_mode 0, 1, 3; tcp_bbr_phase 1, 2, 3.
        for (mode, phase) in [(0, 1), (1, 2), (3, 3)] {
            assert_eq!(bpf(mode, 0), BbrState::from_tcp_bbr_phase(phase));
        }
        assert_eq!(bpf(7, 0), BbrState::Unknown);
    }
}
