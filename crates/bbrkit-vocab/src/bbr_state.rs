//! BBR's states, once: the mode (`enum bbr_mode`), the ProbeBW phase
//! (`enum bbr_pacing_gain_phase`, the cycle index) and the flat state an
//! observer reports (`enum tcp_bbr_phase`, what google/bbr v3's
//! `bbr_get_phase` puts in `tcp_bbr_info.bbr_phase`), each with its kernel
//! numbers, kernel names and JSON/label spelling.
//!
//! ```text
//! STARTUP ─► DRAIN ─► PROBE_BW (DOWN ─► CRUISE ─► REFILL ─► UP ─► DOWN …) ◄─► PROBE_RTT
//! ```
//!
//! The three numberings differ, which is why they live in one place:
//!
//! | state | `bbr_mode` | cycle index | `tcp_bbr_phase` | spelling |
//! |---|---|---|---|---|
//! | STARTUP | 0 | — | 1 | `startup` |
//! | DRAIN | 1 | — | 2 | `drain` |
//! | PROBE_BW DOWN | 2 | 1 | 5 | `probe_bw_down` |
//! | PROBE_BW CRUISE | 2 | 2 | 6 | `probe_bw_cruise` |
//! | PROBE_BW REFILL | 2 | 3 | 7 | `probe_bw_refill` |
//! | PROBE_BW UP | 2 | 0 | 4 | `probe_bw_up` |
//! | PROBE_RTT | 3 | — | 3 | `probe_rtt` |
//!
//! (`tcp_bbr_phase` 0 is `BBR_PHASE_INVALID`: no state.) Sources: google/bbr
//! v3 `net/ipv4/tcp_bbr.c` and `include/uapi/linux/inet_diag.h`; v2alpha's
//! `enum tcp_bbr2_phase` numbers the same way. Who uses it: bbrkit-cc's
//! BBRv1/v2/v3 (mode and state), bbrkit-bpf's telemetry (mode and cycle
//! index as the BPF object writes them), bbrkit-diag's metric states (the
//! `tcp_bbr_phase` numbering and spellings). Never does I/O.

use std::fmt;

/// `enum bbr_mode`: the four modes of BBRv1, v2 and v3.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Mode {
    /// `BBR_STARTUP` (0): ramp the sending rate up rapidly to fill the pipe.
    Startup,
    /// `BBR_DRAIN` (1): drain the queue STARTUP built.
    Drain,
    /// `BBR_PROBE_BW` (2): discover and share bandwidth, pacing around the estimate.
    ProbeBw,
    /// `BBR_PROBE_RTT` (3): cut in-flight data to re-measure min_rtt.
    ProbeRtt,
}

/// `enum bbr_pacing_gain_phase`: the ProbeBW phase, by cycle index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Phase {
    /// `BBR_BW_PROBE_UP` (0): push inflight up to probe for bandwidth.
    Up,
    /// `BBR_BW_PROBE_DOWN` (1): drain the queue the probe built.
    Down,
    /// `BBR_BW_PROBE_CRUISE` (2): use the pipe with headroom.
    Cruise,
    /// `BBR_BW_PROBE_REFILL` (3): refill the pipe before probing.
    Refill,
}

/// A BBR state: a mode, and in PROBE_BW its phase (`enum tcp_bbr_phase`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum State {
    /// `BBR_PHASE_STARTUP` (1).
    Startup,
    /// `BBR_PHASE_DRAIN` (2).
    Drain,
    /// `BBR_PHASE_PROBE_BW_DOWN` (5): pacing below the estimate until
    /// inflight drops to the cruise target.
    ProbeBwDown,
    /// `BBR_PHASE_PROBE_BW_CRUISE` (6): pacing at the estimate, headroom
    /// below inflight_hi.
    ProbeBwCruise,
    /// `BBR_PHASE_PROBE_BW_REFILL` (7): one round at the estimate with the
    /// lower bounds reset.
    ProbeBwRefill,
    /// `BBR_PHASE_PROBE_BW_UP` (4): pacing above the estimate, inflight_hi grows.
    ProbeBwUp,
    /// `BBR_PHASE_PROBE_RTT` (3).
    ProbeRtt,
}

impl Mode {
    /// Every mode, in `bbr_mode` order.
    pub const ALL: [Mode; 4] = [Mode::Startup, Mode::Drain, Mode::ProbeBw, Mode::ProbeRtt];

    /// Its `enum bbr_mode` value.
    pub const fn kernel(self) -> u8 {
        self as u8
    }

    /// The mode an `enum bbr_mode` value names (`None`: not a mode).
    pub const fn from_kernel(v: u8) -> Option<Mode> {
        match v {
            0 => Some(Mode::Startup),
            1 => Some(Mode::Drain),
            2 => Some(Mode::ProbeBw),
            3 => Some(Mode::ProbeRtt),
            _ => None,
        }
    }

    /// The kernel's name (`BBR_PROBE_BW`).
    pub const fn kernel_name(self) -> &'static str {
        match self {
            Mode::Startup => "BBR_STARTUP",
            Mode::Drain => "BBR_DRAIN",
            Mode::ProbeBw => "BBR_PROBE_BW",
            Mode::ProbeRtt => "BBR_PROBE_RTT",
        }
    }

    /// The spelling in JSON, labels and tables (`probe_bw`).
    pub const fn name(self) -> &'static str {
        match self {
            Mode::Startup => "startup",
            Mode::Drain => "drain",
            Mode::ProbeBw => "probe_bw",
            Mode::ProbeRtt => "probe_rtt",
        }
    }
}

impl Phase {
    /// Every phase, in cycle-index order.
    pub const ALL: [Phase; 4] = [Phase::Up, Phase::Down, Phase::Cruise, Phase::Refill];

    /// Its cycle index (`enum bbr_pacing_gain_phase` value).
    pub const fn cycle_idx(self) -> u8 {
        self as u8
    }

    /// The phase a cycle index names (`None`: not a phase).
    pub const fn from_cycle_idx(v: u8) -> Option<Phase> {
        match v {
            0 => Some(Phase::Up),
            1 => Some(Phase::Down),
            2 => Some(Phase::Cruise),
            3 => Some(Phase::Refill),
            _ => None,
        }
    }

    /// The kernel's name (`BBR_BW_PROBE_CRUISE`).
    pub const fn kernel_name(self) -> &'static str {
        match self {
            Phase::Up => "BBR_BW_PROBE_UP",
            Phase::Down => "BBR_BW_PROBE_DOWN",
            Phase::Cruise => "BBR_BW_PROBE_CRUISE",
            Phase::Refill => "BBR_BW_PROBE_REFILL",
        }
    }

    /// The spelling in JSON and tables (`cruise`).
    pub const fn name(self) -> &'static str {
        match self {
            Phase::Up => "up",
            Phase::Down => "down",
            Phase::Cruise => "cruise",
            Phase::Refill => "refill",
        }
    }
}

impl State {
    /// Every state, in the order of the ProbeBW cycle after the start.
    pub const ALL: [State; 7] = [
        State::Startup,
        State::Drain,
        State::ProbeBwDown,
        State::ProbeBwCruise,
        State::ProbeBwRefill,
        State::ProbeBwUp,
        State::ProbeRtt,
    ];

    /// The state of `mode` with ProbeBW phase `phase` (ignored outside
    /// PROBE_BW; `None` in PROBE_BW without a phase).
    pub const fn of(mode: Mode, phase: Option<Phase>) -> Option<State> {
        match (mode, phase) {
            (Mode::Startup, _) => Some(State::Startup),
            (Mode::Drain, _) => Some(State::Drain),
            (Mode::ProbeRtt, _) => Some(State::ProbeRtt),
            (Mode::ProbeBw, Some(Phase::Up)) => Some(State::ProbeBwUp),
            (Mode::ProbeBw, Some(Phase::Down)) => Some(State::ProbeBwDown),
            (Mode::ProbeBw, Some(Phase::Cruise)) => Some(State::ProbeBwCruise),
            (Mode::ProbeBw, Some(Phase::Refill)) => Some(State::ProbeBwRefill),
            (Mode::ProbeBw, None) => None,
        }
    }

    /// The state a kernel's `bbr_mode` and cycle index name (`None`: either
    /// is out of range). The cycle index only counts in PROBE_BW.
    pub const fn from_kernel(mode: u8, cycle_idx: u8) -> Option<State> {
        match Mode::from_kernel(mode) {
            Some(m) => State::of(m, Phase::from_cycle_idx(cycle_idx)),
            None => None,
        }
    }

    /// Its mode.
    pub const fn mode(self) -> Mode {
        match self {
            State::Startup => Mode::Startup,
            State::Drain => Mode::Drain,
            State::ProbeRtt => Mode::ProbeRtt,
            _ => Mode::ProbeBw,
        }
    }

    /// Its ProbeBW phase (`None` outside PROBE_BW).
    pub const fn phase(self) -> Option<Phase> {
        match self {
            State::ProbeBwUp => Some(Phase::Up),
            State::ProbeBwDown => Some(Phase::Down),
            State::ProbeBwCruise => Some(Phase::Cruise),
            State::ProbeBwRefill => Some(Phase::Refill),
            _ => None,
        }
    }

    /// Its `enum tcp_bbr_phase` value (1..=7).
    pub const fn tcp_bbr_phase(self) -> u8 {
        match self {
            State::Startup => 1,
            State::Drain => 2,
            State::ProbeRtt => 3,
            State::ProbeBwUp => 4,
            State::ProbeBwDown => 5,
            State::ProbeBwCruise => 6,
            State::ProbeBwRefill => 7,
        }
    }

    /// The state a `tcp_bbr_phase` value names (`None` for
    /// `BBR_PHASE_INVALID` and unknown values).
    pub const fn from_tcp_bbr_phase(v: u8) -> Option<State> {
        match v {
            1 => Some(State::Startup),
            2 => Some(State::Drain),
            3 => Some(State::ProbeRtt),
            4 => Some(State::ProbeBwUp),
            5 => Some(State::ProbeBwDown),
            6 => Some(State::ProbeBwCruise),
            7 => Some(State::ProbeBwRefill),
            _ => None,
        }
    }

    /// The kernel's name (`BBR_PHASE_PROBE_BW_CRUISE`).
    pub const fn kernel_name(self) -> &'static str {
        match self {
            State::Startup => "BBR_PHASE_STARTUP",
            State::Drain => "BBR_PHASE_DRAIN",
            State::ProbeRtt => "BBR_PHASE_PROBE_RTT",
            State::ProbeBwUp => "BBR_PHASE_PROBE_BW_UP",
            State::ProbeBwDown => "BBR_PHASE_PROBE_BW_DOWN",
            State::ProbeBwCruise => "BBR_PHASE_PROBE_BW_CRUISE",
            State::ProbeBwRefill => "BBR_PHASE_PROBE_BW_REFILL",
        }
    }

    /// The spelling in JSON, labels and traces (`probe_bw_cruise`).
    pub const fn name(self) -> &'static str {
        match self {
            State::Startup => "startup",
            State::Drain => "drain",
            State::ProbeBwDown => "probe_bw_down",
            State::ProbeBwCruise => "probe_bw_cruise",
            State::ProbeBwRefill => "probe_bw_refill",
            State::ProbeBwUp => "probe_bw_up",
            State::ProbeRtt => "probe_rtt",
        }
    }
}

macro_rules! spelled {
    ($($t:ty),*) => {$(
        impl fmt::Display for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.name())
            }
        }

        impl serde::Serialize for $t {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.name())
            }
        }
    )*};
}
spelled!(Mode, Phase, State);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numberings_round_trip() {
        for m in Mode::ALL {
            assert_eq!(Mode::from_kernel(m.kernel()), Some(m));
        }
        for p in Phase::ALL {
            assert_eq!(Phase::from_cycle_idx(p.cycle_idx()), Some(p));
        }
        for s in State::ALL {
            assert_eq!(State::from_tcp_bbr_phase(s.tcp_bbr_phase()), Some(s));
            assert_eq!(State::of(s.mode(), s.phase()), Some(s));
            let idx = s.phase().map_or(0, Phase::cycle_idx);
            assert_eq!(State::from_kernel(s.mode().kernel(), idx), Some(s));
        }
        assert_eq!(
            (Mode::from_kernel(4), Phase::from_cycle_idx(4)),
            (None, None)
        );
        assert_eq!(
            (State::from_tcp_bbr_phase(0), State::from_tcp_bbr_phase(8)),
            (None, None)
        );
        assert_eq!(State::of(Mode::ProbeBw, None), None);
        assert_eq!(State::from_kernel(0, 9), Some(State::Startup));
    }

    /// The table in the module documentation, row by row.
    #[test]
    fn the_documented_table() {
        let rows = [
            (State::Startup, 0, None, 1, "startup"),
            (State::Drain, 1, None, 2, "drain"),
            (State::ProbeBwDown, 2, Some(1), 5, "probe_bw_down"),
            (State::ProbeBwCruise, 2, Some(2), 6, "probe_bw_cruise"),
            (State::ProbeBwRefill, 2, Some(3), 7, "probe_bw_refill"),
            (State::ProbeBwUp, 2, Some(0), 4, "probe_bw_up"),
            (State::ProbeRtt, 3, None, 3, "probe_rtt"),
        ];
        for (s, mode, idx, phase, name) in rows {
            assert_eq!(s.mode().kernel(), mode, "{s:?}");
            assert_eq!(s.phase().map(Phase::cycle_idx), idx, "{s:?}");
            assert_eq!(s.tcp_bbr_phase(), phase, "{s:?}");
            assert_eq!((s.name(), s.to_string()), (name, name.to_string()));
            assert!(s.kernel_name().starts_with("BBR_PHASE_"));
        }
        assert_eq!(
            Mode::ALL.map(Mode::name),
            ["startup", "drain", "probe_bw", "probe_rtt"]
        );
        assert_eq!(
            Phase::ALL.map(Phase::name),
            ["up", "down", "cruise", "refill"]
        );
    }
}
