//! min_rtt tracking and PROBE_RTT (`bbr_update_min_rtt`,
//! `bbr_check_probe_rtt_done`).
//!
//! The min_rtt filter window is [`BBR_MIN_RTT_WIN_SEC`] (10 s). When the
//! estimate expires (no sample ≤ it for 10 s), BBR enters PROBE_RTT and caps
//! cwnd at [`BBR_CWND_MIN_TARGET`] (4 packets). Once in-flight data is at or
//! below 4, it holds for at least [`BBR_PROBE_RTT_MODE_MS`] (200 ms) and one
//! packet-timed round, then restores the saved cwnd and returns to PROBE_BW
//! (or STARTUP if the pipe was never full). That costs about 2% (200 ms/10 s)
//! of a busy flow's throughput; flows with natural silences refresh min_rtt
//! opportunistically and never pay it.
//!
//! Stamps are in jiffies ([`HZ`]), compared with the kernel's strict `after()`.

use super::{
    BBR_CWND_MIN_TARGET, BBR_MIN_RTT_WIN_SEC, BBR_PROBE_RTT_MODE_MS, Bbr1, HZ, Mode, State,
    jiffies, msecs_to_jiffies,
};
use crate::rate::RateSample;
use crate::tcp::Tcp;

/// The data of the PROBE_RTT mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) struct Probe {
    /// `probe_rtt_done_stamp`: the end of the 200 ms hold, in jiffies;
    /// `None` (the kernel's 0) until in-flight data has fallen to 4 packets.
    pub(super) done_stamp: Option<u64>,
    /// `probe_rtt_round_done`: a full round has passed at ≤ 4 packets.
    pub(super) round_done: bool,
}

impl Bbr1 {
    /// `bbr_update_min_rtt`: track min_rtt, and enter/run/leave PROBE_RTT.
    pub(super) fn update_min_rtt(&mut self, tcp: &mut Tcp, rs: &RateSample) {
        let now = jiffies(tcp.now);
        let filter_expired = now > self.min_rtt_stamp + BBR_MIN_RTT_WIN_SEC * HZ;
        if let Some(rtt) = rs.rtt {
            let rtt_us = u32::try_from(rtt.as_micros()).unwrap_or(u32::MAX);
            // Only a strictly lower sample postpones PROBE_RTT (mainline
            // since 2020, commit 1b9e2a8c99a5: `<`, was `<=`). On expiry the
            // current sample replaces the estimate, unless the ACK may have
            // been delayed (it would overstate the RTT).
            if self.min_rtt_us.is_none_or(|m| rtt_us < m) || (filter_expired && !rs.is_ack_delayed)
            {
                self.min_rtt_us = Some(rtt_us);
                self.min_rtt_stamp = now;
            }
        }

        if BBR_PROBE_RTT_MODE_MS > 0
            && filter_expired
            && !self.idle_restart
            && self.mode() != Mode::ProbeRtt
        {
            // Dip, drain the queue. As in the kernel the mode is set before
            // saving cwnd, so `save_cwnd` keeps max(prior_cwnd, cwnd).
            self.transition_to(State::ProbeRtt(Probe::default()));
            self.save_cwnd(tcp);
        }

        if let State::ProbeRtt(mut probe) = self.state {
            // Ignore low-rate samples during this mode (BBR writes
            // `tp->app_limited` here, as the kernel does).
            tcp.app_limited = (tcp.delivered + u64::from(tcp.packets_in_flight())).max(1);
            // Maintain min packets in flight for max(200 ms, 1 round).
            if probe.done_stamp.is_none() && tcp.packets_in_flight() <= BBR_CWND_MIN_TARGET {
                probe.done_stamp = Some(now + msecs_to_jiffies(BBR_PROBE_RTT_MODE_MS));
                probe.round_done = false;
                self.next_rtt_delivered = tcp.delivered;
                self.state = State::ProbeRtt(probe);
            } else if probe.done_stamp.is_some() {
                if self.round_start {
                    probe.round_done = true;
                    self.state = State::ProbeRtt(probe);
                }
                if probe.round_done {
                    self.check_probe_rtt_done(tcp);
                }
            }
        }
        // Restart after idle ends only once we process a new S/ACK for data.
        if rs.delivered.is_some_and(|d| d > 0) {
            self.idle_restart = false;
        }
    }

    /// `bbr_check_probe_rtt_done`: leave PROBE_RTT once its deadline has
    /// passed, restoring cwnd and re-arming the 10 s min_rtt window.
    pub(super) fn check_probe_rtt_done(&mut self, tcp: &mut Tcp) {
        let State::ProbeRtt(probe) = self.state else {
            return;
        };
        let now = jiffies(tcp.now);
        if probe.done_stamp.is_none_or(|done| now <= done) {
            return;
        }
        self.min_rtt_stamp = now; // wait a while until the next PROBE_RTT
        tcp.snd_cwnd = tcp.snd_cwnd.max(self.prior_cwnd);
        self.reset_mode(tcp);
    }

    /// `bbr_reset_mode`: back to STARTUP if the pipe was never full, else PROBE_BW.
    fn reset_mode(&mut self, tcp: &Tcp) {
        if self.full_bw_reached {
            self.reset_probe_bw_mode(tcp);
        } else {
            self.transition_to(State::Startup);
        }
    }
}
