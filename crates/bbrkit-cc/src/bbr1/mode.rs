//! BBRv1 modes as seen from outside (`enum bbr_mode`) and the legal mode
//! changes, for tracing and for property tests of the state machine.

/// The public face of `enum bbr_mode`, for tracing and property tests: the
/// one definition in `bbrkit_vocab::bbr_state`. BBRv3 (google/bbr v3 keeps
/// the same four modes) uses this type too.
pub use bbrkit_vocab::bbr_state::Mode;

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
