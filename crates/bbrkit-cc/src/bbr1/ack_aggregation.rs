//! ACK-aggregation estimate (`bbr_update_ack_aggregation`,
//! `bbr_ack_aggregation_cwnd`).
//!
//! Wi-Fi, cable and stretched/delayed ACKs deliver ACKs in bursts. BBR
//! measures the data ACKed in an "epoch" beyond what `bw × epoch length`
//! predicts (`extra_acked`), keeps its max over 5–10 rounds (two slots of
//! [`BBR_EXTRA_ACKED_WIN_RTTS`] rounds), and adds it to the cwnd target once
//! the pipe is full, so sending continues through inter-ACK silences. The
//! epoch restarts when ACKs arrive no faster than `bw`, after
//! [`BBR_ACK_EPOCH_ACKED_RESET_THRESH`] packets, and on idle restart. The
//! bonus is capped by cwnd and by bw × [`BBR_EXTRA_ACKED_MAX_US`] (100 ms).

use super::{
    BBR_ACK_EPOCH_ACKED_RESET_THRESH, BBR_EXTRA_ACKED_GAIN, BBR_EXTRA_ACKED_MAX_US,
    BBR_EXTRA_ACKED_WIN_RTTS, BBR_SCALE, BW_UNIT, Bbr1, is_valid_sample, us_delta,
};
use crate::rate::RateSample;
use crate::tcp::Tcp;

/// `ack_epoch_acked` is a 20-bit field in the kernel.
const ACK_EPOCH_ACKED_MAX: u32 = 0xF_FFFF;
/// `extra_acked_win_rtts` is a 5-bit field in the kernel.
const EXTRA_ACKED_WIN_RTTS_MAX: u8 = 0x1F;

/// The ACK-aggregation fields of `struct bbr`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct AckAggregation {
    /// `ack_epoch_mstamp`: start of the ACK sampling epoch, µs.
    epoch_mstamp: u64,
    /// `ack_epoch_acked`: packets (S)ACKed in the sampling epoch.
    epoch_acked: u32,
    /// `extra_acked_win_rtts`: age of the current slot, in rounds.
    win_rtts: u8,
    /// `extra_acked_win_idx`: the current slot.
    win_idx: usize,
    /// `extra_acked[2]`: max excess data ACKed in each slot, packets. (The
    /// kernel stores `u16`; this never truncates.)
    extra_acked: [u32; 2],
}

impl AckAggregation {
    /// The state `bbr_init` leaves: epoch starting at `now_us`.
    pub(super) fn new(now_us: u64) -> Self {
        AckAggregation {
            epoch_mstamp: now_us,
            epoch_acked: 0,
            win_rtts: 0,
            win_idx: 0,
            extra_acked: [0, 0],
        }
    }

    /// Idle restart (`CA_EVENT_TX_START`): a new epoch starts now.
    pub(super) fn restart_epoch(&mut self, now_us: u64) {
        self.epoch_mstamp = now_us;
        self.epoch_acked = 0;
    }

    /// `bbr_extra_acked`: max extra ACKed in the past 5–10 rounds.
    pub(super) fn extra_acked(&self) -> u32 {
        self.extra_acked[0].max(self.extra_acked[1])
    }
}

impl Bbr1 {
    /// `bbr_update_ack_aggregation`: estimate the windowed max degree of ACK
    /// aggregation, as data ACKed beyond `bw × interval`.
    pub(super) fn update_ack_aggregation(&mut self, tcp: &Tcp, rs: &RateSample) {
        if BBR_EXTRA_ACKED_GAIN == 0 || rs.acked_sacked == 0 || !is_valid_sample(rs) {
            return;
        }
        let bw = self.bw();
        let cwnd = tcp.snd_cwnd;
        let round_start = self.round_start;
        let a = &mut self.aggr;

        if round_start {
            a.win_rtts = (a.win_rtts + 1).min(EXTRA_ACKED_WIN_RTTS_MAX);
            if a.win_rtts >= BBR_EXTRA_ACKED_WIN_RTTS {
                a.win_rtts = 0;
                a.win_idx ^= 1;
                a.extra_acked[a.win_idx] = 0;
            }
        }

        // How many packets we expected to be delivered over the epoch.
        let now_us = tcp.delivered_time.as_micros();
        let epoch_us = us_delta(now_us, a.epoch_mstamp).min(u64::from(u32::MAX));
        let mut expected_acked = u64::from(bw) * epoch_us / BW_UNIT;

        // Reset the epoch if ACKs arrive no faster than expected, or after a
        // very large number of ACKed packets (an old epoch).
        if u64::from(a.epoch_acked) <= expected_acked
            || a.epoch_acked.saturating_add(rs.acked_sacked) >= BBR_ACK_EPOCH_ACKED_RESET_THRESH
        {
            a.epoch_acked = 0;
            a.epoch_mstamp = now_us;
            expected_acked = 0;
        }

        // Excess data delivered beyond what was expected.
        a.epoch_acked = a
            .epoch_acked
            .saturating_add(rs.acked_sacked)
            .min(ACK_EPOCH_ACKED_MAX);
        let extra = (u64::from(a.epoch_acked) - expected_acked).min(u64::from(cwnd)) as u32;
        if extra > a.extra_acked[a.win_idx] {
            a.extra_acked[a.win_idx] = extra;
        }
    }

    /// `bbr_ack_aggregation_cwnd`: the cwnd bonus for ACK aggregation
    /// (only once the pipe is full), packets.
    pub(super) fn ack_aggregation_cwnd(&self) -> u32 {
        if BBR_EXTRA_ACKED_GAIN == 0 || !self.full_bw_reached {
            return 0;
        }
        let max_aggr_cwnd = u64::from(self.bw()) * BBR_EXTRA_ACKED_MAX_US / BW_UNIT;
        let aggr_cwnd =
            (u64::from(BBR_EXTRA_ACKED_GAIN) * u64::from(self.aggr.extra_acked())) >> BBR_SCALE;
        aggr_cwnd.min(max_aggr_cwnd) as u32
    }
}
