//! ECN: DCTCP-style `ecn_alpha`, the ECN Startup exit and the ECN cut of
//! `inflight_lo`.
//!
//! BBR uses ECN only on "shallow-threshold" paths: ECN negotiated, the
//! route flagged `ecn_low` ([`Tcp::ecn_low`]), and min_rtt ≤
//! `ecn_max_rtt_us` (5 ms). Then each round `ce_ratio = Δdelivered_ce /
//! Δdelivered` feeds `alpha ← (1 − 1/16)·alpha + 1/16·ce_ratio`; a round
//! with CE marks cuts `inflight_lo` by `alpha·ecn_factor` (1/3) when not
//! probing, a sample with CE > 50% of delivered is "too high" (cuts
//! `inflight_hi` while probing), and two Startup rounds with ce_ratio ≥ 50%
//! end Startup.
//!
//! Owns `bbr_can_use_ecn`, `bbr_update_ecn_alpha`,
//! `bbr_check_ecn_too_high_in_startup`, `bbr_ecn_cut` and the CE-state part
//! of `bbr_cwnd_event`. Must never mark or ACK packets (the transport does).

use super::Bbr3;
use super::params::{BBR_SCALE, BBR_UNIT, INF};
use crate::tcp::{CaEvent, Tcp};

impl Bbr3 {
    /// `bbr_can_use_ecn`: ECN negotiated and the route is ECN_LOW.
    /// DEVIATION (v2 only): v2alpha gates on its `bbr_ecn_enable` module
    /// parameter alone; we require `ecn_enable` *and* the v3 route checks.
    pub(super) fn can_use_ecn(&self, tcp: &Tcp) -> bool {
        self.params.ecn_enable && tcp.ecn_enabled && tcp.ecn_low
    }

    /// `bbr_update_ecn_alpha` (at each round start): decide ECN
    /// eligibility, update alpha, and check the ECN Startup exit.
    /// Returns the round's CE ratio (/256), or `None`.
    pub(super) fn update_ecn_alpha(&mut self, tcp: &Tcp) -> Option<u32> {
        let p = &self.params;
        if !self.ecn_eligible
            && self.can_use_ecn(tcp)
            && p.ecn_factor > 0
            && (self.min_rtt_us <= p.ecn_max_rtt_us || p.ecn_max_rtt_us == 0)
        {
            self.ecn_eligible = true;
        }
        // DEVIATION: no PLB, so alpha is only tracked when ECN-eligible.
        if !self.ecn_eligible {
            return None;
        }
        let ce_ratio = self.ecn_ce_ratio(tcp)?;
        self.ecn_alpha_step(tcp, ce_ratio);
        Some(ce_ratio)
    }

    /// The CE ratio (/256) of what was delivered since alpha's last update;
    /// `None` when nothing was (or the counters went back). Shared with
    /// v2alpha's `bbr2_update_ecn_alpha`.
    pub(super) fn ecn_ce_ratio(&self, tcp: &Tcp) -> Option<u32> {
        let delivered = tcp.delivered.checked_sub(self.alpha_last_delivered)?;
        let delivered_ce = tcp.delivered_ce.checked_sub(self.alpha_last_delivered_ce)?;
        if delivered == 0 {
            return None;
        }
        Some(((delivered_ce << BBR_SCALE) / delivered).min(u64::from(u32::MAX)) as u32)
    }

    /// The DCTCP-style step of both versions: `alpha += gain · (ce_ratio −
    /// alpha)`, the counters marked as seen, then the ECN Startup exit.
    pub(super) fn ecn_alpha_step(&mut self, tcp: &Tcp, ce_ratio: u32) {
        let gain = self.params.ecn_alpha_gain;
        let alpha = (BBR_UNIT.saturating_sub(gain) * self.ecn_alpha) >> BBR_SCALE;
        let alpha = u64::from(alpha) + ((u64::from(gain) * u64::from(ce_ratio)) >> BBR_SCALE);
        self.ecn_alpha = alpha.min(u64::from(BBR_UNIT)) as u32;
        self.alpha_last_delivered = tcp.delivered;
        self.alpha_last_delivered_ce = tcp.delivered_ce;
        self.check_ecn_too_high_in_startup(tcp, ce_ratio);
    }

    /// `bbr_check_ecn_too_high_in_startup`: exit STARTUP after
    /// `full_ecn_cnt` (2) consecutive rounds with ce_ratio ≥ `ecn_thresh`.
    pub(super) fn check_ecn_too_high_in_startup(&mut self, tcp: &Tcp, ce_ratio: u32) {
        if self.full_bw_reached
            || !self.ecn_eligible
            || self.params.full_ecn_cnt == 0
            || self.params.ecn_thresh == 0
        {
            return;
        }
        if ce_ratio >= self.params.ecn_thresh {
            self.startup_ecn_rounds = (self.startup_ecn_rounds + 1).min(3); // 2-bit field
        } else {
            self.startup_ecn_rounds = 0;
        }
        if self.startup_ecn_rounds >= self.params.full_ecn_cnt {
            self.handle_queue_too_high_in_startup(tcp);
        }
    }

    /// `bbr_ecn_cut`: `1 − alpha·ecn_factor`, /256.
    pub(super) fn ecn_cut(&self) -> u32 {
        BBR_UNIT.saturating_sub(self.ecn_alpha.saturating_mul(self.params.ecn_factor) >> BBR_SCALE)
    }

    /// The ECN part of `bbr_cwnd_event`: track the CE state of received data.
    /// DEVIATION: the kernel's `dctcp_ece_ack_update` also makes the
    /// *receiver* send an immediate ACK when the CE state flips; in a sans-IO
    /// library that is the transport's job, so only the state is kept.
    /// (v2alpha: gated by `bbr_ecn_enable` alone.)
    pub(super) fn on_ce_event(&mut self, tcp: &Tcp, event: CaEvent) {
        if self.can_use_ecn(tcp) || (self.v2alpha() && self.params.ecn_enable) {
            self.ce_state = event == CaEvent::EcnIsCe;
        }
    }

    /// Whether the flow currently uses ECN signals (for tests and tracing).
    pub fn ecn_eligible(&self) -> bool {
        self.ecn_eligible
    }

    /// The DCTCP-style CE fraction estimate `ecn_alpha`, 0.0..=1.0.
    pub fn ecn_alpha(&self) -> f64 {
        f64::from(self.ecn_alpha) / f64::from(BBR_UNIT)
    }

    /// `inflight_hi` in packets, `None` while unset (for tests and tracing).
    pub fn inflight_hi(&self) -> Option<u32> {
        (self.inflight_hi != INF).then_some(self.inflight_hi)
    }
}
