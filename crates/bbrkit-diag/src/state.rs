//! TCP socket states as numbered by the kernel (`include/net/tcp_states.h`)
//! and sets of them, as `inet_diag_req_v2.idiag_states` wants them.
//!
//! Owns the names (`ESTABLISHED`, `TIME_WAIT`, ...) and their parsing.

use std::fmt;
use std::str::FromStr;

use crate::DiagError;

/// A kernel TCP state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TcpState {
    /// 1
    Established,
    /// 2
    SynSent,
    /// 3
    SynRecv,
    /// 4
    FinWait1,
    /// 5
    FinWait2,
    /// 6
    TimeWait,
    /// 7
    Close,
    /// 8
    CloseWait,
    /// 9
    LastAck,
    /// 10
    Listen,
    /// 11
    Closing,
    /// 12: a request socket (half-open connection) in a listener's queue.
    NewSynRecv,
    /// 13: bound but neither listening nor connected (Linux 6.9+).
    BoundInactive,
    /// A number this module does not know.
    Unknown(u8),
}

const NAMED: [(TcpState, &str); 13] = [
    (TcpState::Established, "ESTABLISHED"),
    (TcpState::SynSent, "SYN_SENT"),
    (TcpState::SynRecv, "SYN_RECV"),
    (TcpState::FinWait1, "FIN_WAIT1"),
    (TcpState::FinWait2, "FIN_WAIT2"),
    (TcpState::TimeWait, "TIME_WAIT"),
    (TcpState::Close, "CLOSE"),
    (TcpState::CloseWait, "CLOSE_WAIT"),
    (TcpState::LastAck, "LAST_ACK"),
    (TcpState::Listen, "LISTEN"),
    (TcpState::Closing, "CLOSING"),
    (TcpState::NewSynRecv, "NEW_SYN_RECV"),
    (TcpState::BoundInactive, "BOUND_INACTIVE"),
];

impl TcpState {
    /// Every named state, in kernel order.
    pub fn all() -> impl Iterator<Item = TcpState> {
        NAMED.iter().map(|(s, _)| *s)
    }

    /// The kernel's state number.
    pub fn number(self) -> u8 {
        match self {
            TcpState::Unknown(n) => n,
            s => NAMED
                .iter()
                .position(|(x, _)| *x == s)
                .map_or(0, |i| i as u8 + 1),
        }
    }

    /// The state with kernel number `n`.
    pub fn from_number(n: u8) -> TcpState {
        match n {
            1..=13 => NAMED[usize::from(n) - 1].0,
            n => TcpState::Unknown(n),
        }
    }

    /// The kernel name, e.g. `ESTABLISHED` (`UNKNOWN` for unknown numbers).
    pub fn name(self) -> &'static str {
        NAMED
            .iter()
            .find(|(x, _)| *x == self)
            .map_or("UNKNOWN", |(_, n)| n)
    }
}

impl fmt::Display for TcpState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TcpState::Unknown(n) => write!(f, "UNKNOWN({n})"),
            s => f.write_str(s.name()),
        }
    }
}

impl FromStr for TcpState {
    type Err = DiagError;

    /// Accepts kernel names case-insensitively with `-` or `_`
    /// (`established`, `time-wait`, `SYN_SENT`), plus `ss`'s `estab`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let norm = s.trim().to_ascii_uppercase().replace('-', "_");
        if norm == "ESTAB" {
            return Ok(TcpState::Established);
        }
        NAMED
            .iter()
            .find(|(_, n)| *n == norm)
            .map(|(s, _)| *s)
            .ok_or_else(|| {
                let names: Vec<&str> = NAMED.iter().map(|(_, n)| *n).collect();
                DiagError::Invalid(format!(
                    "unknown TCP state '{s}' (expected one of {})",
                    names.join(", ")
                ))
            })
    }
}

/// A set of states: bit `n` stands for state number `n`, as in `idiag_states`.
///
/// Parses from `all`, `connected` ([`StateSet::connected`]) or a comma list
/// of state names (`established,listen`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StateSet(pub u32);

impl StateSet {
    /// Every state.
    pub const ALL: StateSet = StateSet(u32::MAX);

    /// The empty set.
    pub const fn empty() -> StateSet {
        StateSet(0)
    }

    /// Connected sockets, as `ss` shows by default: every state except
    /// LISTEN, CLOSE, TIME_WAIT, SYN_RECV and NEW_SYN_RECV.
    pub fn connected() -> StateSet {
        let mut s = StateSet::ALL;
        for x in [
            TcpState::Listen,
            TcpState::Close,
            TcpState::TimeWait,
            TcpState::SynRecv,
            TcpState::NewSynRecv,
        ] {
            s.0 &= !(1 << x.number());
        }
        s
    }

    /// This set plus `state`.
    pub fn with(self, state: TcpState) -> StateSet {
        StateSet(self.0 | 1u32.checked_shl(state.number().into()).unwrap_or(0))
    }

    /// Whether `state` is in the set.
    pub fn contains(self, state: TcpState) -> bool {
        1u32.checked_shl(state.number().into())
            .is_some_and(|bit| self.0 & bit != 0)
    }
}

impl FromStr for StateSet {
    type Err = DiagError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text.trim().to_ascii_lowercase().as_str() {
            "all" => return Ok(StateSet::ALL),
            "connected" => return Ok(StateSet::connected()),
            _ => {}
        }
        let mut set = StateSet::empty();
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let st: TcpState = part.parse().map_err(|_| {
                let names: Vec<String> = TcpState::all()
                    .map(|s| s.name().to_ascii_lowercase().replace('_', "-"))
                    .collect();
                DiagError::Invalid(format!(
                    "unknown TCP state '{part}' (expected all, connected, or a comma list of: {})",
                    names.join(", ")
                ))
            })?;
            set = set.with(st);
        }
        if set == StateSet::empty() {
            return Err(DiagError::Invalid("empty state list".into()));
        }
        Ok(set)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_and_names_round_trip() {
        for s in TcpState::all() {
            assert_eq!(TcpState::from_number(s.number()), s);
            assert_eq!(s.to_string().parse::<TcpState>().unwrap(), s);
        }
        assert_eq!(TcpState::Established.number(), 1);
        assert_eq!(TcpState::Listen.number(), 10);
        assert_eq!(TcpState::from_number(99).to_string(), "UNKNOWN(99)");
    }

    #[test]
    fn parsing_is_lenient_about_case_and_dashes() {
        assert_eq!("time-wait".parse::<TcpState>().unwrap(), TcpState::TimeWait);
        assert_eq!("estab".parse::<TcpState>().unwrap(), TcpState::Established);
        let e = "bogus".parse::<TcpState>().unwrap_err().to_string();
        assert!(e.contains("unknown TCP state 'bogus'"), "{e}");
    }

    #[test]
    fn set_spellings() {
        let p = |t: &str| t.parse::<StateSet>();
        assert_eq!(p("all").unwrap(), StateSet::ALL);
        assert_eq!(p("connected").unwrap(), StateSet::connected());
        let s = p("established,LISTEN").unwrap();
        assert!(s.contains(TcpState::Established) && s.contains(TcpState::Listen));
        assert!(!s.contains(TcpState::TimeWait));
        let e = p("nope").unwrap_err().to_string();
        assert!(e.starts_with("unknown TCP state 'nope' (expected all, connected, or a comma list of: established, syn-sent,"), "{e}");
        assert!(p(",").is_err());
    }

    #[test]
    fn sets() {
        let c = StateSet::connected();
        assert!(c.contains(TcpState::Established));
        assert!(c.contains(TcpState::CloseWait));
        assert!(!c.contains(TcpState::Listen));
        assert!(!c.contains(TcpState::TimeWait));
        let s = StateSet::empty().with(TcpState::Listen);
        assert!(s.contains(TcpState::Listen) && !s.contains(TcpState::Established));
    }
}
