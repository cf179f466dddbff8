//! Gains, BDP and the congestion window.
//!
//! `target = quantize(ceil(bw · min_rtt · cwnd_gain) + extra_acked)`; cwnd
//! grows by the ACKed packets toward it (before the pipe is full it may
//! also grow while below 2 × the initial window) and snaps down to it after;
//! PROBE_RTT caps it at max(4, BDP/2); then the inflight model bounds it:
//! `inflight_hi` in DOWN/REFILL/UP, `inflight_hi − 15%` in CRUISE and
//! PROBE_RTT, and `inflight_lo` always; never below 4 packets.
//!
//! Owns `bbr_update_gains`, `bbr_bdp`, `bbr_quantization_budget`,
//! `bbr_inflight`, `bbr_target_inflight`, `bbr_set_cwnd` and
//! `bbr_bound_cwnd_for_inflight_model`. Must never change state.

use super::params::{BBR_SCALE, BBR_UNIT, BW_UNIT, INF, phase};
use super::{Bbr3, Mode};
use crate::tcp::Tcp;

impl Bbr3 {
    /// `bbr_update_gains`: pacing and cwnd gains for the current state.
    pub(super) fn update_gains(&mut self) {
        let p = &self.params;
        (self.pacing_gain, self.cwnd_gain) = match self.mode {
            Mode::Startup => (p.startup_pacing_gain, p.startup_cwnd_gain),
            // Slow, to drain; keep the Startup cwnd gain.
            Mode::Drain => (p.drain_gain, p.startup_cwnd_gain),
            Mode::ProbeBw => {
                let mut cwnd_gain = p.cwnd_gain;
                if p.bw_probe_cwnd_gain > 0 && self.cycle_idx == phase::UP {
                    cwnd_gain =
                        cwnd_gain.saturating_add(BBR_UNIT.saturating_mul(p.bw_probe_cwnd_gain) / 4);
                }
                (p.pacing_gain[self.cycle_idx], cwnd_gain)
            }
            Mode::ProbeRtt => (BBR_UNIT, BBR_UNIT),
        };
    }

    /// `bbr_bdp`: `ceil(bw · min_rtt · gain)` packets, rounded up to avoid
    /// a negative feedback loop; the initial cwnd before any RTT sample.
    pub(super) fn bdp(&self, _tcp: &Tcp, bw: u32, gain: u32) -> u32 {
        if self.min_rtt_us == INF {
            return self.init_cwnd;
        }
        let w = u128::from(bw) * u128::from(self.min_rtt_us);
        let bdp = ((w * u128::from(gain)) >> BBR_SCALE).div_ceil(u128::from(BW_UNIT));
        bdp.min(u128::from(u32::MAX)) as u32
    }

    /// `bbr_quantization_budget`: room for three full TSO bursts in flight
    /// (qdisc, NIC, receiver GRO/delayed ACK), at least `cwnd_min_target`,
    /// +2 in UP so gain cycling lifts inflight above small BDPs.
    /// (v3 dropped v1's rounding up to an even number.)
    pub(super) fn quantization_budget(&self, tcp: &Tcp, cwnd: u32) -> u32 {
        let tso_segs_goal = self.tso_segs_goal(tcp).saturating_mul(3);
        let mut cwnd = cwnd.max(tso_segs_goal).max(self.params.cwnd_min_target);
        if self.mode == Mode::ProbeBw && self.cycle_idx == phase::UP {
            cwnd = cwnd.saturating_add(2);
        }
        cwnd
    }

    /// `bbr_inflight`: quantised BDP at `gain`.
    pub(super) fn inflight(&self, tcp: &Tcp, bw: u32, gain: u32) -> u32 {
        self.quantization_budget(tcp, self.bdp(tcp, bw, gain))
    }

    /// `bbr_target_inflight`: our BDP, unless congestion cut cwnd.
    pub(super) fn target_inflight(&self, tcp: &Tcp) -> u32 {
        self.inflight(tcp, self.bw(), BBR_UNIT).min(tcp.snd_cwnd)
    }

    /// `bbr_set_cwnd`: slow-start toward the target (if bw grows or losses
    /// drew cwnd below it) or snap down to it once the pipe was full.
    pub(super) fn set_cwnd(&mut self, tcp: &mut Tcp, acked: u32, bw: u32, gain: u32) {
        let mut cwnd = tcp.snd_cwnd;
        if acked > 0 {
            let target = self
                .bdp(tcp, bw, gain)
                .saturating_add(self.ack_aggregation_cwnd());
            let target = self.quantization_budget(tcp, target);
            self.try_fast_path = false;
            if self.full_bw_reached {
                cwnd = cwnd.saturating_add(acked);
                if cwnd >= target {
                    cwnd = target;
                    self.try_fast_path = true;
                }
            } else if cwnd < target || cwnd < 2 * self.init_cwnd {
                // Linux, not the draft ("delivered < InitialCwnd").
                cwnd = cwnd.saturating_add(acked);
            } else {
                self.try_fast_path = true;
            }
            cwnd = cwnd.max(self.params.cwnd_min_target);
        }
        // Global cap (`snd_cwnd_clamp`), then PROBE_RTT's cap.
        tcp.set_cwnd(cwnd.min(tcp.snd_cwnd_clamp));
        if self.mode == Mode::ProbeRtt {
            tcp.set_cwnd(tcp.snd_cwnd.min(self.probe_rtt_cwnd(tcp)));
        }
    }

    /// `bbr_bound_cwnd_for_inflight_model`.
    pub(super) fn bound_cwnd_for_inflight_model(&mut self, tcp: &mut Tcp) {
        let mut cap = INF;
        if self.mode == Mode::ProbeBw && self.cycle_idx != phase::CRUISE {
            // Probe to see if more packets fit in the path.
            cap = self.inflight_hi;
        } else if self.mode == Mode::ProbeRtt
            || (self.mode == Mode::ProbeBw && self.cycle_idx == phase::CRUISE)
        {
            cap = self.inflight_with_headroom();
        }
        // Adapt to any loss/ECN since our last bw probe.
        cap = cap.min(self.inflight_lo);
        cap = cap.max(self.params.cwnd_min_target);
        tcp.set_cwnd(cap.min(tcp.snd_cwnd));
    }
}
