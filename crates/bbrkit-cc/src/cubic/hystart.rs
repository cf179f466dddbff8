//! Classic HyStart (Ha & Rhee, "Taming the Elephants: New TCP Slow Start",
//! 2011), as in Linux `tcp_cubic.c`: leave slow start (by setting
//! `ssthresh = cwnd`) before the first loss, when either
//!
//! * **ACK train**: ACKs arriving ≤ 2 ms apart have kept coming for longer
//!   than half the min RTT (the whole window is in flight: the pipe is
//!   full), or
//! * **delay**: the minimum RTT of the first 8 ACKs of this round exceeds
//!   `delay_min + clamp(delay_min/8, 4 ms, 16 ms)` (a queue is building).
//!
//! Only runs while `cwnd >= hystart_low_window` (16) and in slow start.
//! RFC 9438 recommends HyStart++ (RFC 9406) instead, which enters a
//! conservative slow start rather than leaving it; Linux uses this one.
//! Times are `u32` microseconds (`tcp_mstamp`), wrapping as in the kernel.

use crate::tcp::Tcp;

/// `hystart = 1`: HyStart enabled.
pub const HYSTART: bool = true;
/// `HYSTART_ACK_TRAIN` bit of `hystart_detect`.
pub const HYSTART_ACK_TRAIN: u32 = 0x1;
/// `HYSTART_DELAY` bit of `hystart_detect`.
pub const HYSTART_DELAY: u32 = 0x2;
/// `hystart_detect = 3`: both detectors.
pub const HYSTART_DETECT: u32 = HYSTART_ACK_TRAIN | HYSTART_DELAY;
/// `hystart_low_window = 16`: HyStart only acts once cwnd ≥ 16 packets.
pub const HYSTART_LOW_WINDOW: u32 = 16;
/// `hystart_ack_delta_us = 2000`: ACKs closer than 2 ms belong to a train.
pub const HYSTART_ACK_DELTA_US: u32 = 2000;
/// `HYSTART_MIN_SAMPLES = 8`: RTT samples per round before the delay test.
pub const HYSTART_MIN_SAMPLES: u8 = 8;
/// `HYSTART_DELAY_MIN = 4 ms`: lower clamp of the delay-increase threshold.
pub const HYSTART_DELAY_MIN_US: u32 = 4000;
/// `HYSTART_DELAY_MAX = 16 ms`: upper clamp of the delay-increase threshold.
pub const HYSTART_DELAY_MAX_US: u32 = 16000;
/// `sk_gso_max_size` default (`GSO_LEGACY_MAX_SIZE`, 64 KiB), used by
/// `hystart_ack_delay` to allow for TSO/GRO aggregation.
pub const GSO_MAX_SIZE: u64 = 65536;

/// `HYSTART_DELAY_THRESH(x)`: `clamp(x, 4 ms, 16 ms)`.
pub fn delay_thresh(x_us: u32) -> u32 {
    x_us.clamp(HYSTART_DELAY_MIN_US, HYSTART_DELAY_MAX_US)
}

/// HyStart's per-round state (fields of Linux `struct bictcp`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct HyStart {
    /// RTT samples taken this round (`sample_cnt`).
    pub sample_cnt: u8,
    /// The exit point was found (`found`).
    pub found: bool,
    /// Start of this round, µs (`round_start`).
    pub round_start: u32,
    /// `snd_nxt` when the round started: the round ends when it is ACKed (`end_seq`).
    pub end_seq: u64,
    /// Last ACK that belonged to the current train, µs (`last_ack`).
    pub last_ack: u32,
    /// Minimum RTT of this round, µs (`curr_rtt`).
    pub curr_rtt: u32,
}

/// `bictcp_clock_us`: `tcp_mstamp` as a wrapping u32 of microseconds.
fn clock_us(tcp: &Tcp) -> u32 {
    tcp.now.as_micros() as u32
}

/// `hystart_ack_delay`: a cushion for TSO/GRO aggregation delay, at most
/// 1 ms: the time to send 4 GSO-sized packets at the pacing rate.
pub fn hystart_ack_delay(tcp: &Tcp) -> u32 {
    if tcp.pacing_rate == 0 {
        return 0;
    }
    (GSO_MAX_SIZE * 4 * 1_000_000 / tcp.pacing_rate).min(1000) as u32
}

impl HyStart {
    /// `bictcp_hystart_reset`: start a new round at `now`.
    pub fn reset(&mut self, tcp: &Tcp) {
        let now = clock_us(tcp);
        self.round_start = now;
        self.last_ack = now;
        self.end_seq = tcp.snd_nxt;
        self.curr_rtt = u32::MAX;
        self.sample_cnt = 0;
    }

    /// `hystart_update` for an RTT sample `delay` (µs), given CUBIC's
    /// `delay_min` (µs). Sets `found` and `tcp.snd_ssthresh = cwnd` on exit.
    pub fn update(&mut self, tcp: &mut Tcp, delay: u32, delay_min: u32) {
        if tcp.snd_una > self.end_seq {
            self.reset(tcp);
        }
        if HYSTART_DETECT & HYSTART_ACK_TRAIN != 0 {
            let now = clock_us(tcp);
            if (now.wrapping_sub(self.last_ack) as i32) <= HYSTART_ACK_DELTA_US as i32 {
                self.last_ack = now;
                let mut threshold = delay_min + hystart_ack_delay(tcp);
                // Unpaced: the train spans the whole RTT once the pipe is
                // full, so half the min RTT is enough. Paced: the pacer may
                // have spread the packets over up to RTT/2 already.
                if !tcp.paced {
                    threshold >>= 1;
                }
                if (now.wrapping_sub(self.round_start) as i32) > threshold as i32 {
                    self.found = true;
                    tcp.snd_ssthresh = tcp.snd_cwnd;
                }
            }
        }
        if HYSTART_DETECT & HYSTART_DELAY != 0 {
            self.curr_rtt = self.curr_rtt.min(delay);
            if self.sample_cnt < HYSTART_MIN_SAMPLES {
                self.sample_cnt += 1;
            } else if self.curr_rtt > delay_min.saturating_add(delay_thresh(delay_min >> 3)) {
                self.found = true;
                tcp.snd_ssthresh = tcp.snd_cwnd;
            }
        }
    }
}
