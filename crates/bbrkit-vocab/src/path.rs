//! [`PathConditions`]: what a path does to a flow — its bottleneck rate,
//! base round-trip time, random loss, jitter and bottleneck buffer — as the
//! lab emulates it, the simulator models it and advise and trial describe
//! it. Each user maps it onto its own machinery (the lab's link emulator,
//! the simulator's `PathConfig::from_conditions`, which advise's
//! `PathGuess::conditions` feeds); this is the one description.

use std::time::Duration;

use crate::format::number;
use crate::size::BufferSize;

/// The conditions of one path.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PathConditions {
    /// Base round-trip time the path adds (the lab adds it as a delay on
    /// one direction: a TCP sender cannot tell which).
    pub rtt: Duration,
    /// Uniform jitter (± this) on that delay.
    pub jitter: Duration,
    /// Random loss probability of the data direction, 0..1.
    pub loss: f64,
    /// Bottleneck rate, bits per second (`None`: no rate limit).
    pub rate_bps: Option<u64>,
    /// Drop-tail buffer in front of the bottleneck.
    pub buffer: BufferSize,
}

impl PathConditions {
    /// A path of `rtt` and `loss` with no rate limit, no jitter and a
    /// buffer of one BDP (used only once a rate is set).
    pub fn new(rtt: Duration, loss: f64) -> Self {
        PathConditions {
            rtt,
            jitter: Duration::ZERO,
            loss,
            rate_bps: None,
            buffer: BufferSize::Bdp(1.0),
        }
    }

    /// Bandwidth-delay product in bytes (`None` without a rate).
    pub fn bdp_bytes(&self) -> Option<f64> {
        self.rate_bps
            .map(|r| r as f64 / 8.0 * self.rtt.as_secs_f64())
    }

    /// A short human label, like the seed's table rows:
    /// `10 ms + 2% loss + 100 Mbit/s`, or `no impairment`.
    pub fn label(&self) -> String {
        let mut parts = Vec::new();
        if !self.rtt.is_zero() {
            parts.push(format!("{} ms", number(self.rtt.as_secs_f64() * 1e3)));
        }
        if !self.jitter.is_zero() {
            parts.push(format!("±{} ms", number(self.jitter.as_secs_f64() * 1e3)));
        }
        if self.loss > 0.0 {
            parts.push(format!("{}% loss", number(self.loss * 100.0)));
        }
        if let Some(r) = self.rate_bps {
            parts.push(if r >= 1_000_000_000 {
                format!("{} Gbit/s", number(r as f64 / 1e9))
            } else {
                format!("{} Mbit/s", number(r as f64 / 1e6))
            });
        }
        if parts.is_empty() {
            "no impairment".into()
        } else {
            parts.join(" + ")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_follow_the_seed_table() {
        let c = PathConditions::new(Duration::from_millis(10), 0.02);
        assert_eq!(c.label(), "10 ms + 2% loss");
        assert_eq!(
            PathConditions::new(Duration::ZERO, 0.0).label(),
            "no impairment"
        );
        let rated = PathConditions {
            rate_bps: Some(1_000_000_000),
            ..c
        };
        assert_eq!(rated.label(), "10 ms + 2% loss + 1 Gbit/s");
        let rated = PathConditions {
            rate_bps: Some(100_000_000),
            jitter: Duration::from_millis(1),
            ..c
        };
        assert_eq!(rated.label(), "10 ms + ±1 ms + 2% loss + 100 Mbit/s");
        assert_eq!(rated.bdp_bytes(), Some(125_000.0));
    }
}
