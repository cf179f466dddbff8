//! ACK aggregation: estimate how much more data was ACKed than `bw`
//! predicts over an epoch (`extra_acked`), and add that much cwnd so the
//! sender keeps going through ACK silences (Wi-Fi, cable, LRO/GRO).
//!
//! Two windows, each `extra_acked_win_rtts` (5) rounds long — 1 round while
//! STARTUP has not filled the pipe — give a 5–10 (1–2) round max filter.
//! The allowance is capped at cwnd when sampled and at bw·100 ms when used.
//!
//! Owns `bbr_update_ack_aggregation`, `bbr_extra_acked` and
//! `bbr_ack_aggregation_cwnd`. Must never change cwnd itself.

use super::Bbr3;
use super::params::{BBR_SCALE, BW_UNIT};
use super::round::{Sample, to_u32};
use crate::tcp::Tcp;

impl Bbr3 {
    /// `bbr_extra_acked`: max over the two windows.
    pub(super) fn extra_acked(&self) -> u32 {
        self.extra_acked[0].max(self.extra_acked[1])
    }

    /// `bbr_ack_aggregation_cwnd`: `min(extra_acked · gain, bw · 100 ms)`.
    pub(super) fn ack_aggregation_cwnd(&self) -> u32 {
        if self.params.extra_acked_gain == 0 {
            return 0;
        }
        let max_aggr_cwnd =
            to_u32(u64::from(self.bw()) * u64::from(self.params.extra_acked_max_us) / BW_UNIT);
        let aggr_cwnd = to_u32(
            (u64::from(self.params.extra_acked_gain) * u64::from(self.extra_acked())) >> BBR_SCALE,
        );
        aggr_cwnd.min(max_aggr_cwnd)
    }

    /// `bbr_update_ack_aggregation`.
    pub(super) fn update_ack_aggregation(&mut self, tcp: &Tcp, rs: &Sample) {
        if self.params.extra_acked_gain == 0
            || rs.acked_sacked == 0
            || rs.delivered < 0
            || rs.interval_us <= 0
        {
            return;
        }
        if self.round_start {
            self.extra_acked_win_rtts = (self.extra_acked_win_rtts + 1).min(0x1F);
            let thresh = if self.full_bw_reached {
                self.params.extra_acked_win_rtts
            } else {
                1
            };
            if self.extra_acked_win_rtts >= thresh {
                self.extra_acked_win_rtts = 0;
                self.extra_acked_win_idx ^= 1;
                self.extra_acked[self.extra_acked_win_idx] = 0;
            }
        }
        // Packets we expected to be delivered over the epoch.
        let epoch_us = tcp
            .delivered_time
            .saturating_duration_since(self.ack_epoch_mstamp)
            .as_micros()
            .min(u128::from(u32::MAX)) as u64;
        let mut expected_acked = to_u32(u64::from(self.bw()) * epoch_us / BW_UNIT);
        // Reset the epoch if the ACK rate fell below the expected rate, or
        // the epoch is very old.
        if self.ack_epoch_acked <= expected_acked
            || self.ack_epoch_acked.saturating_add(rs.acked_sacked)
                >= self.params.ack_epoch_acked_reset_thresh
        {
            self.ack_epoch_acked = 0;
            self.ack_epoch_mstamp = tcp.delivered_time;
            expected_acked = 0;
        }
        // Excess data delivered beyond what was expected.
        self.ack_epoch_acked = self
            .ack_epoch_acked
            .saturating_add(rs.acked_sacked)
            .min(0xF_FFFF);
        // DEVIATION: extra_acked is a u16 in the kernel (silently truncated
        // above 65535 packets); we saturate at 0xFFFF instead.
        let extra = (self.ack_epoch_acked - expected_acked.min(self.ack_epoch_acked))
            .min(tcp.snd_cwnd)
            .min(0xFFFF);
        let slot = &mut self.extra_acked[self.extra_acked_win_idx];
        if extra > *slot {
            *slot = extra;
        }
    }
}
