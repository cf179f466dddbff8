//! Virtual time for sans-IO controllers: an [`Instant`] is an integer count of
//! nanoseconds since an arbitrary epoch chosen by the caller (the simulator's
//! start, or a transport's monotonic clock). Controllers never read a clock;
//! the transport passes `now` in [`crate::Tcp::now`].
//!
//! Linux keeps TCP timestamps in microseconds (`tcp_mstamp`); controllers that
//! follow kernel fixed-point arithmetic convert with [`Instant::as_micros`] at
//! the point where the kernel would see microseconds.

use core::ops::{Add, AddAssign, Sub};
pub use core::time::Duration;

/// A point in virtual time, in nanoseconds since the caller's epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Instant(u64);

impl Instant {
    /// The epoch (time zero).
    pub const ZERO: Instant = Instant(0);

    /// An instant `nanos` nanoseconds after the epoch.
    pub const fn from_nanos(nanos: u64) -> Self {
        Instant(nanos)
    }

    /// An instant `micros` microseconds after the epoch.
    pub const fn from_micros(micros: u64) -> Self {
        Instant(micros * 1_000)
    }

    /// Nanoseconds since the epoch.
    pub const fn as_nanos(self) -> u64 {
        self.0
    }

    /// Whole microseconds since the epoch (Linux `tcp_mstamp` resolution).
    pub const fn as_micros(self) -> u64 {
        self.0 / 1_000
    }

    /// Time elapsed from `earlier` to `self`, zero if `earlier` is later.
    pub fn saturating_duration_since(self, earlier: Instant) -> Duration {
        Duration::from_nanos(self.0.saturating_sub(earlier.0))
    }
}

/// `d` in nanoseconds, saturated at `u64::MAX` (≈ 584 years).
fn saturating_nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

impl Add<Duration> for Instant {
    type Output = Instant;
    fn add(self, d: Duration) -> Instant {
        Instant(self.0.saturating_add(saturating_nanos(d)))
    }
}

impl AddAssign<Duration> for Instant {
    fn add_assign(&mut self, d: Duration) {
        *self = *self + d;
    }
}

impl Sub<Instant> for Instant {
    type Output = Duration;
    /// Saturating: an earlier minus a later instant is zero.
    fn sub(self, earlier: Instant) -> Duration {
        self.saturating_duration_since(earlier)
    }
}

impl Sub<Duration> for Instant {
    type Output = Instant;
    fn sub(self, d: Duration) -> Instant {
        Instant(self.0.saturating_sub(saturating_nanos(d)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_saturates() {
        let t = Instant::from_micros(10);
        assert_eq!(t.as_nanos(), 10_000);
        assert_eq!(t + Duration::from_micros(5), Instant::from_micros(15));
        assert_eq!(Instant::ZERO - t, Duration::ZERO);
        assert_eq!(t - Instant::ZERO, Duration::from_micros(10));
        assert_eq!(Instant::ZERO - Duration::from_secs(1), Instant::ZERO);
    }
}
