//! CUBIC as Linux implements it in `net/ipv4/tcp_cubic.c` (module version
//! 2.3), with classic HyStart ([`hystart`]). RFC 9438 is the specification;
//! where Linux and the RFC differ we follow Linux and say so below.
//! Read RFC 9438 and the kernel file before changing this one.
//!
//! # Model
//!
//! After a congestion event at window `W_max`, cwnd follows a cubic
//! function of the time `t` since the epoch began (the first ACK in
//! congestion avoidance after the reduction):
//!
//! ```text
//!   W(t) = C·(t − K)³ + W_max        C = 0.4 packets/s³,  K = ∛((W_max − cwnd_epoch)/C)
//!
//!   cwnd ▲                              ╭── convex: probe beyond W_max
//!        │ W_max ─ ─ ─ ─ ─ ─ ╭────────╯
//!        │               ╭──╯ ← plateau near W_max at t = K
//!        │            ╭─╯  concave: fast regrowth
//!        │ β·W_max  ╭╯
//!        └──────────┴──────────────────────────────► t
//! ```
//!
//! Each ACK moves cwnd towards `W(t + delay_min)` (one min RTT ahead) by
//! setting `cnt`, the number of ACKed packets per +1 cwnd, and handing it to
//! `tcp_cong_avoid_ai`. A Reno estimate `tcp_cwnd` (+1 per 15/8·cwnd ACKed,
//! the "TCP-friendly" rate for β = 0.7) caps `cnt` when Reno would be faster
//! (the Reno-friendly region). On loss, `ssthresh = 0.7·cwnd`, and fast
//! convergence remembers `W_max = 0.85·cwnd` instead of `cwnd` when this
//! loss came below the previous `W_max` (another flow is taking bandwidth).
//!
//! # States
//!
//! ```text
//!                  HyStart (ACK train | delay rise) sets ssthresh = cwnd
//!   ┌────────────┐ ──────── or cwnd reaches ssthresh ───────► ┌─────────────────────────┐
//!   │ slow_start │                                            │ congestion_avoidance    │
//!   │ +1 per ACK │ ◄───────── RTO: set_state(Loss) resets ── │ cubic / Reno-friendly   │
//!   └────────────┘     all state (cwnd = 1, W_max = 0)        └─────────────────────────┘
//!          loss (Recovery): ssthresh() = 0.7·cwnd, epoch ends; the transport runs PRR
//!          down to ssthresh, then congestion avoidance starts a new epoch.
//! ```
//!
//! # Where Linux differs from RFC 9438 (we follow Linux)
//!
//! | RFC 9438 | Linux / here |
//! |---|---|
//! | C = 0.4 | `bic_scale` 41/1024 ·10 → 410/1024 = 0.4004 |
//! | β = 0.7 | 717/1024 = 0.7002 |
//! | α_cubic = 3(1−β)/(1+β) ≈ 0.529, then 1 once W_est ≥ cwnd_prior | +1 Reno packet per `beta_scale`/8 = 15/8 cwnd (α ≈ 0.533), never switches to 1 |
//! | target = W(t + srtt) | W(t + delay_min): the min RTT seen by CUBIC |
//! | target clamped to [cwnd, 1.5·cwnd] | `cnt >= 2`: at most +1 per 2 ACKed (1.5×/RTT) |
//! | ssthresh from flight size | from cwnd (`max(cwnd·β, 2)`) |
//! | after RTO: K = 0, W_max = cwnd at CA start | `set_state(Loss)` zeroes all state; then `last_max_cwnd = 0` ⇒ K = 0 and cnt ≤ 20 (≥ 5 %/RTT) |
//! | t excludes app-limited time | epoch shifted by the idle time on `CA_EVENT_TX_START` |
//! | HyStart++ (RFC 9406) recommended | classic HyStart (ACK train + delay) |
//! | per-ACK update | `cnt` recomputed at most once per jiffy, and only every HZ/32 if cwnd is unchanged |
//!
//! # Deliberate deviations from Linux (listed in docs/cc.md)
//!
//! * `cubic_root`: exact integer cube root instead of the kernel's table
//!   lookup plus one Newton step (average error ≈ 0.2 %): K differs from the
//!   kernel's by at most a few 1/1024 s.
//! * `epoch_start` is an `Option` instead of "0 = none", so an epoch that
//!   starts at jiffy 0 is not lost.
//! * `(t − K)³·C` is computed in 128 bits and saturated; the kernel's 64-bit
//!   product wraps once an epoch is older than ≈ 340 s.
//! * `HZ` (jiffies per second) is a field, default 1000 (`CONFIG_HZ_1000`);
//!   Debian kernels use 250.
//!
//! Never reads a clock: time is `tcp.now`, converted to jiffies and
//! microseconds as the kernel would see them.

pub mod hystart;

use crate::controller::{CongestionControl, Status};
use crate::tcp::{AckSample, CaEvent, CaState, Tcp};
use crate::tcp_cong::{cong_avoid_acked, reno_state_name, tcp_cong_avoid_ai, tcp_reno_undo_cwnd};
use crate::time::Duration;
use hystart::HyStart;

/// `BICTCP_BETA_SCALE`: fixed-point scale of `beta`.
pub const BICTCP_BETA_SCALE: u32 = 1024;
/// `BICTCP_HZ`: CUBIC's time unit is 2^-10 s (1/1024 s).
pub const BICTCP_HZ: u32 = 10;
/// `beta` = 717/1024 ≈ 0.7: multiplicative decrease factor.
pub const BETA: u32 = 717;
/// `bic_scale` = 41: C = bic_scale·10/1024 ≈ 0.4 packets/s³.
pub const BIC_SCALE: u32 = 41;
/// `fast_convergence` = 1: release bandwidth faster when W_max shrinks.
pub const FAST_CONVERGENCE: bool = true;
/// `tcp_friendliness` = 1: never grow slower than Reno would.
pub const TCP_FRIENDLINESS: bool = true;
/// `initial_ssthresh` = 0: keep the infinite initial ssthresh (HyStart decides).
pub const INITIAL_SSTHRESH: u32 = 0;
/// `cube_rtt_scale = bic_scale * 10` = 410 ≈ 1024·C (C per (1/1024 s)³ scaled by 2^10).
pub const CUBE_RTT_SCALE: u64 = BIC_SCALE as u64 * 10;
/// `cube_factor = 2^(10 + 3·BICTCP_HZ) / (bic_scale·10)`: `K = ∛(cube_factor·(W_max − cwnd))`
/// gives K in 1/1024 s.
pub const CUBE_FACTOR: u64 = (1u64 << (10 + 3 * BICTCP_HZ)) / (BIC_SCALE as u64 * 10);
/// `beta_scale = 8·(1024 + beta)/3/(1024 − beta)` = 15: the Reno estimate
/// grows by one per `(cwnd·15) >> 3` ACKed packets (α_cubic ≈ 0.533).
pub const BETA_SCALE: u32 = 8 * (BICTCP_BETA_SCALE + BETA) / 3 / (BICTCP_BETA_SCALE - BETA);
/// Default jiffies per second (`CONFIG_HZ_1000`).
pub const DEFAULT_HZ: u32 = 1000;

/// Linux `struct bictcp`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Cubic {
    /// Increase cwnd by 1 after this many ACKed packets.
    cnt: u32,
    /// W_max: cwnd before the last reduction (after fast convergence).
    last_max_cwnd: u32,
    /// cwnd when `cnt` was last computed.
    last_cwnd: u32,
    /// Jiffy when `cnt` was last computed.
    last_time: u32,
    /// Origin point of the cubic function (W_max, or cwnd if above it).
    bic_origin_point: u32,
    /// K: time from epoch start to the origin point, in 1/1024 s.
    bic_k: u32,
    /// Minimum RTT sample, µs (0 = none yet).
    delay_min: u32,
    /// Jiffy at which the current epoch began.
    epoch_start: Option<u32>,
    /// Packets ACKed since the Reno estimate last grew.
    ack_cnt: u32,
    /// Reno-friendly cwnd estimate.
    tcp_cwnd: u32,
    /// HyStart state (`sample_cnt`, `found`, `round_start`, ...).
    hystart: HyStart,
    /// Jiffies per second.
    hz: u32,
}

impl Cubic {
    /// `cubictcp_init` with `HZ` = [`DEFAULT_HZ`].
    pub fn new(tcp: &mut Tcp) -> Self {
        Cubic::with_hz(tcp, DEFAULT_HZ)
    }

    /// `cubictcp_init` on a kernel with `hz` jiffies per second.
    pub fn with_hz(tcp: &mut Tcp, hz: u32) -> Self {
        let mut c = Cubic {
            hz: hz.max(1),
            ..Cubic::default()
        };
        c.hystart.reset(tcp);
        // `initial_ssthresh` is 0 and HyStart is on: ssthresh stays infinite.
        c
    }

    /// `tcp_jiffies32`: the current time in jiffies (wrapping u32).
    fn jiffies(&self, tcp: &Tcp) -> u32 {
        jiffies_of(tcp.now.as_nanos(), self.hz)
    }

    /// `bictcp_reset`: forget everything (on RTO).
    fn reset(&mut self) {
        *self = Cubic {
            hz: self.hz,
            hystart: self.hystart,
            ..Cubic::default()
        };
        self.hystart.found = false;
    }

    /// W_max (`last_max_cwnd`), packets.
    pub fn w_max(&self) -> u32 {
        self.last_max_cwnd
    }

    /// K, seconds.
    pub fn k(&self) -> f64 {
        f64::from(self.bic_k) / f64::from(1u32 << BICTCP_HZ)
    }

    /// The Reno-friendly window estimate (`tcp_cwnd`), packets.
    pub fn reno_cwnd(&self) -> u32 {
        self.tcp_cwnd
    }

    /// Packets ACKed per +1 cwnd, as last computed.
    pub fn cnt(&self) -> u32 {
        self.cnt
    }

    /// Whether HyStart has found the slow-start exit point.
    pub fn hystart_found(&self) -> bool {
        self.hystart.found
    }

    /// `bictcp_update`: compute `cnt` for the current cwnd.
    fn update(&mut self, tcp: &Tcp, cwnd: u32, acked: u32) {
        let now = self.jiffies(tcp);
        self.ack_cnt = self.ack_cnt.wrapping_add(acked);
        if self.last_cwnd == cwnd
            && (now.wrapping_sub(self.last_time) as i32) <= (self.hz / 32) as i32
        {
            return;
        }
        // The cubic part is recomputed at most once per jiffy; every
        // reduction clears epoch_start and so forces a recomputation.
        if self.epoch_start.is_none() || now != self.last_time {
            self.cubic_cnt(now, cwnd, acked);
        }
        self.friendliness(cwnd);
        // At most +1 per 2 ACKed packets: cwnd grows at most 1.5x per RTT.
        self.cnt = self.cnt.max(2);
    }

    /// The cubic function part of `bictcp_update`.
    fn cubic_cnt(&mut self, now: u32, cwnd: u32, acked: u32) {
        self.last_cwnd = cwnd;
        self.last_time = now;
        let epoch_start = match self.epoch_start {
            Some(e) => e,
            None => {
                self.epoch_start = Some(now);
                self.ack_cnt = acked;
                self.tcp_cwnd = cwnd;
                if self.last_max_cwnd <= cwnd {
                    self.bic_k = 0;
                    self.bic_origin_point = cwnd;
                } else {
                    // K = ∛((W_max − cwnd)·cube_factor), in 1/1024 s.
                    self.bic_k = cubic_root(CUBE_FACTOR * u64::from(self.last_max_cwnd - cwnd));
                    self.bic_origin_point = self.last_max_cwnd;
                }
                now
            }
        };
        // t = now − epoch + delay_min (one min RTT ahead), in 1/1024 s.
        let mut t = u64::from(now.wrapping_sub(epoch_start) as i32 as u32);
        t += usecs_to_jiffies(self.delay_min, self.hz);
        t = (t << BICTCP_HZ) / u64::from(self.hz);
        let k = u64::from(self.bic_k);
        let offs = t.abs_diff(k);
        // delta = C·(t − K)³ in packets: (410·offs³) >> 40.
        let delta = (u128::from(CUBE_RTT_SCALE) * u128::from(offs).pow(3)) >> (10 + 3 * BICTCP_HZ);
        let delta = delta.min(u128::from(u32::MAX)) as u32;
        let target = if t < k {
            self.bic_origin_point.saturating_sub(delta)
        } else {
            self.bic_origin_point.saturating_add(delta)
        };
        self.cnt = if target > cwnd {
            cwnd / (target - cwnd)
        } else {
            cwnd.saturating_mul(100) // very small increment
        };
        // Before the first loss the available bandwidth is unknown: grow at
        // least 5 % per RTT.
        if self.last_max_cwnd == 0 && self.cnt > 20 {
            self.cnt = 20;
        }
    }

    /// The TCP-friendly part of `bictcp_update`: the Reno window estimate.
    fn friendliness(&mut self, cwnd: u32) {
        if !TCP_FRIENDLINESS {
            return;
        }
        let delta =
            ((u64::from(cwnd) * u64::from(BETA_SCALE)) >> 3).clamp(1, u64::from(u32::MAX)) as u32;
        // The kernel loops `while (ack_cnt > delta)`; the same in O(1).
        if self.ack_cnt > delta {
            let n = (self.ack_cnt - 1) / delta;
            self.ack_cnt -= n * delta;
            self.tcp_cwnd = self.tcp_cwnd.saturating_add(n);
        }
        if self.tcp_cwnd > cwnd {
            // Reno would be faster: follow it.
            let max_cnt = cwnd / (self.tcp_cwnd - cwnd);
            self.cnt = self.cnt.min(max_cnt);
        }
    }
}

/// `tcp_jiffies32` for a time in nanoseconds.
fn jiffies_of(nanos: u64, hz: u32) -> u32 {
    (u128::from(nanos) * u128::from(hz) / 1_000_000_000) as u32
}

/// Linux `usecs_to_jiffies` (rounds up).
fn usecs_to_jiffies(us: u32, hz: u32) -> u64 {
    (u64::from(us) * u64::from(hz)).div_ceil(1_000_000)
}

/// The integer cube root ⌊∛a⌋. Deviation: the kernel's `cubic_root` uses a
/// 64-entry table and one Newton-Raphson step (≈ 0.2 % average error); this
/// one is exact.
pub fn cubic_root(a: u64) -> u32 {
    if a == 0 {
        return 0;
    }
    let mut x = (a as f64).cbrt() as u64;
    while u128::from(x).pow(3) > u128::from(a) {
        x -= 1;
    }
    while u128::from(x + 1).pow(3) <= u128::from(a) {
        x += 1;
    }
    x as u32
}

impl CongestionControl for Cubic {
    fn name(&self) -> &'static str {
        "cubic"
    }

    /// `cubictcp_cong_avoid`.
    fn cong_avoid(&mut self, tcp: &mut Tcp, _ack: u64, acked: u32) {
        if let Some(acked) = cong_avoid_acked(tcp, acked) {
            self.update(tcp, tcp.snd_cwnd, acked);
            tcp_cong_avoid_ai(tcp, self.cnt, acked);
        }
    }

    /// `cubictcp_recalc_ssthresh`: end the epoch, remember W_max (with fast
    /// convergence), and return `max(0.7·cwnd, 2)`.
    fn ssthresh(&mut self, tcp: &mut Tcp) -> u32 {
        self.epoch_start = None;
        let cwnd = tcp.snd_cwnd;
        self.last_max_cwnd = if cwnd < self.last_max_cwnd && FAST_CONVERGENCE {
            // Another flow is taking bandwidth: back off further, to (1+β)/2·cwnd.
            (u64::from(cwnd) * u64::from(BICTCP_BETA_SCALE + BETA)
                / u64::from(2 * BICTCP_BETA_SCALE)) as u32
        } else {
            cwnd
        };
        ((u64::from(cwnd) * u64::from(BETA) / u64::from(BICTCP_BETA_SCALE)) as u32).max(2)
    }

    /// `.undo_cwnd = tcp_reno_undo_cwnd`.
    fn undo_cwnd(&mut self, tcp: &mut Tcp) -> u32 {
        tcp_reno_undo_cwnd(tcp)
    }

    /// `cubictcp_state`: an RTO resets everything, HyStart included.
    fn set_state(&mut self, tcp: &mut Tcp, new_state: CaState) {
        if new_state == CaState::Loss {
            self.reset();
            self.hystart.reset(tcp);
        }
    }

    /// `cubictcp_cwnd_event`: after an idle period, shift the epoch so the
    /// cubic curve does not count the idle time.
    fn cwnd_event(&mut self, tcp: &mut Tcp, event: CaEvent) {
        if event != CaEvent::TxStart {
            return;
        }
        let now = self.jiffies(tcp);
        let delta = now.wrapping_sub(jiffies_of(tcp.lsndtime.as_nanos(), self.hz)) as i32;
        if let Some(e) = self.epoch_start.as_mut()
            && delta > 0
        {
            *e = e.wrapping_add(delta as u32);
            if (e.wrapping_sub(now) as i32) > 0 {
                *e = now;
            }
        }
    }

    /// `cubictcp_acked`: track the min RTT and run HyStart.
    fn pkts_acked(&mut self, tcp: &mut Tcp, sample: &AckSample) {
        let Some(rtt) = sample.rtt else { return };
        // Discard delay samples right after a reduction (first second of an epoch).
        if let Some(e) = self.epoch_start
            && (self.jiffies(tcp).wrapping_sub(e) as i32) < self.hz as i32
        {
            return;
        }
        let delay = (rtt.as_micros().min(u128::from(u32::MAX)) as u32).max(1);
        if self.delay_min == 0 || self.delay_min > delay {
            self.delay_min = delay;
        }
        if !self.hystart.found
            && tcp.in_slow_start()
            && hystart::HYSTART
            && tcp.snd_cwnd >= hystart::HYSTART_LOW_WINDOW
        {
            self.hystart.update(tcp, delay, self.delay_min);
        }
    }

    fn status(&self, tcp: &Tcp) -> Status {
        Status {
            state: reno_state_name(tcp),
            min_rtt: (self.delay_min > 0).then(|| Duration::from_micros(u64::from(self.delay_min))),
            ..Status::default()
        }
    }
}

#[cfg(test)]
mod tests;
