//! DRAIN: entered when STARTUP estimates the pipe is full; pace at
//! `drain_gain` (≈0.35) until the data in the network is at most one BDP,
//! then start PROBE_BW in DOWN.
//!
//! Owns `bbr_check_drain`. Must never run in PROBE_BW or PROBE_RTT.

use super::params::BBR_UNIT;
use super::{Bbr3, State};
use crate::tcp::Tcp;

impl Bbr3 {
    /// `bbr_check_drain`. STARTUP → DRAIN once `full_bw_reached`, and in
    /// the same call DRAIN → PROBE_BW DOWN if inflight is already small.
    ///
    /// Linux, not the IETF draft: no 3-round cap on DRAIN (draft -05+).
    pub(super) fn check_drain(&mut self, tcp: &mut Tcp) {
        if self.mode == super::Mode::Startup && self.full_bw_reached {
            self.transition_to(State::Drain);
            // Exported for monitoring only: a non-infinite ssthresh says
            // STARTUP is over (BBR does not use ssthresh).
            tcp.snd_ssthresh = self.inflight(tcp, self.max_bw(), BBR_UNIT);
            self.reset_congestion_signals();
        }
        if self.mode == super::Mode::Drain
            && self.packets_in_net_at_edt(tcp, tcp.packets_in_flight())
                <= self.inflight(tcp, self.max_bw(), BBR_UNIT)
        {
            self.start_bw_probe_down(tcp);
        }
    }
}
