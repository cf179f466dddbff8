//! One direction of the userspace emulator: read frames from one link,
//! pass each through a [`LinkModel`], hold it in a timed FIFO, and write it to
//! the other link when it is due.
//!
//! Owns the forwarding loop and its timing discipline: block in `ppoll` while
//! the next deadline is far, spin for the last `spin_ns` (timer wake-ups on
//! our VMs arrive 50–150 µs late), and count every frame delivered more than
//! `late_ns` after its deadline so a spoiled run can be flagged. Frames live
//! in one pre-reserved slab (pages are touched only when used); when it is
//! full, arriving frames are dropped and counted as `overflow_drops`. Must
//! never modify a frame, except to set CE where the model says the queue
//! was above the ECN threshold ([`super::ecn`]).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};

use serde::Serialize;

use super::afpacket::{BATCH, PacketSocket, monotonic_ns};
use super::ecn::{Mark, mark_ce};
use super::model::{Drop, LinkModel, Verdict};

/// Tuning of the forwarding loop.
#[derive(Debug, Clone, Copy)]
pub struct ForwardConfig {
    /// Most frames held at once (delay line + bottleneck queue).
    pub capacity: usize,
    /// Bytes reserved per frame (MTU + Ethernet header, rounded up).
    pub slot_len: usize,
    /// Spin instead of sleeping when the next deadline is this close.
    pub spin_ns: u64,
    /// A frame delivered later than this after its deadline counts as late.
    pub late_ns: u64,
    /// Frames due within this much of the first due frame leave in the same
    /// `sendmmsg` (up to this early), so the loop is not one syscall per frame.
    pub batch_ns: u64,
}

/// What one direction did.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct ForwarderStats {
    /// Frames read from the ingress link.
    pub frames_in: u64,
    /// Frames written to the egress link.
    pub frames_out: u64,
    /// Bytes (Ethernet frames) written to the egress link.
    pub bytes_out: u64,
    /// Frames dropped by the random loss process.
    pub lost_frames: u64,
    /// Frames dropped by the full bottleneck buffer (drop-tail).
    pub buffer_drops: u64,
    /// Frames dropped because the emulator's own slab was full (an artefact).
    pub overflow_drops: u64,
    /// Frames the kernel dropped on the lab's own path, not by the emulated
    /// link (an artefact): the userspace emulator's socket buffer overflowed,
    /// or (split emulator) a link's receive backlog was full.
    pub kernel_drops: u64,
    /// Frames larger than a slot (offloads not off?) and dropped.
    pub oversize_frames: u64,
    /// Frames delivered more than `late_us_threshold` after their deadline.
    pub late_frames: u64,
    /// The late threshold in microseconds.
    pub late_us_threshold: f64,
    /// Worst lateness in microseconds.
    pub max_late_us: f64,
    /// Mean lateness of all delivered frames in microseconds.
    pub mean_late_us: f64,
    /// Seconds between the first and the last delivered frame.
    pub active_s: f64,
    /// Congestion marks, when the link has an ECN threshold.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ecn: Option<EcnStats>,
}

/// What the ECN threshold did (frames that arrived above it).
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq, Eq)]
pub struct EcnStats {
    /// ECT frames set to CE.
    pub ce_marked: u64,
    /// Not-ECT frames above the threshold, passed unmarked (their flow did
    /// not negotiate ECN).
    pub not_ect: u64,
    /// Frames that were CE already.
    pub already_ce: u64,
}

/// A frame waiting in the slab: when it is due, which slot holds it, and
/// its length.
#[derive(Debug, Clone, Copy)]
struct Held {
    at: u64,
    slot: u32,
    len: u32,
}

/// Forwards `rx` → `tx` through `model` until `stop` is set.
pub fn forward(
    rx: &PacketSocket,
    tx: &PacketSocket,
    model: &mut LinkModel,
    cfg: ForwardConfig,
    stop: &AtomicBool,
) -> std::io::Result<ForwarderStats> {
    let mut f = Forwarder::new(rx, tx, model, cfg);
    while !stop.load(Ordering::Relaxed) {
        let got = f.receive_batch()?;
        let sent_any = f.send_due()?;
        if got == 0 && !sent_any {
            f.idle_wait();
        }
    }
    f.finish()
}

/// The loop's state. Everything is allocated in [`Forwarder::new`]; the
/// loop itself never allocates.
struct Forwarder<'a> {
    rx: &'a PacketSocket,
    tx: &'a PacketSocket,
    model: &'a mut LinkModel,
    cfg: ForwardConfig,
    /// `capacity` slots of `slot_len` bytes.
    slab: Vec<u8>,
    /// Slots holding no frame. A slot is either here, in `queue`, or in
    /// `picked` during one receive, never in two of them.
    free: Vec<u32>,
    /// Frames waiting for their deadline, in delivery order.
    queue: VecDeque<Held>,
    /// Where a batch goes when the slab is full (read to be dropped).
    scratch: Vec<u8>,
    /// Per received frame of a batch: its length (0: larger than a slot),
    /// its kernel timestamp, and the slot it went to.
    lens: [usize; BATCH],
    stamps: [u64; BATCH],
    picked: [u32; BATCH],
    st: ForwarderStats,
    late_sum_ns: u128,
    max_late_ns: u64,
    /// When the first and the last frame left (0: none yet).
    first_out: u64,
    last_out: u64,
}

impl<'a> Forwarder<'a> {
    fn new(
        rx: &'a PacketSocket,
        tx: &'a PacketSocket,
        model: &'a mut LinkModel,
        cfg: ForwardConfig,
    ) -> Self {
        let ecn = model
            .params()
            .ecn_threshold_bytes
            .map(|_| EcnStats::default());
        Forwarder {
            rx,
            tx,
            model,
            cfg,
            slab: vec![0u8; cfg.capacity * cfg.slot_len],
            free: (0..cfg.capacity as u32).rev().collect(),
            queue: VecDeque::with_capacity(cfg.capacity),
            scratch: vec![0u8; cfg.slot_len * BATCH],
            lens: [0; BATCH],
            stamps: [0; BATCH],
            picked: [0; BATCH],
            st: ForwarderStats {
                late_us_threshold: cfg.late_ns as f64 / 1e3,
                ecn,
                ..Default::default()
            },
            late_sum_ns: 0,
            max_late_ns: 0,
            first_out: 0,
            last_out: 0,
        }
    }

    /// Receives one batch into free slots (or, when the slab is full, into
    /// scratch, to be dropped); returns how many frames arrived.
    fn receive_batch(&mut self) -> std::io::Result<usize> {
        match self.free.len().min(BATCH) {
            0 => self.receive_overflow(),
            k => self.receive_into_slots(k),
        }
    }

    /// The slab is full: reads a batch anyway, so the socket keeps
    /// draining, and counts it as `overflow_drops`.
    fn receive_overflow(&mut self) -> std::io::Result<usize> {
        let mut bufs: [&mut [u8]; BATCH] = std::array::from_fn(|_| Default::default());
        for (b, chunk) in bufs
            .iter_mut()
            .zip(self.scratch.chunks_mut(self.cfg.slot_len))
        {
            *b = chunk;
        }
        let got = self
            .rx
            .recv_batch(&mut bufs, &mut self.lens, &mut self.stamps)?;
        self.st.frames_in += got as u64;
        self.st.overflow_drops += got as u64;
        Ok(got)
    }

    /// Reads up to `k` frames into `k` slots taken from the free list,
    /// passes each through the model, and returns the unused slots.
    fn receive_into_slots(&mut self, k: usize) -> std::io::Result<usize> {
        for p in self.picked.iter_mut().take(k) {
            *p = self.free.pop().expect("k <= free.len()");
        }
        let slot_len = self.cfg.slot_len;
        let base = self.slab.as_mut_ptr();
        let mut bufs: [&mut [u8]; BATCH] = std::array::from_fn(|_| Default::default());
        for (b, &s) in bufs.iter_mut().zip(&self.picked[..k]) {
            // SAFETY: `s` was just popped from the free list, so the picked
            // slots are distinct and none holds a queued frame; every slot
            // index is below `capacity`, so `s * slot_len + slot_len` is
            // within the slab. The slices are in bounds, never overlap, and
            // nothing else reads or writes the slab while `bufs` lives.
            *b = unsafe {
                std::slice::from_raw_parts_mut(base.add(s as usize * slot_len), slot_len)
            };
        }
        let got = self
            .rx
            .recv_batch(&mut bufs[..k], &mut self.lens, &mut self.stamps)?;
        for i in 0..got {
            self.admit(self.picked[i], self.stamps[i], self.lens[i]);
        }
        self.free.extend_from_slice(&self.picked[got..k]);
        Ok(got)
    }

    /// Queues the frame in `slot` (arrived at `stamp`, `len` bytes, 0 when
    /// it did not fit) or, if the model drops it, frees the slot.
    fn admit(&mut self, slot: u32, stamp: u64, len: usize) {
        self.st.frames_in += 1;
        if len == 0 {
            self.st.oversize_frames += 1;
            self.free.push(slot);
            return;
        }
        match self.model.on_arrival(stamp, len) {
            Verdict::Deliver(at) => self.queue.push_back(Held {
                at,
                slot,
                len: len as u32,
            }),
            Verdict::DeliverCongested(at) => {
                self.mark(slot, len);
                self.queue.push_back(Held {
                    at,
                    slot,
                    len: len as u32,
                });
            }
            Verdict::Drop(Drop::Loss) => {
                self.st.lost_frames += 1;
                self.free.push(slot);
            }
            Verdict::Drop(Drop::Buffer) => {
                self.st.buffer_drops += 1;
                self.free.push(slot);
            }
        }
    }

    /// Sets CE on the frame in `slot` (`len` bytes) and counts what it did.
    fn mark(&mut self, slot: u32, len: usize) {
        let off = slot as usize * self.cfg.slot_len;
        let mark = mark_ce(&mut self.slab[off..off + len]);
        if let Some(e) = &mut self.st.ecn {
            match mark {
                Mark::Marked => e.ce_marked += 1,
                Mark::NotEct => e.not_ect += 1,
                Mark::AlreadyCe => e.already_ce += 1,
                Mark::NotIp => {}
            }
        }
    }

    /// Sends every frame that is due; returns whether any left.
    fn send_due(&mut self) -> std::io::Result<bool> {
        let mut sent_any = false;
        loop {
            let now = monotonic_ns();
            if self.queue.front().is_none_or(|h| h.at > now) {
                break;
            }
            let (due, sent) = self.send_batch(now)?;
            sent_any |= sent > 0;
            if sent < due {
                if sent == 0 {
                    // Egress full: let the kernel drain it (a real-time
                    // thread that spins here would starve that work).
                    std::thread::sleep(std::time::Duration::from_micros(20));
                }
                break; // retry on the next turn
            }
        }
        Ok(sent_any)
    }

    /// Sends, in one `sendmmsg`, the queue's head frames due by `now` plus
    /// the batching window, and accounts for those that left; returns
    /// `(due, sent)`.
    fn send_batch(&mut self, now: u64) -> std::io::Result<(usize, usize)> {
        let horizon = now + self.cfg.batch_ns;
        let mut frames: [&[u8]; BATCH] = [&[]; BATCH];
        let mut due = 0;
        for h in self.queue.iter().take(BATCH) {
            if h.at > horizon {
                break;
            }
            let off = h.slot as usize * self.cfg.slot_len;
            frames[due] = &self.slab[off..off + h.len as usize];
            due += 1;
        }
        let sent = self.tx.send_batch(&frames[..due])?;
        for _ in 0..sent {
            let h = self.queue.pop_front().expect("sent <= due");
            self.delivered(now, h);
        }
        Ok((due, sent))
    }

    /// Accounts for `h`, which left at `now`, and frees its slot.
    fn delivered(&mut self, now: u64, h: Held) {
        let late = now.saturating_sub(h.at);
        self.late_sum_ns += late as u128;
        self.max_late_ns = self.max_late_ns.max(late);
        if late > self.cfg.late_ns {
            self.st.late_frames += 1;
        }
        self.st.frames_out += 1;
        self.st.bytes_out += u64::from(h.len);
        if self.first_out == 0 {
            self.first_out = now;
        }
        self.last_out = now;
        self.free.push(h.slot);
    }

    /// Nothing to do: sleeps until shortly before the next deadline (or
    /// until a frame arrives), or spins when that deadline is close.
    fn idle_wait(&self) {
        let now = monotonic_ns();
        match self.queue.front() {
            None => self.rx.wait_readable(5_000_000),
            Some(h) if h.at > now + self.cfg.spin_ns => {
                self.rx.wait_readable(h.at - now - self.cfg.spin_ns)
            }
            Some(_) => std::hint::spin_loop(),
        }
    }

    /// The final statistics, with the kernel's count of frames it dropped
    /// before the socket.
    fn finish(mut self) -> std::io::Result<ForwarderStats> {
        self.st.kernel_drops = self.rx.take_kernel_drops()?;
        self.st.max_late_us = self.max_late_ns as f64 / 1e3;
        if self.st.frames_out > 0 {
            self.st.mean_late_us = self.late_sum_ns as f64 / self.st.frames_out as f64 / 1e3;
            self.st.active_s = (self.last_out - self.first_out) as f64 / 1e9;
        }
        Ok(self.st)
    }
}
