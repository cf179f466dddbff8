//! Pacing rate and send quantum (`bbr_rate_bytes_per_sec`,
//! `bbr_bw_to_pacing_rate`, `bbr_init_pacing_rate_from_rtt`,
//! `bbr_set_pacing_rate`, `bbr_min_tso_segs`, `bbr_tso_segs_goal`).
//!
//! `pacing_rate = bw × mss × gain × (1 − 1%)` in bytes per second: BBR
//! paces about [`BBR_PACING_MARGIN_PERCENT`] below its estimate so the
//! bottleneck queue tends toward empty. Before the pipe is found full the
//! pacing rate never decreases. The initial rate is `high_gain × cwnd /
//! srtt` (1 ms if no RTT sample yet), re-initialised at the first RTT sample.

use super::{
    BBR_HIGH_GAIN, BBR_MIN_TSO_RATE, BBR_PACING_MARGIN_PERCENT, BBR_SCALE, BW_SCALE, BW_UNIT, Bbr1,
    USEC_PER_MSEC, USEC_PER_SEC,
};
use crate::tcp::Tcp;

/// `GSO_LEGACY_MAX_SIZE - 1 - MAX_TCP_HEADER` (65536 − 1 − 320): the largest
/// TSO burst in bytes. `MAX_TCP_HEADER` is 320 on x86-64 distribution
/// kernels (`L1_CACHE_ALIGN(128 + MAX_HEADER)`, `MAX_HEADER` = 176).
pub const TSO_MAX_BYTES: u64 = 65536 - 1 - 320;

/// The kernel caps the TSO goal at 0x7F segments.
const TSO_SEGS_MAX: u32 = 0x7F;

impl Bbr1 {
    /// `bbr_rate_bytes_per_sec`: `rate` (pkts/µs << 24) × mss × gain, less
    /// the pacing margin, in bytes per second. The kernel orders the u64
    /// operations to avoid overflow up to 2.9 Tbit/s; this computes in u128
    /// (identical results, no overflow above) and saturates.
    pub(super) fn rate_bytes_per_sec(tcp: &Tcp, rate: u64, gain: u32) -> u64 {
        let mut r = u128::from(rate) * u128::from(tcp.mss);
        r *= u128::from(gain);
        r >>= BBR_SCALE;
        r *= u128::from(USEC_PER_SEC / 100 * (100 - BBR_PACING_MARGIN_PERCENT));
        u64::try_from(r >> BW_SCALE).unwrap_or(u64::MAX)
    }

    /// `bbr_bw_to_pacing_rate`: bytes per second, capped at `max_pacing_rate`.
    pub(super) fn bw_to_pacing_rate(tcp: &Tcp, bw: u32, gain: u32) -> u64 {
        Self::rate_bytes_per_sec(tcp, u64::from(bw), gain).min(tcp.max_pacing_rate)
    }

    /// `bbr_init_pacing_rate_from_rtt`: `high_gain × cwnd / RTT`, with the
    /// smoothed RTT if there is one, else a nominal 1 ms.
    pub(super) fn init_pacing_rate_from_rtt(&mut self, tcp: &mut Tcp) {
        let rtt_us = if !tcp.srtt.is_zero() {
            self.has_seen_rtt = true;
            u64::try_from(tcp.srtt.as_micros())
                .unwrap_or(u64::MAX)
                .max(1)
        } else {
            USEC_PER_MSEC // nominal default RTT
        };
        let bw = u64::from(tcp.snd_cwnd) * BW_UNIT / rtt_us;
        // The kernel passes this u64 as a u32 bw (truncating for absurd
        // cwnd/RTT ratios); we saturate.
        let bw = u32::try_from(bw).unwrap_or(u32::MAX);
        tcp.pacing_rate = Self::bw_to_pacing_rate(tcp, bw, BBR_HIGH_GAIN);
    }

    /// `bbr_set_pacing_rate`: pace at `bw × gain`, but never lower the rate
    /// before the pipe is full (a low early sample would slow STARTUP).
    pub(super) fn set_pacing_rate(&mut self, tcp: &mut Tcp, bw: u32, gain: u32) {
        let rate = Self::bw_to_pacing_rate(tcp, bw, gain);
        if !self.has_seen_rtt && !tcp.srtt.is_zero() {
            self.init_pacing_rate_from_rtt(tcp);
        }
        if self.full_bw_reached || rate > tcp.pacing_rate {
            tcp.pacing_rate = rate;
        }
    }

    /// `bbr_min_tso_segs`: 1-packet bursts below [`BBR_MIN_TSO_RATE`], else 2.
    pub fn min_tso_segs(tcp: &Tcp) -> u32 {
        if tcp.pacing_rate < BBR_MIN_TSO_RATE >> 3 {
            1
        } else {
            2
        }
    }

    /// `bbr_tso_segs_goal`: about 1 ms (`2^-pacing_shift` s) of data at the
    /// pacing rate, at least [`Self::min_tso_segs`], at most 127 packets
    /// (like `tcp_tso_autosize`, ignoring the device's GSO limit).
    pub fn tso_segs_goal(tcp: &Tcp) -> u32 {
        let bytes = (tcp.pacing_rate >> tcp.pacing_shift).min(TSO_MAX_BYTES);
        let segs = u32::try_from(bytes / u64::from(tcp.mss.max(1))).unwrap_or(u32::MAX);
        segs.max(Self::min_tso_segs(tcp)).min(TSO_SEGS_MAX)
    }
}
