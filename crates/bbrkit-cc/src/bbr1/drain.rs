//! DRAIN (`bbr_check_drain`): after STARTUP fills the pipe, pace at
//! [`BBR_DRAIN_GAIN`] (1/2.885) until the packets in the network fit one
//! BDP (plus the quantization budget), then enter PROBE_BW.
//!
//! [`BBR_DRAIN_GAIN`]: super::BBR_DRAIN_GAIN

use super::{BBR_UNIT, Bbr1, State};
use crate::tcp::Tcp;

impl Bbr1 {
    /// `bbr_check_drain`: STARTUP → DRAIN once the pipe is full, and
    /// DRAIN → PROBE_BW once the queue is estimated drained (possibly on the
    /// same ACK).
    pub(super) fn check_drain(&mut self, tcp: &mut Tcp) {
        if self.state == State::Startup && self.full_bw_reached {
            self.transition_to(State::Drain); // drain the queue we created
            // Informational only: BBR never uses ssthresh.
            tcp.snd_ssthresh = self.inflight(tcp, self.max_bw(), BBR_UNIT);
        }
        // Fall through: in-flight data may already be small.
        if self.state == State::Drain
            && self.packets_in_net_at_edt(tcp, tcp.packets_in_flight())
                <= self.inflight(tcp, self.max_bw(), BBR_UNIT)
        {
            self.reset_probe_bw_mode(tcp); // queue is estimated drained
        }
    }
}
