//! The observable BBRv3 state (Linux `bbr_mode` + ProbeBW `cycle_idx`, as
//! `tcp_bbr_info.bbr_phase` reports it; the type is bbrkit-vocab's) and its
//! legal transitions.
//!
//! Owns the transition table that the controller debug-asserts and that
//! property tests check, and `Bbr3::transition_to`, the only place mode and
//! ProbeBW phase change. Must never decide *when* to transition.

use super::params::phase;
use super::{Bbr3, Mode};

/// BBR state as reported by `tcp_bbr_info` (`enum tcp_bbr_phase`): the
/// one definition in `bbrkit_vocab::bbr_state` (numbers, names, spellings).
pub use bbrkit_vocab::bbr_state::State;

/// Every legal single step (from, to), as the reference code takes them:
///
/// | from | to | when (Linux function) |
/// |---|---|---|
/// | Startup | Drain | full_bw_reached by plateau, loss or ECN (`bbr_check_drain`) |
/// | Drain | ProbeBwDown | inflight at EDT ≤ BDP (`bbr_check_drain`) |
/// | ProbeBwDown | ProbeBwCruise | inflight ≤ min(headroom, BDP) (`bbr_check_time_to_cruise`); also right after leaving ProbeRtt |
/// | ProbeBwDown, ProbeBwCruise | ProbeBwRefill | probe wait / Reno rounds / ECN reprobe (`bbr_check_time_to_probe_bw`), or re-probe after a risky probe (`bbr_adapt_upper_bounds`) |
/// | ProbeBwRefill | ProbeBwUp | one round (`bbr_update_cycle_phase`) |
/// | ProbeBwUp | ProbeBwDown | loss/ECN too high, plateau, or inflight ≥ inflight_hi after a too-high probe |
/// | any but ProbeRtt | ProbeRtt | probe_rtt_min expired, not restarting from idle (`bbr_update_min_rtt`) |
/// | ProbeRtt | Startup, ProbeBwDown | done, by full_bw_reached (`bbr_exit_probe_rtt`) |
pub const LEGAL_STEPS: [(State, State); 15] = [
    (State::Startup, State::Drain),
    (State::Drain, State::ProbeBwDown),
    (State::ProbeBwDown, State::ProbeBwCruise),
    (State::ProbeBwDown, State::ProbeBwRefill),
    (State::ProbeBwCruise, State::ProbeBwRefill),
    (State::ProbeBwRefill, State::ProbeBwUp),
    (State::ProbeBwUp, State::ProbeBwDown),
    (State::Startup, State::ProbeRtt),
    (State::Drain, State::ProbeRtt),
    (State::ProbeBwDown, State::ProbeRtt),
    (State::ProbeBwCruise, State::ProbeRtt),
    (State::ProbeBwRefill, State::ProbeRtt),
    (State::ProbeBwUp, State::ProbeRtt),
    (State::ProbeRtt, State::Startup),
    (State::ProbeRtt, State::ProbeBwDown),
];

/// The BBRv2/v3 transition table on [`State`] ([`LEGAL_STEPS`]).
pub trait StateSteps: Copy {
    /// Whether `self → to` is one legal step.
    fn is_legal_step(self, to: State) -> bool;
    /// Whether `to` can be reached from `self` by legal steps (or is
    /// `self`). One controller call can take several steps, so a property
    /// test that only sees the state before and after a call checks this.
    fn can_reach(self, to: State) -> bool;
}

impl StateSteps for State {
    fn is_legal_step(self, to: State) -> bool {
        LEGAL_STEPS.contains(&(self, to))
    }

    fn can_reach(self, to: State) -> bool {
        let mut seen = Vec::new();
        let mut stack = vec![self];
        while let Some(s) = stack.pop() {
            if s == to {
                return true;
            }
            if seen.contains(&s) {
                continue;
            }
            seen.push(s);
            stack.extend(LEGAL_STEPS.iter().filter(|(f, _)| *f == s).map(|(_, t)| *t));
        }
        false
    }
}

impl Bbr3 {
    /// The current state (mode, and ProbeBW phase).
    pub fn state(&self) -> State {
        match self.mode {
            Mode::Startup => State::Startup,
            Mode::Drain => State::Drain,
            Mode::ProbeRtt => State::ProbeRtt,
            Mode::ProbeBw => match self.cycle_idx {
                phase::UP => State::ProbeBwUp,
                phase::DOWN => State::ProbeBwDown,
                phase::CRUISE => State::ProbeBwCruise,
                _ => State::ProbeBwRefill,
            },
        }
    }

    /// The state changes (from, to) taken during the most recent call into
    /// the controller, in order; a call can take several steps, each one a
    /// [`State::is_legal_step`].
    pub fn last_transitions(&self) -> &[(State, State)] {
        &self.steps[..self.n_steps]
    }

    /// Moves to `to` (mode and ProbeBW phase together), recording the step.
    pub(super) fn transition_to(&mut self, to: State) {
        let from = self.state();
        debug_assert!(
            from.is_legal_step(to),
            "illegal BBR state step {from:?} -> {to:?}"
        );
        let (mode, idx) = match to {
            State::Startup => (Mode::Startup, self.cycle_idx),
            State::Drain => (Mode::Drain, self.cycle_idx),
            State::ProbeRtt => (Mode::ProbeRtt, self.cycle_idx),
            State::ProbeBwUp => (Mode::ProbeBw, phase::UP),
            State::ProbeBwDown => (Mode::ProbeBw, phase::DOWN),
            State::ProbeBwCruise => (Mode::ProbeBw, phase::CRUISE),
            State::ProbeBwRefill => (Mode::ProbeBw, phase::REFILL),
        };
        self.mode = mode;
        if mode == Mode::ProbeBw {
            // bbr_set_cycle_idx: a new phase needs new cwnd and pacing rate.
            self.cycle_idx = idx;
            self.try_fast_path = false;
        }
        if self.n_steps < self.steps.len() {
            self.steps[self.n_steps] = (from, to);
            self.n_steps += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The vocabulary's state is the one this module's mode and cycle
    /// index map to: `state()`'s table agrees with the kernel numbering.
    #[test]
    fn cycle_index_constants_are_the_vocabulary_numbering() {
        use bbrkit_vocab::bbr_state::Phase;
        for (idx, p) in [
            (phase::UP, Phase::Up),
            (phase::DOWN, Phase::Down),
            (phase::CRUISE, Phase::Cruise),
            (phase::REFILL, Phase::Refill),
        ] {
            assert_eq!(Phase::from_cycle_idx(idx as u8), Some(p));
        }
    }

    #[test]
    fn cycle_order_is_down_cruise_refill_up() {
        assert!(State::ProbeBwDown.is_legal_step(State::ProbeBwCruise));
        assert!(State::ProbeBwCruise.is_legal_step(State::ProbeBwRefill));
        assert!(State::ProbeBwRefill.is_legal_step(State::ProbeBwUp));
        assert!(State::ProbeBwUp.is_legal_step(State::ProbeBwDown));
        assert!(!State::ProbeBwUp.is_legal_step(State::ProbeBwCruise));
        assert!(!State::ProbeBwCruise.is_legal_step(State::ProbeBwUp));
        assert!(!State::ProbeBwRefill.is_legal_step(State::ProbeBwDown));
        assert!(!State::Drain.is_legal_step(State::Startup));
        assert!(!State::ProbeRtt.is_legal_step(State::ProbeRtt));
    }

    #[test]
    fn nothing_returns_to_startup_except_through_probe_rtt() {
        for s in State::ALL {
            assert_eq!(
                s.is_legal_step(State::Startup),
                s == State::ProbeRtt,
                "{s:?}"
            );
        }
        assert!(State::ProbeBwUp.can_reach(State::Startup));
        assert!(State::Startup.can_reach(State::ProbeBwUp));
        let names: std::collections::HashSet<_> = State::ALL.iter().map(|s| s.name()).collect();
        assert_eq!(names.len(), 7);
    }
}
