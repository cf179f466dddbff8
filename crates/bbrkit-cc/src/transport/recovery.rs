//! Loss recovery of the transport: RACK loss marking and its reordering
//! timer (`tcp_rack_detect_loss`, `tcp_rack_reo_timeout` in
//! `tcp_recovery.c`), the recovery state machine (`tcp_fastretrans_alert`,
//! `tcp_enter_recovery`, `tcp_enter_cwr` on ECE, `tcp_try_keep_open`),
//! undo (`tcp_try_undo_recovery`, `tcp_try_undo_loss`), PRR
//! (`tcp_cwnd_reduction`) and the retransmission timeout
//! (`tcp_retransmit_timer` → `tcp_enter_loss`). Part of [`Sender`]; must
//! never read a clock (time comes in as `now`).

use std::cmp::Reverse;

use super::{
    DataPacket, F_EVER_RETRANS, F_LOST, F_RETRANS, F_SACKED, REORDERING, Sender, sent_after,
};
use crate::controller::CongestionControl;
use crate::tcp::{CaEvent, CaState, TCP_INFINITE_SSTHRESH};
use crate::time::{Duration, Instant};

impl<C: CongestionControl> Sender<C> {
    /// RACK: `tcp_rack_advance` for a delivered segment.
    pub(super) fn rack_advance(&mut self, k: u64, flags: u8, xmit: Instant, now: Instant) {
        let rtt = now - xmit;
        if flags & (F_RETRANS | F_EVER_RETRANS) != 0 && self.tcp.min_rtt.is_some_and(|m| rtt < m) {
            return;
        }
        self.rack.advanced = true;
        self.rack.rtt = rtt;
        if self
            .rack
            .newest
            .is_none_or(|(t, s)| sent_after(xmit, k, t, s))
        {
            self.rack.newest = Some((xmit, k));
        }
    }

    /// Marks segment `k` lost (`tcp_mark_skb_lost`): counts it in
    /// `tcp.lost`, tells the controller (`skb_marked_lost`), queues it for
    /// retransmission. Returns whether it was newly (or again) lost.
    pub(super) fn mark_lost(&mut self, k: u64) -> bool {
        let seg = &mut self.segs[(k - self.una) as usize];
        if seg.flags & F_SACKED != 0 {
            return false;
        }
        if seg.flags & F_LOST != 0 {
            if seg.flags & F_RETRANS == 0 {
                return false;
            }
            seg.flags &= !F_RETRANS;
            self.tcp.retrans_out -= 1;
        } else {
            seg.flags |= F_LOST;
            self.tcp.lost_out += 1;
        }
        let tx = seg.tx;
        self.tcp.lost += 1;
        self.cc.skb_marked_lost(&mut self.tcp, &tx, 1);
        self.lost_heap.push(Reverse(k));
        true
    }

    /// `tcp_rack_detect_loss`: marks segments lost that were sent before the
    /// newest delivered one by more than an RTT plus the reordering window.
    pub(super) fn rack_detect(&mut self, now: Instant) -> u32 {
        let Some((newest_t, newest_k)) = self.rack.newest else {
            return 0;
        };
        let reo_wnd = if self.tcp.ca_state >= CaState::Recovery || self.tcp.sacked_out >= REORDERING
        {
            Duration::ZERO
        } else {
            (self.tcp.min_rtt.unwrap_or_default() / 4).min(self.tcp.srtt)
        };
        let mut lost = 0;
        self.reo_deadline = None;
        while let Some(&(k, xmit)) = self.rack_list.front() {
            let live = k >= self.una && {
                let s = &self.segs[(k - self.una) as usize];
                s.flags & F_SACKED == 0
                    && (s.flags & F_LOST == 0 || s.flags & F_RETRANS != 0)
                    && s.tx.send_time == xmit
            };
            if !live {
                self.rack_list.pop_front();
                continue;
            }
            if !sent_after(newest_t, newest_k, xmit, k) {
                break;
            }
            let due = xmit + self.rack.rtt + reo_wnd;
            if due <= now {
                if self.mark_lost(k) {
                    lost += 1;
                }
                self.rack_list.pop_front();
            } else {
                self.reo_deadline = Some(due);
                break;
            }
        }
        lost
    }

    /// Linux `tcp_current_ssthresh`.
    fn current_ssthresh(&self) -> u32 {
        if matches!(self.tcp.ca_state, CaState::Cwr | CaState::Recovery) {
            self.tcp.snd_ssthresh
        } else {
            let c = self.tcp.snd_cwnd;
            self.tcp.snd_ssthresh.max((c >> 1) + (c >> 2))
        }
    }

    /// Linux `tcp_init_cwnd_reduction`.
    pub(super) fn init_cwnd_reduction(&mut self) {
        self.high_seq = self.nxt;
        self.tlp_high_seq = None;
        self.tcp.snd_cwnd_cnt = 0;
        self.tcp.prior_cwnd = self.tcp.snd_cwnd;
        self.prr_delivered = 0;
        self.prr_out = 0;
        self.tcp.snd_ssthresh = self.cc.ssthresh(&mut self.tcp);
    }

    /// Linux `tcp_enter_recovery`: from CWR the reduction already under
    /// way continues.
    pub(super) fn enter_recovery(&mut self) {
        if self.tcp.ca_state != CaState::Cwr {
            self.prior_ssthresh = self.current_ssthresh();
            self.init_cwnd_reduction();
        }
        self.high_seq = self.nxt;
        self.stats.recoveries += 1;
        self.set_state(CaState::Recovery);
    }

    /// Linux `tcp_end_cwnd_reduction`: cwnd = ssthresh; a no-op for
    /// `cong_control` controllers (BBR), as in the kernel.
    pub(super) fn end_cwnd_reduction(&mut self) {
        if self.cc.has_cong_control() {
            return;
        }
        if self.tcp.snd_ssthresh < TCP_INFINITE_SSTHRESH {
            self.tcp.set_cwnd(self.tcp.snd_ssthresh);
        }
        self.cc.cwnd_event(&mut self.tcp, CaEvent::CompleteCwr);
    }

    /// Linux `tcp_undo_cwnd_reduction` (`tcp_try_undo_recovery`,
    /// `tcp_try_undo_loss`), then `set_state(Open)`. After an RTO the loss
    /// marks of segments not yet retransmitted are removed.
    fn undo(&mut self) {
        self.undo_next_exit = false;
        if self.prior_ssthresh > 0 {
            let cwnd = self.cc.undo_cwnd(&mut self.tcp);
            self.tcp.set_cwnd(cwnd);
            self.tcp.snd_ssthresh = self.tcp.snd_ssthresh.max(self.prior_ssthresh);
        }
        if self.tcp.ca_state == CaState::Loss {
            for seg in self.segs.iter_mut() {
                if seg.flags & (F_LOST | F_RETRANS) == F_LOST {
                    seg.flags &= !F_LOST;
                    self.tcp.lost_out -= 1;
                }
            }
        }
        self.stats.undos += 1;
        self.set_state(CaState::Open);
    }

    /// The state part of `tcp_fastretrans_alert`: leave CWR, Recovery or
    /// Loss once `high_seq` is acknowledged (undo if the episode was
    /// spurious), enter Recovery on a loss, CWR on ECE (`tcp_enter_cwr`),
    /// otherwise `tcp_try_keep_open` (Open/Disorder).
    pub(super) fn fastretrans_alert(&mut self, ece: bool) {
        let done = self.una >= self.high_seq;
        match self.tcp.ca_state {
            CaState::Cwr if self.una > self.high_seq => {
                self.end_cwnd_reduction();
                self.set_state(CaState::Open);
            }
            CaState::Recovery | CaState::Loss if done && self.undo_next_exit => self.undo(),
            CaState::Recovery if done => {
                self.set_state(CaState::Open);
                self.end_cwnd_reduction();
            }
            CaState::Loss if done => self.set_state(CaState::Open),
            _ => {}
        }
        let state = self.tcp.ca_state;
        if self.tcp.lost_out > 0 && !matches!(state, CaState::Recovery | CaState::Loss) {
            self.enter_recovery();
        } else if ece && self.tcp.ecn_enabled && state < CaState::Cwr {
            self.prior_ssthresh = 0;
            self.init_cwnd_reduction();
            self.set_state(CaState::Cwr);
        } else if matches!(state, CaState::Open | CaState::Disorder) {
            self.try_keep_open();
        }
    }

    /// Linux `tcp_try_keep_open`: Disorder while anything is SACKed, lost
    /// or retransmitted, else Open.
    pub(super) fn try_keep_open(&mut self) {
        let left_out = self.tcp.sacked_out + self.tcp.lost_out + self.tcp.retrans_out;
        let state = if left_out > 0 {
            CaState::Disorder
        } else {
            CaState::Open
        };
        if state != self.tcp.ca_state {
            self.set_state(state);
            self.high_seq = self.nxt;
        }
    }

    /// PRR (RFC 6937) as Linux `tcp_cwnd_reduction`.
    pub(super) fn prr(&mut self, newly_acked_sacked: u32, newly_lost: u32, una_advanced: bool) {
        if newly_acked_sacked == 0 || self.tcp.prior_cwnd == 0 {
            return;
        }
        let in_flight = self.tcp.packets_in_flight();
        let ssthresh = self.tcp.snd_ssthresh;
        self.prr_delivered += newly_acked_sacked;
        let sndcnt: i64 = if in_flight > ssthresh {
            let dividend = u64::from(ssthresh) * u64::from(self.prr_delivered)
                + u64::from(self.tcp.prior_cwnd)
                - 1;
            (dividend / u64::from(self.tcp.prior_cwnd)) as i64 - i64::from(self.prr_out)
        } else {
            let delta = i64::from(ssthresh - in_flight);
            let mut s = (i64::from(self.prr_delivered) - i64::from(self.prr_out))
                .max(i64::from(newly_acked_sacked));
            if una_advanced && newly_lost == 0 {
                s += 1;
            }
            s.min(delta)
        };
        let sndcnt = sndcnt.max(if self.prr_out > 0 { 0 } else { 1 });
        self.tcp.set_cwnd(in_flight + sndcnt as u32);
    }

    /// The RACK reordering timer fired (`tcp_rack_reo_timeout`).
    pub fn on_reo_timer(&mut self, now: Instant, out: &mut Vec<DataPacket>) {
        if self.completed.is_some() {
            return;
        }
        self.tcp.now = now;
        let prior_in_flight = self.tcp.packets_in_flight();
        self.rack_detect(now);
        if self.tcp.packets_in_flight() != prior_in_flight {
            if self.tcp.ca_state < CaState::Recovery {
                self.enter_recovery();
                if !self.cc.has_cong_control() {
                    self.prr(1, 0, false);
                }
            }
            self.try_send(now, out);
        }
    }

    /// The retransmission timer fired (`tcp_retransmit_timer` →
    /// `tcp_enter_loss`): everything not SACKed is lost, cwnd drops to 1.
    pub fn on_rto(&mut self, now: Instant, out: &mut Vec<DataPacket>) {
        if self.completed.is_some() || self.tcp.packets_out == 0 {
            return;
        }
        if self.tlp_deadline.is_some_and(|t| t <= now) {
            // Linux has one timer for both: a pending probe replaces the RTO.
            self.on_tlp_timer(now, out);
            return;
        }
        self.tcp.now = now;
        self.stats.rtos += 1;
        self.tlp_high_seq = None;
        self.tlp_deadline = None;
        // tcp_timeout_mark_lost, then ssthresh once per window.
        for i in 0..self.segs.len() {
            self.mark_lost(self.una + i as u64);
        }
        let state = self.tcp.ca_state;
        if state <= CaState::Disorder
            || self.una >= self.high_seq
            || (state == CaState::Loss && self.backoff == 0)
        {
            self.prior_ssthresh = self.current_ssthresh();
            self.tcp.prior_cwnd = self.tcp.snd_cwnd;
            self.tcp.snd_ssthresh = self.cc.ssthresh(&mut self.tcp);
            self.cc.cwnd_event(&mut self.tcp, CaEvent::Loss);
        }
        self.rack_list.clear();
        self.reo_deadline = None;
        self.tcp.set_cwnd(self.tcp.packets_in_flight() + 1);
        // tcp_retransmit_timer retransmits the head whatever its state: a
        // tail-loss probe's copy of it (retransmitted, then marked lost
        // here, which keeps TCPCB_SACKED_RETRANS) must not block that.
        if let Some(seg) = self.segs.front_mut()
            && seg.flags & (F_SACKED | F_RETRANS) == F_RETRANS
        {
            seg.flags &= !F_RETRANS;
            self.tcp.retrans_out -= 1;
        }
        self.tcp.snd_cwnd_cnt = 0;
        self.high_seq = self.nxt;
        self.set_state(CaState::Loss);
        self.backoff += 1;
        // The head is retransmitted at once, not paced.
        self.wstamp = self.wstamp.min(now);
        self.rto_deadline = None;
        self.try_send(now, out);
        self.arm_rto(now);
    }
}
