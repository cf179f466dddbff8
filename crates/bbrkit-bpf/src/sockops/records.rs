//! Consuming the program's close records (`bkpol_ring`) as
//! [`ConnRecord`]s. The ring is fixed-size; a record the program could not
//! reserve is counted (`Stats::ring_full`), never blocked on. A sample of
//! the wrong size (another build of the object) is counted here and
//! skipped.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use bbrkit_policy::ConnRecord;
use libbpf_rs::{RingBuffer, RingBufferBuilder};

use super::Maps;
use super::layout::RawRecord;
use crate::error::{BpfError, Result};

#[derive(Default)]
struct Inbox {
    records: Vec<ConnRecord>,
    malformed: u64,
}

/// A consumer of the close records of one attachment.
pub struct Records {
    ring: RingBuffer<'static>,
    inbox: Rc<RefCell<Inbox>>,
}

impl std::fmt::Debug for Records {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Records")
            .field("malformed", &self.inbox.borrow().malformed)
            .finish_non_exhaustive()
    }
}

impl Records {
    /// Starts consuming `maps`' ring (records written before are read too).
    pub fn new(maps: &Maps) -> Result<Records> {
        let inbox = Rc::new(RefCell::new(Inbox::default()));
        let sink = Rc::clone(&inbox);
        let mut b = RingBufferBuilder::new();
        let err = |source| BpfError::Map {
            map: "bkpol_ring".into(),
            op: "consume",
            source,
        };
        b.add(maps.ring(), move |bytes: &[u8]| {
            let mut inbox = sink.borrow_mut();
            match RawRecord::parse(bytes) {
                Some(r) => inbox.records.push(r.to_conn_record()),
                None => inbox.malformed += 1,
            }
            0
        })
        .map_err(err)?;
        let ring = b.build().map_err(err)?;
        Ok(Records { ring, inbox })
    }

    /// Waits up to `timeout` for records, then returns every record
    /// available (possibly none).
    pub fn poll(&mut self, timeout: Duration) -> Result<Vec<ConnRecord>> {
        self.ring.poll(timeout).map_err(|source| BpfError::Map {
            map: "bkpol_ring".into(),
            op: "poll",
            source,
        })?;
        Ok(std::mem::take(&mut self.inbox.borrow_mut().records))
    }

    /// Returns every record available now, without waiting.
    pub fn drain(&mut self) -> Result<Vec<ConnRecord>> {
        self.ring.consume().map_err(|source| BpfError::Map {
            map: "bkpol_ring".into(),
            op: "consume",
            source,
        })?;
        Ok(std::mem::take(&mut self.inbox.borrow_mut().records))
    }

    /// Samples skipped because their size was not a record's.
    pub fn malformed(&self) -> u64 {
        self.inbox.borrow().malformed
    }

    /// A file descriptor that becomes readable when records arrive (epoll),
    /// for an event loop that waits on other things too.
    pub fn epoll_fd(&self) -> i32 {
        self.ring.epoll_fd()
    }
}
