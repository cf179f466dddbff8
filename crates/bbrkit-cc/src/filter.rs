//! Windowed min/max filters: Kathleen Nichols' three-sample tracker, as
//! Linux `lib/win_minmax.c` (`struct minmax`, `minmax_running_max`,
//! `minmax_running_min`, `minmax_reset`, `minmax_get`).
//!
//! The filter estimates the maximum (or minimum) of a stream over the last
//! `win` units of "time" in constant space: it keeps the best, second-best
//! and third-best samples, with non-decreasing timestamps, spread over the
//! window so that the worst-case error for a monotonically changing stream
//! is bounded. Any new best sample restarts the filter (everything older is
//! dominated by it). BBRv1 keys `max_bw` by packet-timed round count
//! (`win = 10` rounds); Linux `tcp_min_rtt` keys the RTT minimum by jiffies.
//!
//! "Time" is any unsigned integer type ([`FilterTime`]); differences wrap,
//! as in the kernel's `u32` arithmetic, so a round counter may wrap.
//! This module never reads a clock: the caller passes `t`.
//!
//! Deviation from the kernel: none in the algorithm. The kernel stores
//! `u32` values; here the value type is generic (`V: Copy + PartialOrd`), so
//! a `u64` bandwidth or a `Duration` can be filtered without truncation.

/// A timestamp type for [`MinMax`]: an unsigned integer with wrapping
/// differences (kernel `u32` semantics).
pub trait FilterTime: Copy + Eq + Ord + Default {
    /// `self - earlier`, wrapping.
    fn elapsed_since(self, earlier: Self) -> Self;
    /// `self / 4`, for the sub-window checks.
    fn quarter(self) -> Self;
    /// `self / 2`.
    fn half(self) -> Self;
}

macro_rules! filter_time {
    ($($t:ty),*) => {$(
        impl FilterTime for $t {
            #[inline]
            fn elapsed_since(self, earlier: Self) -> Self { self.wrapping_sub(earlier) }
            #[inline]
            fn quarter(self) -> Self { self / 4 }
            #[inline]
            fn half(self) -> Self { self / 2 }
        }
    )*};
}
filter_time!(u8, u16, u32, u64);

/// One sample: when (`t`) and what (`v`) (Linux `struct minmax_sample`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Sample<T, V> {
    /// Time the sample was taken.
    pub t: T,
    /// Measured value.
    pub v: V,
}

/// Nichols' windowed min/max tracker (Linux `struct minmax`).
///
/// The same type serves as a max filter ([`MinMax::running_max`]) or a min
/// filter ([`MinMax::running_min`]); use one kind of update per instance.
/// [`Default`] is the kernel's zeroed struct, which is the right start for a
/// max filter over non-negative values; a min filter should be started with
/// [`MinMax::new`] (the kernel resets `tcp_min_rtt` with `~0U`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MinMax<T, V> {
    s: [Sample<T, V>; 3],
}

impl<T: FilterTime, V: Copy + PartialOrd> MinMax<T, V> {
    /// A filter holding the single sample `(t, v)` (`minmax_reset` on a fresh struct).
    pub fn new(t: T, v: V) -> Self {
        let s = Sample { t, v };
        MinMax { s: [s; 3] }
    }

    /// `minmax_get`: the current best (max or min) estimate.
    #[inline]
    pub fn get(&self) -> V {
        self.s[0].v
    }

    /// The three tracked samples, best first (for tests and tracing).
    pub fn samples(&self) -> [Sample<T, V>; 3] {
        self.s
    }

    /// `minmax_reset`: forget everything and hold `(t, v)`. Returns `v`.
    pub fn reset(&mut self, t: T, v: V) -> V {
        *self = MinMax::new(t, v);
        v
    }

    /// `minmax_running_max`: add `v` measured at `t`, return the maximum over
    /// the window `win` (samples older than `t - win` are forgotten).
    pub fn running_max(&mut self, win: T, t: T, v: V) -> V {
        self.running(win, Sample { t, v }, |a, b| a >= b)
    }

    /// `minmax_running_min`: add `v` measured at `t`, return the minimum over
    /// the window `win`.
    pub fn running_min(&mut self, win: T, t: T, v: V) -> V {
        self.running(win, Sample { t, v }, |a, b| a <= b)
    }

    /// The common body of running_max/min; `better(a, b)` is `a >= b` for a
    /// max filter and `a <= b` for a min filter (ties count as better, so a
    /// repeated best value refreshes its timestamp).
    #[inline]
    fn running(&mut self, win: T, val: Sample<T, V>, better: impl Fn(V, V) -> bool) -> V {
        // A new best, or nothing of the old window left: start over.
        if better(val.v, self.s[0].v) || val.t.elapsed_since(self.s[2].t) > win {
            return self.reset(val.t, val.v);
        }
        if better(val.v, self.s[1].v) {
            self.s[1] = val;
            self.s[2] = val;
        } else if better(val.v, self.s[2].v) {
            self.s[2] = val;
        }
        self.subwin_update(win, val)
    }

    /// `minmax_subwin_update`: as time advances, age the 1st/2nd/3rd choices.
    fn subwin_update(&mut self, win: T, val: Sample<T, V>) -> V {
        let dt = val.t.elapsed_since(self.s[0].t);
        if dt > win {
            // The whole window passed without a new best: promote the 2nd and
            // 3rd choices; the 2nd may itself be out of the window (the 3rd
            // was checked on entry), so possibly once more.
            self.s[0] = self.s[1];
            self.s[1] = self.s[2];
            self.s[2] = val;
            if val.t.elapsed_since(self.s[0].t) > win {
                self.s[0] = self.s[1];
                self.s[1] = self.s[2];
                self.s[2] = val;
            }
        } else if self.s[1].t == self.s[0].t && dt > win.quarter() {
            // A quarter window without a new 2nd choice: take one from the
            // 2nd quarter.
            self.s[1] = val;
            self.s[2] = val;
        } else if self.s[2].t == self.s[1].t && dt > win.half() {
            // Half a window without a new 3rd choice: take one from the 2nd half.
            self.s[2] = val;
        }
        self.s[0].v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Exact windowed maximum over samples with `t' >= t - win`, for comparison.
    fn exact_max(hist: &[(u32, u32)], win: u32, t: u32) -> u32 {
        hist.iter()
            .filter(|&&(ts, _)| t - ts <= win)
            .map(|&(_, v)| v)
            .max()
            .unwrap()
    }

    #[test]
    fn max_tracks_new_maximum_immediately() {
        let mut f = MinMax::<u32, u32>::default();
        assert_eq!(f.running_max(10, 0, 5), 5);
        assert_eq!(f.running_max(10, 1, 3), 5);
        assert_eq!(f.running_max(10, 2, 9), 9);
        assert_eq!(
            f.samples(),
            [Sample { t: 2, v: 9 }; 3],
            "new max resets all three"
        );
    }

    #[test]
    fn min_tracks_new_minimum_and_needs_explicit_start() {
        let mut f = MinMax::<u32, u32>::new(0, u32::MAX);
        assert_eq!(f.running_min(100, 0, 50), 50);
        assert_eq!(f.running_min(100, 10, 70), 50);
        assert_eq!(f.running_min(100, 20, 40), 40);
        assert_eq!(f.get(), 40);
        // A zeroed (Default) filter would report 0 for ever: min filters must use new().
        let mut z = MinMax::<u32, u32>::default();
        assert_eq!(z.running_min(100, 1, 40), 0);
    }

    #[test]
    fn max_expires_after_window_and_falls_back_to_later_choices() {
        // BBR-style: window 10 rounds, a burst to 100 at round 0, then 60, then 30.
        let mut f = MinMax::<u32, u32>::default();
        f.running_max(10, 0, 100);
        for t in 1..=5 {
            assert_eq!(f.running_max(10, t, 60), 100);
        }
        for t in 6..=10 {
            assert_eq!(f.running_max(10, t, 30), 100);
        }
        // Round 11: the 100 is more than 10 rounds old; the 2nd choice (60,
        // taken in the second quarter) takes over.
        assert_eq!(f.running_max(10, 11, 30), 60);
        // 60 was last refreshed at round 5: it expires at round 16.
        assert_eq!(f.running_max(10, 15, 30), 60);
        assert_eq!(f.running_max(10, 16, 30), 30);
    }

    #[test]
    fn everything_outside_window_resets() {
        let mut f = MinMax::<u32, u32>::default();
        f.running_max(10, 0, 100);
        // A gap longer than the window: the new (lower) sample is all there is.
        assert_eq!(f.running_max(10, 11, 7), 7);
        assert_eq!(f.samples(), [Sample { t: 11, v: 7 }; 3]);
    }

    #[test]
    fn sub_window_choices_are_taken_from_later_quarters() {
        let mut f = MinMax::<u32, u32>::default();
        f.running_max(8, 0, 50);
        // dt = 1 <= win/4 = 2 and 10 is below all three choices: nothing changes.
        f.running_max(8, 1, 10);
        assert_eq!(f.samples()[1], Sample { t: 0, v: 50 });
        // dt = 3 > win/4 with s1.t == s0.t: take a 2nd choice from quarter 2.
        f.running_max(8, 3, 20);
        assert_eq!(f.samples()[1], Sample { t: 3, v: 20 });
        assert_eq!(f.samples()[2], Sample { t: 3, v: 20 });
        // dt = 5 > win/2 with s2.t == s1.t: take a 3rd choice from the last half.
        f.running_max(8, 5, 15);
        assert_eq!(f.samples()[2], Sample { t: 5, v: 15 });
        assert_eq!(f.get(), 50);
    }

    #[test]
    fn ties_refresh_the_timestamp() {
        let mut f = MinMax::<u32, u32>::default();
        f.running_max(10, 0, 100);
        f.running_max(10, 8, 100);
        // Without the refresh at t=8 the 100 would expire at t=11.
        assert_eq!(f.running_max(10, 12, 1), 100);
    }

    #[test]
    fn wrapping_time_like_the_kernel_u32() {
        let mut f = MinMax::<u8, u32>::default();
        f.running_max(10, 250, 100);
        assert_eq!(f.running_max(10, 4, 5), 100, "250 -> 4 is 10 ticks");
        assert_eq!(f.running_max(10, 5, 5), 5, "11 ticks: expired");
    }

    #[test]
    fn estimate_is_a_window_sample_never_above_the_exact_max() {
        // Pseudo-random stream; the Nichols estimate is always a value from
        // the window (never above the exact max) and never below the latest sample.
        let mut x: u32 = 12345;
        let mut f = MinMax::<u32, u32>::default();
        let mut hist = Vec::new();
        for t in 0..2000u32 {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
            let v = (x >> 16) % 1000;
            hist.push((t, v));
            let got = f.running_max(10, t, v);
            assert!(got <= exact_max(&hist, 10, t), "t={t}");
            assert!(got >= v);
            assert!(hist.iter().any(|&(ts, hv)| hv == got && t - ts <= 10));
        }
    }

    #[test]
    fn generic_values() {
        use core::time::Duration;
        let mut f = MinMax::<u64, Duration>::new(0, Duration::MAX);
        f.running_min(300, 1, Duration::from_millis(40));
        assert_eq!(
            f.running_min(300, 2, Duration::from_millis(50)),
            Duration::from_millis(40)
        );
        let mut g = MinMax::<u64, u64>::default();
        assert_eq!(g.running_max(10, 1, u64::MAX), u64::MAX);
    }
}
