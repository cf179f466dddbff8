//! The bottleneck link: a drop-tail FIFO (limit in bytes) drained at a fixed
//! bit rate. Owns serialization timing and link statistics (bytes sent,
//! busy time, drops, queue sojourn times). Must never look at what a packet
//! carries beyond its size.

use std::collections::VecDeque;

use bbrkit_cc::{Duration, Instant};

use crate::histogram::Histogram;
use crate::packet::DataPacket;

/// Link counters.
#[derive(Debug, Clone, Default)]
pub struct LinkStats {
    /// Packets that finished serialization.
    pub packets_sent: u64,
    /// Wire bytes that finished serialization.
    pub bytes_sent: u64,
    /// Packets dropped because the buffer was full.
    pub drops: u64,
    /// Total time spent serializing.
    pub busy: Duration,
    /// Largest backlog seen, bytes (waiting, excluding the one in service).
    pub max_backlog_bytes: u64,
    /// Time each packet waited in the queue before its serialization began, ns.
    pub sojourn: Histogram,
}

/// A rate-limited drop-tail link.
#[derive(Debug)]
pub struct Link {
    rate_bps: u64,
    limit_bytes: u64,
    queue: VecDeque<DataPacket>,
    backlog_bytes: u64,
    in_service: Option<DataPacket>,
    /// Fractional nanoseconds (×rate) carried between back-to-back packets
    /// so the long-run rate is exact.
    carry: u64,
    /// Counters.
    pub stats: LinkStats,
}

/// What happened to a packet offered to the link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Enqueued {
    /// The link was idle: serialization started; schedule completion at this time.
    Started(Instant),
    /// Queued behind others.
    Queued,
    /// Dropped: the buffer was full.
    Dropped,
}

impl Link {
    /// A link of `rate_bps` bits per second whose queue holds up to
    /// `limit_bytes` bytes waiting (at least one packet always fits).
    pub fn new(rate_bps: u64, limit_bytes: u64) -> Self {
        assert!(rate_bps > 0, "link rate must be positive");
        Link {
            rate_bps,
            limit_bytes,
            queue: VecDeque::new(),
            backlog_bytes: 0,
            in_service: None,
            carry: 0,
            stats: LinkStats::default(),
        }
    }

    /// The link rate in bits per second.
    pub fn rate_bps(&self) -> u64 {
        self.rate_bps
    }

    /// Bytes waiting (not counting the packet being serialized).
    pub fn backlog_bytes(&self) -> u64 {
        self.backlog_bytes
    }

    /// How long serializing `bytes` takes, carrying sub-ns remainders.
    fn serialization(&mut self, bytes: u32) -> Duration {
        let num = u128::from(bytes) * 8 * 1_000_000_000 + u128::from(self.carry);
        let rate = u128::from(self.rate_bps);
        self.carry = (num % rate) as u64;
        Duration::from_nanos((num / rate) as u64)
    }

    /// Offers a packet at `now`.
    pub fn enqueue(&mut self, now: Instant, mut p: DataPacket) -> Enqueued {
        p.enqueued = now;
        if self.in_service.is_none() {
            self.carry = 0;
            let d = self.serialization(p.wire_len());
            self.stats.busy += d;
            self.stats.sojourn.record(0);
            self.in_service = Some(p);
            return Enqueued::Started(now + d);
        }
        let len = u64::from(p.wire_len());
        if self.backlog_bytes + len > self.limit_bytes && !self.queue.is_empty() {
            self.stats.drops += 1;
            return Enqueued::Dropped;
        }
        self.backlog_bytes += len;
        self.stats.max_backlog_bytes = self.stats.max_backlog_bytes.max(self.backlog_bytes);
        self.queue.push_back(p);
        Enqueued::Queued
    }

    /// Serialization of the packet in service ended at `now`: returns it, and
    /// when the next one (if any) will finish.
    pub fn complete(&mut self, now: Instant) -> (DataPacket, Option<Instant>) {
        let done = self
            .in_service
            .take()
            .expect("complete() with nothing in service");
        self.stats.packets_sent += 1;
        self.stats.bytes_sent += u64::from(done.wire_len());
        let next = self.queue.pop_front().map(|p| {
            self.backlog_bytes -= u64::from(p.wire_len());
            self.stats
                .sojourn
                .record((now - p.enqueued).as_nanos() as u64);
            let d = self.serialization(p.wire_len());
            self.stats.busy += d;
            self.in_service = Some(p);
            now + d
        });
        if next.is_none() {
            self.carry = 0;
        }
        (done, next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pkt(seg: u64) -> DataPacket {
        DataPacket {
            flow: 0,
            seg,
            len: 1448,
            enqueued: Instant::ZERO,
        }
    }

    /// Drains the link from `t`, returning completion times.
    fn drain(l: &mut Link, mut next: Option<Instant>) -> Vec<Instant> {
        let mut out = vec![];
        while let Some(t) = next {
            out.push(t);
            next = l.complete(t).1;
        }
        out
    }

    #[test]
    fn serializes_at_exact_rate() {
        // 1500 B at 100 Mbit/s = 120 us.
        let mut l = Link::new(100_000_000, 1_000_000);
        let first = match l.enqueue(Instant::ZERO, pkt(0)) {
            Enqueued::Started(t) => t,
            e => panic!("{e:?}"),
        };
        for s in 1..100 {
            assert_eq!(l.enqueue(Instant::ZERO, pkt(s)), Enqueued::Queued);
        }
        let times = drain(&mut l, Some(first));
        assert_eq!(times.len(), 100);
        assert_eq!(times[0], Instant::from_micros(120));
        assert_eq!(times[99], Instant::from_micros(12_000));
        assert_eq!(l.stats.bytes_sent, 150_000);
        assert_eq!(l.stats.busy, Duration::from_micros(12_000));
    }

    #[test]
    fn odd_rates_keep_long_run_exact() {
        // 7 Mbit/s: 1500 B = 1714.2857 us; 700 packets = exactly 1.2 s.
        let mut l = Link::new(7_000_000, u64::MAX);
        let first = match l.enqueue(Instant::ZERO, pkt(0)) {
            Enqueued::Started(t) => t,
            e => panic!("{e:?}"),
        };
        for s in 1..700 {
            l.enqueue(Instant::ZERO, pkt(s));
        }
        let times = drain(&mut l, Some(first));
        assert_eq!(*times.last().unwrap(), Instant::from_micros(1_200_000));
    }

    #[test]
    fn drop_tail_respects_byte_limit() {
        // Room for 10 waiting packets of 1500 B.
        let mut l = Link::new(1_000_000, 15_000);
        let mut outcomes = vec![];
        for s in 0..20 {
            outcomes.push(l.enqueue(Instant::ZERO, pkt(s)));
        }
        assert!(matches!(outcomes[0], Enqueued::Started(_)));
        assert!(outcomes[1..11].iter().all(|o| *o == Enqueued::Queued));
        assert!(outcomes[11..].iter().all(|o| *o == Enqueued::Dropped));
        assert_eq!(l.stats.drops, 9);
        assert_eq!(l.backlog_bytes(), 15_000);
        assert_eq!(l.stats.max_backlog_bytes, 15_000);
    }
}
