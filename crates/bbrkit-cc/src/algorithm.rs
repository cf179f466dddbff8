//! Choosing an algorithm by name, and static dispatch over all of them.

use crate::bbr1::Bbr1;
use crate::bbr3::{Bbr3, Bbr3Params};
use crate::controller::{CongestionControl, Status};
use crate::cubic::Cubic;
use crate::random::Random;
use crate::rate::{RateSample, TxSnapshot};
use crate::reno::Reno;
use crate::tcp::{AckSample, CaEvent, CaState, Tcp};

/// The algorithms bbrkit models.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Algorithm {
    /// RFC 5681 Reno with NewReno recovery (Linux `tcp_reno_*`).
    Reno,
    /// CUBIC as in Linux `tcp_cubic.c` (RFC 9438), with HyStart.
    Cubic,
    /// BBRv1 as in Linux mainline `tcp_bbr.c`.
    Bbr1,
    /// BBRv2: the v3 machinery with the v2alpha parameter values.
    Bbr2,
    /// BBRv3 as in google/bbr branch v3.
    Bbr3,
}

/// An unknown algorithm name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown congestion control '{name}' (valid: {})", Algorithm::NAMES.join(", "))]
pub struct UnknownAlgorithm {
    /// The name that was given.
    pub name: String,
}

impl Algorithm {
    /// Every accepted name; `bbr` means `bbr1`, as in the Linux kernel.
    pub const NAMES: [&'static str; 6] = ["reno", "cubic", "bbr", "bbr1", "bbr2", "bbr3"];

    /// All algorithms, in a stable order.
    pub const ALL: [Algorithm; 5] = [
        Algorithm::Reno,
        Algorithm::Cubic,
        Algorithm::Bbr1,
        Algorithm::Bbr2,
        Algorithm::Bbr3,
    ];

    /// The canonical name (`bbr1`, not `bbr`).
    pub fn name(self) -> &'static str {
        match self {
            Algorithm::Reno => "reno",
            Algorithm::Cubic => "cubic",
            Algorithm::Bbr1 => "bbr1",
            Algorithm::Bbr2 => "bbr2",
            Algorithm::Bbr3 => "bbr3",
        }
    }

    /// Builds the controller (`ops->init`) for a connection whose state is
    /// `tcp`; `rng` is the controller's only source of randomness.
    pub fn build(self, tcp: &mut Tcp, rng: Box<dyn Random + Send>) -> AnyController {
        match self {
            Algorithm::Reno => AnyController::Reno(Reno::new(tcp)),
            Algorithm::Cubic => AnyController::Cubic(Cubic::new(tcp)),
            Algorithm::Bbr1 => AnyController::Bbr1(Bbr1::new(tcp, rng)),
            Algorithm::Bbr2 => AnyController::Bbr3(Bbr3::new(tcp, rng, Bbr3Params::v2())),
            Algorithm::Bbr3 => AnyController::Bbr3(Bbr3::new(tcp, rng, Bbr3Params::v3())),
        }
    }
}

impl std::str::FromStr for Algorithm {
    type Err = UnknownAlgorithm;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "reno" => Ok(Algorithm::Reno),
            "cubic" => Ok(Algorithm::Cubic),
            "bbr" | "bbr1" => Ok(Algorithm::Bbr1),
            "bbr2" => Ok(Algorithm::Bbr2),
            "bbr3" => Ok(Algorithm::Bbr3),
            _ => Err(UnknownAlgorithm {
                name: s.to_string(),
            }),
        }
    }
}

impl std::fmt::Display for Algorithm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Static dispatch over every controller (no `dyn` on the per-ACK path).
///
/// The variants differ a lot in size (Reno is empty, BBR is a few hundred
/// bytes); they stay unboxed on purpose: there is one controller per
/// connection, and the per-ACK path should not chase a pointer.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum AnyController {
    /// Reno.
    Reno(Reno),
    /// CUBIC.
    Cubic(Cubic),
    /// BBRv1.
    Bbr1(Bbr1),
    /// BBRv2 or BBRv3 (same machinery, different parameters).
    Bbr3(Bbr3),
}

macro_rules! dispatch {
    ($self:ident, $c:ident => $e:expr) => {
        match $self {
            AnyController::Reno($c) => $e,
            AnyController::Cubic($c) => $e,
            AnyController::Bbr1($c) => $e,
            AnyController::Bbr3($c) => $e,
        }
    };
}

impl CongestionControl for AnyController {
    fn name(&self) -> &'static str {
        dispatch!(self, c => c.name())
    }
    fn has_cong_control(&self) -> bool {
        dispatch!(self, c => c.has_cong_control())
    }
    #[inline]
    fn cong_control(&mut self, tcp: &mut Tcp, rs: &RateSample) {
        dispatch!(self, c => c.cong_control(tcp, rs))
    }
    #[inline]
    fn cong_avoid(&mut self, tcp: &mut Tcp, ack: u64, acked: u32) {
        dispatch!(self, c => c.cong_avoid(tcp, ack, acked))
    }
    #[inline]
    fn pkts_acked(&mut self, tcp: &mut Tcp, sample: &AckSample) {
        dispatch!(self, c => c.pkts_acked(tcp, sample))
    }
    fn ssthresh(&mut self, tcp: &mut Tcp) -> u32 {
        dispatch!(self, c => c.ssthresh(tcp))
    }
    fn undo_cwnd(&mut self, tcp: &mut Tcp) -> u32 {
        dispatch!(self, c => c.undo_cwnd(tcp))
    }
    fn set_state(&mut self, tcp: &mut Tcp, new_state: CaState) {
        dispatch!(self, c => c.set_state(tcp, new_state))
    }
    fn cwnd_event(&mut self, tcp: &mut Tcp, event: CaEvent) {
        dispatch!(self, c => c.cwnd_event(tcp, event))
    }
    #[inline]
    fn skb_marked_lost(&mut self, tcp: &mut Tcp, tx: &TxSnapshot, pcount: u32) {
        dispatch!(self, c => c.skb_marked_lost(tcp, tx, pcount))
    }
    fn tso_segs(&self, tcp: &Tcp) -> Option<u32> {
        dispatch!(self, c => c.tso_segs(tcp))
    }
    fn status(&self, tcp: &Tcp) -> Status {
        dispatch!(self, c => c.status(tcp))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_bbr_means_v1() {
        for a in Algorithm::ALL {
            assert_eq!(a.name().parse::<Algorithm>().unwrap(), a);
        }
        assert_eq!("bbr".parse::<Algorithm>().unwrap(), Algorithm::Bbr1);
        assert_eq!("CUBIC".parse::<Algorithm>().unwrap(), Algorithm::Cubic);
    }

    #[test]
    fn unknown_name_lists_valid_ones() {
        let e = "nosuch".parse::<Algorithm>().unwrap_err().to_string();
        assert_eq!(
            e,
            "unknown congestion control 'nosuch' (valid: reno, cubic, bbr, bbr1, bbr2, bbr3)"
        );
    }
}
