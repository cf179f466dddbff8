//! min_rtt estimation and PROBE_RTT.
//!
//! `probe_rtt_min_us` is the min RTT over `probe_rtt_win_ms` (5 s);
//! `min_rtt_us` the min over `min_rtt_win_sec` (10 s). When the 5 s window
//! expires without a new minimum (and we are not restarting from idle), the
//! flow enters PROBE_RTT: cwnd ≤ max(4, 0.5·BDP) until inflight is that low,
//! then for `probe_rtt_mode_ms` (200 ms) and at least one round. That costs
//! about 2% of throughput (0.5·0.2/5 + 4.8/5 ≈ 0.98) and lets all flows see
//! the empty queue together. Stamps are jiffies (HZ = 1000), and "expired"
//! means strictly later (`after()`), as in Linux.
//!
//! Owns `bbr_update_min_rtt`, `bbr_check_probe_rtt_done`,
//! `bbr_exit_probe_rtt` and `bbr_probe_rtt_cwnd`. Must never change the
//! ProbeBW phase except through the exit actions.

use super::round::Sample;
use super::{Bbr3, Mode, State, jiffies};
use crate::tcp::Tcp;

impl Bbr3 {
    /// `bbr_probe_rtt_cwnd`: `max(cwnd_min_target, bdp(bw, 0.5))`.
    pub(super) fn probe_rtt_cwnd(&self, tcp: &Tcp) -> u32 {
        self.params
            .cwnd_min_target
            .max(self.bdp(tcp, self.bw(), self.params.probe_rtt_cwnd_gain))
    }

    /// `bbr_update_min_rtt`: update both RTT filters, enter PROBE_RTT when
    /// the 5 s window expired, and run PROBE_RTT's hold timer.
    pub(super) fn update_min_rtt(&mut self, tcp: &mut Tcp, rs: &Sample) {
        let now = jiffies(tcp);
        let probe_rtt_expired = now
            > self.probe_rtt_min_stamp
                + u64::from(self.params.probe_rtt_win_ms) * super::params::HZ / 1000;
        // v2alpha refreshes the stamp on an equal RTT too.
        let lower = rs.rtt_us < i64::from(self.probe_rtt_min_us)
            || (self.v2alpha() && rs.rtt_us == i64::from(self.probe_rtt_min_us));
        if rs.rtt_us >= 0 && (lower || (probe_rtt_expired && !rs.is_ack_delayed)) {
            self.probe_rtt_min_us = rs.rtt_us.min(i64::from(u32::MAX - 1)) as u32;
            self.probe_rtt_min_stamp = now;
        }
        let min_rtt_expired =
            now > self.min_rtt_stamp + u64::from(self.params.min_rtt_win_sec) * super::params::HZ;
        if self.probe_rtt_min_us <= self.min_rtt_us || min_rtt_expired {
            self.min_rtt_us = self.probe_rtt_min_us;
            self.min_rtt_stamp = self.probe_rtt_min_stamp;
        }

        if self.params.probe_rtt_mode_ms > 0
            && probe_rtt_expired
            && !self.idle_restart
            && self.mode != Mode::ProbeRtt
        {
            // Dip, to drain the queue.
            self.transition_to(State::ProbeRtt);
            self.counters.probe_rtts += 1;
            self.save_cwnd(tcp);
            self.probe_rtt_done_stamp = None;
            self.ack_phase = super::AckPhase::ProbeStopping;
            self.next_rtt_delivered = tcp.delivered;
        }

        if self.mode == Mode::ProbeRtt {
            // Ignore low-rate samples during this mode.
            tcp.app_limited = (tcp.delivered + u64::from(tcp.packets_in_flight())).max(1);
            // Hold the low inflight for max(200 ms, 1 round).
            if self.probe_rtt_done_stamp.is_none()
                && tcp.packets_in_flight() <= self.probe_rtt_cwnd(tcp)
            {
                self.probe_rtt_done_stamp =
                    Some(now + u64::from(self.params.probe_rtt_mode_ms) * super::params::HZ / 1000);
                self.probe_rtt_round_done = false;
                self.next_rtt_delivered = tcp.delivered;
            } else if self.probe_rtt_done_stamp.is_some() {
                if self.round_start {
                    self.probe_rtt_round_done = true;
                }
                if self.probe_rtt_round_done {
                    self.check_probe_rtt_done(tcp);
                }
            }
        }
        // Restart after idle ends only once we process a new S/ACK for data.
        if rs.delivered > 0 {
            self.idle_restart = false;
        }
    }

    /// `bbr_check_probe_rtt_done`: once the hold time has passed, schedule
    /// the next PROBE_RTT, restore cwnd and leave.
    pub(super) fn check_probe_rtt_done(&mut self, tcp: &mut Tcp) {
        let Some(done) = self.probe_rtt_done_stamp else {
            return;
        };
        if jiffies(tcp) <= done {
            return;
        }
        self.probe_rtt_min_stamp = jiffies(tcp);
        tcp.set_cwnd(tcp.snd_cwnd.max(self.prior_cwnd));
        self.exit_probe_rtt(tcp);
    }

    /// `bbr_exit_probe_rtt`: reset the lower bounds; with a full pipe go to
    /// PROBE_BW (DOWN restarts the probe clock at a randomised time, then
    /// CRUISE at once since inflight is below BDP), else back to STARTUP.
    fn exit_probe_rtt(&mut self, tcp: &Tcp) {
        self.reset_lower_bounds();
        if self.full_bw_reached {
            self.start_bw_probe_down(tcp);
            self.start_bw_probe_cruise();
        } else {
            self.transition_to(State::Startup);
        }
    }
}
