//! The congestion window (`bbr_bdp`, `bbr_quantization_budget`,
//! `bbr_inflight`, `bbr_packets_in_net_at_edt`, `bbr_set_cwnd`,
//! `bbr_set_cwnd_to_recover_or_restore`).
//!
//! The target is `ceil(bw × min_rtt × cwnd_gain)` plus the ACK-aggregation
//! bonus plus a quantization budget (3 TSO bursts: one in the qdisc, one in
//! the NIC, one in the receiver's GRO/delayed ACK; rounded up to even).
//! cwnd slow-starts toward the target (by the packets ACKed) and, once the
//! pipe is full, snaps down to it. In the first round of fast recovery it
//! follows packet conservation (send one per one ACKed); on leaving recovery
//! it restores the cwnd saved on entry. PROBE_RTT caps it at 4 packets.

use super::{
    BBR_CWND_MIN_TARGET, BBR_SCALE, BBR_UNIT, BW_SCALE, BW_UNIT, Bbr1, Mode, State, TCP_INIT_CWND,
};
use crate::rate::RateSample;
use crate::tcp::{CaState, Tcp};

impl Bbr1 {
    /// `bbr_bdp`: `ceil(bw × min_rtt × gain)` in packets, rounded up to avoid
    /// a negative feedback loop; [`TCP_INIT_CWND`] without an RTT sample.
    pub(super) fn bdp(&self, bw: u32, gain: u32) -> u32 {
        let Some(min_rtt_us) = self.min_rtt_us else {
            return TCP_INIT_CWND; // be safe: cap at the default initial cwnd
        };
        // The kernel computes in u64 (overflow needs bw·min_rtt·gain > 2^64,
        // i.e. Tbit/s × seconds); u128 here, saturated to u32 like its field.
        let w = u128::from(bw) * u128::from(min_rtt_us);
        // The kernel's `(x + BW_UNIT - 1) / BW_UNIT`.
        let bdp = ((w * u128::from(gain)) >> BBR_SCALE).div_ceil(u128::from(BW_UNIT));
        u32::try_from(bdp).unwrap_or(u32::MAX)
    }

    /// `bbr_quantization_budget`: room for full-sized bursts in flight on
    /// both end hosts, rounded up to even (fewer delayed ACKs), +2 in the
    /// 5/4 phase so gain cycling gets inflight above BDP even for small BDPs.
    pub(super) fn quantization_budget(&self, tcp: &Tcp, cwnd: u32) -> u32 {
        let mut cwnd = cwnd.saturating_add(3 * Self::tso_segs_goal(tcp));
        cwnd = cwnd.saturating_add(1) & !1;
        if matches!(self.state, State::ProbeBw(c) if c.idx == 0) {
            cwnd = cwnd.saturating_add(2);
        }
        cwnd
    }

    /// `bbr_inflight`: in-flight target for `bw` and `gain`, packets.
    pub(super) fn inflight(&self, tcp: &Tcp, bw: u32, gain: u32) -> u32 {
        self.quantization_budget(tcp, self.bdp(bw, gain))
    }

    /// `bbr_packets_in_net_at_edt`: of `inflight_now`, how many packets will
    /// still be in the network when the next packet departs at its earliest
    /// departure time `tcp.departure_time` (`tcp_wstamp_ns`): subtract what
    /// the path delivers at `bw` until then. When raising inflight (gain >
    /// 1) the departing burst is included.
    pub(super) fn packets_in_net_at_edt(&self, tcp: &Tcp, inflight_now: u32) -> u32 {
        let now_ns = tcp.now.as_nanos();
        let edt_ns = tcp.departure_time.as_nanos().max(now_ns);
        let interval_us = (edt_ns - now_ns) / 1000;
        let interval_delivered = (u128::from(self.bw()) * u128::from(interval_us)) >> BW_SCALE;
        let mut inflight_at_edt = u128::from(inflight_now);
        if self.pacing_gain > BBR_UNIT {
            inflight_at_edt += u128::from(Self::tso_segs_goal(tcp)); // include the EDT burst
        }
        inflight_at_edt.saturating_sub(interval_delivered) as u32
    }

    /// `bbr_set_cwnd_to_recover_or_restore`: the loss-recovery part of cwnd
    /// control. Returns the new cwnd and whether packet conservation decided it.
    fn set_cwnd_to_recover_or_restore(
        &mut self,
        tcp: &mut Tcp,
        rs: &RateSample,
        acked: u32,
    ) -> (u32, bool) {
        let prev_state = self.prev_ca_state;
        let state = tcp.ca_state;
        let mut cwnd = tcp.snd_cwnd;

        // An ACK for P packets should release at most 2P. First deduct the
        // lost packets here; set_cwnd then slow-starts toward the target.
        if rs.losses > 0 {
            cwnd = cwnd.saturating_sub(rs.losses).max(1);
        }

        if state == CaState::Recovery && prev_state != CaState::Recovery {
            // Starting the first round of Recovery: packet conservation.
            self.packet_conservation = true;
            self.next_rtt_delivered = tcp.delivered; // start the round now
            // Cut unused cwnd left by the application, TSQ or TSO deferral.
            cwnd = tcp.packets_in_flight().saturating_add(acked);
        } else if prev_state >= CaState::Recovery && state < CaState::Recovery {
            // Exiting loss recovery: restore the cwnd saved before it.
            cwnd = cwnd.max(self.prior_cwnd);
            self.packet_conservation = false;
        }
        self.prev_ca_state = state;

        if self.packet_conservation {
            return (
                cwnd.max(tcp.packets_in_flight().saturating_add(acked)),
                true,
            );
        }
        (cwnd, false)
    }

    /// `bbr_set_cwnd`: slow-start up toward the target cwnd (if the bw
    /// estimate is growing, or loss drew cwnd below it), or snap down to it
    /// once the pipe is full; then apply the global and PROBE_RTT caps.
    pub(super) fn set_cwnd(
        &mut self,
        tcp: &mut Tcp,
        rs: &RateSample,
        acked: u32,
        bw: u32,
        gain: u32,
    ) {
        let mut cwnd = tcp.snd_cwnd;
        if acked != 0 {
            let (recovered, conserving) = self.set_cwnd_to_recover_or_restore(tcp, rs, acked);
            cwnd = recovered;
            if !conserving {
                // Account for excess ACKed data that seems due to aggregation.
                let target = self
                    .bdp(bw, gain)
                    .saturating_add(self.ack_aggregation_cwnd());
                let target = self.quantization_budget(tcp, target);
                if self.full_bw_reached {
                    // Only cut cwnd once we have filled the pipe.
                    cwnd = cwnd.saturating_add(acked).min(target);
                } else if cwnd < target || tcp.delivered < u64::from(TCP_INIT_CWND) {
                    cwnd = cwnd.saturating_add(acked);
                }
                cwnd = cwnd.max(BBR_CWND_MIN_TARGET);
            }
        }
        // Apply the global cap (`snd_cwnd_clamp`).
        tcp.snd_cwnd = cwnd.min(tcp.snd_cwnd_clamp);
        if self.mode() == Mode::ProbeRtt {
            // Drain the queue and refresh min_rtt.
            tcp.snd_cwnd = tcp.snd_cwnd.min(BBR_CWND_MIN_TARGET);
        }
    }
}
