//! BBRv2 as google/bbr v2alpha's `net/ipv4/tcp_bbr2.c` has it (commit
//! 0487ade55081; XanMod 6.2's `bbr2`), on the machinery v3 inherited from
//! it: a controller with [`Bbr3Params::v2`] runs v2alpha's function where
//! the two files differ and the shared one where they do not.
//!
//! Owns the v2alpha-only functions below (`bbr2_*`, named after the file)
//! and the list of where every other function of `tcp_bbr2.c` is. Must
//! never run for a v3 controller (every caller checks [`Bbr3::v2alpha`]).
//!
//! | `tcp_bbr2.c` | here | differs from v3 |
//! |---|---|---|
//! | `bbr2_main` | `Bbr3::cong_control` | no separate latest-delivery step (it is part of `bbr2_update_congestion_signals`, so the fast path skips it); `ecn_in_round |= is_ece` without the eligibility gate |
//! | `bbr2_update_congestion_signals` | [`Bbr3::bbr2_update_congestion_signals`] | loss round and one-round maxima inside the model update |
//! | `bbr2_adapt_lower_bounds` | `bounds.rs` `adapt_lower_bounds` | ECN also cuts `bw_lo` (`bbr_ecn_bw_lo`); no `bw_lo ≥ 1` floor |
//! | `bbr_bw` | `bounds.rs` `bw` | also bounded by v2alpha's separate `bw_hi` |
//! | `bbr2_adapt_upper_bounds` | `bounds.rs` `adapt_upper_bounds` | remembers an OK probe sample; raises `bw_hi` with `inflight_hi` |
//! | `bbr2_handle_inflight_too_high` | `bounds.rs` `handle_inflight_too_high` | ECN cuts `bw_hi` (`bbr2_handle_inflight_too_high_via_ecn`) |
//! | `bbr2_is_inflight_too_high` | `bounds.rs` | CE "too high" at `≥` the threshold (v3 `>`) |
//! | `bbr2_probe_inflight_hi_upward` | `bounds.rs` `probe_inflight_hi_upward` | drops unused credit while not cwnd-limited; keeps the fast path |
//! | `bbr_check_full_bw_reached` | [`Bbr3::bbr2_check_full_bw_reached`] | v1's detector: `max_bw` at round starts, STARTUP only |
//! | `bbr2_handle_queue_too_high_in_startup` | `startup.rs` | `inflight_hi = BDP` (v3: `max(BDP, inflight_latest)`) |
//! | `bbr2_update_cycle_phase` (PROBE_UP) | [`Bbr3::bbr2_probe_up_done`] | leaves UP after ≥ min_rtt once inflight ≥ 1.25·BDP (queue built); v3 on a bw plateau |
//! | `bbr2_start_bw_probe_up` | `probe_bw.rs` | does not restart the plateau detector |
//! | `bbr2_update_ecn_alpha` | [`Bbr3::bbr2_update_ecn_alpha`] | alpha tracked whenever `ecn_factor ≠ 0`; eligibility from `bbr_ecn_enable` (module parameter, off) and min_rtt |
//! | `bbr_update_min_rtt` | `probe_rtt.rs` | `probe_rtt_min` refreshed on `rtt ≤ min` (v3 `<`) |
//! | `bbr2_set_state` | `loss.rs` | RTO resets `full_bw` only; `inflight_lo = prior_cwnd` |
//! | `bbr2_undo_cwnd` | `loss.rs` | resets `full_bw`/`full_bw_cnt`; keeps the fast path |
//! | `bbr2_skb_marked_lost` | `loss.rs` | the lost-packet sample carries `delivered_ce` |
//! | `bbr_min_tso_segs` | [`Bbr3::bbr2_min_tso_segs`] | 1 segment below 1.2 Mbit/s pacing, else 2 |
//! | `bbr_cwnd_event` | `bbr3.rs`, `ecn.rs` | CE events gated by `bbr_ecn_enable`; no TLP event |
//! | `bbr2_init` | `Bbr3::new` | `next_rtt_delivered = 0` |
//! | every other function (`bbr_update_round_start`, `bbr_calculate_bw_sample`, pacing, `bbr_bdp`, `bbr_quantization_budget`, `bbr_set_cwnd`, `bbr_update_ack_aggregation`, `bbr2_check_loss_too_high_in_startup`, `bbr2_check_drain`, the rest of `bbr2_update_cycle_phase`, `bbr2_check_time_to_probe_bw`, `bbr2_check_time_to_cruise`, `bbr2_start_bw_probe_{refill,down,cruise}`, `bbr2_pick_probe_wait`, `bbr2_is_reno_coexistence_probe_time`, PROBE_RTT, `bbr2_ssthresh`, `bbr_save_cwnd`, `bbr2_fast_path`) | the v3 code | same logic, v2alpha's values ([`Bbr3Params::v2`]) |
//!
//! `bbr_cwnd_tso_budget` = 1, `bbr_drain_to_target` = true,
//! `bbr_extra_acked_in_startup` = 1, `bbr_usage_based_cwnd` = false,
//! `bbr_refill_add_inc` = 0, `bbr_bw_probe_reno_gain` = 1.0: v2alpha's
//! defaults, under which its code is v3's.

use super::params::{BBR_SCALE, BBR_UNIT, INF};
use super::round::{Sample, to_u32};
use super::{Bbr3, Bbr3Params, Ctx};
use crate::tcp::Tcp;

/// `bbr_bw_probe_pif_gain` = 1.25: PROBE_UP has built a queue once
/// inflight reaches this multiple of the BDP.
pub(super) const BW_PROBE_PIF_GAIN: u32 = BBR_UNIT * 5 / 4;
/// `bbr_min_tso_rate` = 1.2 Mbit/s: below it, 1-segment bursts.
pub(super) const MIN_TSO_RATE_BITS: u64 = 1_200_000;
/// `bbr_ecn_bw_lo` (default true): ECN cuts `bw_lo` as well as `inflight_lo`.
pub(super) const ECN_BW_LO: bool = true;
/// `bbr_ecn_bw_hi` (default true): ECN while probing cuts `bw_hi`.
pub(super) const ECN_BW_HI: bool = true;

impl Bbr3 {
    /// Whether this controller runs v2alpha's logic (`bbr2`).
    pub(super) fn v2alpha(&self) -> bool {
        self.params.version == 2
    }

    /// `bbr2_update_congestion_signals`: feed the max-bw filter, note loss,
    /// keep the one-round maxima and, once per loss round, adapt the lower
    /// bounds and restart the one-round filters from this sample.
    pub(super) fn bbr2_update_congestion_signals(&mut self, tcp: &Tcp, rs: &Sample, ctx: &Ctx) {
        self.loss_round_start = false;
        if !self.take_sample(rs, ctx) {
            return;
        }
        // Rate and volume of delivered data from the latest round trip.
        self.bw_latest = self.bw_latest.max(ctx.sample_bw);
        self.inflight_latest = self.inflight_latest.max(to_u32(rs.delivered.max(0) as u64));
        if rs.prior_delivered < self.loss_round_delivered {
            return; // Skip the per-round-trip updates.
        }
        self.loss_round_delivered = tcp.delivered;
        self.loss_round_start = true;
        self.adapt_lower_bounds(tcp);
        self.loss_in_round = false;
        self.ecn_in_round = false;
        self.bw_latest = ctx.sample_bw;
        self.inflight_latest = to_u32(rs.delivered.max(0) as u64);
    }

    /// v1's `bbr_check_full_bw_reached` (which v2alpha keeps): at each
    /// non-app-limited round start in STARTUP, the pipe is full after
    /// `full_bw_cnt` rounds whose `max_bw` did not grow 25% over the
    /// baseline.
    pub(super) fn bbr2_check_full_bw_reached(&mut self, rs: &Sample) {
        if self.full_bw_reached || !self.round_start || rs.is_app_limited {
            return;
        }
        let bw_thresh =
            (u64::from(self.full_bw) * u64::from(self.params.full_bw_thresh)) >> BBR_SCALE;
        if u64::from(self.max_bw()) >= bw_thresh {
            self.full_bw = self.max_bw();
            self.full_bw_cnt = 0;
            return;
        }
        self.full_bw_cnt = (self.full_bw_cnt + 1).min(3); // 2-bit field
        self.full_bw_reached = self.full_bw_cnt >= self.params.full_bw_cnt;
    }

    /// The PROBE_UP arm of `bbr2_update_cycle_phase`: whether to stop
    /// probing, because (1) inflight reached an inflight_hi that was too
    /// high last time ("risky"), or (2) after at least one min_rtt inflight
    /// reached 1.25·BDP, so a queue is building. (3) loss and (4) ECN are
    /// judged by `bbr2_is_inflight_too_high`.
    pub(super) fn bbr2_probe_up_done(&mut self, tcp: &Tcp, inflight: u32, bw: u32) -> bool {
        if self.prev_probe_too_high && inflight >= self.inflight_hi {
            self.stopped_risky_probe = true;
            return true;
        }
        self.has_elapsed_in_phase(tcp, u64::from(self.min_rtt_us))
            && inflight >= self.inflight(tcp, bw, BW_PROBE_PIF_GAIN)
    }

    /// `bbr2_handle_inflight_too_high_via_ecn`: with ECN while probing and
    /// no OK probe sample yet, cut `bw_hi` by the ECN factor.
    pub(super) fn bbr2_cut_bw_hi_via_ecn(&mut self) {
        if ECN_BW_HI && self.ecn_eligible && !self.got_ok_bw_probe_sample {
            if self.v2_bw_hi == INF {
                self.v2_bw_hi = self.max_bw();
            }
            self.v2_bw_hi = super::round::scale(self.v2_bw_hi, self.ecn_cut());
        }
    }

    /// `bbr2_update_ecn_alpha` (each round start): alpha follows the CE
    /// ratio whenever `ecn_factor` is set; the flow becomes ECN-eligible
    /// when the `bbr_ecn_enable` module parameter is on and min_rtt is
    /// short enough.
    pub(super) fn bbr2_update_ecn_alpha(&mut self, tcp: &Tcp) {
        let p = &self.params;
        if p.ecn_factor == 0 {
            return;
        }
        let Some(ce_ratio) = self.ecn_ce_ratio(tcp) else {
            return; // Nothing delivered, or backwards (WARN_ON_ONCE in the kernel).
        };
        if !self.ecn_eligible
            && p.ecn_enable
            && (self.min_rtt_us <= p.ecn_max_rtt_us || p.ecn_max_rtt_us == 0)
        {
            self.ecn_eligible = true;
        }
        self.ecn_alpha_step(tcp, ce_ratio);
    }

    /// `bbr_min_tso_segs` of v2alpha: one segment per burst below
    /// 1.2 Mbit/s of pacing, else two.
    pub(super) fn bbr2_min_tso_segs(tcp: &Tcp) -> u32 {
        if tcp.pacing_rate < MIN_TSO_RATE_BITS / 8 {
            1
        } else {
            2
        }
    }
}

impl Bbr3Params {
    /// Whether these are v2alpha's values, and with them its logic.
    pub fn is_v2alpha(&self) -> bool {
        self.version == 2
    }
}
