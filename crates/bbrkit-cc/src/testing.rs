//! A small deterministic synthetic path for the controllers' tests: the one
//! transport ([`crate::transport`]: its `Sender` and `Receiver`, the code
//! `bbrkit-sim` runs) over one bottleneck with a drop-tail queue, a fixed
//! propagation delay, an optional loss hook and optional CE marking. Test
//! tool, not the simulator (that is `bbrkit-sim`): one flow, no jitter, no
//! reordering, no ACK loss.
//!
//! Compiled for this crate's own tests and, with the `testing` feature, for
//! its integration tests and benches (they enable it through a
//! dev-dependency on this crate); never part of the default public API.
//! Like the rest of the crate it never reads a clock: virtual time only.
//!
//! ```text
//!  Sender ──loss hook──► bottleneck (rate, drop-tail queue, optional ECN CE
//!    ▲                    mark above a threshold) ──► base_rtt/2 ──► Receiver
//!    │                                                                  │
//!    └──────────── base_rtt/2 ◄── ACK (cum, SACK blocks, ECE), every 1 or 2 ┘
//! ```
//!
//! The sender is bulk (always has data) or on/off ([`App::OnOff`]); it
//! paces when the controller has `cong_control` (BBR, like the kernel's
//! `SK_PACING_NEEDED`) or when [`Pacing::On`] asks for it (fq). After every
//! ACK the driver records a [`TraceEvent`] (when [`TestPath::record_trace`])
//! and calls the observer, if any.
//!
//! ```
//! use bbrkit_cc::{Algorithm, testing::{Driver, TestPath}};
//! use std::time::Duration;
//! let mut d = Driver::with_algorithm(TestPath::default(), Algorithm::Reno, 1);
//! d.run_for(Duration::from_secs(2));
//! assert!(d.sender.tcp.delivered > 1000);
//! ```

use std::collections::{BTreeSet, VecDeque};

use crate::algorithm::{Algorithm, AnyController};
use crate::controller::CongestionControl;
use crate::random::SeededRng;
use crate::rate::RateSample;
use crate::tcp::{CaState, Tcp};
use crate::time::{Duration, Instant};
use crate::transport::{AckPacket, DataPacket, Receiver, Sender, SenderConfig};

/// The seed of a randomised test: `BBRKIT_TEST_SEED` when set, else
/// `default`. Printed, so a failing test's captured output names it and
/// `BBRKIT_TEST_SEED=<n>` replays it.
pub fn test_seed(default: u64) -> u64 {
    let seed = std::env::var("BBRKIT_TEST_SEED")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(default);
    println!("seed {seed} (replay with BBRKIT_TEST_SEED={seed})");
    seed
}

/// The seed of a test that should explore a new case on each run
/// (property tests, kill timing): `BBRKIT_TEST_SEED` when set, else a fresh
/// one from the OS's randomness (std's `RandomState`, no clock). Printed
/// like [`test_seed`].
pub fn fresh_test_seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let fresh = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish();
    test_seed(fresh)
}

/// The seeds of a randomised test over `defaults`: only `BBRKIT_TEST_SEED`
/// when set. Each is printed as it starts.
pub fn test_seeds(defaults: impl IntoIterator<Item = u64>) -> Vec<u64> {
    match std::env::var("BBRKIT_TEST_SEED")
        .ok()
        .and_then(|s| s.trim().parse().ok())
    {
        Some(s) => vec![s],
        None => defaults.into_iter().collect(),
    }
}

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

/// Whether a loss-based controller paces (BBR always does).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pacing {
    /// Pace iff the controller has `cong_control` (BBR), as Linux does
    /// without fq.
    Auto,
    /// Always pace at `tcp.pacing_rate` (as with the fq qdisc).
    On,
}

/// The synthetic path and sender setup.
#[derive(Debug, Clone)]
pub struct TestPath {
    /// Bottleneck rate, bits per second.
    pub rate_bps: u64,
    /// Propagation RTT (half each way), excluding queueing and serialization.
    pub base_rtt: Duration,
    /// Packet size (bytes) = MSS.
    pub mss: u32,
    /// Drop-tail limit of the bottleneck, in packets (including the one
    /// being serialized).
    pub queue_limit: usize,
    /// ACK every packet (1) or every second in-order packet (2, Linux's
    /// delayed ACK with the 40 ms timer and quick-ACK mode).
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
    /// Tail loss probes (off by default here, so a tail loss ends in the
    /// RTO the controllers' tests expect; Linux and `bbrkit sim` probe).
    pub tlp: bool,
    /// Record a [`TraceEvent`] per ACK and RTO in [`Driver::trace`].
    pub record_trace: bool,
}

impl Default for TestPath {
    /// 10 Mbit/s, 40 ms, 1500-byte packets, 100-packet queue (≈3 BDP),
    /// ACK every packet, bulk, automatic pacing, tracing on.
    fn default() -> Self {
        TestPath {
            rate_bps: 10_000_000,
            base_rtt: Duration::from_millis(40),
            mss: 1500,
            queue_limit: 100,
            ack_every: 1,
            pacing: Pacing::Auto,
            app: App::Bulk,
            ecn_threshold: None,
            slow_start_after_idle: true,
            tlp: false,
            record_trace: true,
        }
    }
}

impl TestPath {
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

/// Decides whether a transmission is dropped before the bottleneck.
pub type LossHook = Box<dyn FnMut(&DataPacket) -> bool>;

/// Drop the first transmission of each listed segment number.
pub fn drop_packets(nums: impl IntoIterator<Item = u64>) -> LossHook {
    let set: BTreeSet<u64> = nums.into_iter().collect();
    Box::new(move |p: &DataPacket| !p.retrans && set.contains(&p.seg))
}

/// Drop each transmission independently with probability `p` (seeded).
pub fn random_loss(p: f64, seed: u64) -> LossHook {
    use crate::random::Random;
    let mut rng = SeededRng::new(seed, 0x1055);
    let thresh = (p.clamp(0.0, 1.0) * f64::from(u32::MAX)) as u32;
    Box::new(move |_: &DataPacket| rng.next_u32() < thresh)
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
    /// Packet-timed round count (see [`Driver::round`]).
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

/// The synthetic path with the transport's sender and receiver.
pub struct Driver<C> {
    /// Path parameters (rate and RTT may be changed between runs).
    pub cfg: TestPath,
    /// The transport sender with its state and controller.
    pub sender: Sender<C>,
    /// The transport receiver.
    pub receiver: Receiver,
    now: Instant,
    queue: VecDeque<Instant>,
    last_departure: Instant,
    to_receiver: VecDeque<(Instant, DataPacket)>,
    to_sender: VecDeque<(Instant, AckPacket)>,
    app_wake: Option<Instant>,
    loss: Option<LossHook>,
    observer: Option<Observer<C>>,
    trace: Vec<TraceEvent>,
    stats: PathStats,
    round: u64,
    round_end: u64,
    out: Vec<DataPacket>,
    started: bool,
}

impl Driver<AnyController> {
    /// A driver for `alg` built by name, its randomness seeded with `seed`.
    pub fn with_algorithm(cfg: TestPath, alg: Algorithm, seed: u64) -> Self {
        Driver::new(cfg, |tcp| alg.build(tcp, Box::new(SeededRng::new(seed, 0))))
    }
}

impl<C: CongestionControl> Driver<C> {
    /// A driver at time zero whose controller is built by `build` (`ops->init`).
    pub fn new(cfg: TestPath, build: impl FnOnce(&mut Tcp) -> C) -> Self {
        let mut tcp = Tcp::new(Instant::ZERO, cfg.mss);
        // A step-threshold marker is shallow-threshold (DCTCP/L4S-style) ECN.
        tcp.ecn_enabled = cfg.ecn_threshold.is_some();
        tcp.ecn_low = cfg.ecn_threshold.is_some();
        let scfg = SenderConfig {
            pace_loss_based: cfg.pacing == Pacing::On,
            slow_start_after_idle: cfg.slow_start_after_idle,
            app_writes: matches!(cfg.app, App::OnOff { .. }),
            tlp: cfg.tlp,
            ..SenderConfig::bulk(cfg.mss)
        };
        let mut sender = Sender::with_tcp(0, scfg, tcp, build);
        if let App::OnOff { burst, .. } = cfg.app {
            sender.write(burst);
        }
        let receiver = Receiver::new(0, TCP_DELACK_MIN).with_ack_every(cfg.ack_every);
        Driver {
            cfg,
            sender,
            receiver,
            now: Instant::ZERO,
            queue: VecDeque::new(),
            last_departure: Instant::ZERO,
            to_receiver: VecDeque::new(),
            to_sender: VecDeque::new(),
            app_wake: None,
            loss: None,
            observer: None,
            trace: Vec::new(),
            stats: PathStats::default(),
            round: 0,
            round_end: 0,
            out: Vec::new(),
            started: false,
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

    /// Packet-timed rounds completed (a round ends when a packet sent after
    /// the previous round ended is delivered, as BBR counts them).
    pub fn round(&self) -> u64 {
        self.round
    }

    /// Run for `d` of virtual time.
    pub fn run_for(&mut self, d: Duration) {
        self.run_until(self.now + d);
    }

    /// Run until `end` (inclusive of events at `end`).
    pub fn run_until(&mut self, end: Instant) {
        if !self.started {
            self.started = true;
            self.sender.start(self.now, &mut self.out);
            self.transmit_out();
        }
        loop {
            let s = &self.sender;
            let next = [
                self.to_receiver.front().map(|e| e.0),
                self.to_sender.front().map(|e| e.0),
                s.rto_deadline,
                s.reo_deadline,
                s.tlp_deadline,
                s.pace_deadline,
                self.receiver.delack_deadline,
                self.app_wake,
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
            let (_, p) = self.to_receiver.pop_front().expect("front checked");
            let mss = self.cfg.mss;
            if let Some(ack) = self.receiver.on_data(now, &p, |_| mss) {
                self.send_ack(ack);
            }
        }
        if self.receiver.delack_deadline.is_some_and(|t| t <= now)
            && let Some(ack) = self.receiver.on_delack_timer(now)
        {
            self.send_ack(ack);
        }
        while self.to_sender.front().is_some_and(|e| e.0 <= now) {
            let (_, ack) = self.to_sender.pop_front().expect("front checked");
            let outcome = self.sender.on_ack(now, &ack, &mut self.out);
            self.after_ack(&outcome.rs);
            self.transmit_out();
        }
        if self.sender.rto_deadline.is_some_and(|t| t <= now) {
            self.sender.on_rto(now, &mut self.out);
            self.record(EventKind::Rto, None);
            self.transmit_out();
        }
        if self.sender.reo_deadline.is_some_and(|t| t <= now) {
            self.sender.on_reo_timer(now, &mut self.out);
            self.transmit_out();
        }
        if self.sender.tlp_deadline.is_some_and(|t| t <= now) {
            self.sender.on_tlp_timer(now, &mut self.out);
            self.transmit_out();
        }
        if self.sender.pace_deadline.is_some_and(|t| t <= now) {
            self.sender.on_pace_timer(now, &mut self.out);
            self.transmit_out();
        }
        if self.app_wake.is_some_and(|t| t <= now) {
            self.app_wake = None;
            if let App::OnOff { burst, .. } = self.cfg.app {
                self.sender.write(burst);
                self.sender.try_send(now, &mut self.out);
                self.transmit_out();
            }
        }
        if let App::OnOff { idle, .. } = self.cfg.app
            && self.sender.unsent_segs() == 0
            && self.app_wake.is_none()
            && self.sender.tcp.packets_out == 0
        {
            self.app_wake = Some(now + idle);
        }
    }

    fn after_ack(&mut self, rs: &RateSample) {
        if rs.delivered.is_some() && rs.prior_delivered >= self.round_end {
            self.round += 1;
            self.round_end = self.sender.tcp.delivered;
        }
        self.record(EventKind::Ack, rs.rtt);
        if let Some(obs) = self.observer.as_mut() {
            obs(&AckView {
                now: self.now,
                tcp: &self.sender.tcp,
                cc: &self.sender.cc,
                rs,
                round: self.round,
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
            round: self.round,
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

    fn send_ack(&mut self, ack: AckPacket) {
        let t = self.now + self.cfg.base_rtt / 2;
        let t = self.to_sender.back().map_or(t, |b| b.0.max(t));
        self.to_sender.push_back((t, ack));
    }

    /// Puts what the sender just sent through the loss hook and the
    /// bottleneck.
    fn transmit_out(&mut self) {
        let now = self.now;
        for mut p in std::mem::take(&mut self.out) {
            if let Some(hook) = self.loss.as_mut()
                && hook(&p)
            {
                self.stats.dropped_hook += 1;
                continue;
            }
            while self.queue.front().is_some_and(|&d| d <= now) {
                self.queue.pop_front();
            }
            if self.queue.len() >= self.cfg.queue_limit {
                self.stats.dropped_queue += 1;
                continue;
            }
            p.ce = self
                .cfg
                .ecn_threshold
                .is_some_and(|k| self.queue.len() >= k);
            self.stats.ce_marked += u64::from(p.ce);
            let depart = self.last_departure.max(now) + self.cfg.serialization();
            self.last_departure = depart;
            self.queue.push_back(depart);
            self.stats.max_queue = self.stats.max_queue.max(self.queue.len());
            let arrive = depart + self.cfg.base_rtt / 2;
            let arrive = self.to_receiver.back().map_or(arrive, |b| b.0.max(arrive));
            self.to_receiver.push_back((arrive, p));
        }
    }
}

#[cfg(test)]
mod tests;
