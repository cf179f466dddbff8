//! Loss recovery of the simulated sender: RACK loss marking and its
//! reordering timer (`tcp_rack_detect_loss`, `tcp_rack_reo_timeout`), the
//! recovery state machine (`tcp_fastretrans_alert`), PRR
//! (`tcp_cwnd_reduction`) and the retransmission timeout (`tcp_enter_loss`).
//! Part of [`Sender`]; must never read a clock (time comes in as `now`).

use std::cmp::Reverse;

use bbrkit_cc::{CaEvent, CaState, CongestionControl, Duration, Instant};

use super::{F_EVER_RETRANS, F_LOST, F_RETRANS, F_SACKED, REORDERING, Sender, sent_after};
use crate::packet::DataPacket;

impl Sender {
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

    /// `tcp_init_cwnd_reduction` + `tcp_set_ca_state(Recovery)`.
    pub(super) fn enter_recovery(&mut self) {
        self.high_seq = self.nxt;
        self.tcp.snd_cwnd_cnt = 0;
        self.tcp.prior_cwnd = self.tcp.snd_cwnd;
        self.prr_delivered = 0;
        self.prr_out = 0;
        self.tcp.snd_ssthresh = self.cc.ssthresh(&mut self.tcp);
        self.stats.recoveries += 1;
        self.set_state(CaState::Recovery);
    }

    /// The state part of `tcp_fastretrans_alert`.
    pub(super) fn fastretrans_alert(&mut self) {
        match self.tcp.ca_state {
            CaState::Recovery if self.una >= self.high_seq => {
                self.set_state(CaState::Open);
                if !self.cc.has_cong_control() {
                    // tcp_end_cwnd_reduction
                    if self.tcp.snd_ssthresh < bbrkit_cc::tcp::TCP_INFINITE_SSTHRESH {
                        self.tcp.set_cwnd(self.tcp.snd_ssthresh);
                    }
                    self.cc.cwnd_event(&mut self.tcp, CaEvent::CompleteCwr);
                }
            }
            CaState::Loss if self.una >= self.high_seq => self.set_state(CaState::Open),
            _ => {}
        }
        match self.tcp.ca_state {
            CaState::Open | CaState::Disorder if self.tcp.lost_out > 0 => self.enter_recovery(),
            CaState::Open | CaState::Disorder => {
                let state = if self.tcp.sacked_out + self.tcp.lost_out + self.tcp.retrans_out > 0 {
                    CaState::Disorder
                } else {
                    CaState::Open
                };
                if state != self.tcp.ca_state {
                    self.set_state(state);
                    self.high_seq = self.nxt;
                }
            }
            _ => {}
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

    /// The pacing timer fired.
    pub fn on_pace_timer(&mut self, now: Instant, out: &mut Vec<DataPacket>) {
        self.try_send(now, out);
    }

    /// The retransmission timer fired (`tcp_retransmit_timer` →
    /// `tcp_enter_loss`): everything not SACKed is lost, cwnd drops to 1.
    pub fn on_rto(&mut self, now: Instant, out: &mut Vec<DataPacket>) {
        if self.completed.is_some() || self.tcp.packets_out == 0 {
            return;
        }
        self.tcp.now = now;
        self.stats.rtos += 1;
        // tcp_timeout_mark_lost, then ssthresh once per window.
        for i in 0..self.segs.len() {
            self.mark_lost(self.una + i as u64);
        }
        let state = self.tcp.ca_state;
        if state <= CaState::Disorder
            || self.una >= self.high_seq
            || (state == CaState::Loss && self.backoff == 0)
        {
            self.tcp.prior_cwnd = self.tcp.snd_cwnd;
            self.tcp.snd_ssthresh = self.cc.ssthresh(&mut self.tcp);
            self.cc.cwnd_event(&mut self.tcp, CaEvent::Loss);
        }
        self.rack_list.clear();
        self.reo_deadline = None;
        self.tcp.set_cwnd(self.tcp.packets_in_flight() + 1);
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
