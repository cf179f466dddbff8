//! Loss signals and loss recovery: per-lost-packet hook, TLP-repaired loss,
//! recovery entry (`ssthresh`), RTO (`set_state(Loss)`), and undo.
//!
//! BBRv3 has **no packet conservation** in fast recovery (unlike v1): the
//! model bounds (`bw_lo`/`inflight_lo`, `inflight_hi`) are the response.
//!
//! Owns `bbr_note_loss`, `bbr_skb_marked_lost`, `bbr_run_loss_probe_recovery`,
//! `bbr_undo_cwnd`, `bbr_ssthresh`, `bbr_set_state`, `bbr_exit_loss_recovery`
//! and `bbr_save_cwnd`. Must never run the transport's recovery (PRR, RTO
//! cwnd): e.g. on RTO the transport sets cwnd = inflight + 1, as Linux does.

use super::counters::Hit;
use super::params::INF;
use super::round::Sample;
use super::{Bbr3, Mode};
use crate::rate::TxSnapshot;
use crate::tcp::{CaState, Tcp};

impl Bbr3 {
    /// `bbr_save_cwnd`: remember the last known good cwnd (not one cut by
    /// recovery or PROBE_RTT).
    pub(super) fn save_cwnd(&mut self, tcp: &Tcp) {
        if self.prev_ca_state < CaState::Recovery && self.mode != Mode::ProbeRtt {
            self.prior_cwnd = tcp.snd_cwnd;
        } else {
            self.prior_cwnd = self.prior_cwnd.max(tcp.snd_cwnd);
        }
    }

    /// `bbr_note_loss`: mark the loss round; the first loss of a round
    /// re-anchors it so it ends one round after that loss.
    fn note_loss(&mut self, tcp: &Tcp) {
        if !self.loss_in_round {
            self.loss_round_delivered = tcp.delivered;
        }
        self.loss_in_round = true;
        self.loss_in_cycle = true;
        self.counters.loss_events += 1;
    }

    /// `bbr_skb_marked_lost` (Linux `ops->skb_marked_lost`): the transport
    /// just marked the packet with send snapshot `tx` (of `pcount` packets)
    /// lost, after adding it to `tcp.lost`. Call it before the ACK's
    /// `cong_control`. While the flow is probing, this checks whether the
    /// loss rate up to this packet went too high and, if so, cuts
    /// `inflight_hi` to the inflight at which it crossed 2%.
    ///
    /// The [`crate::CongestionControl`] trait has no such hook yet; without
    /// it, loss is still seen per ACK (`rs.losses`, `rs.lost`) but later.
    pub fn skb_marked_lost(&mut self, tcp: &mut Tcp, tx: &TxSnapshot, pcount: u32) {
        self.n_steps = 0;
        self.counters.lost += u64::from(pcount);
        self.note_loss(tcp);
        if !self.bw_probe_samples {
            return; // Not a packet sent while probing for bandwidth.
        }
        if tx.delivered_time.is_none() {
            return; // SACKed, reneged or already marked lost: ignore.
        }
        let mut rs = Sample {
            tx_in_flight: tx.tx_in_flight,
            lost: tcp.lost.saturating_sub(tx.lost),
            is_app_limited: tx.is_app_limited,
            ..Sample::default()
        };
        if self.v2alpha() {
            // bbr2_skb_marked_lost also judges the CE marks since the send.
            rs.delivered_ce = tcp.delivered_ce.saturating_sub(tx.delivered_ce);
        }
        if self.is_inflight_too_high(&rs) {
            rs.tx_in_flight = self.inflight_hi_from_lost_skb(&rs, pcount.max(1));
            self.handle_inflight_too_high(tcp, &rs, Hit::Lost);
        }
    }

    /// `bbr_run_loss_probe_recovery`, run by `cwnd_event` on
    /// [`crate::CaEvent::TlpRecovery`] (v3 `CA_EVENT_TLP_RECOVERY`) with
    /// `tcp.tlp_orig_data_app_limited`: a tail-loss probe repaired the loss
    /// of one packet. `tlp_orig_data_app_limited` is whether the original
    /// data was sent app-limited. No-op when `loss_probe_recovery` is off (v2).
    pub fn on_tlp_recovery(&mut self, tcp: &mut Tcp, tlp_orig_data_app_limited: bool) {
        self.n_steps = 0;
        if !self.params.loss_probe_recovery {
            return;
        }
        self.counters.tlp_repairs += 1;
        self.note_loss(tcp);
        if !self.bw_probe_samples {
            return;
        }
        let rs = Sample {
            lost: 1,
            tx_in_flight: self.inflight_latest.saturating_add(1),
            is_app_limited: tlp_orig_data_app_limited,
            ..Sample::default()
        };
        if self.is_inflight_too_high(&rs) {
            self.handle_inflight_too_high(tcp, &rs, Hit::Tlp);
        }
    }

    /// `bbr_undo_cwnd`: the recovery was spurious; reset the plateau
    /// detector and restore the bounds saved at recovery entry.
    /// Linux, not the draft: the mode is not restored (the draft's
    /// `undo_state` returns to STARTUP or REFILL).
    /// (v2alpha, `bbr2_undo_cwnd`: resets `full_bw`/`full_bw_cnt` and
    /// keeps the fast path.)
    pub(super) fn bbr_undo_cwnd(&mut self) -> u32 {
        if self.v2alpha() {
            self.full_bw = 0;
            self.full_bw_cnt = 0;
        } else {
            self.reset_full_bw();
            self.try_fast_path = false;
        }
        self.loss_in_round = false;
        self.bw_lo = self.bw_lo.max(self.undo_bw_lo);
        self.inflight_lo = self.inflight_lo.max(self.undo_inflight_lo);
        self.inflight_hi = self.inflight_hi.max(self.undo_inflight_hi);
        self.prior_cwnd
    }

    /// `bbr_ssthresh`: entering recovery; save cwnd and the loss-adapted
    /// bounds for undo. Returns ssthresh unchanged (BBR does not use it).
    pub(super) fn bbr_ssthresh(&mut self, tcp: &Tcp) -> u32 {
        self.save_cwnd(tcp);
        self.undo_bw_lo = self.bw_lo;
        self.undo_inflight_lo = self.inflight_lo;
        self.undo_inflight_hi = self.inflight_hi;
        tcp.snd_ssthresh
    }

    /// `bbr_set_state`: on RTO reset the plateau detector and, when not
    /// probing, start `inflight_lo` from the pre-RTO cwnd so the next loss
    /// round cuts from there; on leaving Loss restore cwnd.
    /// DEVIATION: no PLB rehash bookkeeping on RTO.
    pub(super) fn bbr_set_state(&mut self, tcp: &mut Tcp, new_state: CaState) {
        if new_state == CaState::Loss {
            self.counters.rtos += 1;
            self.prev_ca_state = CaState::Loss;
            let v2alpha = self.v2alpha();
            if v2alpha {
                self.full_bw = 0; // bbr2_set_state
            } else {
                self.reset_full_bw();
            }
            if !self.is_probing_bandwidth() && self.inflight_lo == INF {
                self.inflight_lo = if v2alpha {
                    self.prior_cwnd
                } else {
                    tcp.snd_cwnd.max(self.prior_cwnd)
                };
            }
        } else if self.prev_ca_state == CaState::Loss {
            // bbr_exit_loss_recovery
            tcp.set_cwnd(tcp.snd_cwnd.max(self.prior_cwnd));
            self.try_fast_path = false;
        }
    }
}
