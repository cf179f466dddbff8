//! Sampling over time: one census at the start, then one per interval until
//! the duration is over (`duration / interval + 1` censuses), each streamed
//! into the [`Tracker`] without holding the sockets.
//!
//! Owns the schedule and the cost account of each census. The clock and the
//! census are passed in ([`Clock`], `census`), so tests drive it with
//! recorded answers and a fake clock; [`SystemClock`] and
//! [`bbrkit_diag::census_each`] are the real ones. A census that runs late
//! does not shift the schedule (the next one is due at its own time); a
//! census longer than the interval makes the next start at once. Must never
//! print (progress goes to the callback) and never change anything.

use std::time::{Duration, Instant};

use bbrkit_diag::{DiagError, Filter, Socket, StateSet};
use serde::Serialize;

use crate::{AdviseError, Tracker};

/// Time since sampling began, and a way to wait for a moment.
pub trait Clock {
    /// Time since the clock's start.
    fn now(&self) -> Duration;
    /// Returns at or after `t` (at once if `t` has passed).
    fn sleep_until(&self, t: Duration);
}

/// The monotonic clock, started when created.
#[derive(Debug)]
pub struct SystemClock(Instant);

impl SystemClock {
    /// A clock whose zero is now.
    pub fn start() -> SystemClock {
        SystemClock(Instant::now())
    }
}

impl Clock for SystemClock {
    fn now(&self) -> Duration {
        self.0.elapsed()
    }
    fn sleep_until(&self, t: Duration) {
        let now = self.now();
        if t > now {
            std::thread::sleep(t - now);
        }
    }
}

/// What to sample.
#[derive(Debug, Clone, PartialEq)]
pub struct SamplePlan {
    /// Total sampling time.
    pub duration: Duration,
    /// Time between censuses (> 0).
    pub interval: Duration,
    /// Only connections with this local or remote port (kernel-filtered).
    pub port: Option<u16>,
}

impl SamplePlan {
    /// Censuses the plan takes.
    pub fn sweeps(&self) -> u64 {
        (self.duration.as_nanos() / self.interval.as_nanos().max(1)) as u64 + 1
    }

    /// The census filter: every state (closing connections keep their
    /// `tcp_info` until TIME_WAIT), IPv4 and IPv6, with `tcp_info`.
    pub fn filter(&self) -> Filter {
        Filter {
            states: StateSet::ALL,
            port: self.port,
            ..Filter::default()
        }
    }

    /// Checks the plan (a positive interval, a duration of at least one).
    pub fn check(&self) -> Result<(), AdviseError> {
        if self.interval.is_zero() {
            return Err(AdviseError::Invalid("the interval must be positive".into()));
        }
        if self.duration < self.interval {
            return Err(AdviseError::Invalid(format!(
                "the duration ({:?}) must be at least one interval ({:?})",
                self.duration, self.interval
            )));
        }
        Ok(())
    }
}

/// What sampling cost.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct SamplingStats {
    /// Censuses taken.
    pub sweeps: u64,
    /// Sockets the largest census returned.
    pub max_sockets: usize,
    /// Mean and largest wall time of one census (dump + decoding + tracking), ms.
    pub mean_census_ms: f64,
    /// See `mean_census_ms`.
    pub max_census_ms: f64,
    /// Time from the first census to the end of the last, s.
    pub elapsed_s: f64,
}

/// Progress after each census: (censuses done, censuses planned, sockets seen).
pub type Progress<'a> = &'a mut dyn FnMut(u64, u64, usize);

/// A census source: hands every socket of one dump to the visitor.
pub type Census<'a> =
    &'a mut dyn FnMut(&Filter, &mut dyn FnMut(Socket)) -> Result<usize, DiagError>;

/// Samples according to `plan` into `tracker`.
pub fn sample(
    plan: &SamplePlan,
    clock: &dyn Clock,
    census: Census<'_>,
    tracker: &mut Tracker,
    progress: Progress<'_>,
) -> Result<SamplingStats, AdviseError> {
    plan.check()?;
    let filter = plan.filter();
    let total = plan.sweeps();
    let mut stats = SamplingStats::default();
    let mut sum_ms = 0.0;
    let start = clock.now();
    for i in 0..total {
        clock.sleep_until(start + plan.interval * i as u32);
        let t0 = clock.now();
        tracker.begin_sweep(t0 - start);
        let n = census(&filter, &mut |s| tracker.observe(&s)).map_err(AdviseError::Census)?;
        tracker.end_sweep();
        let ms = (clock.now() - t0).as_secs_f64() * 1e3;
        sum_ms += ms;
        stats.max_census_ms = stats.max_census_ms.max(ms);
        stats.max_sockets = stats.max_sockets.max(n);
        stats.sweeps = i + 1;
        progress(i + 1, total, tracker.len());
    }
    stats.mean_census_ms = sum_ms / stats.sweeps.max(1) as f64;
    stats.elapsed_s = (clock.now() - start).as_secs_f64();
    Ok(stats)
}

/// The real census: `bbrkit_diag::census_each` in the calling thread's
/// network namespace.
pub fn live_census(filter: &Filter, visit: &mut dyn FnMut(Socket)) -> Result<usize, DiagError> {
    bbrkit_diag::census_each(filter, visit)
}

/// The real link lookup: the interface the kernel routes `remote` through
/// (rtnetlink) and its speed (sysfs), in the calling thread's namespace;
/// `None` when it cannot be found.
pub fn live_links(remote: std::net::IpAddr) -> Option<bbrkit_diag::link::Link> {
    bbrkit_diag::link::egress(remote).ok()
}
