//! BBRv1 modes as seen from outside (`enum bbr_mode`) and the legal mode
//! changes, for tracing and for property tests of the state machine.

/// The public face of `enum bbr_mode`, for tracing and property tests. BBRv3
/// (google/bbr v3 keeps the same four modes) uses this type too.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mode {
    /// `BBR_STARTUP`: ramp up the sending rate rapidly to fill the pipe.
    Startup,
    /// `BBR_DRAIN`: drain any queue created during STARTUP.
    Drain,
    /// `BBR_PROBE_BW`: discover and share bandwidth, pacing around the estimate.
    ProbeBw,
    /// `BBR_PROBE_RTT`: cut in-flight data to the minimum to probe min_rtt.
    ProbeRtt,
}

impl Mode {
    /// The name reported in [`crate::Status::state`].
    pub const fn name(self) -> &'static str {
        match self {
            Mode::Startup => "startup",
            Mode::Drain => "drain",
            Mode::ProbeBw => "probe_bw",
            Mode::ProbeRtt => "probe_rtt",
        }
    }
}

/// Every mode change BBRv1 can make in one step (`from`, `to`).
/// `ProbeBw → ProbeBw` is a restart of gain cycling with a fresh random phase
/// (after the `lt_bw` policer model expires); phase advances inside PROBE_BW
/// are not mode changes. An observer that looks once per call may also see
/// `Startup → ProbeBw`: `bbr_check_drain` can pass through DRAIN within one
/// ACK (see [`OBSERVABLE_TRANSITIONS`]).
pub const LEGAL_TRANSITIONS: [(Mode, Mode); 8] = [
    (Mode::Startup, Mode::Drain),
    (Mode::Startup, Mode::ProbeRtt),
    (Mode::Drain, Mode::ProbeBw),
    (Mode::Drain, Mode::ProbeRtt),
    (Mode::ProbeBw, Mode::ProbeBw),
    (Mode::ProbeBw, Mode::ProbeRtt),
    (Mode::ProbeRtt, Mode::ProbeBw),
    (Mode::ProbeRtt, Mode::Startup),
];

/// The mode change an observer that looks once per call sees when
/// `bbr_check_drain` passes through DRAIN within one ACK.
const THROUGH_DRAIN: (Mode, Mode) = (Mode::Startup, Mode::ProbeBw);

/// The mode changes visible between two consecutive controller calls:
/// [`LEGAL_TRANSITIONS`] plus `Startup → ProbeBw` (through DRAIN in one ACK).
pub const OBSERVABLE_TRANSITIONS: [(Mode, Mode); LEGAL_TRANSITIONS.len() + 1] = {
    let mut all = [THROUGH_DRAIN; LEGAL_TRANSITIONS.len() + 1];
    let mut i = 0;
    while i < LEGAL_TRANSITIONS.len() {
        all[i] = LEGAL_TRANSITIONS[i];
        i += 1;
    }
    all
};
