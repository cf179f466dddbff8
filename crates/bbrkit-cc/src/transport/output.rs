//! The sending half of the transport (Linux `tcp_output.c`): what to send
//! next (`tcp_write_xmit`: lost segments first, then new data), per-segment
//! accounting (`tcp_event_data_sent`, `tcp_rate_skb_sent`), TSO bursts
//! (`tcp_tso_autosize` or the controller's `tso_segs`), EDT pacing
//! (`tcp_update_skb_after_send`) and `tcp_cwnd_validate`. Part of
//! [`Sender`]; never processes an ACK.

use std::cmp::Reverse;

use super::{DataPacket, F_EVER_RETRANS, F_LOST, F_RETRANS, F_SACKED, GSO_MAX_BYTES, Seg, Sender};
use crate::controller::CongestionControl;
use crate::rate::{self, TxSnapshot};
use crate::tcp::{CaEvent, CaState};
use crate::time::{Duration, Instant};

impl<C: CongestionControl> Sender<C> {
    /// Linux `tcp_cwnd_validate` (6.x): keep the strongest signal of how
    /// fully the window is used. Once a window is cwnd-limited the raw
    /// `tp->is_cwnd_limited` stays set until `snd_una` passes the window's
    /// end (`cwnd_usage_seq`); otherwise `max_packets_out` tracks the most
    /// packets out. Controllers read the raw flag (BBR) or the helper
    /// [`crate::Tcp::tcp_is_cwnd_limited`] (Reno, CUBIC), as in the kernel.
    fn cwnd_validate(&mut self, limited: bool) {
        let t = &mut self.tcp;
        if self.una >= self.cwnd_usage_seq
            || limited
            || (!t.is_cwnd_limited && t.packets_out > t.max_packets_out)
        {
            t.is_cwnd_limited = limited;
            t.max_packets_out = t.packets_out;
            self.cwnd_usage_seq = self.nxt;
        }
    }

    /// The lowest lost segment waiting for retransmission.
    fn next_lost(&mut self) -> Option<u64> {
        while let Some(&Reverse(k)) = self.lost_heap.peek() {
            if k >= self.una {
                let f = self.segs[(k - self.una) as usize].flags;
                if f & (F_LOST | F_RETRANS | F_SACKED) == F_LOST {
                    return Some(k);
                }
            }
            self.lost_heap.pop();
        }
        None
    }

    /// Sends segment `k` (`tcp_transmit_skb` + `tcp_event_data_sent`).
    pub(super) fn transmit(&mut self, now: Instant, k: u64, out: &mut Vec<DataPacket>) {
        if self.tcp.packets_in_flight() == 0 {
            if self.tcp.packets_out == 0
                && self.cfg.slow_start_after_idle
                && !self.cc.has_cong_control()
            {
                self.cwnd_restart(now);
            }
            // tcp_event_data_sent: TX_START before lsndtime moves.
            self.cc.cwnd_event(&mut self.tcp, CaEvent::TxStart);
        }
        let was_idle = self.tcp.packets_out == 0;
        let is_retrans = k < self.nxt;
        if is_retrans {
            let seg = &mut self.segs[(k - self.una) as usize];
            let was_lost = seg.flags & F_LOST != 0;
            seg.flags |= F_RETRANS | F_EVER_RETRANS;
            self.tcp.retrans_out += 1;
            self.stats.retransmits += 1;
            if was_lost {
                // It is the top of the heap (next_lost); a tail-loss probe
                // retransmits a segment not marked lost.
                self.lost_heap.pop();
            }
        } else {
            self.nxt += 1;
            self.tcp.packets_out += 1;
            self.tcp.snd_nxt = self.seq_bytes(self.nxt);
            self.segs.push_back(Seg {
                tx: TxSnapshot::default(),
                flags: 0,
            });
        }
        if matches!(self.tcp.ca_state, CaState::Recovery | CaState::Cwr) {
            self.prr_out += 1;
        }
        let end_seq = self.seq_bytes(k + 1);
        let tx = rate::on_send(&mut self.tcp, was_idle, end_seq, is_retrans);
        self.segs[(k - self.una) as usize].tx = tx;
        self.rack_list.push_back((k, now));
        self.tcp.lsndtime = now;
        self.data_segs_out += 1;
        self.stats.packets_sent += 1;
        if is_retrans && k == self.una || self.rto_deadline.is_none() {
            self.arm_rto(now);
        }
        out.push(DataPacket {
            flow: self.flow,
            seg: k,
            len: self.seg_len(k),
            enqueued: now,
            retrans: is_retrans,
            ce: false,
        });
    }

    /// Linux `tcp_tso_autosize` / `ca_ops->tso_segs`: segments per burst.
    fn burst_segs(&self) -> u32 {
        if let Some(n) = self.cc.tso_segs(&self.tcp) {
            return n.max(1);
        }
        let mss = u64::from(self.cfg.mss);
        let bytes = (self.tcp.pacing_rate >> self.tcp.pacing_shift).min(GSO_MAX_BYTES);
        ((bytes / mss) as u32).max(2)
    }

    /// Sends what cwnd, the pacer and the receive window allow at `now`
    /// (`tcp_write_xmit`); appends the segments to `out`.
    pub fn try_send(&mut self, now: Instant, out: &mut Vec<DataPacket>) {
        if self.completed.is_some() {
            return;
        }
        self.tcp.now = now;
        self.pace_deadline = None;
        let mut limited = false;
        let mut sent_any = false;
        loop {
            if self.paced && self.wstamp > now {
                self.pace_deadline = Some(self.wstamp);
                break;
            }
            let in_flight = self.tcp.packets_in_flight();
            if in_flight >= self.tcp.snd_cwnd {
                limited = true;
                break;
            }
            let quota = self.tcp.snd_cwnd - in_flight;
            let burst = if self.paced {
                self.burst_segs().min(quota)
            } else {
                quota
            };
            let mut sent = 0;
            let mut bytes = 0u64;
            while sent < burst {
                let Some(k) = self.next_lost() else { break };
                self.transmit(now, k, out);
                bytes += u64::from(self.seg_len(k));
                sent += 1;
            }
            if sent == 0 {
                while sent < burst && self.has_unsent() && self.rwnd_allows() {
                    let k = self.nxt;
                    self.transmit(now, k, out);
                    bytes += u64::from(self.seg_len(k));
                    sent += 1;
                }
            }
            if sent == 0 {
                break;
            }
            sent_any = true;
            if self.paced {
                self.advance_wstamp(now, bytes);
            }
        }
        if sent_any {
            // tcp_write_xmit: one loss probe per tail-loss episode.
            self.schedule_loss_probe(now, false);
        }
        if sent_any || limited {
            self.cwnd_validate(limited);
        }
    }

    pub(super) fn rwnd_allows(&self) -> bool {
        self.cfg.rwnd.is_none_or(|w| {
            (self.nxt + 1 - self.una) * u64::from(self.cfg.mss) <= w.max(u64::from(self.cfg.mss))
        })
    }

    /// Linux `tcp_update_skb_after_send` (EDT pacing).
    fn advance_wstamp(&mut self, now: Instant, bytes: u64) {
        let prior = self.wstamp;
        self.wstamp = self.wstamp.max(now);
        let rate = self.tcp.pacing_rate;
        if rate != 0 && rate != u64::MAX && self.data_segs_out >= 10 {
            let mut len_ns = (u128::from(bytes) * 1_000_000_000 / u128::from(rate)) as u64;
            let credit = (self.wstamp - prior).as_nanos() as u64;
            len_ns -= (len_ns / 2).min(credit);
            self.wstamp += Duration::from_nanos(len_ns);
        }
        self.tcp.departure_time = self.wstamp;
    }

    /// The pacing timer fired.
    pub fn on_pace_timer(&mut self, now: Instant, out: &mut Vec<DataPacket>) {
        self.try_send(now, out);
    }
}
