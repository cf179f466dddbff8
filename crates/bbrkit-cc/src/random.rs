//! Injected randomness. Controllers that randomise (BBRv1's initial gain-cycle
//! phase, BBRv3's probe wait) draw from a [`Random`] given to them at
//! construction, never from a global generator.

/// A source of uniformly distributed random numbers.
pub trait Random {
    /// The next uniformly distributed `u32`.
    fn next_u32(&mut self) -> u32;

    /// A uniform value in `0..n` (Linux `get_random_u32_below(n)`); 0 if `n == 0`.
    /// Uses Lemire's multiply-shift, as the kernel does.
    fn below(&mut self, n: u32) -> u32 {
        ((u64::from(self.next_u32()) * u64::from(n)) >> 32) as u32
    }
}

/// PCG-XSH-RR 32-bit generator (O'Neill 2014): small, fast, and reproducible
/// for a given seed across platforms and versions.
#[derive(Debug, Clone)]
pub struct SeededRng {
    state: u64,
    inc: u64,
}

impl SeededRng {
    const MULT: u64 = 6364136223846793005;

    /// A generator for `seed` on `stream` (different streams are independent).
    pub fn new(seed: u64, stream: u64) -> Self {
        let mut rng = SeededRng {
            state: 0,
            inc: (stream << 1) | 1,
        };
        rng.next_u32();
        rng.state = rng.state.wrapping_add(seed);
        rng.next_u32();
        rng
    }
}

impl Random for SeededRng {
    fn next_u32(&mut self) -> u32 {
        let old = self.state;
        self.state = old.wrapping_mul(Self::MULT).wrapping_add(self.inc);
        let xorshifted = (((old >> 18) ^ old) >> 27) as u32;
        let rot = (old >> 59) as u32;
        xorshifted.rotate_right(rot)
    }
}

/// A [`Random`] that replays a fixed sequence (cycling), for tests that need
/// to force a particular random choice.
#[derive(Debug, Clone)]
pub struct Fixed {
    values: Vec<u32>,
    next: usize,
}

impl Fixed {
    /// Replays `values` in order, starting again after the last. Panics if empty.
    pub fn new(values: Vec<u32>) -> Self {
        assert!(!values.is_empty(), "Fixed needs at least one value");
        Fixed { values, next: 0 }
    }
}

impl Random for Fixed {
    fn next_u32(&mut self) -> u32 {
        let v = self.values[self.next % self.values.len()];
        self.next += 1;
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeded_is_reproducible_and_seed_dependent() {
        let a: Vec<u32> = {
            let mut r = SeededRng::new(42, 0);
            (0..8).map(|_| r.next_u32()).collect()
        };
        let b: Vec<u32> = {
            let mut r = SeededRng::new(42, 0);
            (0..8).map(|_| r.next_u32()).collect()
        };
        let c: Vec<u32> = {
            let mut r = SeededRng::new(43, 0);
            (0..8).map(|_| r.next_u32()).collect()
        };
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn below_is_in_range_and_covers_it() {
        let mut r = SeededRng::new(7, 1);
        let mut seen = [false; 7];
        for _ in 0..1000 {
            let v = r.below(7);
            assert!(v < 7);
            seen[v as usize] = true;
        }
        assert!(seen.iter().all(|&s| s), "all of 0..7 drawn in 1000 tries");
        assert_eq!(Fixed::new(vec![u32::MAX]).below(7), 6);
        assert_eq!(Fixed::new(vec![0]).below(7), 0);
    }
}
