//! The state of a BBR model, as the metrics label it, read from what the
//! kernel reports (`metrics::ModelStats` counts sockets per state).
//!
//! ```text
//! STARTUP -> DRAIN -> PROBE_BW (DOWN -> CRUISE -> REFILL -> UP -> DOWN ...) <-> PROBE_RTT
//! ```
//!
//! The kernel's v3 layout names mode and phase; the mainline v1 layout
//! carries only the two gains, from which the state follows exactly
//! (Linux `net/ipv4/tcp_bbr.c`, `bbr_update_gains`). The BPF bbr3's state
//! comes from its telemetry; `bbrkit_bpf::sock_models` converts it (this
//! crate does not know BPF).

use crate::BbrInfo;

/// google/bbr v3 `enum tcp_bbr_phase`, by value: `BBR_PHASE_INVALID` (0),
/// `_STARTUP`, `_DRAIN`, `_PROBE_RTT`, `_PROBE_BW_UP`, `_PROBE_BW_DOWN`,
/// `_PROBE_BW_CRUISE`, `_PROBE_BW_REFILL` (7).
pub const TCP_BBR_PHASE: [BbrState; 8] = [
    BbrState::Unknown,
    BbrState::Startup,
    BbrState::Drain,
    BbrState::ProbeRtt,
    BbrState::ProbeBwUp,
    BbrState::ProbeBwDown,
    BbrState::ProbeBwCruise,
    BbrState::ProbeBwRefill,
];

/// A state of the BBR model, as a label value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum BbrState {
    /// STARTUP.
    Startup,
    /// DRAIN.
    Drain,
    /// PROBE_BW, probing up (v1: pacing gain 5/4).
    ProbeBwUp,
    /// PROBE_BW, draining the probe's queue (v1: pacing gain 3/4).
    ProbeBwDown,
    /// PROBE_BW, cruising (v1: pacing gain 1).
    ProbeBwCruise,
    /// PROBE_BW, refilling the pipe before probing (v3 only).
    ProbeBwRefill,
    /// PROBE_RTT.
    ProbeRtt,
    /// Not known (no model yet, e.g. a socket that has sent nothing).
    Unknown,
}

impl BbrState {
    /// The label value.
    pub fn name(self) -> &'static str {
        match self {
            BbrState::Startup => "startup",
            BbrState::Drain => "drain",
            BbrState::ProbeBwUp => "probe_bw_up",
            BbrState::ProbeBwDown => "probe_bw_down",
            BbrState::ProbeBwCruise => "probe_bw_cruise",
            BbrState::ProbeBwRefill => "probe_bw_refill",
            BbrState::ProbeRtt => "probe_rtt",
            BbrState::Unknown => "unknown",
        }
    }

    /// From the v3 `tcp_bbr_info.bbr_phase`. google/bbr v3 fills it with
    /// `bbr_get_phase`, in the UAPI's `enum tcp_bbr_phase`
    /// (`include/uapi/linux/inet_diag.h`), one flat numbering of mode and
    /// ProbeBW phase: [`TCP_BBR_PHASE`]. It is *not* the ProbeBW cycle index
    /// (`enum bbr_pacing_gain_phase`, 0 UP .. 3 REFILL). v2alpha's
    /// `enum tcp_bbr2_phase` numbers the same way. `bbr_mode` adds nothing
    /// this does not say.
    pub fn from_tcp_bbr_phase(phase: u8) -> BbrState {
        TCP_BBR_PHASE
            .get(usize::from(phase))
            .copied()
            .unwrap_or(BbrState::Unknown)
    }

    /// From mainline BBRv1's gains (units of 1/256), by `bbr_update_gains`:
    /// STARTUP paces at `bbr_high_gain` (2885/1000 * 256 + 1 = 739), DRAIN
    /// at `bbr_drain_gain` (1000 * 256 / 2885 = 88); PROBE_BW has cwnd gain
    /// `bbr_cwnd_gain` (2 * 256 = 512) and cycles pacing gains 5/4 (320),
    /// 3/4 (192), 1 (256); PROBE_RTT has both gains 1 (256).
    pub fn from_v1(pacing_x256: u32, cwnd_x256: u32) -> BbrState {
        match (pacing_x256, cwnd_x256) {
            (739, _) => BbrState::Startup,
            (88, _) => BbrState::Drain,
            (320, 512) => BbrState::ProbeBwUp,
            (192, 512) => BbrState::ProbeBwDown,
            (256, 512) => BbrState::ProbeBwCruise,
            (256, 256) => BbrState::ProbeRtt,
            _ => BbrState::Unknown,
        }
    }

    /// The vocabulary's state (`bbrkit_vocab::bbr_state`, the one
    /// definition) as a label value; `None` is [`BbrState::Unknown`].
    pub fn from_state(state: Option<bbrkit_vocab::bbr_state::State>) -> BbrState {
        state.map_or(BbrState::Unknown, |s| {
            BbrState::from_tcp_bbr_phase(s.tcp_bbr_phase())
        })
    }

    /// The state a kernel `tcp_bbr_info` describes.
    pub fn of(info: &BbrInfo) -> BbrState {
        match &info.v3 {
            Some(m) => BbrState::from_tcp_bbr_phase(m.phase),
            None => BbrState::from_v1(info.pacing_gain_x256, info.cwnd_gain_x256),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One BBR state definition: every vocabulary state maps to the label
    /// of the same name, through the kernel's `tcp_bbr_phase` numbering.
    #[test]
    fn label_states_are_the_vocabulary_states() {
        use bbrkit_vocab::bbr_state::State;
        for s in State::ALL {
            let b = BbrState::from_state(Some(s));
            assert_eq!(b.name(), s.name(), "{s:?}");
            assert_eq!(TCP_BBR_PHASE[usize::from(s.tcp_bbr_phase())], b);
        }
        assert_eq!(BbrState::from_state(None), BbrState::Unknown);
    }

    #[test]
    fn states_from_both_layouts() {
        assert_eq!(BbrState::from_v1(739, 739), BbrState::Startup);
        assert_eq!(BbrState::from_v1(88, 739), BbrState::Drain);
        assert_eq!(BbrState::from_v1(320, 512), BbrState::ProbeBwUp);
        assert_eq!(BbrState::from_v1(192, 512), BbrState::ProbeBwDown);
        assert_eq!(BbrState::from_v1(256, 512), BbrState::ProbeBwCruise);
        assert_eq!(BbrState::from_v1(256, 256), BbrState::ProbeRtt);
        assert_eq!(BbrState::from_v1(0, 0), BbrState::Unknown);
    }

    /// A v3 `tcp_bbr_info` as google's `bbr_get_info` writes it: `bbr_mode`
    /// at 36, `bbr_phase` (`enum tcp_bbr_phase`) at 37, version 3 at 39.
    fn v3_info(mode: u8, phase: u8) -> BbrInfo {
        let mut b = vec![0u8; 52];
        b[12..16].copy_from_slice(&256u32.to_ne_bytes());
        b[16..20].copy_from_slice(&512u32.to_ne_bytes());
        b[36] = mode;
        b[37] = phase;
        b[39] = 3;
        BbrInfo::parse(&b).unwrap()
    }

    /// Every (bbr_mode, bbr_phase) pair a v3 kernel reports, from
    /// `bbr_get_phase`: the ProbeBW phases are 4..7, not the cycle index.
    #[test]
    fn v3_state_follows_the_kernels_tcp_bbr_phase() {
        let kernel = [
            (0, 1, BbrState::Startup),
            (1, 2, BbrState::Drain),
            (3, 3, BbrState::ProbeRtt),
            (2, 4, BbrState::ProbeBwUp),
            (2, 5, BbrState::ProbeBwDown),
            (2, 6, BbrState::ProbeBwCruise),
            (2, 7, BbrState::ProbeBwRefill),
            (2, 0, BbrState::Unknown),
            (2, 8, BbrState::Unknown),
        ];
        for (mode, phase, want) in kernel {
            assert_eq!(BbrState::of(&v3_info(mode, phase)), want, "{mode}/{phase}");
        }
    }
}
