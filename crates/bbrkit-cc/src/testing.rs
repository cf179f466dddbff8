//! A small deterministic synthetic path for unit tests of every controller.
//! Test tool, not the simulator (that is `bbrkit-sim`): one flow, one
//! bottleneck, no jitter, no reordering, no ACK loss.
//!
//! Compiled always (it is small and has no dependencies), so the BBR files'
//! unit tests, `tests/` and benches can all use it; no feature flag needed.
//! Like the rest of the crate it never reads a clock: virtual time only.
//!
//! ```text
//!  Sender ──loss hook──► bottleneck (rate, drop-tail queue, optional ECN CE
//!    ▲                    mark above a threshold) ──► base_rtt/2 ──► Receiver
//!    │                                                                  │
//!    └───────────────── base_rtt/2 ◄── ACK (cum, SACKs, ECE) every 1 or 2 ┘
//! ```
//!
//! The sender ([`Sender`]) runs the Linux per-ACK sequence documented in
//! [`crate::controller`] and in [`sender`]; it is bulk (always has data) or
//! on/off ([`App::OnOff`]), limited by cwnd and, when the controller paces
//! (BBR: `has_cong_control`, like the kernel's `SK_PACING_NEEDED`), by
//! `tcp.pacing_rate`. After every ACK the driver records a [`TraceEvent`]
//! (when [`PathConfig::record_trace`]) and calls the observer, if any.
//!
//! ```
//! use bbrkit_cc::{Algorithm, testing::{Driver, PathConfig}};
//! use std::time::Duration;
//! let mut d = Driver::with_algorithm(PathConfig::default(), Algorithm::Reno, 1);
//! d.run_for(Duration::from_secs(2));
//! assert!(d.sender.tcp.delivered > 1000);
//! ```

pub mod sender;

use std::collections::{BTreeSet, VecDeque};

use crate::algorithm::{Algorithm, AnyController};
use crate::controller::CongestionControl;
use crate::random::SeededRng;
use crate::rate::{self, RateSample};
use crate::tcp::{CaState, Tcp};
use crate::time::{Duration, Instant};

pub use sender::{Ack, AckOutcome, Sender, SenderStats, Transmission};

/// Linux `TCP_DELACK_MIN` (40 ms): the delayed-ACK timer.
pub const TCP_DELACK_MIN: Duration = Duration::from_millis(40);

/// What the application offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum App {
    /// Always has data (a bulk transfer).
    Bulk,
    /// Writes `burst` packets, waits until all are acknowledged, stays idle
    /// for `idle`, then writes the next burst.
    OnOff {
        /// Packets per burst.
        burst: u64,
        /// Idle time after each burst is fully acknowledged.
        idle: Duration,
    },
}

/// Whether the sender paces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pacing {
    /// Pace iff the controller has `cong_control` (BBR), as Linux does
    /// without fq.
    Auto,
    /// Always pace at `tcp.pacing_rate` (as with the fq qdisc).
    On,
    /// Never pace.
    Off,
}

/// The synthetic path and sender setup.
#[derive(Debug, Clone)]
pub struct PathConfig {
    /// Bottleneck rate, bits per second.
    pub rate_bps: u64,
    /// Propagation RTT (half each way), excluding queueing and serialization.
    pub base_rtt: Duration,
    /// Packet size (bytes) = MSS.
    pub mss: u32,
    /// Drop-tail limit of the bottleneck, in packets (including the one
    /// being serialized).
    pub queue_limit: usize,
    /// ACK every packet (1) or every second in-order packet (2, with the
    /// 40 ms delayed-ACK timer).
    pub ack_every: u32,
    /// Pacing policy.
    pub pacing: Pacing,
    /// The application's sending pattern.
    pub app: App,
    /// Mark CE on packets arriving to a queue at least this long, like a
    /// step-threshold AQM; sets `tcp.ecn_enabled` and `tcp.ecn_low`.
    pub ecn_threshold: Option<usize>,
    /// Linux `tcp_slow_start_after_idle`.
    pub slow_start_after_idle: bool,
    /// Record a [`TraceEvent`] per ACK and RTO in [`Driver::trace`].
    pub record_trace: bool,
}

impl Default for PathConfig {
    /// 10 Mbit/s, 40 ms, 1500-byte packets, 100-packet queue (≈3 BDP),
    /// ACK every packet, bulk, automatic pacing, tracing on.
    fn default() -> Self {
        PathConfig {
            rate_bps: 10_000_000,
            base_rtt: Duration::from_millis(40),
            mss: 1500,
            queue_limit: 100,
            ack_every: 1,
            pacing: Pacing::Auto,
            app: App::Bulk,
            ecn_threshold: None,
            slow_start_after_idle: true,
            record_trace: true,
        }
    }
}

impl PathConfig {
    /// Time to serialize one packet at the bottleneck.
    pub fn serialization(&self) -> Duration {
        Duration::from_nanos(u64::from(self.mss) * 8 * 1_000_000_000 / self.rate_bps.max(1))
    }

    /// Bandwidth-delay product in packets (rounded down).
    pub fn bdp_packets(&self) -> u64 {
        (self.rate_bps as u128 * self.base_rtt.as_nanos()
            / (u128::from(self.mss) * 8 * 1_000_000_000)) as u64
    }
}

/// A transmission as the loss hook sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TxInfo {
    /// When it was sent.
    pub now: Instant,
    /// What was sent.
    pub tx: Transmission,
}

/// Decides whether a transmission is dropped before the bottleneck.
pub type LossHook = Box<dyn FnMut(&TxInfo) -> bool>;

/// Drop the first transmission of each listed packet number.
pub fn drop_packets(nums: impl IntoIterator<Item = u64>) -> LossHook {
    let set: BTreeSet<u64> = nums.into_iter().collect();
    Box::new(move |i: &TxInfo| !i.tx.is_retrans && set.contains(&i.tx.num))
}

/// Drop each transmission independently with probability `p` (seeded).
pub fn random_loss(p: f64, seed: u64) -> LossHook {
    use crate::random::Random;
    let mut rng = SeededRng::new(seed, 0x1055);
    let thresh = (p.clamp(0.0, 1.0) * f64::from(u32::MAX)) as u32;
    Box::new(move |_: &TxInfo| rng.next_u32() < thresh)
}

/// The receiver: cumulative + selective acknowledgement, optional delayed ACK.
#[derive(Debug, Clone, Default)]
pub struct Receiver {
    rcv_nxt: u64,
    ooo: BTreeSet<u64>,
    pending_sacks: Vec<u64>,
    unacked: u32,
    pending_ece: bool,
}

impl Receiver {
    /// A packet arrived. Returns whether the receiver ACKs at once (out of
    /// order, hole filled, duplicate, or `ack_every` packets pending).
    pub fn on_packet(&mut self, num: u64, ce: bool, ack_every: u32) -> bool {
        self.pending_ece |= ce;
        let had_ooo = !self.ooo.is_empty();
        let mut immediate = ack_every <= 1 || had_ooo;
        if num == self.rcv_nxt {
            self.rcv_nxt += 1;
            while self.ooo.remove(&self.rcv_nxt) {
                self.rcv_nxt += 1;
            }
        } else if num > self.rcv_nxt {
            if self.ooo.insert(num) {
                self.pending_sacks.push(num);
            }
            immediate = true;
        } else {
            immediate = true; // duplicate (spurious retransmission)
        }
        self.unacked += 1;
        immediate || self.unacked >= ack_every
    }

    /// Build the ACK for everything received so far.
    pub fn ack(&mut self) -> Ack {
        self.unacked = 0;
        Ack {
            cum: self.rcv_nxt,
            sacked: std::mem::take(&mut self.pending_sacks),
            ece: std::mem::take(&mut self.pending_ece),
        }
    }

    /// Packets received in order so far.
    pub fn rcv_nxt(&self) -> u64 {
        self.rcv_nxt
    }
}

/// What happened when a trace record was taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    /// An ACK was processed.
    Ack,
    /// The retransmission timer fired.
    Rto,
}

/// One trace record, in integers (snapshot-friendly).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceEvent {
    /// ACK or RTO.
    pub kind: EventKind,
    /// Virtual time, microseconds.
    pub t_us: u64,
    /// Packet-timed round count (see [`Sender::round`]).
    pub round: u64,
    /// The controller's state name ([`crate::Status::state`]).
    pub state: &'static str,
    /// Loss-recovery state.
    pub ca_state: CaState,
    /// cwnd, packets.
    pub cwnd: u32,
    /// ssthresh, packets.
    pub ssthresh: u32,
    /// Pacing rate, bytes per second.
    pub pacing_rate: u64,
    /// Packets in flight after the ACK.
    pub in_flight: u32,
    /// Total delivered packets.
    pub delivered: u64,
    /// Total packets marked lost.
    pub lost: u64,
    /// RTT sample of this ACK, microseconds.
    pub rtt_us: Option<u64>,
    /// The controller's bandwidth estimate, if it has one.
    pub bw_bps: Option<u64>,
}

/// What the observer sees after each ACK.
pub struct AckView<'a, C> {
    /// Current time.
    pub now: Instant,
    /// Transport state after the controller ran.
    pub tcp: &'a Tcp,
    /// The controller.
    pub cc: &'a C,
    /// The ACK's rate sample.
    pub rs: &'a RateSample,
    /// Packet-timed round count.
    pub round: u64,
}

/// A callback run after every ACK.
pub type Observer<C> = Box<dyn FnMut(&AckView<'_, C>)>;

/// Counters kept by the path.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PathStats {
    /// Drops by the loss hook.
    pub dropped_hook: u64,
    /// Drop-tail drops at the bottleneck.
    pub dropped_queue: u64,
    /// CE marks.
    pub ce_marked: u64,
    /// Longest queue seen (packets).
    pub max_queue: usize,
}

/// The synthetic path with a sender and a receiver.
pub struct Driver<C> {
    /// Path parameters (rate and RTT may be changed between runs).
    pub cfg: PathConfig,
    /// The sender with its transport state and controller.
    pub sender: Sender<C>,
    /// The receiver.
    pub receiver: Receiver,
    now: Instant,
    queue: VecDeque<Instant>,
    last_departure: Instant,
    to_receiver: VecDeque<(Instant, u64, bool)>,
    to_sender: VecDeque<(Instant, Ack)>,
    delack: Option<Instant>,
    app_avail: u64,
    app_wake: Option<Instant>,
    loss: Option<LossHook>,
    observer: Option<Observer<C>>,
    trace: Vec<TraceEvent>,
    stats: PathStats,
}

impl Driver<AnyController> {
    /// A driver for `alg` built by name, its randomness seeded with `seed`.
    pub fn with_algorithm(cfg: PathConfig, alg: Algorithm, seed: u64) -> Self {
        Driver::new(cfg, |tcp| alg.build(tcp, Box::new(SeededRng::new(seed, 0))))
    }
}

impl<C: CongestionControl> Driver<C> {
    /// A driver at time zero whose controller is built by `build` (`ops->init`).
    pub fn new(cfg: PathConfig, build: impl FnOnce(&mut Tcp) -> C) -> Self {
        let mut tcp = Tcp::new(Instant::ZERO, cfg.mss);
        // A step-threshold marker is shallow-threshold (DCTCP/L4S-style) ECN.
        tcp.ecn_enabled = cfg.ecn_threshold.is_some();
        tcp.ecn_low = cfg.ecn_threshold.is_some();
        let mut sender = Sender::new(tcp, build);
        sender.pacing = match cfg.pacing {
            Pacing::Auto => sender.cc.has_cong_control(),
            Pacing::On => true,
            Pacing::Off => false,
        };
        sender.tcp.paced = sender.pacing;
        sender.slow_start_after_idle = cfg.slow_start_after_idle;
        let app_avail = match cfg.app {
            App::Bulk => u64::MAX,
            App::OnOff { burst, .. } => burst,
        };
        Driver {
            cfg,
            sender,
            receiver: Receiver::default(),
            now: Instant::ZERO,
            queue: VecDeque::new(),
            last_departure: Instant::ZERO,
            to_receiver: VecDeque::new(),
            to_sender: VecDeque::new(),
            delack: None,
            app_avail,
            app_wake: None,
            loss: None,
            observer: None,
            trace: Vec::new(),
            stats: PathStats::default(),
        }
    }

    /// Install a loss hook (see [`drop_packets`], [`random_loss`]).
    pub fn with_loss(mut self, hook: LossHook) -> Self {
        self.loss = Some(hook);
        self
    }

    /// Install an observer called after every ACK.
    pub fn with_observer(mut self, f: impl FnMut(&AckView<'_, C>) + 'static) -> Self {
        self.observer = Some(Box::new(f));
        self
    }

    /// Current virtual time.
    pub fn now(&self) -> Instant {
        self.now
    }

    /// The recorded trace.
    pub fn trace(&self) -> &[TraceEvent] {
        &self.trace
    }

    /// Path counters.
    pub fn stats(&self) -> PathStats {
        self.stats
    }

    /// Run for `d` of virtual time.
    pub fn run_for(&mut self, d: Duration) {
        self.run_until(self.now + d);
    }

    /// Run until `end` (inclusive of events at `end`).
    pub fn run_until(&mut self, end: Instant) {
        loop {
            let paced = self.try_send();
            let next = [
                self.to_receiver.front().map(|e| e.0),
                self.to_sender.front().map(|e| e.0),
                self.sender.rto_deadline(),
                self.delack,
                self.app_wake,
                paced,
            ]
            .into_iter()
            .flatten()
            .min();
            match next {
                Some(t) if t <= end => self.now = self.now.max(t),
                _ => {
                    self.now = self.now.max(end);
                    return;
                }
            }
            self.step();
        }
    }

    /// Process every event due at `self.now`.
    fn step(&mut self) {
        let now = self.now;
        while self.to_receiver.front().is_some_and(|e| e.0 <= now) {
            let (_, num, ce) = self.to_receiver.pop_front().unwrap();
            if self.receiver.on_packet(num, ce, self.cfg.ack_every) {
                self.send_ack();
            } else if self.delack.is_none() {
                self.delack = Some(now + TCP_DELACK_MIN);
            }
        }
        if self.delack.is_some_and(|t| t <= now) {
            self.send_ack();
        }
        while self.to_sender.front().is_some_and(|e| e.0 <= now) {
            let (_, ack) = self.to_sender.pop_front().unwrap();
            let out = self.sender.on_ack(now, &ack);
            self.after_ack(&out.rs);
        }
        if self.sender.rto_deadline().is_some_and(|t| t <= now) {
            self.sender.on_rto(now);
            self.record(EventKind::Rto, None);
        }
        if self.app_wake.is_some_and(|t| t <= now) {
            self.app_wake = None;
            if let App::OnOff { burst, .. } = self.cfg.app {
                self.app_avail += burst;
            }
        }
        if let App::OnOff { idle, .. } = self.cfg.app
            && self.app_avail == 0
            && self.app_wake.is_none()
            && self.sender.tcp.packets_out == 0
        {
            self.app_wake = Some(now + idle);
        }
    }

    fn after_ack(&mut self, rs: &RateSample) {
        self.record(EventKind::Ack, rs.rtt);
        if let Some(obs) = self.observer.as_mut() {
            obs(&AckView {
                now: self.now,
                tcp: &self.sender.tcp,
                cc: &self.sender.cc,
                rs,
                round: self.sender.round(),
            });
        }
    }

    fn record(&mut self, kind: EventKind, rtt: Option<Duration>) {
        if !self.cfg.record_trace {
            return;
        }
        let tcp = &self.sender.tcp;
        let status = self.sender.cc.status(tcp);
        self.trace.push(TraceEvent {
            kind,
            t_us: self.now.as_micros(),
            round: self.sender.round(),
            state: status.state,
            ca_state: tcp.ca_state,
            cwnd: tcp.snd_cwnd,
            ssthresh: tcp.snd_ssthresh,
            pacing_rate: tcp.pacing_rate,
            in_flight: tcp.packets_in_flight(),
            delivered: tcp.delivered,
            lost: tcp.lost,
            rtt_us: rtt.map(|r| r.as_micros() as u64),
            bw_bps: status.bw_bps,
        });
    }

    fn send_ack(&mut self) {
        self.delack = None;
        let ack = self.receiver.ack();
        let t = self.now + self.cfg.base_rtt / 2;
        let t = self.to_sender.back().map_or(t, |b| b.0.max(t));
        self.to_sender.push_back((t, ack));
    }

    /// Send what cwnd, pacing and the application allow at `now`. Returns
    /// the pacing release time if sending stopped only because of pacing.
    fn try_send(&mut self) -> Option<Instant> {
        let now = self.now;
        let mut cwnd_limited = false;
        let mut sent_any = false;
        let mut paced = None;
        loop {
            let has_new = self.app_avail > 0;
            if !self.sender.has_retransmit() && !has_new {
                // The application has nothing to send: mark the bubble.
                rate::check_app_limited(&mut self.sender.tcp, 0, false);
                break;
            }
            if !self.sender.cwnd_allows() {
                cwnd_limited = true;
                break;
            }
            let release = self.sender.pacing_time();
            if release > now {
                paced = Some(release);
                break;
            }
            let Some(tx) = self.sender.send(now, has_new) else {
                break;
            };
            if !tx.is_retrans {
                self.app_avail -= 1;
            }
            sent_any = true;
            self.transmit(tx);
        }
        if sent_any || cwnd_limited {
            self.sender.cwnd_validate(cwnd_limited);
        }
        paced
    }

    fn transmit(&mut self, tx: Transmission) {
        let now = self.now;
        if let Some(hook) = self.loss.as_mut()
            && hook(&TxInfo { now, tx })
        {
            self.stats.dropped_hook += 1;
            return;
        }
        while self.queue.front().is_some_and(|&d| d <= now) {
            self.queue.pop_front();
        }
        if self.queue.len() >= self.cfg.queue_limit {
            self.stats.dropped_queue += 1;
            return;
        }
        let ce = self
            .cfg
            .ecn_threshold
            .is_some_and(|k| self.queue.len() >= k);
        self.stats.ce_marked += u64::from(ce);
        let depart = self.last_departure.max(now) + self.cfg.serialization();
        self.last_departure = depart;
        self.queue.push_back(depart);
        self.stats.max_queue = self.stats.max_queue.max(self.queue.len());
        let arrive = depart + self.cfg.base_rtt / 2;
        let arrive = self.to_receiver.back().map_or(arrive, |b| b.0.max(arrive));
        self.to_receiver.push_back((arrive, tx.num, ce));
    }
}

#[cfg(test)]
mod tests;
