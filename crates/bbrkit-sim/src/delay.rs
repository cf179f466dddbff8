//! A constant-delay FIFO line (propagation delay). Because every item waits
//! the same time, arrivals leave in order, so the line needs one queued event
//! for its head rather than one per packet in the event heap.

use std::collections::VecDeque;

use bbrkit_cc::{Duration, Instant};

/// Items in flight on a wire with a fixed one-way delay.
#[derive(Debug, Clone)]
pub struct DelayLine<T> {
    delay: Duration,
    items: VecDeque<(Instant, T)>,
}

impl<T> DelayLine<T> {
    /// An empty line with the given delay.
    pub fn new(delay: Duration) -> Self {
        DelayLine {
            delay,
            items: VecDeque::new(),
        }
    }

    /// Puts `item` on the wire at `now`. Returns its arrival time if it is
    /// now the head (the caller must then schedule an event for it).
    pub fn push(&mut self, now: Instant, item: T) -> Option<Instant> {
        let at = now + self.delay;
        self.items.push_back((at, item));
        (self.items.len() == 1).then_some(at)
    }

    /// Takes the head if it has arrived by `now`, with the next head's
    /// arrival time (to schedule).
    pub fn pop(&mut self, now: Instant) -> Option<(T, Option<Instant>)> {
        if self.items.front()?.0 > now {
            return None;
        }
        let (_, item) = self.items.pop_front()?;
        Some((item, self.items.front().map(|(t, _)| *t)))
    }

    /// Items on the wire.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether the wire is empty.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fifo_with_constant_delay() {
        let mut l = DelayLine::new(Duration::from_millis(5));
        let t0 = Instant::ZERO;
        assert_eq!(l.push(t0, 1), Some(Instant::from_micros(5000)));
        assert_eq!(l.push(Instant::from_micros(1), 2), None);
        assert_eq!(l.pop(Instant::from_micros(4999)), None);
        assert_eq!(
            l.pop(Instant::from_micros(5000)),
            Some((1, Some(Instant::from_micros(5001))))
        );
        assert_eq!(l.pop(Instant::from_micros(5001)), Some((2, None)));
        assert!(l.is_empty());
    }
}
