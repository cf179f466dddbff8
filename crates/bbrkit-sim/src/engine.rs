//! The event queue: discrete events on integer virtual time.
//!
//! Owns ordering only. Events pop in `(time, seq)` order, where `seq` is the
//! insertion counter, so two events at the same instant come out in the order
//! they were scheduled: runs are deterministic without relying on the heap's
//! internal layout. Must never read a clock.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use bbrkit_cc::Instant;

/// A min-queue of events of type `E` keyed by `(time, insertion order)`.
#[derive(Debug)]
pub struct EventQueue<E> {
    heap: BinaryHeap<Reverse<Entry<E>>>,
    seq: u64,
    now: Instant,
}

#[derive(Debug)]
struct Entry<E> {
    time: Instant,
    seq: u64,
    event: E,
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, other: &Self) -> bool {
        (self.time, self.seq) == (other.time, other.seq)
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl<E> Ord for Entry<E> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.time, self.seq).cmp(&(other.time, other.seq))
    }
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> EventQueue<E> {
    /// An empty queue at time zero.
    pub fn new() -> Self {
        EventQueue {
            heap: BinaryHeap::new(),
            seq: 0,
            now: Instant::ZERO,
        }
    }

    /// The time of the last event popped (the simulation clock).
    pub fn now(&self) -> Instant {
        self.now
    }

    /// Schedules `event` at `time`. A time in the past is moved to `now`
    /// (events never run backwards).
    pub fn schedule(&mut self, time: Instant, event: E) {
        let time = time.max(self.now);
        self.heap.push(Reverse(Entry {
            time,
            seq: self.seq,
            event,
        }));
        self.seq += 1;
    }

    /// Pops the earliest event and advances the clock to it.
    pub fn pop(&mut self) -> Option<(Instant, E)> {
        let Reverse(e) = self.heap.pop()?;
        self.now = e.time;
        Some((e.time, e.event))
    }

    /// The time of the next event, if any.
    pub fn peek_time(&self) -> Option<Instant> {
        self.heap.peek().map(|Reverse(e)| e.time)
    }

    /// Events waiting.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// Whether no event is waiting.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

/// A timer that may be re-armed often but keeps at most one live entry in an
/// [`EventQueue`]: the owner stores the wanted deadline here and schedules an
/// event only when [`Timer::needs_event`] says so; a popped event is acted on
/// only if [`Timer::fire`] confirms it is the live one and due.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Timer {
    /// When the timer should fire; `None` = disarmed.
    pub deadline: Option<Instant>,
    scheduled: Option<Instant>,
}

impl Timer {
    /// Arms (or re-arms) the timer for `at`.
    pub fn arm(&mut self, at: Instant) {
        self.deadline = Some(at);
    }

    /// Disarms the timer (a queued event becomes a no-op).
    pub fn disarm(&mut self) {
        self.deadline = None;
    }

    /// If an event must be queued for the current deadline, records it as
    /// scheduled and returns its time. A queued event that is earlier than the
    /// deadline is kept (it re-queues itself when it fires early).
    pub fn needs_event(&mut self) -> Option<Instant> {
        let d = self.deadline?;
        match self.scheduled {
            Some(s) if s <= d => None,
            _ => {
                self.scheduled = Some(d);
                Some(d)
            }
        }
    }

    /// Called when an event for this timer pops at `now`. Returns true if the
    /// timer is due (and disarms it). Stale events return false.
    pub fn fire(&mut self, now: Instant) -> bool {
        if self.scheduled != Some(now) {
            return false;
        }
        self.scheduled = None;
        match self.deadline {
            Some(d) if d <= now => {
                self.deadline = None;
                true
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pops_in_time_then_insertion_order() {
        let mut q = EventQueue::new();
        q.schedule(Instant::from_nanos(30), "c");
        q.schedule(Instant::from_nanos(10), "a1");
        q.schedule(Instant::from_nanos(20), "b");
        q.schedule(Instant::from_nanos(10), "a2");
        q.schedule(Instant::from_nanos(10), "a3");
        let order: Vec<_> = std::iter::from_fn(|| q.pop().map(|(_, e)| e)).collect();
        assert_eq!(order, ["a1", "a2", "a3", "b", "c"]);
        assert_eq!(q.now(), Instant::from_nanos(30));
    }

    #[test]
    fn past_events_run_now_not_backwards() {
        let mut q = EventQueue::new();
        q.schedule(Instant::from_nanos(50), 1);
        assert_eq!(q.pop(), Some((Instant::from_nanos(50), 1)));
        q.schedule(Instant::from_nanos(5), 2);
        assert_eq!(q.pop(), Some((Instant::from_nanos(50), 2)));
    }

    #[test]
    fn timer_keeps_one_live_event() {
        let mut t = Timer::default();
        t.arm(Instant::from_nanos(100));
        assert_eq!(t.needs_event(), Some(Instant::from_nanos(100)));
        // Re-arming later needs no new event: the early one re-queues.
        t.arm(Instant::from_nanos(200));
        assert_eq!(t.needs_event(), None);
        assert!(!t.fire(Instant::from_nanos(100)), "fired early: not due");
        assert_eq!(t.needs_event(), Some(Instant::from_nanos(200)));
        // Re-arming earlier needs a new event; the old one becomes stale.
        t.arm(Instant::from_nanos(150));
        assert_eq!(t.needs_event(), Some(Instant::from_nanos(150)));
        assert!(t.fire(Instant::from_nanos(150)));
        assert!(!t.fire(Instant::from_nanos(200)), "stale");
        assert_eq!(t.deadline, None);
    }
}
