//! A set of disjoint half-open `u64` ranges (the sender's record of SACKed
//! segments). Inserting a SACK block reports only the parts not already
//! known, so a block repeated on every ACK costs nothing after the first time.

/// Sorted, disjoint, non-adjacent ranges.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RangeSet {
    ranges: Vec<(u64, u64)>,
}

impl RangeSet {
    /// Adds `start..end`, calling `new_part` for each sub-range that was not
    /// in the set before, in increasing order.
    pub fn insert(&mut self, start: u64, end: u64, mut new_part: impl FnMut(u64, u64)) {
        if start >= end {
            return;
        }
        let i = self.ranges.partition_point(|r| r.1 < start);
        let mut j = i;
        let mut cursor = start;
        let mut lo = start;
        let mut hi = end;
        while j < self.ranges.len() && self.ranges[j].0 <= end {
            let r = self.ranges[j];
            if r.0 > cursor {
                new_part(cursor, r.0);
            }
            cursor = cursor.max(r.1);
            lo = lo.min(r.0);
            hi = hi.max(r.1);
            j += 1;
        }
        if cursor < end {
            new_part(cursor, end);
        }
        if j == i {
            self.ranges.insert(i, (lo, hi));
        } else {
            self.ranges[i] = (lo, hi);
            self.ranges.drain(i + 1..j);
        }
    }

    /// Forgets everything below `x`.
    pub fn remove_below(&mut self, x: u64) {
        let n = self.ranges.partition_point(|r| r.1 <= x);
        self.ranges.drain(..n);
        if let Some(first) = self.ranges.first_mut() {
            first.0 = first.0.max(x);
        }
    }

    /// Whether `v` is in the set.
    pub fn contains(&self, v: u64) -> bool {
        let i = self.ranges.partition_point(|r| r.1 <= v);
        i < self.ranges.len() && self.ranges[i].0 <= v
    }

    /// The ranges, sorted.
    pub fn ranges(&self) -> &[(u64, u64)] {
        &self.ranges
    }

    /// Removes everything.
    pub fn clear(&mut self) {
        self.ranges.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ins(s: &mut RangeSet, a: u64, b: u64) -> Vec<(u64, u64)> {
        let mut v = vec![];
        s.insert(a, b, |x, y| v.push((x, y)));
        v
    }

    #[test]
    fn reports_only_new_parts_and_merges() {
        let mut s = RangeSet::default();
        assert_eq!(ins(&mut s, 10, 20), [(10, 20)]);
        assert_eq!(ins(&mut s, 10, 20), []);
        assert_eq!(ins(&mut s, 30, 40), [(30, 40)]);
        assert_eq!(ins(&mut s, 5, 45), [(5, 10), (20, 30), (40, 45)]);
        assert_eq!(s.ranges(), &[(5, 45)]);
        assert_eq!(ins(&mut s, 45, 50), [(45, 50)]);
        assert_eq!(s.ranges(), &[(5, 50)], "adjacent ranges merge");
        assert_eq!(ins(&mut s, 60, 61), [(60, 61)]);
        assert!(s.contains(60) && !s.contains(61) && !s.contains(55) && s.contains(5));
        s.remove_below(7);
        assert_eq!(s.ranges(), &[(7, 50), (60, 61)]);
        s.remove_below(60);
        assert_eq!(s.ranges(), &[(60, 61)]);
    }

    #[test]
    fn matches_a_bitmap_on_random_inserts() {
        use crate::random::{Random, SeededRng};
        let mut rng = SeededRng::new(crate::testing::test_seed(5), 0);
        let mut s = RangeSet::default();
        let mut bits = vec![false; 300];
        for _ in 0..500 {
            let a = u64::from(rng.below(290));
            let b = a + 1 + u64::from(rng.below(10));
            let mut fresh = 0;
            s.insert(a, b, |x, y| {
                for k in x..y {
                    assert!(!bits[k as usize], "reported {k} twice");
                    fresh += 1;
                }
            });
            let expect = (a..b).filter(|&k| !bits[k as usize]).count();
            assert_eq!(fresh, expect);
            for k in a..b {
                bits[k as usize] = true;
            }
        }
        for (k, &b) in bits.iter().enumerate() {
            assert_eq!(s.contains(k as u64), b);
        }
    }
}
