//! RTT estimation and the retransmission timeout, as Linux computes them
//! (`tcp_rtt_estimator`, `__tcp_set_rto`): RFC 6298's smoothed RTT (gain
//! 1/8) and mean deviation (gain 1/4), with the variance term floored at the
//! 200 ms `TCP_RTO_MIN`, an initial RTO of 1 s, exponential backoff and a
//! 120 s ceiling. Times are kept in microseconds like the kernel.

use crate::time::{Duration, Instant};

/// Linux `TCP_RTO_MIN`.
pub const RTO_MIN: Duration = Duration::from_millis(200);
/// Linux `TCP_RTO_MAX`.
pub const RTO_MAX: Duration = Duration::from_secs(120);
/// RFC 6298 initial RTO (Linux `TCP_TIMEOUT_INIT`).
pub const RTO_INIT: Duration = Duration::from_secs(1);
/// Linux `tcp_min_rtt_wlen` default: the window of `tcp_min_rtt`.
pub const MIN_RTT_WINDOW: Duration = Duration::from_secs(300);

/// Smoothed RTT, deviation and the RTO derived from them.
#[derive(Debug, Clone, Default)]
pub struct RttEstimator {
    /// `srtt_us` (scaled by 8); 0 = no sample yet.
    srtt8: u64,
    /// `mdev_us` (scaled by 4).
    mdev4: u64,
    /// `mdev_max_us`.
    mdev_max: u64,
    /// `rttvar_us`.
    rttvar: u64,
    /// `rtt_seq`: the segment after which the variance is re-evaluated.
    rtt_seq: u64,
    /// Windowed minimum RTT and when it was taken.
    min_rtt: Option<(Duration, Instant)>,
}

impl RttEstimator {
    /// Feeds one RTT measurement; `una`/`nxt` are the current cumulative-ACK
    /// point and next sequence (segments), as `tcp_rtt_estimator` uses them.
    pub fn update(&mut self, rtt: Duration, una: u64, nxt: u64) {
        let rto_min = RTO_MIN.as_micros() as u64;
        let m = (rtt.as_micros() as u64).max(1);
        if self.srtt8 == 0 {
            self.srtt8 = m << 3;
            self.mdev4 = m << 1;
            self.rttvar = self.mdev4.max(rto_min);
            self.mdev_max = self.rttvar;
            self.rtt_seq = nxt;
            return;
        }
        let srtt = self.srtt8 as i64;
        let mut err = m as i64 - (srtt >> 3);
        self.srtt8 = (srtt + err).max(1) as u64;
        let mdev = self.mdev4 as i64;
        if err < 0 {
            err = -err - (mdev >> 2);
            if err > 0 {
                err >>= 3;
            }
        } else {
            err -= mdev >> 2;
        }
        self.mdev4 = (mdev + err).max(0) as u64;
        if self.mdev4 > self.mdev_max {
            self.mdev_max = self.mdev4;
            if self.mdev_max > self.rttvar {
                self.rttvar = self.mdev_max;
            }
        }
        if una > self.rtt_seq {
            if self.mdev_max < self.rttvar {
                self.rttvar -= (self.rttvar - self.mdev_max) >> 2;
            }
            self.rtt_seq = nxt;
            self.mdev_max = rto_min;
        }
    }

    /// Updates the windowed minimum with a sample taken at `now`.
    pub fn update_min(&mut self, rtt: Duration, now: Instant) {
        match self.min_rtt {
            Some((m, t)) if rtt > m && now - t <= MIN_RTT_WINDOW => {}
            _ => self.min_rtt = Some((rtt, now)),
        }
    }

    /// Smoothed RTT, zero before the first sample.
    pub fn srtt(&self) -> Duration {
        Duration::from_nanos((self.srtt8 >> 3) * 1_000 + (self.srtt8 & 7) * 125)
    }

    /// Mean deviation (`mdev_us >> 2`).
    pub fn rttvar(&self) -> Duration {
        Duration::from_micros(self.mdev4 >> 2)
    }

    /// The windowed minimum RTT.
    pub fn min_rtt(&self) -> Option<Duration> {
        self.min_rtt.map(|(m, _)| m)
    }

    /// The RTO before backoff: `srtt + rttvar` (rttvar >= 200 ms), or 1 s
    /// before any sample.
    pub fn rto(&self) -> Duration {
        if self.srtt8 == 0 {
            return RTO_INIT;
        }
        Duration::from_micros((self.srtt8 >> 3) + self.rttvar).min(RTO_MAX)
    }

    /// The RTO after `backoff` consecutive timeouts.
    pub fn rto_backed_off(&self, backoff: u32) -> Duration {
        let base = self.rto();
        base.checked_mul(1u32 << backoff.min(16))
            .unwrap_or(RTO_MAX)
            .min(RTO_MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_sample_sets_srtt_and_rto_floor() {
        let mut e = RttEstimator::default();
        assert_eq!(e.rto(), RTO_INIT);
        e.update(Duration::from_millis(10), 0, 10);
        assert_eq!(e.srtt(), Duration::from_millis(10));
        // rttvar = max(2 * rtt, 200 ms) -> RTO = 10 + 200 ms.
        assert_eq!(e.rto(), Duration::from_millis(210));
        assert_eq!(e.rto_backed_off(1), Duration::from_millis(420));
        assert_eq!(e.rto_backed_off(30), RTO_MAX);
    }

    #[test]
    fn srtt_converges_with_gain_one_eighth() {
        let mut e = RttEstimator::default();
        e.update(Duration::from_millis(100), 0, 1);
        for i in 0..200 {
            e.update(Duration::from_millis(20), i + 2, i + 3);
        }
        let s = e.srtt().as_secs_f64() * 1e3;
        assert!((s - 20.0).abs() < 0.1, "srtt {s} ms");
        assert!(e.rto() >= Duration::from_millis(220));
        // Large RTTs: the deviation term dominates the floor.
        let mut e = RttEstimator::default();
        e.update(Duration::from_millis(500), 0, 1);
        assert_eq!(e.rto(), Duration::from_millis(1500));
    }

    #[test]
    fn min_rtt_is_windowed() {
        let mut e = RttEstimator::default();
        e.update_min(Duration::from_millis(10), Instant::ZERO);
        e.update_min(Duration::from_millis(20), Instant::from_micros(1_000_000));
        assert_eq!(e.min_rtt(), Some(Duration::from_millis(10)));
        e.update_min(Duration::from_millis(20), Instant::from_micros(301_000_000));
        assert_eq!(e.min_rtt(), Some(Duration::from_millis(20)));
    }
}
