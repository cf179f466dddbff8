//! The TCP-like receiver: in-order delivery to the application, an
//! out-of-order store, SACK blocks and Linux-like delayed ACKs.
//!
//! ACK policy (Linux `__tcp_ack_snd_check`): ACK at once when out-of-order
//! data is held, when a segment arrives out of order or fills a hole, or on a
//! duplicate; in quick-ACK mode (the first 16 segments of a connection, and
//! 16 more after a duplicate: `TCP_MAX_QUICKACKS`) every segment; otherwise
//! every second full segment, or when the delayed-ACK timer (40 ms,
//! `TCP_DELACK_MIN`) fires. ECN (`tcp_ecn_check_ce`): a CE segment is
//! echoed (ECE) on the next ACK, per ACK as DCTCP/L4S receivers do, and
//! re-enters quick-ACK mode for two segments. Owns nothing on the sender side; must never
//! acknowledge data it has not received.

use crate::time::{Duration, Instant};

use super::wire::{AckPacket, DataPacket, MAX_SACK_BLOCKS, SackBlock};

/// Linux `TCP_MAX_QUICKACKS`.
pub const MAX_QUICKACKS: u32 = 16;

/// Receiver state of one flow.
#[derive(Debug, Clone)]
pub struct Receiver {
    flow: u32,
    /// Next segment expected in order.
    rcv_nxt: u64,
    /// Out-of-order ranges held, sorted and disjoint, all above `rcv_nxt`.
    ooo: Vec<SackBlock>,
    /// Most recently changed OOO ranges, most recent first (SACK order).
    recent: Vec<SackBlock>,
    /// In-order segments received but not yet acknowledged.
    unacked: u32,
    /// Segments still to be acknowledged at once (quick-ACK mode).
    quickack: u32,
    delack: Duration,
    /// In-order segments per ACK outside quick-ACK mode (Linux: 2).
    ack_every: u32,
    /// When the delayed ACK is due, if one is pending.
    pub delack_deadline: Option<Instant>,
    /// Payload bytes delivered in order to the application.
    pub bytes_delivered: u64,
    /// New payload bytes that arrived (first copies, in order or not).
    pub bytes_received: u64,
    /// Segments that arrived more than once.
    pub duplicates: u64,
    /// When the last in-order byte was delivered.
    pub last_delivery: Option<Instant>,
    /// A segment not yet acknowledged carried CE: the next ACK echoes it.
    pending_ece: bool,
}

impl Receiver {
    /// A receiver for `flow` with the given delayed-ACK timeout.
    pub fn new(flow: u32, delack: Duration) -> Self {
        Receiver {
            flow,
            rcv_nxt: 0,
            ooo: Vec::new(),
            recent: Vec::new(),
            unacked: 0,
            quickack: MAX_QUICKACKS,
            delack,
            ack_every: 2,
            delack_deadline: None,
            bytes_delivered: 0,
            bytes_received: 0,
            duplicates: 0,
            last_delivery: None,
            pending_ece: false,
        }
    }

    /// The same receiver without the initial quick-ACK phase.
    pub fn without_quickack(mut self) -> Self {
        self.quickack = 0;
        self
    }

    /// The same receiver acknowledging every `n`-th in-order segment (1: no
    /// delayed ACKs; Linux's is 2).
    pub fn with_ack_every(mut self, n: u32) -> Self {
        self.ack_every = n.max(1);
        self
    }

    /// Next segment expected.
    pub fn rcv_nxt(&self) -> u64 {
        self.rcv_nxt
    }

    /// Handles a data segment at `now`; returns an ACK to send now, if any.
    /// `seg_len(k)` gives segment `k`'s payload size.
    pub fn on_data(
        &mut self,
        now: Instant,
        p: &DataPacket,
        seg_len: impl Fn(u64) -> u32,
    ) -> Option<AckPacket> {
        let seg = p.seg;
        if p.ce {
            // tcp_ecn_check_ce: CE received, echo it and do not delay the
            // ACK (`tcp_enter_quickack_mode(sk, 2)`).
            self.pending_ece = true;
            self.quickack = self.quickack.max(2);
        }
        if seg < self.rcv_nxt || self.range_of(seg).is_some() {
            self.duplicates += 1;
            // tcp_data_queue: a retransmit forces quick-ACK mode.
            self.quickack = self.quickack.max(MAX_QUICKACKS);
            return Some(self.ack_now());
        }
        self.bytes_received += u64::from(p.len);
        if seg == self.rcv_nxt {
            let had_ooo = !self.ooo.is_empty();
            self.rcv_nxt += 1;
            let mut delivered = u64::from(p.len);
            // Pull in any out-of-order range that is now contiguous.
            if let Some(&(s, e)) = self.ooo.first()
                && s == self.rcv_nxt
            {
                delivered += (s..e).map(|k| u64::from(seg_len(k))).sum::<u64>();
                self.rcv_nxt = e;
                self.ooo.remove(0);
            }
            self.recent.retain(|&(_, e)| e > self.rcv_nxt);
            self.bytes_delivered += delivered;
            self.last_delivery = Some(now);
            self.unacked += 1;
            if self.quickack > 0 {
                self.quickack -= 1;
                return Some(self.ack_now());
            }
            if had_ooo || !self.ooo.is_empty() || self.unacked >= self.ack_every {
                return Some(self.ack_now());
            }
            if self.delack_deadline.is_none() {
                self.delack_deadline = Some(now + self.delack);
            }
            return None;
        }
        // Out of order: insert and merge.
        let i = self.ooo.partition_point(|&(s, _)| s <= seg);
        self.ooo.insert(i, (seg, seg + 1));
        let mut j = i;
        if j > 0 && self.ooo[j - 1].1 == seg {
            self.ooo[j - 1].1 = seg + 1;
            self.ooo.remove(j);
            j -= 1;
        }
        if j + 1 < self.ooo.len() && self.ooo[j + 1].0 == self.ooo[j].1 {
            self.ooo[j].1 = self.ooo[j + 1].1;
            self.ooo.remove(j + 1);
        }
        let block = self.ooo[j];
        // The block holding the newest segment goes first (RFC 2018).
        self.recent
            .retain(|&(s, e)| !(s >= block.0 && e <= block.1));
        self.recent.insert(0, block);
        self.recent.truncate(MAX_SACK_BLOCKS * 2);
        Some(self.ack_now())
    }

    /// The delayed-ACK timer fired at `now`.
    pub fn on_delack_timer(&mut self, now: Instant) -> Option<AckPacket> {
        match self.delack_deadline {
            Some(d) if d <= now && self.unacked > 0 => Some(self.ack_now()),
            Some(d) if d <= now => {
                self.delack_deadline = None;
                None
            }
            _ => None,
        }
    }

    /// Index of the out-of-order range holding `seg`.
    fn range_of(&self, seg: u64) -> Option<usize> {
        let i = self.ooo.partition_point(|&(s, _)| s <= seg);
        (i > 0 && self.ooo[i - 1].1 > seg).then(|| i - 1)
    }

    fn ack_now(&mut self) -> AckPacket {
        self.unacked = 0;
        self.delack_deadline = None;
        let mut sacks = [(0, 0); MAX_SACK_BLOCKS];
        let mut n = 0;
        for &b in &self.recent {
            if n == MAX_SACK_BLOCKS {
                break;
            }
            // Report the current extent of the range holding this block.
            if let Some(i) = self.range_of(b.0) {
                let cur = self.ooo[i];
                if !sacks[..n].contains(&cur) {
                    sacks[n] = cur;
                    n += 1;
                }
            }
        }
        AckPacket {
            flow: self.flow,
            cum: self.rcv_nxt,
            sacks,
            nsacks: n as u8,
            ece: std::mem::take(&mut self.pending_ece),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(seg: u64) -> DataPacket {
        DataPacket {
            flow: 0,
            seg,
            len: 1000,
            enqueued: Instant::ZERO,
            retrans: false,
            ce: false,
        }
    }

    fn rx() -> Receiver {
        Receiver::new(0, Duration::from_millis(40)).without_quickack()
    }

    #[test]
    fn quick_acks_the_first_sixteen_segments() {
        let mut r = Receiver::new(0, Duration::from_millis(40));
        let t = Instant::ZERO;
        for k in 0..16 {
            assert!(r.on_data(t, &data(k), |_| 1000).is_some(), "segment {k}");
        }
        assert!(r.on_data(t, &data(16), |_| 1000).is_none(), "then delayed");
        assert!(r.on_data(t, &data(17), |_| 1000).is_some());
        // A duplicate re-enters quick-ACK mode.
        assert!(r.on_data(t, &data(3), |_| 1000).is_some());
        assert!(r.on_data(t, &data(18), |_| 1000).is_some());
    }

    #[test]
    fn acks_every_second_segment_or_after_delay() {
        let mut r = rx();
        let t = Instant::ZERO;
        assert!(r.on_data(t, &data(0), |_| 1000).is_none());
        assert_eq!(r.delack_deadline, Some(Instant::from_micros(40_000)));
        let a = r.on_data(t, &data(1), |_| 1000).unwrap();
        assert_eq!((a.cum, a.nsacks), (2, 0));
        assert!(r.on_data(t, &data(2), |_| 1000).is_none());
        assert!(r.on_delack_timer(Instant::from_micros(39_999)).is_none());
        let a = r.on_delack_timer(Instant::from_micros(40_000)).unwrap();
        assert_eq!(a.cum, 3);
        assert_eq!(r.bytes_delivered, 3000);
    }

    #[test]
    fn out_of_order_sacks_newest_block_first_and_fills() {
        let mut r = rx();
        let t = Instant::ZERO;
        r.on_data(t, &data(0), |_| 1000);
        let a = r.on_data(t, &data(2), |_| 1000).unwrap();
        assert_eq!((a.cum, a.sack_blocks()), (1, &[(2, 3)][..]));
        let a = r.on_data(t, &data(5), |_| 1000).unwrap();
        assert_eq!(a.sack_blocks(), &[(5, 6), (2, 3)]);
        let a = r.on_data(t, &data(3), |_| 1000).unwrap();
        assert_eq!(a.sack_blocks(), &[(2, 4), (5, 6)]);
        let a = r.on_data(t, &data(4), |_| 1000).unwrap();
        assert_eq!(a.sack_blocks(), &[(2, 6)]);
        // Filling the hole delivers everything and acks at once.
        let a = r.on_data(t, &data(1), |_| 1000).unwrap();
        assert_eq!((a.cum, a.nsacks), (6, 0));
        assert_eq!((r.bytes_delivered, r.bytes_received), (6000, 6000));
        // A duplicate is acked at once and not delivered again.
        let a = r.on_data(t, &data(3), |_| 1000).unwrap();
        assert_eq!(a.cum, 6);
        assert_eq!((r.bytes_delivered, r.duplicates), (6000, 1));
    }
}
