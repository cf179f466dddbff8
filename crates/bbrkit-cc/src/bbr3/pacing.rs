//! Pacing rate, send quantum (TSO/GSO burst size) and the "in network at
//! earliest departure time" estimate.
//!
//! `pacing_rate = bw · mss · gain · (1 − 1%) `, in bytes per second, never
//! lowered before STARTUP fills the pipe, and re-initialised from the first
//! RTT sample (`cwnd · 2.77 / srtt`). The burst size budgets `pacing_rate`
//! >> `sk_pacing_shift` (~1 ms) plus 64 KB >> (min_rtt / 512 µs).
//!
//! Owns `bbr_rate_bytes_per_sec`, `bbr_bw_to_pacing_rate`,
//! `bbr_init_pacing_rate_from_rtt`, `bbr_set_pacing_rate`,
//! `bbr_tso_segs_generic`/`bbr_tso_segs_goal` and
//! `bbr_packets_in_net_at_edt`. Must never send or schedule packets.

use super::Bbr3;
use super::params::{
    BBR_SCALE, BBR_UNIT, BW_SCALE, BW_UNIT, GSO_LEGACY_MAX_SIZE, INF, MAX_TCP_HEADER,
    TCP_MIN_TSO_SEGS,
};
use crate::tcp::Tcp;

impl Bbr3 {
    /// `bbr_rate_bytes_per_sec`: `rate` (packets/µs << 24) times `gain`/256
    /// and (100 − margin)%, in bytes/s, at least 1. 128-bit arithmetic
    /// (the kernel's u64 order overflows above ~2.9 Tbit/s).
    fn rate_bytes_per_sec(&self, tcp: &Tcp, rate: u64, gain: u32, margin: u32) -> u64 {
        let mut r = u128::from(rate) * u128::from(tcp.mss);
        r *= u128::from(gain);
        r >>= BBR_SCALE;
        r *= u128::from(1_000_000 / 100 * (100 - margin.min(100)));
        r >>= BW_SCALE;
        r.clamp(1, u128::from(u64::MAX)) as u64
    }

    /// `bbr_bw_bytes_per_sec`: `rate` in bytes/s, no gain or margin.
    pub(super) fn bw_bytes_per_sec(&self, tcp: &Tcp, rate: u64) -> u64 {
        self.rate_bytes_per_sec(tcp, rate, BBR_UNIT, 0)
    }

    /// `bbr_bw_to_pacing_rate`: with the 1% pacing margin, capped at
    /// `max_pacing_rate`.
    fn bw_to_pacing_rate(&self, tcp: &Tcp, bw: u32, gain: u32) -> u64 {
        self.rate_bytes_per_sec(tcp, u64::from(bw), gain, self.params.pacing_margin_percent)
            .min(tcp.max_pacing_rate)
    }

    /// `bbr_init_pacing_rate_from_rtt`: `startup_pacing_gain · cwnd / RTT`,
    /// with a nominal 1 ms RTT before any sample.
    pub(super) fn init_pacing_rate_from_rtt(&mut self, tcp: &mut Tcp) {
        let rtt_us = if !tcp.srtt.is_zero() {
            self.has_seen_rtt = true;
            (tcp.srtt.as_micros().min(u128::from(u32::MAX)) as u64).max(1)
        } else {
            1000
        };
        let bw = (u64::from(tcp.snd_cwnd) * BW_UNIT / rtt_us).min(u64::from(u32::MAX)) as u32;
        tcp.pacing_rate = self.bw_to_pacing_rate(tcp, bw, self.params.startup_pacing_gain);
    }

    /// `bbr_set_pacing_rate`: pace at `bw · gain`; before the pipe is full
    /// only ever raise the rate.
    pub(super) fn set_pacing_rate(&mut self, tcp: &mut Tcp, bw: u32, gain: u32) {
        let rate = self.bw_to_pacing_rate(tcp, bw, gain);
        if !self.has_seen_rtt && !tcp.srtt.is_zero() {
            self.init_pacing_rate_from_rtt(tcp);
        }
        if self.full_bw_reached || rate > tcp.pacing_rate {
            tcp.pacing_rate = rate;
        }
    }

    /// `bbr_tso_segs_generic`: burst size in packets for a GSO size cap.
    fn tso_segs_generic(&self, tcp: &Tcp, mss: u32, gso_max_size: u64) -> u32 {
        let mut bytes = tcp.pacing_rate >> tcp.pacing_shift.min(63);
        if self.params.tso_rtt_shift > 0 {
            let r = if self.min_rtt_us == INF {
                u32::MAX
            } else {
                self.min_rtt_us >> self.params.tso_rtt_shift
            };
            if r < 32 {
                bytes += GSO_LEGACY_MAX_SIZE >> r;
            }
        }
        // ≤ 64 KB now, so a 32-bit division does.
        let bytes = bytes.min(gso_max_size - 1 - MAX_TCP_HEADER) as u32;
        let min_segs = if self.v2alpha() {
            Self::bbr2_min_tso_segs(tcp)
        } else {
            TCP_MIN_TSO_SEGS
        };
        (bytes / mss.max(1)).max(min_segs)
    }

    /// `bbr_tso_segs` (`ops->tso_segs`): the send quantum, in packets.
    /// DEVIATION: the device's `sk_gso_max_size` is taken as 64 KB.
    pub(super) fn bbr_tso_segs(&self, tcp: &Tcp) -> u32 {
        self.tso_segs_generic(tcp, tcp.mss, GSO_LEGACY_MAX_SIZE)
    }

    /// `bbr_tso_segs_goal`: like `tso_segs` with the legacy 64 KB GSO cap.
    /// Memoized on its inputs: one ACK evaluates it up to four times
    /// (`bbr_quantization_budget` via every `bbr_inflight`), usually unchanged.
    pub(super) fn tso_segs_goal(&self, tcp: &Tcp) -> u32 {
        let key = (tcp.pacing_rate, self.min_rtt_us, tcp.mss, tcp.pacing_shift);
        if let Some((k, v)) = self.tso_goal_memo.get()
            && k == key
        {
            return v;
        }
        let v = self.tso_segs_generic(tcp, tcp.mss, GSO_LEGACY_MAX_SIZE);
        self.tso_goal_memo.set(Some((key, v)));
        v
    }

    /// `bbr_packets_in_net_at_edt`: packets in the network when the next
    /// packet departs: `inflight − bw·(EDT − now)` (+ one burst when the gain
    /// raises inflight). EDT is [`Tcp::departure_time`].
    pub(super) fn packets_in_net_at_edt(&self, tcp: &Tcp, inflight_now: u32) -> u32 {
        let interval_us = tcp
            .departure_time
            .saturating_duration_since(tcp.now)
            .as_micros()
            .min(u128::from(u64::MAX)) as u64;
        let interval_delivered = ((u128::from(self.bw()) * u128::from(interval_us)) >> BW_SCALE)
            .min(u128::from(u32::MAX)) as u32;
        let mut inflight_at_edt = inflight_now;
        if self.pacing_gain > BBR_UNIT {
            inflight_at_edt = inflight_at_edt.saturating_add(self.tso_segs_goal(tcp));
        }
        inflight_at_edt.saturating_sub(interval_delivered)
    }
}
