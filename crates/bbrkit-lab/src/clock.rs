//! The lab's readings of the kernel's clocks: `CLOCK_REALTIME` (the clock
//! of the kernel's packet timestamps), `CLOCK_MONOTONIC` (the emulator's
//! schedule) and the calling thread's CPU clock (the tester's cost).
//!
//! The one `clock_gettime` wrapper of the lab, safe through `nix`. Must never
//! be used where a time can be passed in: the model and the runner take
//! their time from their caller.

use nix::time::{ClockId, clock_gettime};

/// `clock` in nanoseconds (0 if the kernel refuses, which it does not for
/// these three clocks).
fn ns(clock: ClockId) -> u64 {
    clock_gettime(clock).map_or(0, |t| {
        t.tv_sec() as u64 * 1_000_000_000 + t.tv_nsec() as u64
    })
}

/// `CLOCK_REALTIME` in nanoseconds.
pub fn realtime_ns() -> u64 {
    ns(ClockId::CLOCK_REALTIME)
}

/// `CLOCK_MONOTONIC` in nanoseconds.
pub fn monotonic_ns() -> u64 {
    ns(ClockId::CLOCK_MONOTONIC)
}

/// CPU time consumed so far by the calling thread, in seconds.
pub fn thread_cpu_s() -> f64 {
    ns(ClockId::CLOCK_THREAD_CPUTIME_ID) as f64 / 1e9
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clocks_advance() {
        let (r, m) = (realtime_ns(), monotonic_ns());
        let mut x = 0u64;
        for i in 0..1_000_000u64 {
            x = x.wrapping_add(i * i);
        }
        std::hint::black_box(x);
        assert!(realtime_ns() >= r && monotonic_ns() > m);
        assert!(r > 1_600_000_000 * 1_000_000_000, "realtime is after 2020");
        assert!(thread_cpu_s() > 0.0);
    }
}
