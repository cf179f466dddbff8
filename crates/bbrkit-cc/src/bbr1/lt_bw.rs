//! Long-term ("LT") bandwidth sampling: token-bucket policer detection
//! (`bbr_lt_bw_sampling`, `bbr_lt_bw_interval_done`).
//!
//! Policers are common ("An Internet-Wide Analysis of Traffic Policing",
//! SIGCOMM 2016). BBR estimates it is policed when two consecutive sampling
//! intervals have consistent throughput and high loss. An interval starts at
//! the first loss (the policer's bucket is then empty), lasts
//! [`BBR_LT_INTVL_MIN_RTTS`]..=4× that many rounds, ends on a loss, and
//! counts if lost/delivered ≥ [`BBR_LT_LOSS_THRESH`]/256. Two intervals are
//! consistent if their rates differ by ≤ 1/8 ([`BBR_LT_BW_RATIO`]) or
//! ≤ 4 kbit/s ([`BBR_LT_BW_DIFF`]). Then BBR uses their average, `lt_bw`, at
//! gain 1.0 for [`BBR_LT_BW_MAX_RTTS`] (48) rounds, and restarts PROBE_BW.
//! Timestamps here are milliseconds of `tcp.delivered_time`, as in Linux.

use super::{
    BBR_LT_BW_DIFF, BBR_LT_BW_MAX_RTTS, BBR_LT_BW_RATIO, BBR_LT_INTVL_MIN_RTTS, BBR_LT_LOSS_THRESH,
    BBR_SCALE, BBR_UNIT, BW_UNIT, Bbr1, Mode, USEC_PER_MSEC,
};
use crate::tcp::Tcp;

/// Long-term sampling state (the `lt_*` fields of `struct bbr`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) struct LtBw {
    /// `lt_is_sampling`: taking long-term samples now.
    pub(super) is_sampling: bool,
    /// `lt_rtt_cnt`: rounds in this interval (or rounds using `lt_bw`).
    pub(super) rtt_cnt: u8,
    /// `lt_use_bw`: use `lt_bw` as the bw estimate.
    pub(super) use_bw: bool,
    /// `lt_bw`: long-term delivery rate, pkts/µs << 24.
    pub(super) bw: u32,
    /// `lt_last_delivered`: `tcp.delivered` at interval start.
    pub(super) last_delivered: u64,
    /// `lt_last_stamp`: `tcp.delivered_time` in ms at interval start.
    pub(super) last_stamp: u64,
    /// `lt_last_lost`: `tcp.lost` at interval start.
    pub(super) last_lost: u64,
}

impl Bbr1 {
    /// `bbr_reset_lt_bw_sampling_interval`: start a new sampling interval.
    fn reset_lt_bw_sampling_interval(&mut self, tcp: &Tcp) {
        self.lt.last_stamp = tcp.delivered_time.as_micros() / USEC_PER_MSEC;
        self.lt.last_delivered = tcp.delivered;
        self.lt.last_lost = tcp.lost;
        self.lt.rtt_cnt = 0;
    }

    /// `bbr_reset_lt_bw_sampling`: completely reset long-term sampling.
    pub(super) fn reset_lt_bw_sampling(&mut self, tcp: &Tcp) {
        self.lt.bw = 0;
        self.lt.use_bw = false;
        self.lt.is_sampling = false;
        self.reset_lt_bw_sampling_interval(tcp);
    }

    /// `bbr_lt_bw_interval_done`: an interval ended with rate `bw`; are we policed?
    pub(super) fn lt_bw_interval_done(&mut self, tcp: &Tcp, bw: u32) {
        if self.lt.bw != 0 {
            // Is the new bw close to the previous interval's?
            let diff = bw.abs_diff(self.lt.bw);
            if u64::from(diff) * u64::from(BBR_UNIT) <= BBR_LT_BW_RATIO * u64::from(self.lt.bw)
                || Self::rate_bytes_per_sec(tcp, u64::from(diff), BBR_UNIT) <= BBR_LT_BW_DIFF
            {
                // All criteria are met; estimate we're policed.
                self.lt.bw = ((u64::from(bw) + u64::from(self.lt.bw)) >> 1) as u32;
                self.lt.use_bw = true;
                self.pacing_gain = BBR_UNIT; // try to avoid drops
                self.lt.rtt_cnt = 0;
                return;
            }
        }
        self.lt.bw = bw;
        self.reset_lt_bw_sampling_interval(tcp);
    }

    /// `bbr_lt_bw_sampling`, with the two rate-sample fields it reads.
    pub(super) fn lt_bw_sampling(&mut self, tcp: &Tcp, losses: u32, is_app_limited: bool) {
        if self.lt.use_bw {
            // Already using lt_bw: stop after BBR_LT_BW_MAX_RTTS rounds.
            if self.mode() == Mode::ProbeBw && self.round_start {
                self.lt.rtt_cnt = self.lt.rtt_cnt.saturating_add(1);
                if self.lt.rtt_cnt >= BBR_LT_BW_MAX_RTTS {
                    self.reset_lt_bw_sampling(tcp); // stop using lt_bw
                    self.reset_probe_bw_mode(tcp); // restart gain cycling
                }
            }
            return;
        }

        // Wait for the first loss before sampling, to let the policer
        // exhaust its tokens; earlier samples include bursts that
        // over-estimate the policed rate.
        if !self.lt.is_sampling {
            if losses == 0 {
                return;
            }
            self.reset_lt_bw_sampling_interval(tcp);
            self.lt.is_sampling = true;
        }

        // To avoid underestimates, reset sampling if we run out of data.
        if is_app_limited {
            self.reset_lt_bw_sampling(tcp);
            return;
        }

        if self.round_start {
            self.lt.rtt_cnt = self.lt.rtt_cnt.saturating_add(1);
        }
        if self.lt.rtt_cnt < BBR_LT_INTVL_MIN_RTTS {
            return; // the interval needs to be longer
        }
        if self.lt.rtt_cnt > 4 * BBR_LT_INTVL_MIN_RTTS {
            self.reset_lt_bw_sampling(tcp); // the interval is too long
            return;
        }

        // End the interval on a loss, when the policer's tokens are
        // estimated exhausted; stopping earlier under-estimates its rate.
        if losses == 0 {
            return;
        }

        let lost = tcp.lost.saturating_sub(self.lt.last_lost);
        let delivered = tcp.delivered.saturating_sub(self.lt.last_delivered);
        // Is the loss rate (lost/delivered) >= lt_loss_thresh? If not, wait.
        if delivered == 0 || (lost << BBR_SCALE) < BBR_LT_LOSS_THRESH * delivered {
            return;
        }

        // Average delivery rate over the interval.
        let now_ms = tcp.delivered_time.as_micros() / USEC_PER_MSEC;
        let t = now_ms as i64 - self.lt.last_stamp as i64;
        if t < 1 {
            return; // interval shorter than a millisecond: wait
        }
        if t as u64 >= u64::from(u32::MAX) / USEC_PER_MSEC {
            self.reset_lt_bw_sampling(tcp); // interval too long
            return;
        }
        let t_us = t as u64 * USEC_PER_MSEC;
        let bw = u128::from(delivered) * u128::from(BW_UNIT) / u128::from(t_us);
        self.lt_bw_interval_done(tcp, u32::try_from(bw).unwrap_or(u32::MAX));
    }
}
