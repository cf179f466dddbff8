//! Packet-timed rounds and the max-bandwidth filter (`bbr_update_bw`).
//!
//! A round ends when a packet sent after the previous round's end is ACKed
//! (its `prior_delivered` reaches `next_rtt_delivered`). Each valid rate
//! sample gives a bandwidth sample `delivered / interval` (floor, in
//! pkts/µs << 24), kept in a windowed max filter over [`BBR_BW_RTTS`] rounds.
//! Never reads a clock: the interval comes from the rate sample.

use super::{BBR_BW_RTTS, BW_UNIT, Bbr1, interval_us, is_valid_sample};
use crate::rate::RateSample;
use crate::tcp::Tcp;

impl Bbr1 {
    /// `bbr_update_bw`: advance the round counter and feed the bw filter.
    pub(super) fn update_bw(&mut self, tcp: &mut Tcp, rs: &RateSample) {
        self.round_start = false;
        if !is_valid_sample(rs) {
            return; // not a valid observation
        }
        let delivered = rs.delivered.unwrap_or(0);

        // See if we've reached the next RTT (`!before(prior_delivered, next)`).
        if rs.prior_delivered >= self.next_rtt_delivered {
            self.next_rtt_delivered = tcp.delivered;
            self.rtt_cnt = self.rtt_cnt.wrapping_add(1);
            self.round_start = true;
            self.packet_conservation = false;
        }

        self.lt_bw_sampling(tcp, rs.losses, rs.is_app_limited);

        // A lower bound on the bottleneck bandwidth: delivered is scaled
        // first since the ratio is << 1 for most connections. The kernel
        // stores the u64 quotient in the u32 filter (truncating above
        // ~3 Tbit/s); we saturate instead.
        // (u64 division on the hot path; u128 only if the product overflows.)
        let interval = interval_us(rs);
        let bw = match delivered.checked_mul(BW_UNIT) {
            Some(scaled) => scaled / interval,
            None => {
                u64::try_from(u128::from(delivered) * u128::from(BW_UNIT) / u128::from(interval))
                    .unwrap_or(u64::MAX)
            }
        };
        let bw = u32::try_from(bw).unwrap_or(u32::MAX);

        // App-limited samples reflect the application, not the path: use
        // them only if they are at least as high as the current estimate.
        if !rs.is_app_limited || bw >= self.max_bw() {
            self.bw.running_max(BBR_BW_RTTS, self.rtt_cnt, bw);
        }
    }
}
