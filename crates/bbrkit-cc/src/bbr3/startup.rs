//! STARTUP and its exits: the bandwidth-plateau detector (also used in
//! PROBE_UP), the loss-based exit, and the shared "queue too high" handler.
//!
//! Owns `bbr_reset_full_bw`, `bbr_check_full_bw_reached`,
//! `bbr_check_loss_too_high_in_startup` and
//! `bbr_handle_queue_too_high_in_startup`. The ECN exit lives in `ecn.rs`.
//! Must never change mode itself: DRAIN is entered by `drain.rs`.

use super::params::BBR_UNIT;
use super::round::Sample;
use super::{Bbr3, Ctx};
use crate::tcp::{CaState, Tcp};

impl Bbr3 {
    /// `bbr_reset_full_bw`: restart the plateau detector.
    pub(super) fn reset_full_bw(&mut self) {
        self.full_bw = 0;
        self.full_bw_cnt = 0;
        self.full_bw_now = false;
    }

    /// `bbr_check_full_bw_reached`: the pipe is full after `full_bw_cnt` (3)
    /// non-app-limited rounds whose bw samples did not reach `full_bw_thresh`
    /// (1.25×) of the baseline. v3 compares the per-ACK *sample* (v1 used
    /// max_bw) and re-arms the baseline on any ACK; the count moves only at
    /// round starts. Why 3 rounds: receive-window autotuning grows the rwin,
    /// then we fill it, then we see the higher delivery rate.
    pub(super) fn check_full_bw_reached(&mut self, rs: &Sample, ctx: &Ctx) {
        if self.full_bw_now || rs.is_app_limited {
            return;
        }
        let bw_thresh = (u64::from(self.full_bw) * u64::from(self.params.full_bw_thresh))
            >> super::params::BBR_SCALE;
        if u64::from(ctx.sample_bw) >= bw_thresh {
            self.reset_full_bw();
            self.full_bw = ctx.sample_bw;
            return;
        }
        if !self.round_start {
            return;
        }
        self.full_bw_cnt = (self.full_bw_cnt + 1).min(3); // 2-bit field
        self.full_bw_now = self.full_bw_cnt >= self.params.full_bw_cnt;
        self.full_bw_reached |= self.full_bw_now;
    }

    /// `bbr_handle_queue_too_high_in_startup`: loss or ECN ended STARTUP;
    /// remember the volume that was too much as `inflight_hi`.
    /// (v2alpha: `inflight_hi` = the BDP alone.)
    pub(super) fn handle_queue_too_high_in_startup(&mut self, tcp: &Tcp) {
        self.full_bw_reached = true;
        let bdp = self.inflight(tcp, self.max_bw(), BBR_UNIT);
        self.inflight_hi = if self.v2alpha() {
            bdp
        } else {
            bdp.max(self.inflight_latest)
        };
    }

    /// `bbr_check_loss_too_high_in_startup`: at the end of each loss round
    /// spent in fast Recovery during STARTUP, exit if there were at least
    /// `full_loss_cnt` (v3: 6, v2: 8) loss events and the loss rate of this
    /// sample exceeds `loss_thresh` (2%). Waiting for the end of the round
    /// filters noise and tells how much to drain.
    pub(super) fn check_loss_too_high_in_startup(&mut self, tcp: &Tcp, rs: &Sample) {
        if self.full_bw_reached {
            return;
        }
        if rs.losses > 0 && self.loss_events_in_round < 0xF {
            self.loss_events_in_round += 1;
        }
        if self.params.full_loss_cnt > 0
            && self.loss_round_start
            && tcp.ca_state == CaState::Recovery
            && self.loss_events_in_round >= self.params.full_loss_cnt
            && self.is_inflight_too_high(rs)
        {
            self.handle_queue_too_high_in_startup(tcp);
            self.counters.startup_loss_exits += 1;
            return;
        }
        if self.loss_round_start {
            self.loss_events_in_round = 0;
        }
    }
}
