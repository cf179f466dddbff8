//! BBRv3 / BBRv2 constants and parameters, with the reference's names.
//!
//! Owns every number the algorithm uses. Values come from google/bbr branch
//! v3 `net/ipv4/tcp_bbr.c` (commit 001a430b3ddb, `BBR_VERSION 3`) and, for
//! BBRv2, from google/bbr branch v2alpha `net/ipv4/tcp_bbr2.c` (commit
//! 0487ade55081). Gains and fractions are kernel fixed point over
//! [`BBR_UNIT`] (256); bandwidth is packets per microsecond << [`BW_SCALE`].
//! Must never hold state: a [`Bbr3Params`] is plain configuration.

/// `BW_SCALE`: bandwidth is stored as packets/µs << 24. One unit is about
/// 715 bit/s at a 1500-byte MSS; a `u32` covers 715 bit/s … 3 Tbit/s.
pub const BW_SCALE: u32 = 24;
/// `BW_UNIT = 1 << BW_SCALE`.
pub const BW_UNIT: u64 = 1 << BW_SCALE;
/// `BBR_SCALE`: gains and fractions are integers over 2^8.
pub const BBR_SCALE: u32 = 8;
/// `BBR_UNIT = 1 << BBR_SCALE` = 256, meaning 1.0.
pub const BBR_UNIT: u32 = 1 << BBR_SCALE;

/// `~0U` in the reference: "unset / infinite" for `bw_lo`, `inflight_lo`,
/// `inflight_hi`, `min_rtt_us` and `bw_probe_up_cnt`. Kept as a sentinel (not
/// `Option`) so that `min(x, inflight_lo)` reads as in the kernel.
pub const INF: u32 = u32::MAX;

/// `HZ`: jiffies per second. Linux stamps min_rtt and ProbeRTT in jiffies;
/// we derive jiffies from [`crate::Instant`] as `now_ns / 1 ms`, i.e. the
/// common `CONFIG_HZ=1000`.
pub const HZ: u64 = 1000;

/// `GSO_LEGACY_MAX_SIZE` (64 KB): the TSO/GSO size cap used by
/// `bbr_tso_segs_goal` (and, here, assumed for the device too).
pub const GSO_LEGACY_MAX_SIZE: u64 = 65_536;
/// `MAX_TCP_HEADER` on x86-64 distribution kernels:
/// `L1_CACHE_ALIGN(128 + MAX_HEADER)` with `MAX_HEADER = 128 + 48` = 320.
pub const MAX_TCP_HEADER: u64 = 320;
/// `net.ipv4.tcp_min_tso_segs` default: at least 2 segments per TSO burst.
pub const TCP_MIN_TSO_SEGS: u32 = 2;

/// ProbeBW phase indices (`enum bbr_pacing_gain_phase`), used to index
/// [`Bbr3Params::pacing_gain`].
pub mod phase {
    /// `BBR_BW_PROBE_UP`: push inflight up to probe for bw/volume.
    pub const UP: usize = 0;
    /// `BBR_BW_PROBE_DOWN`: drain excess inflight from the queue.
    pub const DOWN: usize = 1;
    /// `BBR_BW_PROBE_CRUISE`: use the pipe, with headroom.
    pub const CRUISE: usize = 2;
    /// `BBR_BW_PROBE_REFILL`: refill the pipe to the estimated 100%.
    pub const REFILL: usize = 3;
}

/// The tunables of one BBR flavour (the kernel's `bbr_param(sk, name)`s).
///
/// [`Bbr3Params::v3`] and [`Bbr3Params::v2`] give the reference values; the
/// fields are public so experiments can change one knob, as the kernel's
/// module parameters allow. docs/cc-bbr3.md has the v2-vs-v3 table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bbr3Params {
    /// 2 (v2alpha) or 3 (v3): reported by `name()` and the status.
    pub version: u8,
    /// `bbr_startup_pacing_gain` (v3: 256·277/100+1 = 710 ≈ 4·ln2 = 2.77, the
    /// smallest gain that doubles the sending rate each round like slow start;
    /// v2alpha `bbr_high_gain`: 256·2885/1000+1 = 739 ≈ 2/ln2).
    pub startup_pacing_gain: u32,
    /// `bbr_startup_cwnd_gain` (v3: 2.0 = 512; v2alpha: 739 ≈ 2.89).
    pub startup_cwnd_gain: u32,
    /// `bbr_drain_gain` = 256·1000/2885 = 88 ≈ 0.347: drains Startup's queue
    /// in about one round (both versions; the IETF draft now says 0.5).
    pub drain_gain: u32,
    /// `bbr_cwnd_gain` = 2.0 (512): steady-state cwnd tolerates delayed and
    /// stretched ACKs.
    pub cwnd_gain: u32,
    /// `bbr_pacing_gain[]` by ProbeBW phase ([`phase`]): UP 5/4 = 320,
    /// DOWN 256·91/100 = 232 (v3) or 3/4 = 192 (v2alpha), CRUISE and REFILL
    /// 1.0 = 256.
    pub pacing_gain: [u32; 4],
    /// `bbr_bw_probe_cwnd_gain`: extra cwnd gain in PROBE_UP, in units of
    /// BBR_UNIT/4 (v3: 1, i.e. cwnd gain 2.25 in UP; v2alpha has none: 0).
    pub bw_probe_cwnd_gain: u32,
    /// `bbr_cwnd_min_target` = 4 packets: a window ACKing every other
    /// packet needs 4 in flight to keep the pipe busy.
    pub cwnd_min_target: u32,
    /// `bbr_full_bw_thresh` = 5/4 (320): bw growth below 25% per round means
    /// the pipe may be full.
    pub full_bw_thresh: u32,
    /// `bbr_full_bw_cnt` = 3 rounds without 25% growth ⇒ full.
    pub full_bw_cnt: u32,
    /// `bbr_min_rtt_win_sec` = 10 s: window of the min_rtt estimate.
    pub min_rtt_win_sec: u32,
    /// `bbr_probe_rtt_mode_ms` = 200 ms at the low inflight in PROBE_RTT
    /// (0.5·0.2/5 + 4.8/5 ⇒ about 98% utilisation).
    pub probe_rtt_mode_ms: u32,
    /// `bbr_probe_rtt_win_ms` = 5000: window of `probe_rtt_min_us`, hence the
    /// typical interval between PROBE_RTT entries.
    pub probe_rtt_win_ms: u32,
    /// `bbr_probe_rtt_cwnd_gain` = 1/2 (128): PROBE_RTT holds cwnd at
    /// max(4, 0.5·BDP).
    pub probe_rtt_cwnd_gain: u32,
    /// `bbr_extra_acked_gain` = 1.0 (256): gain on the ACK-aggregation
    /// allowance added to the target cwnd.
    pub extra_acked_gain: u32,
    /// `bbr_extra_acked_win_rtts` = 5: each of the two extra_acked slots
    /// lives 5 rounds (1 round while still in Startup), a 5–10 round window.
    pub extra_acked_win_rtts: u32,
    /// `bbr_ack_epoch_acked_reset_thresh` = 2^20 packets: restart the
    /// aggregation epoch after this many ACKed packets.
    pub ack_epoch_acked_reset_thresh: u32,
    /// `bbr_extra_acked_max_us` = 100 ms: extra_acked is capped at bw·100 ms.
    pub extra_acked_max_us: u32,
    /// `bbr_tso_rtt_shift` = 9: the min_rtt-based TSO allowance
    /// (64 KB >> (min_rtt/512 µs)) halves every 512 µs of RTT.
    pub tso_rtt_shift: u32,
    /// `bbr_pacing_margin_percent` = 1: pace 1% below the bw estimate.
    pub pacing_margin_percent: u32,
    /// `bbr_beta` = 256·30/100 = 76: on loss, cut bw_lo/inflight_lo (and
    /// inflight_hi) to (1 − beta) = 180/256 ≈ 0.7.
    pub beta: u32,
    /// `bbr_loss_thresh` = 256·2/100 = 5 (1.95%): a loss rate above this
    /// means inflight was too high.
    pub loss_thresh: u32,
    /// `bbr_full_loss_cnt`: exit Startup after this many loss events in one
    /// loss round of Recovery with loss > `loss_thresh` (v3: 6; v2alpha: 8).
    pub full_loss_cnt: u32,
    /// `bbr_full_ecn_cnt` = 2: exit Startup after 2 consecutive rounds with
    /// CE ratio ≥ `ecn_thresh`.
    pub full_ecn_cnt: u32,
    /// `bbr_inflight_headroom` = 256·15/100 = 38: leave ~15% of inflight_hi
    /// unused in CRUISE and PROBE_RTT.
    pub inflight_headroom: u32,
    /// `bbr_ecn_alpha_gain` = 1/16 (16): EWMA gain of the CE ratio.
    pub ecn_alpha_gain: u32,
    /// `bbr_ecn_alpha_init` = 1.0 (256): start pessimistic.
    pub ecn_alpha_init: u32,
    /// `bbr_ecn_factor` = 256/3 = 85: on ECN, cut inflight_lo by
    /// alpha·1/3. 0 disables ECN bounding.
    pub ecn_factor: u32,
    /// `bbr_ecn_thresh` = 1/2 (128): a CE ratio above this means inflight
    /// was too high.
    pub ecn_thresh: u32,
    /// `bbr_ecn_reprobe_gain` (v3: 1/2 = 128; v2alpha: 0, disabled): when ECN
    /// marks stop in a loss-free cycle, reprobe starting at this fraction of
    /// inflight_hi.
    pub ecn_reprobe_gain: u32,
    /// `bbr_ecn_max_rtt_us` = 5000: use ECN only on paths with min_rtt ≤ 5 ms
    /// (0 = any RTT).
    pub ecn_max_rtt_us: u32,
    /// Whether sender-side ECN logic may run at all. v3 has no switch (it is
    /// gated by the route's ECN_LOW flag, [`crate::Tcp::ecn_low`]): `true`.
    /// v2alpha's module parameter `bbr_ecn_enable` defaults to `false`.
    pub ecn_enable: bool,
    /// `bbr_bw_probe_max_rounds` = 63: probe at least every 63 rounds
    /// (Reno coexistence up to a 25 Mbit/s × 30 ms = 62-packet BDP).
    pub bw_probe_max_rounds: u32,
    /// `bbr_bw_probe_rand_rounds` = 2: `rounds_since_probe` starts at
    /// rand{0, 1}.
    pub bw_probe_rand_rounds: u32,
    /// `bbr_bw_probe_base_us` = 2 s: base of the wall-clock probe wait.
    pub bw_probe_base_us: u32,
    /// `bbr_bw_probe_rand_us` = 1 s: the probe wait is 2 s + rand[0, 1 s).
    pub bw_probe_rand_us: u32,
    /// `bbr_loss_probe_recovery` (v3: true): treat a loss repaired by a TLP
    /// as a loss signal. v2alpha has no such hook: false.
    pub loss_probe_recovery: bool,
    /// `bbr_fast_path` = true: skip the model update on app-limited ACKs
    /// that carry no news.
    pub fast_path: bool,
}

impl Bbr3Params {
    /// google/bbr v3 values (`tcp_bbr.c`, `BBR_VERSION 3`).
    pub fn v3() -> Self {
        Bbr3Params {
            version: 3,
            startup_pacing_gain: BBR_UNIT * 277 / 100 + 1,
            startup_cwnd_gain: BBR_UNIT * 2,
            drain_gain: BBR_UNIT * 1000 / 2885,
            cwnd_gain: BBR_UNIT * 2,
            pacing_gain: [BBR_UNIT * 5 / 4, BBR_UNIT * 91 / 100, BBR_UNIT, BBR_UNIT],
            bw_probe_cwnd_gain: 1,
            cwnd_min_target: 4,
            full_bw_thresh: BBR_UNIT * 5 / 4,
            full_bw_cnt: 3,
            min_rtt_win_sec: 10,
            probe_rtt_mode_ms: 200,
            probe_rtt_win_ms: 5000,
            probe_rtt_cwnd_gain: BBR_UNIT / 2,
            extra_acked_gain: BBR_UNIT,
            extra_acked_win_rtts: 5,
            ack_epoch_acked_reset_thresh: 1 << 20,
            extra_acked_max_us: 100 * 1000,
            tso_rtt_shift: 9,
            pacing_margin_percent: 1,
            beta: BBR_UNIT * 30 / 100,
            loss_thresh: BBR_UNIT * 2 / 100,
            full_loss_cnt: 6,
            full_ecn_cnt: 2,
            inflight_headroom: BBR_UNIT * 15 / 100,
            ecn_alpha_gain: BBR_UNIT / 16,
            ecn_alpha_init: BBR_UNIT,
            ecn_factor: BBR_UNIT / 3,
            ecn_thresh: BBR_UNIT / 2,
            ecn_reprobe_gain: BBR_UNIT / 2,
            ecn_max_rtt_us: 5000,
            ecn_enable: true,
            bw_probe_max_rounds: 63,
            bw_probe_rand_rounds: 2,
            bw_probe_base_us: 2_000_000,
            bw_probe_rand_us: 1_000_000,
            loss_probe_recovery: true,
            fast_path: true,
        }
    }

    /// google/bbr v2alpha values (`tcp_bbr2.c` defaults) on the v3
    /// machinery: only the numbers differ (see docs/cc-bbr3.md for the
    /// table and for the v2alpha *logic* differences that are not modelled).
    pub fn v2() -> Self {
        let high_gain = BBR_UNIT * 2885 / 1000 + 1; // bbr_high_gain = 739
        Bbr3Params {
            version: 2,
            startup_pacing_gain: high_gain,
            startup_cwnd_gain: high_gain,
            pacing_gain: [BBR_UNIT * 5 / 4, BBR_UNIT * 3 / 4, BBR_UNIT, BBR_UNIT],
            bw_probe_cwnd_gain: 0,
            full_loss_cnt: 8,
            ecn_reprobe_gain: 0,
            ecn_enable: false,
            loss_probe_recovery: false,
            ..Bbr3Params::v3()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v3_fixed_point_values_match_the_kernel() {
        let p = Bbr3Params::v3();
        assert_eq!(p.startup_pacing_gain, 710);
        assert_eq!(p.startup_cwnd_gain, 512);
        assert_eq!(p.drain_gain, 88);
        assert_eq!(p.pacing_gain, [320, 232, 256, 256]);
        assert_eq!(p.beta, 76);
        assert_eq!(p.loss_thresh, 5);
        assert_eq!(p.inflight_headroom, 38);
        assert_eq!(p.ecn_factor, 85);
        assert_eq!(p.ecn_thresh, 128);
        assert_eq!(p.ecn_alpha_gain, 16);
        assert_eq!(p.full_loss_cnt, 6);
    }

    #[test]
    fn v2_differs_only_where_v2alpha_differs() {
        let (v2, v3) = (Bbr3Params::v2(), Bbr3Params::v3());
        assert_eq!(v2.startup_pacing_gain, 739);
        assert_eq!(v2.startup_cwnd_gain, 739);
        assert_eq!(v2.pacing_gain[phase::DOWN], 192);
        assert_eq!(v2.full_loss_cnt, 8);
        assert_eq!(v2.bw_probe_cwnd_gain, 0);
        // Everything else is shared.
        let v2_as_v3 = Bbr3Params {
            version: 3,
            startup_pacing_gain: v3.startup_pacing_gain,
            startup_cwnd_gain: v3.startup_cwnd_gain,
            pacing_gain: v3.pacing_gain,
            bw_probe_cwnd_gain: v3.bw_probe_cwnd_gain,
            full_loss_cnt: v3.full_loss_cnt,
            ecn_reprobe_gain: v3.ecn_reprobe_gain,
            ecn_enable: v3.ecn_enable,
            loss_probe_recovery: v3.loss_probe_recovery,
            ..v2
        };
        assert_eq!(v2_as_v3, v3);
    }
}
