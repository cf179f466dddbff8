//! Loss recovery of the test sender: Linux `tcp_fastretrans_alert` state
//! changes (Open/Disorder/CWR/Recovery/Loss), `tcp_init_cwnd_reduction`,
//! PRR (`tcp_cwnd_reduction`), `tcp_end_cwnd_reduction`, the RTO
//! (`tcp_enter_loss`) and undo of spurious episodes. Never decides what to
//! send.

use super::Sender;
use crate::controller::CongestionControl;
use crate::tcp::{CaEvent, CaState, TCP_INFINITE_SSTHRESH};
use crate::time::Instant;

impl<C: CongestionControl> Sender<C> {
    /// Declare the current (or next) fast recovery or RTO episode spurious,
    /// as DSACKs or timestamps would show (Linux `tcp_may_undo`): when it
    /// ends (`snd_una >= high_seq`) the transport calls `undo_cwnd()` and
    /// restores ssthresh instead of setting cwnd = ssthresh
    /// (`tcp_try_undo_recovery` / `tcp_try_undo_loss`).
    pub fn mark_spurious(&mut self) {
        self.undo_next_exit = true;
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

    /// Linux `tcp_undo_cwnd_reduction`, then `set_state(Open)`. For an RTO
    /// episode the loss marks of packets not yet retransmitted are removed
    /// (`unmark_loss`); the kernel clears all of them.
    fn undo(&mut self, log: &mut Vec<CaState>) {
        self.undo_next_exit = false;
        if self.prior_ssthresh > 0 {
            let cwnd = self.cc.undo_cwnd(&mut self.tcp);
            self.tcp.set_cwnd(cwnd);
            self.tcp.snd_ssthresh = self.tcp.snd_ssthresh.max(self.prior_ssthresh);
        }
        if self.tcp.ca_state == CaState::Loss {
            for p in self.pkts.iter_mut().filter(|p| p.lost && !p.retrans) {
                p.lost = false;
                self.tcp.lost_out -= 1;
            }
        }
        self.stats.undos += 1;
        self.set_ca_state(CaState::Open, log);
    }

    /// Linux `tcp_init_cwnd_reduction`.
    fn init_cwnd_reduction(&mut self) {
        self.high_seq = self.tcp.snd_nxt;
        self.tcp.snd_cwnd_cnt = 0;
        self.tcp.prior_cwnd = self.tcp.snd_cwnd;
        self.prr_delivered = 0;
        self.prr_out = 0;
        self.tcp.snd_ssthresh = self.cc.ssthresh(&mut self.tcp);
    }

    pub(super) fn set_ca_state(&mut self, s: CaState, log: &mut Vec<CaState>) {
        self.cc.set_state(&mut self.tcp, s);
        self.tcp.ca_state = s;
        log.push(s);
    }

    pub(super) fn recovery_state(&mut self, ece: bool, log: &mut Vec<CaState>) {
        let done = self.tcp.snd_una >= self.high_seq;
        match self.tcp.ca_state {
            CaState::Cwr if self.tcp.snd_una > self.high_seq => {
                self.end_cwnd_reduction();
                self.set_ca_state(CaState::Open, log);
            }
            CaState::Recovery | CaState::Loss if done && self.undo_next_exit => self.undo(log),
            CaState::Recovery if done => {
                self.set_ca_state(CaState::Open, log);
                self.end_cwnd_reduction();
            }
            CaState::Loss if done => self.set_ca_state(CaState::Open, log),
            _ => {}
        }
        let state = self.tcp.ca_state;
        // tcp_time_to_recover: any packet marked lost (also one left over
        // from the previous episode) starts fast recovery.
        if self.tcp.lost_out > 0 && !matches!(state, CaState::Recovery | CaState::Loss) {
            if state != CaState::Cwr {
                self.prior_ssthresh = self.current_ssthresh();
                self.init_cwnd_reduction();
            }
            self.stats.recoveries += 1;
            self.set_ca_state(CaState::Recovery, log);
        } else if ece && self.tcp.ecn_enabled && state < CaState::Cwr {
            self.init_cwnd_reduction();
            self.set_ca_state(CaState::Cwr, log);
        } else if state == CaState::Open && self.tcp.sacked_out + self.tcp.lost_out > 0 {
            self.set_ca_state(CaState::Disorder, log);
        } else if state == CaState::Disorder && self.tcp.sacked_out + self.tcp.lost_out == 0 {
            self.set_ca_state(CaState::Open, log);
        }
    }

    /// Linux `tcp_end_cwnd_reduction` (no undo here, so always to ssthresh);
    /// a no-op for `cong_control` controllers (BBR), as in the kernel.
    fn end_cwnd_reduction(&mut self) {
        if self.cc.has_cong_control() {
            return;
        }
        if self.tcp.snd_ssthresh < TCP_INFINITE_SSTHRESH {
            self.tcp.set_cwnd(self.tcp.snd_ssthresh);
        }
        self.cc.cwnd_event(&mut self.tcp, CaEvent::CompleteCwr);
    }

    /// Linux `tcp_cwnd_reduction`: Proportional Rate Reduction (RFC 6937).
    pub(super) fn prr(&mut self, newly_acked: u32, newly_lost: u32, una_advanced: bool) {
        if newly_acked == 0 || self.tcp.prior_cwnd == 0 {
            return;
        }
        let in_flight = i64::from(self.tcp.packets_in_flight());
        let delta = i64::from(self.tcp.snd_ssthresh) - in_flight;
        self.prr_delivered += newly_acked;
        let mut sndcnt: i64 = if delta < 0 {
            let dividend = u64::from(self.tcp.snd_ssthresh) * u64::from(self.prr_delivered)
                + u64::from(self.tcp.prior_cwnd)
                - 1;
            (dividend / u64::from(self.tcp.prior_cwnd)) as i64 - i64::from(self.prr_out)
        } else {
            let mut s = (i64::from(self.prr_delivered) - i64::from(self.prr_out))
                .max(i64::from(newly_acked));
            if una_advanced && newly_lost == 0 {
                s += 1;
            }
            s.min(delta)
        };
        // Force a fast retransmit upon entering fast recovery.
        sndcnt = sndcnt.max(if self.prr_out > 0 { 0 } else { 1 });
        self.tcp
            .set_cwnd((in_flight + sndcnt).clamp(1, i64::from(u32::MAX)) as u32);
    }

    /// The retransmission timer fired at `now` (Linux `tcp_enter_loss`).
    /// Does nothing if no data is outstanding.
    pub fn on_rto(&mut self, now: Instant) -> Vec<CaState> {
        self.tcp.now = now;
        let mut log = Vec::new();
        if self.tcp.packets_out == 0 {
            self.rto_deadline = None;
            return log;
        }
        self.stats.rtos += 1;
        // tcp_timeout_mark_lost.
        for p in self.pkts.iter_mut().filter(|p| !p.sacked) {
            super::mark_skb_lost(p, &mut self.tcp, &mut self.cc);
        }
        let state = self.tcp.ca_state;
        if state <= CaState::Disorder
            || self.tcp.snd_una >= self.high_seq
            || (state == CaState::Loss && self.backoff == 0)
        {
            self.prior_ssthresh = self.current_ssthresh();
            self.tcp.prior_cwnd = self.tcp.snd_cwnd;
            self.tcp.snd_ssthresh = self.cc.ssthresh(&mut self.tcp);
            self.cc.cwnd_event(&mut self.tcp, CaEvent::Loss);
        }
        let cwnd = self.tcp.packets_in_flight() + 1;
        self.tcp.set_cwnd(cwnd);
        self.tcp.snd_cwnd_cnt = 0;
        self.set_ca_state(CaState::Loss, &mut log);
        self.high_seq = self.tcp.snd_nxt;
        self.backoff += 1;
        self.rto_deadline = Some(now + self.rto());
        log
    }
}
