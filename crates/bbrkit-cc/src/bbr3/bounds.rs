//! The model's bounds: long-term `bw_hi`/`inflight_hi` (probed for, cut on
//! high loss or ECN while probing) and short-term `bw_lo`/`inflight_lo` (cut
//! by beta once per loss round with loss/ECN while not probing).
//!
//! Owns `bbr_max_bw`, `bbr_bw`, the max-bw filter, `bbr_update_congestion_signals`,
//! `bbr_adapt_lower_bounds` and helpers, `bbr_is_inflight_too_high`,
//! `bbr_inflight_hi_from_lost_skb`, `bbr_inflight_with_headroom`,
//! `bbr_handle_inflight_too_high`, `bbr_adapt_upper_bounds`,
//! `bbr_probe_inflight_hi_upward` and `bbr_raise_inflight_hi_slope`.
//! Must never pick a ProbeBW phase except the two transitions the reference
//! makes here (UP→DOWN on too-high, re-probe after a risky probe).

use super::counters::Hit;
use super::params::{BBR_SCALE, BBR_UNIT, INF, phase};
use super::round::{Sample, scale, to_u32};
use super::{AckPhase, Bbr3, Ctx, Mode};
use crate::tcp::Tcp;

impl Bbr3 {
    /// `bbr_max_bw`: max bw sample of this and the previous ProbeBW cycle.
    pub(super) fn max_bw(&self) -> u32 {
        self.bw_hi[0].max(self.bw_hi[1])
    }

    /// `bbr_bw`: the bandwidth the flow uses, `min(max_bw, bw_lo)`
    /// (v2alpha: and its separate `bw_hi`).
    pub(super) fn bw(&self) -> u32 {
        self.max_bw().min(self.bw_lo).min(self.v2_bw_hi)
    }

    /// `bbr_take_max_bw_sample`: into the current cycle's slot.
    fn take_max_bw_sample(&mut self, bw: u32) {
        self.bw_hi[1] = self.bw_hi[1].max(bw);
    }

    /// `bbr_advance_max_bw_filter`: once per ProbeBW cycle forget the older
    /// cycle, unless the current one has no sample yet.
    pub(super) fn advance_max_bw_filter(&mut self) {
        if self.bw_hi[1] == 0 {
            return;
        }
        self.bw_hi[0] = self.bw_hi[1];
        self.bw_hi[1] = 0;
    }

    /// The head of `bbr_update_congestion_signals` and v2alpha's
    /// `bbr2_update_congestion_signals`: for a valid observation, feed the
    /// max-bw filter (app-limited samples only if they raise it) and note
    /// loss. Returns whether the observation was valid.
    pub(super) fn take_sample(&mut self, rs: &Sample, ctx: &Ctx) -> bool {
        if rs.interval_us <= 0 || rs.acked_sacked == 0 {
            return false; // Not a valid observation.
        }
        let bw = ctx.sample_bw;
        if !rs.is_app_limited || bw >= self.max_bw() {
            self.take_max_bw_sample(bw);
        }
        self.loss_in_round |= rs.losses > 0;
        true
    }

    /// `bbr_update_congestion_signals`: take the sample, and once per loss
    /// round adapt the lower bounds.
    pub(super) fn update_congestion_signals(&mut self, tcp: &Tcp, rs: &Sample, ctx: &Ctx) {
        if !self.take_sample(rs, ctx) || !self.loss_round_start {
            return;
        }
        self.adapt_lower_bounds(tcp);
        self.loss_in_round = false;
        self.ecn_in_round = false;
    }

    /// `bbr_init_lower_bounds`.
    fn init_lower_bounds(&mut self, tcp: &Tcp, init_bw: bool) {
        if init_bw && self.bw_lo == INF {
            self.bw_lo = self.max_bw();
        }
        if self.inflight_lo == INF {
            self.inflight_lo = tcp.snd_cwnd;
        }
    }

    /// `bbr_adapt_lower_bounds`: when not probing, cut `bw_lo` and
    /// `inflight_lo` to (1 − beta) ≈ 0.7 per round with loss — but not below
    /// what the last round delivered — and `inflight_lo` by
    /// (1 − alpha·ecn_factor) per round with ECN (v2alpha,
    /// `bbr2_adapt_lower_bounds`: `bw_lo` too, and no floor at 1).
    pub(super) fn adapt_lower_bounds(&mut self, tcp: &Tcp) {
        if self.is_probing_bandwidth() {
            return;
        }
        let v2alpha = self.v2alpha();
        let mut ecn_inflight_lo = INF;
        let mut ecn_bw_lo = INF;
        if self.ecn_in_round && self.params.ecn_factor > 0 && (self.ecn_eligible || !v2alpha) {
            let ecn_bw = v2alpha && super::v2alpha::ECN_BW_LO;
            self.init_lower_bounds(tcp, ecn_bw);
            ecn_inflight_lo = scale(self.inflight_lo, self.ecn_cut());
            if ecn_bw {
                ecn_bw_lo = scale(self.bw_lo, self.ecn_cut());
            }
        }
        if self.loss_in_round {
            self.init_lower_bounds(tcp, true);
            let loss_cut = BBR_UNIT.saturating_sub(self.params.beta);
            self.bw_lo = self.bw_latest.max(scale(self.bw_lo, loss_cut));
            self.inflight_lo = self.inflight_latest.max(scale(self.inflight_lo, loss_cut));
            self.counters.lo_cuts += 1;
        }
        self.inflight_lo = self.inflight_lo.min(ecn_inflight_lo);
        if v2alpha {
            self.bw_lo = self.bw_lo.min(ecn_bw_lo);
        } else {
            self.bw_lo = self.bw_lo.max(1);
        }
    }

    /// `bbr_reset_lower_bounds`.
    pub(super) fn reset_lower_bounds(&mut self) {
        self.bw_lo = INF;
        self.inflight_lo = INF;
    }

    /// `bbr_reset_congestion_signals`: after probing, before a phase that
    /// adapts the lower bounds.
    pub(super) fn reset_congestion_signals(&mut self) {
        self.loss_in_round = false;
        self.ecn_in_round = false;
        self.loss_in_cycle = false;
        self.ecn_in_cycle = false;
        self.bw_latest = 0;
        self.inflight_latest = 0;
    }

    /// `bbr_is_inflight_too_high`: loss above `loss_thresh` (2%) of
    /// `tx_in_flight`, or (ECN-eligible) CE above `ecn_thresh` (50%) of
    /// delivered.
    pub(super) fn is_inflight_too_high(&self, rs: &Sample) -> bool {
        if rs.lost > 0 && rs.tx_in_flight > 0 {
            let loss_thresh =
                (u64::from(rs.tx_in_flight) * u64::from(self.params.loss_thresh)) >> BBR_SCALE;
            if rs.lost > loss_thresh {
                return true;
            }
        }
        if rs.delivered_ce > 0
            && rs.delivered > 0
            && self.ecn_eligible
            && self.params.ecn_thresh > 0
        {
            let ecn_thresh = (rs.delivered as u64 * u64::from(self.params.ecn_thresh)) >> BBR_SCALE;
            // v2alpha (bbr2_is_inflight_too_high): at the threshold already.
            if rs.delivered_ce > ecn_thresh || (self.v2alpha() && rs.delivered_ce == ecn_thresh) {
                return true;
            }
        }
        false
    }

    /// `bbr_inflight_hi_from_lost_skb`: the inflight at which the loss rate
    /// crossed `loss_thresh` inside the lost packet `pcount`, solving
    /// `(lost_prev + p) / (inflight_prev + p) = loss_thresh` for the prefix
    /// `p`, rounded up. `INF` if the sample is inconsistent.
    pub(super) fn inflight_hi_from_lost_skb(&self, rs: &Sample, pcount: u32) -> u32 {
        let loss_thresh = u64::from(self.params.loss_thresh);
        let Some(inflight_prev) = rs.tx_in_flight.checked_sub(pcount) else {
            return INF;
        };
        let Some(lost_prev) = rs.lost.checked_sub(u64::from(pcount)) else {
            return INF;
        };
        let loss_budget =
            (u64::from(inflight_prev) * loss_thresh + u64::from(BBR_UNIT) - 1) >> BBR_SCALE;
        let lost_prefix = if lost_prev >= loss_budget {
            0
        } else {
            let divisor = u64::from(BBR_UNIT).saturating_sub(loss_thresh);
            if divisor == 0 {
                return INF;
            }
            ((loss_budget - lost_prev) << BBR_SCALE) / divisor
        };
        to_u32(u64::from(inflight_prev) + lost_prefix)
    }

    /// `bbr_inflight_with_headroom`: `inflight_hi` minus `inflight_headroom`
    /// (15%, at least one packet), at least `cwnd_min_target`.
    pub(super) fn inflight_with_headroom(&self) -> u32 {
        if self.inflight_hi == INF {
            return INF;
        }
        let headroom = scale(self.inflight_hi, self.params.inflight_headroom).max(1);
        self.inflight_hi
            .saturating_sub(headroom)
            .max(self.params.cwnd_min_target)
    }

    /// `bbr_handle_inflight_too_high`: react once per probe: set
    /// `inflight_hi = max(tx_in_flight, target_inflight · (1 − beta))` (unless
    /// app-limited) and, if in UP, go DOWN.
    /// (`path` only feeds the counters.)
    pub(super) fn handle_inflight_too_high(&mut self, tcp: &mut Tcp, rs: &Sample, path: Hit) {
        self.prev_probe_too_high = true;
        self.bw_probe_samples = false;
        if !rs.is_app_limited {
            let cut = scale(
                self.target_inflight(tcp),
                BBR_UNIT.saturating_sub(self.params.beta),
            );
            self.inflight_hi = rs.tx_in_flight.max(cut);
            if self.v2alpha() {
                self.bbr2_cut_bw_hi_via_ecn();
            }
        }
        self.counters.too_high(path, self.inflight_hi);
        if self.mode == Mode::ProbeBw && self.cycle_idx == phase::UP {
            self.start_bw_probe_down(tcp);
        }
    }

    /// `bbr_adapt_upper_bounds`: track the ACK phase of a probe; at the end
    /// of a probe's feedback advance the max-bw filter and maybe re-probe;
    /// cut `inflight_hi` if a probing sample was too high, else raise it to
    /// any higher level seen safe (and grow it in UP). Returns true if it
    /// decided a state transition.
    pub(super) fn adapt_upper_bounds(&mut self, tcp: &mut Tcp, rs: &Sample, ctx: &Ctx) -> bool {
        if self.ack_phase == AckPhase::ProbeStarting && self.round_start {
            self.ack_phase = AckPhase::ProbeFeedback;
        }
        if self.ack_phase == AckPhase::ProbeStopping && self.round_start {
            // End of samples from the bw probing phase.
            self.bw_probe_samples = false;
            self.ack_phase = AckPhase::Init;
            // Our current bw sample is our best recent chance at the highest
            // available bw: now is the time to forget the previous cycle.
            if self.mode == Mode::ProbeBw && !rs.is_app_limited {
                self.advance_max_bw_filter();
            }
            // We probed up to a previous inflight_hi without high loss/ECN:
            // probe again, letting inflight persist there for a round first.
            if self.mode == Mode::ProbeBw && self.stopped_risky_probe && !self.prev_probe_too_high {
                self.start_bw_probe_refill(tcp, 0);
                return true;
            }
        }
        if self.is_inflight_too_high(rs) {
            if self.bw_probe_samples {
                self.handle_inflight_too_high(tcp, rs, Hit::Ack);
            }
        } else {
            // v2alpha: remember a not-too-high bw probe sample.
            self.got_ok_bw_probe_sample |= self.bw_probe_samples;
            if self.inflight_hi == INF && self.v2_bw_hi == INF {
                return false; // No excess queue signals yet.
            }
            // Resilience to random loss: raise inflight_hi whenever a higher
            // level is seen safe, in any phase.
            if rs.tx_in_flight > self.inflight_hi {
                self.inflight_hi = rs.tx_in_flight;
            }
            // v2alpha: and bw_hi (only ever set by ECN; INF otherwise).
            if ctx.sample_bw > self.v2_bw_hi {
                self.v2_bw_hi = ctx.sample_bw;
            }
            if self.mode == Mode::ProbeBw && self.cycle_idx == phase::UP {
                self.probe_inflight_hi_upward(tcp, rs);
            }
        }
        false
    }

    /// `bbr_raise_inflight_hi_slope`: each UP round double the growth:
    /// +1, +2, +4, … packets of inflight_hi per round.
    pub(super) fn raise_inflight_hi_slope(&mut self, tcp: &Tcp) {
        let growth_this_round = 1u32 << self.bw_probe_up_rounds.min(31);
        self.bw_probe_up_rounds = (self.bw_probe_up_rounds + 1).min(30);
        self.bw_probe_up_cnt = (tcp.snd_cwnd / growth_this_round).max(1);
    }

    /// `bbr_probe_inflight_hi_upward`: while cwnd-limited at inflight_hi,
    /// add one packet of inflight_hi per `bw_probe_up_cnt` packets ACKed.
    fn probe_inflight_hi_upward(&mut self, tcp: &Tcp, rs: &Sample) {
        if !tcp.is_cwnd_limited || tcp.snd_cwnd < self.inflight_hi {
            if self.v2alpha() {
                self.bw_probe_up_acks = 0; // Don't accumulate unused credits.
            }
            return; // Not fully using inflight_hi, so don't grow it.
        }
        self.bw_probe_up_acks = self.bw_probe_up_acks.saturating_add(rs.acked_sacked);
        if self.bw_probe_up_acks >= self.bw_probe_up_cnt {
            let delta = self.bw_probe_up_acks / self.bw_probe_up_cnt;
            self.bw_probe_up_acks -= delta * self.bw_probe_up_cnt;
            self.inflight_hi = self.inflight_hi.saturating_add(delta);
            // v3: need to update cwnd (v2alpha keeps the fast path).
            self.try_fast_path &= self.v2alpha();
        }
        if self.round_start {
            self.raise_inflight_hi_slope(tcp);
        }
    }
}
