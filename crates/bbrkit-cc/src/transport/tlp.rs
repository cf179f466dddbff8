//! Tail loss probe (RACK-TLP, RFC 8985 §7; Linux `tcp_schedule_loss_probe`,
//! `tcp_send_loss_probe`, `tcp_process_tlp_ack`), with google/bbr v3's
//! `CA_EVENT_TLP_RECOVERY`. When no ACK arrives for two smoothed RTTs (plus
//! 2 ms, or plus the 200 ms minimum RTO when only one segment is out, never
//! later than the RTO) in Open or CWR, the sender probes: one new segment
//! if the application has one (cwnd is not checked), else a retransmission
//! of the highest outstanding segment. If a later ACK shows the probe
//! repaired a loss (it acknowledges beyond `tlp_high_seq`), the controller
//! hears `TlpRecovery` and the window is reduced once (CWR, then
//! `tcp_try_keep_open`). Part of [`Sender`].
//!
//! Differences from Linux: no DSACK, so a probe whose original also
//! arrived is only recognised by a pure duplicate ACK (Linux also by the
//! DSACK); when the highest outstanding segment is SACKed or already being
//! retransmitted, the highest one that is neither is probed (Linux probes
//! the last one regardless); the probe ignores the pacer.

use super::{DataPacket, F_RETRANS, F_SACKED, Sender};
use crate::controller::CongestionControl;
use crate::tcp::{CaEvent, CaState};
use crate::time::{Duration, Instant};

/// Linux `TCP_TIMEOUT_MIN` (2 jiffies at HZ 1000): added to the probe
/// timeout when more than one segment is out.
const TCP_TIMEOUT_MIN: Duration = Duration::from_millis(2);

impl<C: CongestionControl> Sender<C> {
    /// Linux `tcp_schedule_loss_probe`: arm the probe timer; returns whether
    /// it did. `advancing_rto`: the RTO is being re-armed from now (an ACK),
    /// so the probe must come before a full RTO from now.
    pub(super) fn schedule_loss_probe(&mut self, now: Instant, advancing_rto: bool) -> bool {
        if !self.cfg.tlp
            || self.tcp.packets_out == 0
            || !matches!(self.tcp.ca_state, CaState::Open | CaState::Cwr)
        {
            self.tlp_deadline = None;
            return false;
        }
        let mut timeout = if self.tcp.srtt.is_zero() {
            super::rtt::RTO_INIT
        } else if self.tcp.packets_out == 1 {
            // A lone segment may wait for a delayed ACK.
            self.tcp.srtt * 2 + super::rtt::RTO_MIN
        } else {
            self.tcp.srtt * 2 + TCP_TIMEOUT_MIN
        };
        let rto_delta = if advancing_rto {
            Some(self.rto())
        } else {
            self.rto_deadline.map(|d| d.saturating_duration_since(now))
        };
        if let Some(d) = rto_delta.filter(|d| !d.is_zero()) {
            timeout = timeout.min(d);
        }
        self.tlp_deadline = Some(now + timeout);
        true
    }

    /// The probe timer fired (`tcp_send_loss_probe`).
    pub fn on_tlp_timer(&mut self, now: Instant, out: &mut Vec<DataPacket>) {
        self.tlp_deadline = None;
        if self.completed.is_some() || self.tcp.packets_out == 0 {
            return;
        }
        self.tcp.now = now;
        // At most one probe outstanding.
        if self.tlp_high_seq.is_none() && self.send_loss_probe(now, out) {
            self.tlp_high_seq = Some(self.nxt);
            self.stats.tlps += 1;
        }
        self.arm_rto(now);
    }

    /// Sends the probe: new data if there is any, else the highest
    /// outstanding segment again. Returns whether a probe left.
    fn send_loss_probe(&mut self, now: Instant, out: &mut Vec<DataPacket>) -> bool {
        self.tlp_retrans = false;
        if self.has_unsent() && self.rwnd_allows() {
            let k = self.nxt;
            self.transmit(now, k, out);
            return true;
        }
        let Some(k) = (self.una..self.nxt)
            .rev()
            .find(|&k| self.segs[(k - self.una) as usize].flags & (F_SACKED | F_RETRANS) == 0)
        else {
            return false;
        };
        let seg = &self.segs[(k - self.una) as usize];
        self.tcp.tlp_orig_data_app_limited = seg.tx.is_app_limited;
        self.transmit(now, k, out);
        self.tlp_retrans = true;
        true
    }

    /// Linux `tcp_process_tlp_ack`, before the recovery state machine:
    /// did the probe repair a loss?
    pub(super) fn process_tlp_ack(&mut self, cum: u64, una_advanced: bool, sacked_new: bool) {
        let Some(high) = self.tlp_high_seq else {
            return;
        };
        if cum < high {
            return;
        }
        if !self.tlp_retrans {
            // A probe of new data was acknowledged.
            self.tlp_high_seq = None;
        } else if cum > high {
            // The ACK covers more than the probe: there was a loss, and the
            // probe repaired it. Reduce cwnd once (tlp_high_seq is cleared
            // by tcp_init_cwnd_reduction).
            self.cc.cwnd_event(&mut self.tcp, CaEvent::TlpRecovery);
            self.init_cwnd_reduction();
            self.set_state(CaState::Cwr);
            self.end_cwnd_reduction();
            self.try_keep_open();
        } else if !una_advanced && !sacked_new {
            // Pure duplicate ACK: original and probe both arrived.
            self.tlp_high_seq = None;
        }
    }
}
