//! PROBE_BW gain cycling (`bbr_update_cycle_phase`, `bbr_reset_probe_bw_mode`).
//!
//! The pacing gain cycles through [`BBR_PACING_GAIN`] = [5/4, 3/4, 1 ×6].
//!
//! [`BBR_PACING_GAIN`]: super::BBR_PACING_GAIN
//! Each phase lasts at least one min_rtt of delivery time, except:
//! - the 5/4 probe also waits until the packets in the network reach
//!   5/4 × BDP (plus quantization budget), unless packets were lost;
//! - the 3/4 drain ends early once in-flight data falls to one BDP.
//!
//! Entering PROBE_BW picks the phase at random, never the 3/4 phase:
//! `cycle_idx = CYCLE_LEN - 1 - rand(BBR_CYCLE_RAND)` and then one advance,
//! so the first phase is one of {2, ..., 7, 0}.

use super::{BBR_CYCLE_RAND, BBR_UNIT, Bbr1, CYCLE_LEN, Mode, State, us_delta};
use crate::rate::RateSample;
use crate::tcp::Tcp;

/// The data of the PROBE_BW mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Cycle {
    /// `cycle_idx`: index into [`super::BBR_PACING_GAIN`].
    pub(super) idx: u8,
    /// `cycle_mstamp`: `tcp.delivered_time` (µs) when this phase began.
    pub(super) mstamp: u64,
}

impl Bbr1 {
    /// `bbr_reset_probe_bw_mode`: enter PROBE_BW at a random phase.
    pub(super) fn reset_probe_bw_mode(&mut self, tcp: &Tcp) {
        let rand = self.rng.below(BBR_CYCLE_RAND);
        // `rand < BBR_CYCLE_RAND = 7`, so this is 1..=7 (the kernel's 3-bit field).
        let idx = (CYCLE_LEN - 1).wrapping_sub(rand as u8) & (CYCLE_LEN - 1);
        self.transition_to(State::ProbeBw(Cycle { idx, mstamp: 0 }));
        self.advance_cycle_phase(tcp); // flip to the next phase of the gain cycle
    }

    /// `bbr_advance_cycle_phase`.
    fn advance_cycle_phase(&mut self, tcp: &Tcp) {
        if let State::ProbeBw(c) = &mut self.state {
            c.idx = (c.idx + 1) & (CYCLE_LEN - 1);
            c.mstamp = tcp.delivered_time.as_micros();
        }
    }

    /// `bbr_update_cycle_phase`: gain cycling, to converge to a fair share.
    pub(super) fn update_cycle_phase(&mut self, tcp: &Tcp, rs: &RateSample) {
        if self.mode() == Mode::ProbeBw && self.is_next_cycle_phase(tcp, rs) {
            self.advance_cycle_phase(tcp);
        }
    }

    /// `bbr_is_next_cycle_phase`: end the phase if it's time and/or the
    /// phase's in-flight target was hit.
    fn is_next_cycle_phase(&self, tcp: &Tcp, rs: &RateSample) -> bool {
        let State::ProbeBw(cycle) = self.state else {
            return false;
        };
        // `tcp_stamp_us_delta(delivered_mstamp, cycle_mstamp) > min_rtt_us`;
        // with no min_rtt (the kernel's ~0U) a phase never ends by time.
        let elapsed = us_delta(tcp.delivered_time.as_micros(), cycle.mstamp);
        let is_full_length = self.min_rtt_us.is_some_and(|m| elapsed > u64::from(m));

        // Gain 1.0 paces at the estimated bw to use the pipe without adding
        // queue: just use wall-clock time.
        if self.pacing_gain == BBR_UNIT {
            return is_full_length;
        }

        let inflight = self.packets_in_net_at_edt(tcp, rs.prior_in_flight);
        let bw = self.max_bw();

        // A gain > 1.0 probes by raising inflight to at least gain × BDP;
        // this may take more than min_rtt on a LAN. Don't persist after
        // losses: a path with small buffers may not hold that much.
        if self.pacing_gain > BBR_UNIT {
            return is_full_length
                && (rs.losses > 0 || inflight >= self.inflight(tcp, bw, self.pacing_gain));
        }

        // A gain < 1.0 drains the queue the probe may have built; once
        // inflight falls to the BDP, persisting would under-use the pipe.
        is_full_length || inflight <= self.inflight(tcp, bw, BBR_UNIT)
    }
}

#[cfg(test)]
mod tests {
    use crate::bbr1::{BBR_PACING_GAIN, CYCLE_LEN};

    #[test]
    fn cycle_table_matches_the_kernel() {
        assert_eq!(BBR_PACING_GAIN, [320, 192, 256, 256, 256, 256, 256, 256]);
        assert_eq!(BBR_PACING_GAIN.len(), usize::from(CYCLE_LEN));
    }
}
