//! Pacing-rate math for controllers that do not pace themselves: Linux
//! `tcp_update_pacing_rate` (`net/ipv4/tcp_input.c`), which the kernel runs
//! after every `cong_avoid`/PRR step so that `sch_fq` (or TCP internal
//! pacing) spreads a Reno/CUBIC window over the RTT instead of sending it in
//! one burst. BBR computes its own rate and never calls this.
//!
//! ```text
//!   rate = mss * max(cwnd, packets_out) / srtt * ratio / 100        [bytes/s]
//!   ratio = tcp_pacing_ss_ratio (200) while cwnd < ssthresh / 2     (slow start: 2x)
//!         = tcp_pacing_ca_ratio (120) otherwise                     (near/after ssthresh: 1.2x)
//!   rate = min(rate, max_pacing_rate)
//! ```
//!
//! Integer arithmetic as in the kernel: `srtt_us` is the smoothed RTT in
//! microseconds shifted left by 3, so this module converts [`Tcp::srtt`]
//! (nanoseconds) to eighths of a microsecond. With no RTT sample yet
//! (`srtt == 0`) the kernel skips the division, leaving a huge rate that is
//! then capped by `max_pacing_rate`; this is reproduced on purpose.
//! Never reads a clock.

use crate::tcp::Tcp;

/// Linux `sysctl_tcp_pacing_ss_ratio` default: pace at 200 % of
/// `cwnd * mss / srtt` in slow start (cwnd doubles per RTT, so the pacer
/// must allow twice the current rate).
pub const TCP_PACING_SS_RATIO: u64 = 200;

/// Linux `sysctl_tcp_pacing_ca_ratio` default: pace at 120 % of the current
/// rate once cwnd is at least half of ssthresh (headroom for growth and for
/// RTT noise without bursting).
pub const TCP_PACING_CA_RATIO: u64 = 120;

/// Linux `USEC_PER_SEC / 100`: the ratios are percentages.
const USEC_PER_SEC_DIV_100: u64 = 1_000_000 / 100;

/// The kernel's smoothed RTT representation, `tp->srtt_us`: microseconds
/// shifted left by 3 (1/8 µs resolution). Zero before the first sample.
pub fn srtt_us_shifted(tcp: &Tcp) -> u64 {
    (tcp.srtt.as_nanos().min(u128::from(u64::MAX / 8)) as u64) * 8 / 1_000
}

/// Linux `tcp_update_pacing_rate`: set `tcp.pacing_rate` (bytes/s) from
/// cwnd, packets_out and srtt, with the slow-start or congestion-avoidance
/// ratio, capped at `tcp.max_pacing_rate`. Returns the new rate.
pub fn tcp_update_pacing_rate(tcp: &mut Tcp) -> u64 {
    tcp.pacing_rate = pacing_rate_for(tcp, TCP_PACING_SS_RATIO, TCP_PACING_CA_RATIO);
    tcp.pacing_rate
}

/// The rate `tcp_update_pacing_rate` would set, for given ratios (the two
/// sysctls, in percent). Saturates instead of overflowing.
pub fn pacing_rate_for(tcp: &Tcp, ss_ratio: u64, ca_ratio: u64) -> u64 {
    // mss * (USEC_PER_SEC / 100) << 3: the << 3 matches srtt_us's scale.
    let mut rate = u64::from(tcp.mss).saturating_mul(USEC_PER_SEC_DIV_100 << 3);
    let ratio = if tcp.snd_cwnd < tcp.snd_ssthresh / 2 {
        ss_ratio
    } else {
        ca_ratio
    };
    rate = rate.saturating_mul(ratio);
    rate = rate.saturating_mul(u64::from(tcp.snd_cwnd.max(tcp.packets_out)));
    let srtt_us = srtt_us_shifted(tcp);
    if let Some(r) = rate.checked_div(srtt_us) {
        rate = r;
    }
    rate.min(tcp.max_pacing_rate)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::{Duration, Instant};

    fn tcp(cwnd: u32, ssthresh: u32, srtt_ms: u64) -> Tcp {
        let mut t = Tcp::new(Instant::ZERO, 1000);
        t.snd_cwnd = cwnd;
        t.snd_ssthresh = ssthresh;
        t.srtt = Duration::from_millis(srtt_ms);
        t
    }

    #[test]
    fn slow_start_paces_at_twice_cwnd_per_srtt() {
        // 10 packets of 1000 B per 10 ms = 1 MB/s; 200 % = 2 MB/s.
        let mut t = tcp(10, u32::MAX, 10);
        assert_eq!(tcp_update_pacing_rate(&mut t), 2_000_000);
        assert_eq!(t.pacing_rate, 2_000_000);
    }

    #[test]
    fn ca_ratio_applies_from_half_ssthresh() {
        // cwnd 10 < 21/2 = 10? no: 10 < 10 is false, so the CA ratio (120 %).
        assert_eq!(pacing_rate_for(&tcp(10, 21, 10), 200, 120), 1_200_000);
        assert_eq!(pacing_rate_for(&tcp(10, 22, 10), 200, 120), 2_000_000);
        assert_eq!(pacing_rate_for(&tcp(40, 20, 10), 200, 120), 4_800_000);
    }

    #[test]
    fn uses_packets_out_when_above_cwnd() {
        let mut t = tcp(10, 10, 10);
        t.packets_out = 30;
        assert_eq!(pacing_rate_for(&t, 200, 120), 3_600_000);
    }

    #[test]
    fn sub_microsecond_srtt_resolution_like_srtt_us() {
        // srtt 1.5 us -> srtt_us = 12 (1/8 us units); 1 packet: 1000 B /1.5us*1.2.
        let mut t = tcp(1, 1, 0);
        t.srtt = Duration::from_nanos(1_500);
        assert_eq!(srtt_us_shifted(&t), 12);
        assert_eq!(pacing_rate_for(&t, 200, 120), 800_000_000);
    }

    #[test]
    fn no_rtt_sample_gives_the_kernels_undivided_rate_capped_by_max() {
        let mut t = tcp(10, u32::MAX, 0);
        // 1000 * 80_000 * 200 * 10, not divided.
        assert_eq!(pacing_rate_for(&t, 200, 120), 160_000_000_000);
        t.max_pacing_rate = 12_500_000;
        assert_eq!(tcp_update_pacing_rate(&mut t), 12_500_000);
    }

    #[test]
    fn saturates_instead_of_overflowing() {
        let mut t = tcp(u32::MAX, u32::MAX, 0);
        t.mss = u32::MAX;
        assert_eq!(pacing_rate_for(&t, 200, 120), u64::MAX);
    }
}
