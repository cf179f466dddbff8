//! The bottleneck link: a drop-tail FIFO (limit in bytes) drained at a fixed
//! bit rate. Owns serialization timing and link statistics (bytes sent,
//! busy time, drops, queue sojourn times). Must never look at what a packet
//! carries beyond its size.

use std::collections::VecDeque;

use bbrkit_cc::{Duration, Instant};

use crate::histogram::Histogram;

/// Link counters.
#[derive(Debug, Clone, Default)]
pub struct LinkStats {
    /// Packets accepted for serialization.
    pub packets_sent: u64,
    /// Wire bytes accepted for serialization.
    pub bytes_sent: u64,
    /// Packets dropped because the buffer was full.
    pub drops: u64,
    /// Total serialization time of accepted packets (may run past now).
    pub busy: Duration,
    /// Largest backlog seen, bytes (waiting, excluding the one in service).
    pub max_backlog_bytes: u64,
    /// Time each packet waited in the queue before its serialization began, ns.
    pub sojourn: Histogram,
}

/// A rate-limited drop-tail link.
///
/// Because the queue is FIFO and the rate fixed, a packet's service start
/// and departure are known when it is enqueued, so the link needs no events
/// of its own: [`Link::enqueue`] returns the departure time directly and the
/// backlog is recomputed lazily from the service-start times of waiting packets.
#[derive(Debug)]
pub struct Link {
    rate_bps: u64,
    limit_bytes: u64,
    /// Service-start time and wire size of packets not yet in service.
    waiting: VecDeque<(Instant, u32)>,
    backlog_bytes: u64,
    /// When the last accepted packet finishes serialization.
    busy_until: Instant,
    /// Fractional nanoseconds (×rate) carried between back-to-back packets
    /// so the long-run rate is exact.
    carry: u64,
    /// Counters.
    pub stats: LinkStats,
}

impl Link {
    /// A link of `rate_bps` bits per second whose queue holds up to
    /// `limit_bytes` bytes waiting (at least one packet always fits).
    pub fn new(rate_bps: u64, limit_bytes: u64) -> Self {
        assert!(rate_bps > 0, "link rate must be positive");
        Link {
            rate_bps,
            limit_bytes,
            waiting: VecDeque::new(),
            backlog_bytes: 0,
            busy_until: Instant::ZERO,
            carry: 0,
            stats: LinkStats::default(),
        }
    }

    /// The link rate in bits per second.
    pub fn rate_bps(&self) -> u64 {
        self.rate_bps
    }

    /// Whether a packet arriving at `now` is CE-marked: more than
    /// `threshold` bytes wait in the queue (a step-threshold AQM).
    pub fn congestion_experienced(&mut self, now: Instant, threshold: Option<u64>) -> bool {
        threshold.is_some_and(|k| self.backlog_bytes(now) > k)
    }

    /// Bytes waiting at `now` (not counting the packet being serialized).
    pub fn backlog_bytes(&mut self, now: Instant) -> u64 {
        self.advance(now);
        self.backlog_bytes
    }

    /// Time the link spent (or is committed to spend) serializing, up to `now`.
    pub fn busy_until_now(&self, now: Instant) -> Duration {
        self.stats.busy.saturating_sub(self.busy_until - now)
    }

    fn advance(&mut self, now: Instant) {
        while let Some(&(start, len)) = self.waiting.front() {
            if start > now {
                break;
            }
            self.backlog_bytes -= u64::from(len);
            self.waiting.pop_front();
        }
    }

    /// How long serializing `bytes` takes, carrying sub-ns remainders.
    fn serialization(&mut self, bytes: u32) -> Duration {
        let num = u128::from(bytes) * 8 * 1_000_000_000 + u128::from(self.carry);
        let rate = u128::from(self.rate_bps);
        self.carry = (num % rate) as u64;
        Duration::from_nanos((num / rate) as u64)
    }

    /// Offers a packet of `wire_len` bytes at `now`: `Some(departure time)`
    /// (end of its serialization), or `None` if the full buffer dropped it.
    pub fn enqueue(&mut self, now: Instant, wire_len: u32) -> Option<Instant> {
        self.advance(now);
        let len = u64::from(wire_len);
        let busy = self.busy_until > now;
        if busy && self.backlog_bytes + len > self.limit_bytes && !self.waiting.is_empty() {
            self.stats.drops += 1;
            return None;
        }
        if !busy {
            self.carry = 0;
        }
        let start = self.busy_until.max(now);
        let d = self.serialization(wire_len);
        self.busy_until = start + d;
        self.stats.busy += d;
        self.stats.packets_sent += 1;
        self.stats.bytes_sent += len;
        self.stats.sojourn.record((start - now).as_nanos() as u64);
        if busy {
            self.waiting.push_back((start, wire_len));
            self.backlog_bytes += len;
            self.stats.max_backlog_bytes = self.stats.max_backlog_bytes.max(self.backlog_bytes);
        }
        Some(self.busy_until)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serializes_at_exact_rate() {
        // 1500 B at 100 Mbit/s = 120 us.
        let mut l = Link::new(100_000_000, 1_000_000);
        let times: Vec<_> = (0..100)
            .map(|_| l.enqueue(Instant::ZERO, 1500).unwrap())
            .collect();
        assert_eq!(times[0], Instant::from_micros(120));
        assert_eq!(times[99], Instant::from_micros(12_000));
        assert_eq!(l.stats.bytes_sent, 150_000);
        assert_eq!(l.stats.busy, Duration::from_micros(12_000));
        // Backlog drains as service starts.
        assert_eq!(l.backlog_bytes(Instant::ZERO), 99 * 1500);
        assert_eq!(l.backlog_bytes(Instant::from_micros(120)), 98 * 1500);
        assert_eq!(l.backlog_bytes(Instant::from_micros(11_880)), 0);
        // Idle link: a new packet starts at once.
        let t = Instant::from_micros(20_000);
        assert_eq!(l.enqueue(t, 1500), Some(Instant::from_micros(20_120)));
        assert_eq!(
            l.busy_until_now(Instant::from_micros(20_060)),
            Duration::from_micros(12_060)
        );
    }

    #[test]
    fn odd_rates_keep_long_run_exact() {
        // 7 Mbit/s: 1500 B = 1714.2857 us; 700 packets = exactly 1.2 s.
        let mut l = Link::new(7_000_000, u64::MAX);
        let last = (0..700)
            .map(|_| l.enqueue(Instant::ZERO, 1500).unwrap())
            .last();
        assert_eq!(last, Some(Instant::from_micros(1_200_000)));
    }

    #[test]
    fn drop_tail_respects_byte_limit() {
        // Room for 10 waiting packets of 1500 B (one more is in service).
        let mut l = Link::new(1_000_000, 15_000);
        let outcomes: Vec<_> = (0..20).map(|_| l.enqueue(Instant::ZERO, 1500)).collect();
        assert!(outcomes[..11].iter().all(Option::is_some));
        assert!(outcomes[11..].iter().all(Option::is_none));
        assert_eq!(l.stats.drops, 9);
        assert_eq!(l.backlog_bytes(Instant::ZERO), 15_000);
        assert_eq!(l.stats.max_backlog_bytes, 15_000);
        // Once one packet's service starts, one more fits.
        assert!(l.enqueue(Instant::from_micros(12_000), 1500).is_some());
        assert!(l.enqueue(Instant::from_micros(12_000), 1500).is_none());
    }
}
