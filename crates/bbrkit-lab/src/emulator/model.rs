//! The link model of the emulator: what happens to one frame.
//!
//! Owns the decisions, in netem's order: random loss at entry (seeded
//! Bernoulli per frame), then a drop-tail bottleneck queue in bytes drained
//! at the configured rate (serialisation time of each frame), with an
//! optional step-threshold ECN mark (a frame arriving while more than the
//! threshold waits is to be CE-marked, as the simulator's link does), then a
//! fixed propagation delay with optional uniform jitter that never reorders.
//! Time and randomness are passed in; must never read a clock or do I/O.

use std::time::Duration;

use rand_core::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use serde::Serialize;

/// Impairment of one direction of the path.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct LinkParams {
    /// One-way delay added to every delivered frame.
    #[serde(serialize_with = "ser_ms", rename = "delay_ms")]
    pub delay: Duration,
    /// Uniform jitter: each frame's delay is drawn from delay ± jitter (frames
    /// are never reordered: a frame leaves no earlier than its predecessor).
    #[serde(serialize_with = "ser_ms", rename = "jitter_ms")]
    pub jitter: Duration,
    /// Probability (0..=1) that a frame is dropped at entry.
    pub loss: f64,
    /// Bottleneck rate in bits per second of Ethernet frames (no limit if None).
    #[serde(rename = "rate_bits_per_second")]
    pub rate_bps: Option<u64>,
    /// Drop-tail queue in bytes in front of the bottleneck (only with a rate).
    #[serde(rename = "buffer_bytes")]
    pub buffer_bytes: Option<u64>,
    /// CE-mark frames arriving while more than this many bytes wait in the
    /// bottleneck queue (`lab --ecn-threshold`; only with a rate).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ecn_threshold_bytes: Option<u64>,
}

impl LinkParams {
    /// A steady link: `delay`, random `loss`, optional rate and buffer, no
    /// jitter.
    pub fn without_jitter(
        delay: Duration,
        loss: f64,
        rate_bps: Option<u64>,
        buffer_bytes: Option<u64>,
    ) -> Self {
        LinkParams {
            delay,
            jitter: Duration::ZERO,
            loss,
            rate_bps,
            buffer_bytes,
            ecn_threshold_bytes: None,
        }
    }
}

fn ser_ms<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64() * 1e3)
}

impl LinkParams {
    /// A transparent link: no delay, no loss, no rate limit.
    pub fn transparent() -> LinkParams {
        LinkParams {
            delay: Duration::ZERO,
            jitter: Duration::ZERO,
            loss: 0.0,
            rate_bps: None,
            buffer_bytes: None,
            ecn_threshold_bytes: None,
        }
    }

    /// True when the link changes nothing.
    pub fn is_transparent(&self) -> bool {
        self.delay.is_zero() && self.jitter.is_zero() && self.loss == 0.0 && self.rate_bps.is_none()
    }
}

/// Why a frame was dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Drop {
    /// The random loss process chose it.
    Loss,
    /// The bottleneck queue was full (drop-tail).
    Buffer,
}

/// The model's verdict for one frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Deliver at this time (nanoseconds on the caller's clock).
    Deliver(u64),
    /// Deliver at this time, CE-marked if the frame is ECN-capable: more
    /// than the ECN threshold waited in the queue when it arrived.
    DeliverCongested(u64),
    /// Drop it.
    Drop(Drop),
}

/// The state of one impaired direction.
#[derive(Debug, Clone)]
pub struct LinkModel {
    params: LinkParams,
    rng: Pcg64Mcg,
    loss_threshold: u64,
    always_lose: bool,
    link_free_ns: u64,
    last_delivery_ns: u64,
}

impl LinkModel {
    /// A model of `params` whose loss process is seeded with `seed`.
    pub fn new(params: LinkParams, seed: u64) -> LinkModel {
        let always_lose = params.loss >= 1.0;
        let loss_threshold = (params.loss.clamp(0.0, 1.0) * 2f64.powi(64)) as u64;
        LinkModel {
            params,
            rng: Pcg64Mcg::seed_from_u64(seed),
            loss_threshold,
            always_lose,
            link_free_ns: 0,
            last_delivery_ns: 0,
        }
    }

    /// The parameters.
    pub fn params(&self) -> &LinkParams {
        &self.params
    }

    /// Bytes waiting in the bottleneck queue at `now_ns`.
    pub fn backlog_bytes(&self, now_ns: u64) -> u64 {
        match self.params.rate_bps {
            Some(rate) if self.link_free_ns > now_ns => {
                ((self.link_free_ns - now_ns) as u128 * rate as u128 / 8_000_000_000) as u64
            }
            _ => 0,
        }
    }

    /// Decides the fate of a frame of `len` bytes arriving at `now_ns`.
    pub fn on_arrival(&mut self, now_ns: u64, len: usize) -> Verdict {
        if self.params.loss > 0.0 && (self.always_lose || self.rng.next_u64() < self.loss_threshold)
        {
            return Verdict::Drop(Drop::Loss);
        }
        let mut leave = now_ns;
        let mut congested = false;
        if let Some(rate) = self.params.rate_bps {
            let backlog = self.backlog_bytes(now_ns);
            if let Some(buffer) = self.params.buffer_bytes
                && backlog + len as u64 > buffer
            {
                return Verdict::Drop(Drop::Buffer);
            }
            congested = self.params.ecn_threshold_bytes.is_some_and(|k| backlog > k);
            let tx_ns = (len as u128 * 8_000_000_000 / rate as u128) as u64;
            self.link_free_ns = self.link_free_ns.max(now_ns) + tx_ns;
            leave = self.link_free_ns;
        }
        let mut delay = self.params.delay.as_nanos() as i128;
        let jitter = self.params.jitter.as_nanos() as i128;
        if jitter > 0 {
            let span = (2 * jitter + 1) as u128;
            let draw = (self.rng.next_u64() as u128 * span) >> 64;
            delay = (delay + draw as i128 - jitter).max(0);
        }
        let at = (leave as i128 + delay) as u64;
        let at = at.max(self.last_delivery_ns);
        self.last_delivery_ns = at;
        if congested {
            Verdict::DeliverCongested(at)
        } else {
            Verdict::Deliver(at)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(delay_ms: u64, loss: f64, rate: Option<u64>, buffer: Option<u64>) -> LinkParams {
        LinkParams::without_jitter(Duration::from_millis(delay_ms), loss, rate, buffer)
    }

    #[test]
    fn delay_only_adds_delay() {
        let mut m = LinkModel::new(params(10, 0.0, None, None), 1);
        assert_eq!(m.on_arrival(1_000, 1514), Verdict::Deliver(10_001_000));
        assert_eq!(m.on_arrival(2_000, 1514), Verdict::Deliver(10_002_000));
    }

    #[test]
    fn loss_rate_is_binomial() {
        let seed = 0x5eed_u64;
        println!("seed {seed}");
        let mut m = LinkModel::new(params(0, 0.02, None, None), seed);
        let n = 200_000;
        let lost = (0..n)
            .filter(|i| m.on_arrival(*i, 1514) == Verdict::Drop(Drop::Loss))
            .count() as f64;
        let sd = (n as f64 * 0.02 * 0.98).sqrt();
        assert!((lost - 4000.0).abs() < 4.0 * sd, "lost {lost}");
    }

    #[test]
    fn loss_is_reproducible_from_seed() {
        let run = |seed| {
            let mut m = LinkModel::new(params(0, 0.3, None, None), seed);
            (0..64).map(|i| m.on_arrival(i, 100)).collect::<Vec<_>>()
        };
        assert_eq!(run(7), run(7));
        assert_ne!(run(7), run(8));
    }

    #[test]
    fn rate_serialises_and_buffer_drops_tail() {
        // 12 Mbit/s: a 1500-byte frame takes 1 ms on the wire.
        let mut m = LinkModel::new(params(0, 0.0, Some(12_000_000), Some(3000)), 1);
        assert_eq!(m.on_arrival(0, 1500), Verdict::Deliver(1_000_000));
        assert_eq!(m.on_arrival(0, 1500), Verdict::Deliver(2_000_000));
        // 3000 bytes queued: the next frame does not fit.
        assert_eq!(m.on_arrival(0, 1500), Verdict::Drop(Drop::Buffer));
        assert_eq!(m.backlog_bytes(1_000_000), 1500);
        assert_eq!(m.on_arrival(1_000_000, 1500), Verdict::Deliver(3_000_000));
    }

    #[test]
    fn frames_arriving_above_the_ecn_threshold_are_congested() {
        // 12 Mbit/s (1 ms per 1500 B), mark above 2000 B waiting.
        let mut p = params(0, 0.0, Some(12_000_000), Some(100_000));
        p.ecn_threshold_bytes = Some(2000);
        let mut m = LinkModel::new(p, 1);
        // Backlog at arrival: 0, 1500, 3000 (> 2000), 4500 bytes.
        assert_eq!(m.on_arrival(0, 1500), Verdict::Deliver(1_000_000));
        assert_eq!(m.on_arrival(0, 1500), Verdict::Deliver(2_000_000));
        assert_eq!(m.on_arrival(0, 1500), Verdict::DeliverCongested(3_000_000));
        assert_eq!(m.on_arrival(0, 1500), Verdict::DeliverCongested(4_000_000));
        // Drained to 1500 bytes waiting: no mark.
        assert_eq!(m.on_arrival(3_000_000, 1500), Verdict::Deliver(5_000_000));
        // Without a threshold nothing is ever congested.
        let mut m = LinkModel::new(params(0, 0.0, Some(12_000_000), Some(100_000)), 1);
        assert!((0..50).all(|_| matches!(m.on_arrival(0, 1500), Verdict::Deliver(_))));
    }

    #[test]
    fn jitter_never_reorders() {
        let mut p = params(10, 0.0, None, None);
        p.jitter = Duration::from_millis(5);
        let mut m = LinkModel::new(p, 3);
        let mut last = 0;
        let mut spread = (u64::MAX, 0);
        for i in 0..10_000u64 {
            let now = i * 10_000;
            let Verdict::Deliver(at) = m.on_arrival(now, 1514) else {
                panic!()
            };
            assert!(at >= last);
            last = at;
            spread = (spread.0.min(at - now), spread.1.max(at - now));
        }
        assert!(
            spread.0 >= 5_000_000 && spread.1 <= 15_000_000 + 10_000,
            "{spread:?}"
        );
    }

    #[test]
    fn full_loss_drops_everything() {
        let mut m = LinkModel::new(params(0, 1.0, None, None), 1);
        assert!((0..1000).all(|i| m.on_arrival(i, 60) == Verdict::Drop(Drop::Loss)));
    }
}
