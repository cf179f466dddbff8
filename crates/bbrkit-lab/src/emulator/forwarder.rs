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
//! never modify a frame.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};

use serde::Serialize;

use super::afpacket::{BATCH, PacketSocket, monotonic_ns};
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
}

/// Forwards `rx` → `tx` through `model` until `stop` is set.
pub fn forward(
    rx: &PacketSocket,
    tx: &PacketSocket,
    model: &mut LinkModel,
    cfg: ForwardConfig,
    stop: &AtomicBool,
) -> std::io::Result<ForwarderStats> {
    let slot_len = cfg.slot_len;
    let mut slab = vec![0u8; cfg.capacity * slot_len];
    let base = slab.as_mut_ptr();
    let mut free: Vec<u32> = (0..cfg.capacity as u32).rev().collect();
    let mut queue: VecDeque<(u64, u32, u32)> = VecDeque::with_capacity(cfg.capacity);
    let mut scratch = vec![0u8; slot_len * BATCH];
    let mut st = ForwarderStats {
        late_us_threshold: cfg.late_ns as f64 / 1e3,
        ..Default::default()
    };
    let (mut late_sum_ns, mut max_late_ns) = (0u128, 0u64);
    let (mut first_out, mut last_out) = (0u64, 0u64);
    let mut lens = [0usize; BATCH];
    let mut stamps = [0u64; BATCH];
    let mut picked = [0u32; BATCH];

    while !stop.load(Ordering::Relaxed) {
        // 1. Receive a batch into free slots (or into scratch when full).
        let k = free.len().min(BATCH);
        let got = if k == 0 {
            let mut bufs: [&mut [u8]; BATCH] = std::array::from_fn(|_| Default::default());
            for (b, chunk) in bufs.iter_mut().zip(scratch.chunks_mut(slot_len)) {
                *b = chunk;
            }
            let got = rx.recv_batch(&mut bufs, &mut lens, &mut stamps)?;
            st.frames_in += got as u64;
            st.overflow_drops += got as u64;
            got
        } else {
            for p in picked.iter_mut().take(k) {
                *p = free.pop().expect("k <= free.len()");
            }
            // SAFETY: the picked slot indexes are distinct (popped from the
            // free list) and in bounds, so these slices never overlap.
            let mut bufs: [&mut [u8]; BATCH] = std::array::from_fn(|_| Default::default());
            for (b, &s) in bufs.iter_mut().zip(&picked[..k]) {
                // SAFETY: see above: distinct, in-bounds slots of the pool.
                *b = unsafe {
                    std::slice::from_raw_parts_mut(base.add(s as usize * slot_len), slot_len)
                };
            }
            let got = rx.recv_batch(&mut bufs[..k], &mut lens, &mut stamps)?;
            for i in 0..got {
                st.frames_in += 1;
                let (slot, len) = (picked[i], lens[i]);
                if len == 0 {
                    st.oversize_frames += 1;
                    free.push(slot);
                    continue;
                }
                match model.on_arrival(stamps[i], len) {
                    Verdict::Deliver(at) => queue.push_back((at, slot, len as u32)),
                    Verdict::Drop(Drop::Loss) => {
                        st.lost_frames += 1;
                        free.push(slot);
                    }
                    Verdict::Drop(Drop::Buffer) => {
                        st.buffer_drops += 1;
                        free.push(slot);
                    }
                }
            }
            free.extend_from_slice(&picked[got..k]);
            got
        };

        // 2. Send every frame that is due.
        let mut sent_any = false;
        loop {
            let now = monotonic_ns();
            if queue.front().is_none_or(|e| e.0 > now) {
                break;
            }
            let horizon = now + cfg.batch_ns;
            let mut frames: [&[u8]; BATCH] = [&[]; BATCH];
            let mut due = 0;
            for &(at, slot, len) in queue.iter().take(BATCH) {
                if at > horizon {
                    break;
                }
                let off = slot as usize * slot_len;
                frames[due] = &slab[off..off + len as usize];
                due += 1;
            }
            let sent = tx.send_batch(&frames[..due])?;
            for _ in 0..sent {
                let (at, slot, len) = queue.pop_front().expect("sent <= due");
                let late = now.saturating_sub(at);
                late_sum_ns += late as u128;
                max_late_ns = max_late_ns.max(late);
                if late > cfg.late_ns {
                    st.late_frames += 1;
                }
                st.frames_out += 1;
                st.bytes_out += len as u64;
                if first_out == 0 {
                    first_out = now;
                }
                last_out = now;
                free.push(slot);
            }
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

        // 3. Nothing to do: sleep until shortly before the next deadline.
        if got == 0 && !sent_any {
            let now = monotonic_ns();
            match queue.front() {
                None => rx.wait_readable(5_000_000),
                Some(&(at, _, _)) if at > now + cfg.spin_ns => {
                    rx.wait_readable(at - now - cfg.spin_ns)
                }
                Some(_) => std::hint::spin_loop(),
            }
        }
    }
    st.kernel_drops = rx.take_kernel_drops()?;
    st.max_late_us = max_late_ns as f64 / 1e3;
    if st.frames_out > 0 {
        st.mean_late_us = late_sum_ns as f64 / st.frames_out as f64 / 1e3;
        st.active_s = (last_out - first_out) as f64 / 1e9;
    }
    Ok(st)
}
