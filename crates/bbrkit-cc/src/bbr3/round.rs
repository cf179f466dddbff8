//! Packet-timed rounds, the per-ACK bandwidth sample, and the "latest"
//! (one-round) delivery signals with their loss round.
//!
//! Owns the kernel-typed view of a rate sample ([`Sample`]) and
//! `bbr_update_round_start`, `bbr_calculate_bw_sample`,
//! `bbr_update_latest_delivery_signals`, `bbr_advance_latest_delivery_signals`.
//! Must never decide state transitions.

use super::params::BW_UNIT;
use super::{Bbr3, Ctx};
use crate::rate::RateSample;
use crate::tcp::Tcp;

/// A [`RateSample`] in the kernel's `struct rate_sample` types: invalid
/// `delivered`/`interval` become -1 and times become whole microseconds.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Sample {
    /// `rs->delivered`: packets delivered over the interval, -1 if invalid.
    pub delivered: i64,
    /// `rs->interval_us`: -1 if invalid.
    pub interval_us: i64,
    /// `rs->rtt_us`: -1 if not measured.
    pub rtt_us: i64,
    /// `rs->prior_delivered`.
    pub prior_delivered: u64,
    /// `rs->acked_sacked`.
    pub acked_sacked: u32,
    /// `rs->losses`: packets newly marked lost on this ACK.
    pub losses: u32,
    /// `rs->prior_in_flight`.
    pub prior_in_flight: u32,
    /// `rs->tx_in_flight`.
    pub tx_in_flight: u32,
    /// `rs->lost`: packets lost between the sampled packet's send and now.
    pub lost: u64,
    /// `rs->delivered_ce`.
    pub delivered_ce: u64,
    /// `rs->is_app_limited`.
    pub is_app_limited: bool,
    /// `rs->is_ack_delayed`.
    pub is_ack_delayed: bool,
    /// `rs->is_ece`.
    pub is_ece: bool,
}

impl From<&RateSample> for Sample {
    fn from(rs: &RateSample) -> Self {
        let clamp = |v: u128| v.min(i64::MAX as u128) as i64;
        Sample {
            delivered: rs.delivered.map_or(-1, |d| d.min(i64::MAX as u64) as i64),
            interval_us: rs.interval.map_or(-1, |d| clamp(d.as_micros())),
            rtt_us: rs.rtt.map_or(-1, |d| clamp(d.as_micros())),
            prior_delivered: rs.prior_delivered,
            acked_sacked: rs.acked_sacked,
            losses: rs.losses,
            prior_in_flight: rs.prior_in_flight,
            tx_in_flight: rs.tx_in_flight,
            lost: rs.lost,
            delivered_ce: rs.delivered_ce,
            is_app_limited: rs.is_app_limited,
            is_ack_delayed: rs.is_ack_delayed,
            is_ece: rs.is_ece,
        }
    }
}

/// `bbr_calculate_bw_sample`: `ceil(delivered · BW_UNIT / interval_us)`, 0 if
/// the sample is invalid. v3 rounds *up* so that low rates can still grow.
/// DEVIATION: a result above `u32::MAX` saturates (the kernel truncates).
pub(super) fn calculate_bw_sample(rs: &Sample) -> u32 {
    if rs.interval_us <= 0 || rs.delivered < 0 {
        return 0;
    }
    let den = rs.interval_us as u64;
    // u64 like the kernel's DIV_ROUND_UP_ULL (a u128 division is a slow
    // libcall); u128 only if delivered · 2^24 would overflow.
    match (rs.delivered as u64).checked_mul(BW_UNIT) {
        Some(num) => num.div_ceil(den).min(u64::from(u32::MAX)) as u32,
        None => (u128::from(rs.delivered as u64) * u128::from(BW_UNIT))
            .div_ceil(u128::from(den))
            .min(u128::from(u32::MAX)) as u32,
    }
}

/// Clamps a packet count to the kernel's `u32`.
pub(super) fn to_u32(v: u64) -> u32 {
    v.min(u64::from(u32::MAX)) as u32
}

/// `(v * frac) >> BBR_SCALE` in 64 bits, saturated to `u32`.
pub(super) fn scale(v: u32, frac: u32) -> u32 {
    to_u32((u64::from(v) * u64::from(frac)) >> super::params::BBR_SCALE)
}

impl Bbr3 {
    /// `bbr_update_round_start`: a round ends when a packet sent after the
    /// previous round's end is (S)ACKed. Only valid samples count.
    pub(super) fn update_round_start(&mut self, tcp: &Tcp, rs: &Sample) {
        self.round_start = false;
        if rs.interval_us > 0 && rs.prior_delivered >= self.next_rtt_delivered {
            self.next_rtt_delivered = tcp.delivered;
            self.round_start = true;
        }
    }

    /// `bbr_update_latest_delivery_signals`: one-round maxima of the bw
    /// sample and of delivered data, and the loss round (which
    /// [`Bbr3::note_loss`] re-anchors at the first loss of a round).
    pub(super) fn update_latest_delivery_signals(&mut self, tcp: &Tcp, rs: &Sample, ctx: &Ctx) {
        self.loss_round_start = false;
        if rs.interval_us <= 0 || rs.acked_sacked == 0 {
            return; // Not a valid observation.
        }
        self.bw_latest = self.bw_latest.max(ctx.sample_bw);
        self.inflight_latest = self.inflight_latest.max(to_u32(rs.delivered as u64));
        if rs.prior_delivered >= self.loss_round_delivered {
            self.loss_round_delivered = tcp.delivered;
            self.loss_round_start = true;
        }
    }

    /// `bbr_advance_latest_delivery_signals`: at a loss-round start, restart
    /// the one-round filters from this sample.
    /// DEVIATION: [`RateSample`] has no `is_acking_tlp_retrans_seq`, so the
    /// filters are always advanced (the kernel keeps them on an ACK of a TLP
    /// retransmit).
    pub(super) fn advance_latest_delivery_signals(&mut self, rs: &Sample, ctx: &Ctx) {
        if self.loss_round_start {
            self.bw_latest = ctx.sample_bw;
            self.inflight_latest = to_u32(rs.delivered.max(0) as u64);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bw_sample_rounds_up_and_rejects_invalid() {
        let mut rs = Sample {
            delivered: 1,
            interval_us: 3,
            ..Sample::default()
        };
        // 2^24 / 3 = 5592405.33 → 5592406
        assert_eq!(calculate_bw_sample(&rs), 5_592_406);
        rs.interval_us = -1;
        assert_eq!(calculate_bw_sample(&rs), 0);
        rs.interval_us = 1;
        rs.delivered = -1;
        assert_eq!(calculate_bw_sample(&rs), 0);
        rs.delivered = 1 << 40;
        assert_eq!(calculate_bw_sample(&rs), u32::MAX);
    }
}
