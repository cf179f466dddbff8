//! A fixed-size log-linear histogram for streaming percentiles (RTT, queue
//! delay) with better than 1% relative precision: memory does not grow with the
//! number of samples or the length of the run.

/// Sub-buckets per power of two (precision 1/128).
const SUB_BITS: u32 = 7;
const SUB: u64 = 1 << SUB_BITS;
const BUCKETS: usize = ((64 - SUB_BITS as usize) + 1) * SUB as usize;

/// Counts of non-negative integer values (nanoseconds, say).
#[derive(Clone)]
pub struct Histogram {
    counts: Box<[u64; BUCKETS]>,
    total: u64,
    sum: u128,
    max: u64,
}

impl std::fmt::Debug for Histogram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Histogram")
            .field("total", &self.total)
            .field("max", &self.max)
            .finish_non_exhaustive()
    }
}

impl Default for Histogram {
    fn default() -> Self {
        Self::new()
    }
}

fn index(v: u64) -> usize {
    if v < 2 * SUB {
        return v as usize;
    }
    let e = 63 - v.leading_zeros(); // >= SUB_BITS + 1
    let m = v >> (e - SUB_BITS); // in [SUB, 2*SUB)
    ((e - SUB_BITS) as u64 * SUB + m) as usize
}

/// The midpoint of bucket `i`'s value range.
fn value(i: usize) -> u64 {
    let i = i as u64;
    if i < 2 * SUB {
        return i;
    }
    let e = i / SUB + SUB_BITS as u64 - 1;
    let m = i % SUB + SUB;
    let shift = e - SUB_BITS as u64;
    let lo = m << shift;
    lo + ((1u64 << shift) >> 1)
}

impl Histogram {
    /// An empty histogram.
    pub fn new() -> Self {
        Histogram {
            counts: Box::new([0; BUCKETS]),
            total: 0,
            sum: 0,
            max: 0,
        }
    }

    /// Records one value.
    pub fn record(&mut self, v: u64) {
        self.counts[index(v)] += 1;
        self.total += 1;
        self.sum += u128::from(v);
        self.max = self.max.max(v);
    }

    /// Number of values recorded.
    pub fn count(&self) -> u64 {
        self.total
    }

    /// The mean, if any value was recorded.
    pub fn mean(&self) -> Option<f64> {
        (self.total > 0).then(|| self.sum as f64 / self.total as f64)
    }

    /// The largest value recorded.
    pub fn max(&self) -> Option<u64> {
        (self.total > 0).then_some(self.max)
    }

    /// The `q` quantile (0..=1), to bucket precision, or `None` if empty.
    pub fn quantile(&self, q: f64) -> Option<u64> {
        if self.total == 0 {
            return None;
        }
        let rank = ((q.clamp(0.0, 1.0) * self.total as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return Some(value(i).min(self.max));
            }
        }
        Some(self.max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_and_value_round_trip_within_precision() {
        for v in [
            0u64,
            1,
            63,
            64,
            65,
            100,
            1000,
            12_345_678,
            10_000_000_000,
            u64::MAX / 3,
        ] {
            let back = value(index(v));
            let err = (back as f64 - v as f64).abs() / (v.max(1) as f64);
            assert!(err <= 1.0 / 128.0, "{v} -> {back}");
        }
        assert!(index(u64::MAX) < BUCKETS);
    }

    #[test]
    fn quantiles_of_uniform_values() {
        let mut h = Histogram::new();
        for v in 1..=10_000u64 {
            h.record(v * 1000);
        }
        let p50 = h.quantile(0.5).unwrap() as f64;
        let p99 = h.quantile(0.99).unwrap() as f64;
        assert!((p50 / 5_000_000.0 - 1.0).abs() < 0.01, "{p50}");
        assert!((p99 / 9_900_000.0 - 1.0).abs() < 0.01, "{p99}");
        assert_eq!(h.count(), 10_000);
        assert_eq!(h.max(), Some(10_000_000));
        assert!(Histogram::new().quantile(0.5).is_none());
    }
}
