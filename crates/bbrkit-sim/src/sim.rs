//! The simulated world and its event loop: senders → bottleneck link →
//! random loss → per-flow propagation delay → receivers; ACKs return over
//! their own per-flow delay (with optional ACK loss) and never queue.
//!
//! ```text
//!  sender_i ──► [drop-tail queue ─► link @ rate] ──► loss ──► delay rtt/2 + extra_i/2 ──► receiver_i
//!     ▲                                                                                   │
//!     └──────────────────── ACK loss ◄── delay rtt/2 + extra_i/2 ◄───────────────────────┘
//! ```
//!
//! Random streams (one [`SeededRng`] each, all from the run's seed): stream 1
//! the data-path loss, stream 2 the ACK loss, stream `1000 + i` flow `i`'s
//! controller. Owns the wiring only: transport behaviour lives in
//! [`bbrkit_cc::transport`] (its `Sender` and `Receiver`, the same code the
//! controllers' tests run). Must never read a clock.

use bbrkit_cc::transport::{AckPacket, DataPacket, Receiver, SenderConfig, seg_len};
use bbrkit_cc::{AnyController, CaState, Duration, Instant, SeededRng};

use crate::config::{ConfigError, SimConfig};
use crate::delay::DelayLine;
use crate::engine::{EventQueue, Timer};
use crate::histogram::Histogram;
use crate::link::Link;
use crate::loss::{Dropper, LossModel};
use crate::report::{FlowReport, LinkReport, RunReport, TraceRow, jain_index, percentiles_ms};

/// The transport sender as the simulator runs it: any of the five
/// controllers, picked by name.
pub type Sender = bbrkit_cc::transport::Sender<AnyController>;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ev {
    Start(u32),
    FwdArrive(u32),
    AckArrive(u32),
    Rto(u32),
    Reo(u32),
    Tlp(u32),
    Pace(u32),
    Delack(u32),
    Sample,
}

#[derive(Debug, Default, Clone, Copy)]
struct Timers {
    rto: Timer,
    reo: Timer,
    tlp: Timer,
    pace: Timer,
    delack: Timer,
}

struct Flow {
    sender: Sender,
    /// RTT samples (per ACK, of the newest delivered segment), ns.
    rtt: Histogram,
    receiver: Receiver,
    fwd: DelayLine<DataPacket>,
    rev: DelayLine<AckPacket>,
    timers: Timers,
    started: bool,
    start: Instant,
    size: Option<u64>,
    mss: u32,
    queue_drops: u64,
    random_drops: u64,
    ce_marks: u64,
    last_sample_bytes: u64,
    last_sample_received: u64,
}

/// Takes the packet `line` delivers at `now`, if any, and schedules `ev`
/// for the line's next delivery.
fn arrival<T>(line: &mut DelayLine<T>, q: &mut EventQueue<Ev>, now: Instant, ev: Ev) -> Option<T> {
    let (p, next) = line.pop(now)?;
    if let Some(t) = next {
        q.schedule(t, ev);
    }
    Some(p)
}

/// A simulation in progress.
pub struct Simulation {
    cfg: SimConfig,
    q: EventQueue<Ev>,
    link: Link,
    data_loss: Dropper,
    ack_loss: Dropper,
    flows: Vec<Flow>,
    out: Vec<DataPacket>,
    end: Instant,
    events: u64,
    /// How far the run has been carried (the clock may stop earlier when
    /// no event falls in the last stretch).
    ran_until: Instant,
    /// Segments whose next pass over the link is dropped (tests).
    forced_drops: Vec<(u32, u64)>,
}

fn ca_state_name(s: CaState) -> &'static str {
    match s {
        CaState::Open => "open",
        CaState::Disorder => "disorder",
        CaState::Cwr => "cwr",
        CaState::Recovery => "recovery",
        CaState::Loss => "loss",
    }
}

/// Flow number `i` of `cfg` (described by `f`), starting at `start`, its
/// controller drawing from random stream `stream`.
fn build_flow(
    cfg: &SimConfig,
    i: u32,
    f: &crate::config::FlowConfig,
    start: Instant,
    stream: u64,
) -> Flow {
    let half = cfg.path.rtt / 2;
    let extra_half = f.extra_rtt / 2;
    let fwd = half + extra_half;
    let rev = (cfg.path.rtt - half) + (f.extra_rtt - extra_half);
    let rng: Box<dyn bbrkit_cc::Random + Send> = Box::new(SeededRng::new(cfg.seed, stream));
    let scfg = SenderConfig {
        size: f.size,
        pace_loss_based: cfg.pace_loss_based,
        rwnd: cfg.rwnd,
        init_cwnd: cfg.init_cwnd,
        ecn: cfg.ecn_threshold.is_some(),
        tlp: cfg.tlp,
        ..SenderConfig::bulk(cfg.mss)
    };
    let alg = f.algorithm;
    Flow {
        sender: Sender::new(i, scfg, start, |tcp| alg.build(tcp, rng)),
        rtt: Histogram::default(),
        receiver: Receiver::new(i, cfg.delack),
        fwd: DelayLine::new(fwd),
        rev: DelayLine::new(rev),
        timers: Timers::default(),
        started: false,
        start,
        size: f.size,
        mss: cfg.mss,
        queue_drops: 0,
        random_drops: 0,
        ce_marks: 0,
        last_sample_bytes: 0,
        last_sample_received: 0,
    }
}

/// Runs `cfg` to the end, handing each time-series row to `trace`.
pub fn run(cfg: &SimConfig, trace: &mut dyn FnMut(&TraceRow)) -> Result<RunReport, ConfigError> {
    let mut sim = Simulation::new(cfg.clone())?;
    sim.run(trace);
    Ok(sim.report())
}

impl Simulation {
    /// Builds the world for `cfg`.
    pub fn new(cfg: SimConfig) -> Result<Self, ConfigError> {
        cfg.validate()?;
        let t0 = Instant::ZERO;
        let mut q = EventQueue::new();
        let flows = cfg
            .flows
            .iter()
            .enumerate()
            .map(|(i, f)| {
                let i = i as u32;
                let start = t0 + f.start;
                q.schedule(start, Ev::Start(i));
                build_flow(&cfg, i, f, start, 1000 + u64::from(i))
            })
            .collect();
        if let Some(iv) = cfg.sample_interval {
            q.schedule(t0 + iv, Ev::Sample);
        }
        Ok(Simulation {
            link: Link::new(cfg.path.rate_bps, cfg.path.buffer_bytes(cfg.mss)),
            data_loss: Dropper::new(cfg.path.loss, SeededRng::new(cfg.seed, 1)),
            ack_loss: Dropper::new(
                LossModel::bernoulli(cfg.path.ack_loss),
                SeededRng::new(cfg.seed, 2),
            ),
            flows,
            out: Vec::with_capacity(64),
            end: t0 + cfg.duration,
            events: 0,
            forced_drops: Vec::new(),
            ran_until: t0,
            q,
            cfg,
        })
    }

    /// Drops the next transmission of segment `seg` of `flow` after the
    /// link (as random loss would), once per call: deterministic loss for
    /// tests of recovery.
    pub fn drop_segment(&mut self, flow: u32, seg: u64) {
        self.forced_drops.push((flow, seg));
    }

    /// Current simulated time.
    pub fn now(&self) -> Instant {
        self.q.now()
    }

    /// Events waiting in the queue (memory follows this, not run length).
    pub fn pending_events(&self) -> usize {
        self.q.len()
    }

    /// Packets held anywhere: queue, wires, scoreboards.
    pub fn packets_held(&mut self) -> usize {
        self.flows
            .iter()
            .map(|f| f.fwd.len() + f.rev.len() + f.sender.scoreboard_len())
            .sum::<usize>()
            + (self.link.backlog_bytes(self.q.now()) / 1500) as usize
    }

    /// Runs until the end time (or until every finite flow has finished).
    pub fn run(&mut self, trace: &mut dyn FnMut(&TraceRow)) {
        self.run_until(self.end, trace);
    }

    /// Runs events up to and including `until` (capped at the end time).
    pub fn run_until(&mut self, until: Instant, trace: &mut dyn FnMut(&TraceRow)) {
        let until = until.min(self.end);
        while let Some(t) = self.q.peek_time() {
            if t > until {
                break;
            }
            if self.all_done() {
                self.ran_until = self.q.now();
                return;
            }
            let (now, ev) = self.q.pop().expect("peeked");
            self.events += 1;
            self.dispatch(now, ev, trace);
        }
        self.ran_until = if self.all_done() {
            self.q.now()
        } else {
            until.max(self.ran_until)
        };
    }

    fn all_done(&self) -> bool {
        self.flows
            .iter()
            .all(|f| f.size.is_some() && f.receiver.bytes_delivered >= f.size.unwrap_or(0))
    }

    fn dispatch(&mut self, now: Instant, ev: Ev, trace: &mut dyn FnMut(&TraceRow)) {
        match ev {
            Ev::Start(f) => {
                let fl = &mut self.flows[f as usize];
                fl.started = true;
                fl.sender.start(now, &mut self.out);
                self.after_sender(now, f);
            }
            Ev::FwdArrive(f) => self.data_arrival(now, f),
            Ev::AckArrive(f) => self.ack_arrival(now, f),
            Ev::Rto(f) => self.sender_timer(now, f, |t| &mut t.rto, Sender::on_rto),
            Ev::Reo(f) => self.sender_timer(now, f, |t| &mut t.reo, Sender::on_reo_timer),
            Ev::Tlp(f) => self.sender_timer(now, f, |t| &mut t.tlp, Sender::on_tlp_timer),
            Ev::Pace(f) => self.sender_timer(now, f, |t| &mut t.pace, Sender::on_pace_timer),
            Ev::Delack(f) => {
                let fl = &mut self.flows[f as usize];
                if fl.timers.delack.fire(now)
                    && let Some(a) = fl.receiver.on_delack_timer(now)
                {
                    self.send_ack(now, a);
                }
                self.sync_delack(f);
            }
            Ev::Sample => {
                self.sample(now, trace);
                if let Some(iv) = self.cfg.sample_interval
                    && now + iv <= self.end
                {
                    self.q.schedule(now + iv, Ev::Sample);
                }
            }
        }
    }

    /// The next data packet of flow `f` reaches its receiver.
    fn data_arrival(&mut self, now: Instant, f: u32) {
        let fl = &mut self.flows[f as usize];
        let Some(p) = arrival(&mut fl.fwd, &mut self.q, now, Ev::FwdArrive(f)) else {
            return;
        };
        let (mss, size) = (fl.mss, fl.size);
        let ack = fl.receiver.on_data(now, &p, |k| seg_len(mss, size, k));
        if let Some(a) = ack {
            self.send_ack(now, a);
        }
        self.sync_delack(f);
    }

    /// The next ACK of flow `f` reaches its sender.
    fn ack_arrival(&mut self, now: Instant, f: u32) {
        let fl = &mut self.flows[f as usize];
        let Some(a) = arrival(&mut fl.rev, &mut self.q, now, Ev::AckArrive(f)) else {
            return;
        };
        let outcome = fl.sender.on_ack(now, &a, &mut self.out);
        if let Some(r) = outcome.rtt {
            fl.rtt.record(r.as_nanos() as u64);
        }
        self.after_sender(now, f);
    }

    /// One of flow `f`'s sender timers (picked by `timer`) is due: if it
    /// still fires at `now`, the sender handles it (`on_fire`); then its
    /// packets go out and its timers are mirrored.
    fn sender_timer(
        &mut self,
        now: Instant,
        f: u32,
        timer: fn(&mut Timers) -> &mut Timer,
        on_fire: fn(&mut Sender, Instant, &mut Vec<DataPacket>),
    ) {
        let fl = &mut self.flows[f as usize];
        if timer(&mut fl.timers).fire(now) {
            on_fire(&mut fl.sender, now, &mut self.out);
        }
        self.after_sender(now, f);
    }

    fn send_ack(&mut self, now: Instant, a: AckPacket) {
        if self.ack_loss.drop_next() {
            return;
        }
        if let Some(t) = self.flows[a.flow as usize].rev.push(now, a) {
            self.q.schedule(t, Ev::AckArrive(a.flow));
        }
    }

    fn sync_delack(&mut self, f: u32) {
        let fl = &mut self.flows[f as usize];
        fl.timers.delack.deadline = fl.receiver.delack_deadline;
        if let Some(t) = fl.timers.delack.needs_event() {
            self.q.schedule(t, Ev::Delack(f));
        }
    }

    /// Puts the sender's packets on the link and mirrors its timers.
    fn after_sender(&mut self, now: Instant, f: u32) {
        let ecn = self.cfg.ecn_threshold_bytes();
        for mut p in self.out.drain(..) {
            let fl = &mut self.flows[p.flow as usize];
            p.ce = self.link.congestion_experienced(now, ecn);
            // The link is FIFO at a fixed rate: the departure time is known
            // now, and loss after the link is drawn in departure order.
            let Some(departure) = self.link.enqueue(now, p.wire_len()) else {
                fl.queue_drops += 1;
                continue;
            };
            fl.ce_marks += u64::from(p.ce);
            let forced = !self.forced_drops.is_empty() && {
                let hit = self.forced_drops.iter().position(|&d| d == (p.flow, p.seg));
                hit.map(|i| self.forced_drops.swap_remove(i)).is_some()
            };
            if self.data_loss.drop_next() || forced {
                fl.random_drops += 1;
            } else if let Some(t) = fl.fwd.push(departure, p) {
                self.q.schedule(t, Ev::FwdArrive(p.flow));
            }
        }
        let fl = &mut self.flows[f as usize];
        let s = &fl.sender;
        let t = &mut fl.timers;
        t.rto.deadline = s.rto_deadline;
        t.reo.deadline = s.reo_deadline;
        t.tlp.deadline = s.tlp_deadline;
        t.pace.deadline = s.pace_deadline;
        if let Some(at) = t.rto.needs_event() {
            self.q.schedule(at, Ev::Rto(f));
        }
        if let Some(at) = t.reo.needs_event() {
            self.q.schedule(at, Ev::Reo(f));
        }
        if let Some(at) = t.tlp.needs_event() {
            self.q.schedule(at, Ev::Tlp(f));
        }
        if let Some(at) = t.pace.needs_event() {
            self.q.schedule(at, Ev::Pace(f));
        }
    }

    fn sample(&mut self, now: Instant, trace: &mut dyn FnMut(&TraceRow)) {
        let iv = self.cfg.sample_interval.unwrap_or(Duration::from_secs(1));
        let queue_bytes = self.link.backlog_bytes(now);
        for (i, fl) in self.flows.iter_mut().enumerate() {
            if !fl.started {
                continue;
            }
            let s = &fl.sender;
            let st = s.status();
            let bytes = fl.receiver.bytes_delivered;
            let received = fl.receiver.bytes_received;
            let per_s = |b: u64| b as f64 * 8.0 / iv.as_secs_f64();
            let row = TraceRow {
                time_s: now.as_nanos() as f64 / 1e9,
                flow: i as u32,
                cc: self.cfg.flows[i].algorithm.name(),
                throughput_bps: per_s(received - fl.last_sample_received),
                goodput_bps: per_s(bytes - fl.last_sample_bytes),
                cwnd_pkts: s.tcp.snd_cwnd,
                inflight_pkts: s.tcp.packets_in_flight(),
                pacing_rate_bps: if s.paced() {
                    s.tcp.pacing_rate as f64 * 8.0
                } else {
                    0.0
                },
                delivery_rate_bps: s.delivery_rate_bps(),
                srtt_ms: s.tcp.srtt.as_secs_f64() * 1e3,
                bw_estimate_bps: st.bw_bps.map(|b| b as f64),
                state: st.state,
                ca_state: ca_state_name(s.tcp.ca_state),
                queue_bytes,
            };
            fl.last_sample_bytes = bytes;
            fl.last_sample_received = received;
            trace(&row);
        }
    }

    /// The results so far.
    pub fn report(&self) -> RunReport {
        let now = self.ran_until;
        let run_s = now.as_nanos() as f64 / 1e9;
        let mut flows: Vec<FlowReport> = self
            .flows
            .iter()
            .enumerate()
            .map(|(i, fl)| self.flow_report(i, fl, now))
            .collect();
        let total: f64 = flows.iter().map(|f| f.bits_per_second).sum();
        for f in &mut flows {
            f.share = if total > 0.0 {
                f.bits_per_second / total
            } else {
                0.0
            };
        }
        let goodputs: Vec<f64> = flows.iter().map(|f| f.bits_per_second).collect();
        RunReport {
            duration_s: run_s,
            flows,
            link: self.link_report(now, run_s),
            jain_index: jain_index(&goodputs),
            events: self.events,
        }
    }

    /// Flow number `i` at `now` (its `share` is filled in by [`Self::report`]).
    fn flow_report(&self, i: usize, fl: &Flow, now: Instant) -> FlowReport {
        let s = &fl.sender;
        let fct = fl
            .size
            .filter(|&sz| fl.receiver.bytes_delivered >= sz)
            .and(fl.receiver.last_delivery)
            .map(|t| (t - fl.start).as_secs_f64());
        let active = fct.unwrap_or_else(|| (now - fl.start).as_secs_f64());
        let bytes = fl.receiver.bytes_delivered;
        let drops = fl.queue_drops + fl.random_drops;
        FlowReport {
            flow: i as u32,
            cc: self.cfg.flows[i].algorithm.name(),
            start_s: (fl.start - Instant::ZERO).as_secs_f64(),
            size_bytes: fl.size,
            bytes_delivered: bytes,
            bits_per_second: if active > 0.0 {
                bytes as f64 * 8.0 / active
            } else {
                0.0
            },
            retransmits: s.stats.retransmits,
            packets_sent: s.stats.packets_sent,
            loss: if s.stats.packets_sent > 0 {
                drops as f64 / s.stats.packets_sent as f64
            } else {
                0.0
            },
            queue_drops: fl.queue_drops,
            random_drops: fl.random_drops,
            rtos: s.stats.rtos,
            recoveries: s.stats.recoveries,
            ce_marks: self.cfg.ecn_threshold.map(|_| fl.ce_marks),
            tlps: (s.stats.tlps > 0).then_some(s.stats.tlps),
            rtt_ms: percentiles_ms(&fl.rtt),
            fct_s: fct,
            share: 0.0,
            ratio: None,
            bbr_counters: match &s.cc {
                AnyController::Bbr3(b) => Some(b.counters().clone()),
                _ => None,
            },
        }
    }

    /// The bottleneck over the `run_s` seconds up to `now`.
    fn link_report(&self, now: Instant, run_s: f64) -> LinkReport {
        let ls = &self.link.stats;
        LinkReport {
            bits_per_second: self.cfg.path.rate_bps,
            buffer_bytes: self.cfg.path.buffer_bytes(self.cfg.mss),
            utilization: if run_s > 0.0 {
                (self.link.busy_until_now(now).as_secs_f64() / run_s).min(1.0)
            } else {
                0.0
            },
            queue_delay_ms: percentiles_ms(&ls.sojourn),
            queue_delay_mean_ms: ls.sojourn.mean().map(|m| m / 1e6),
            drops: ls.drops,
            max_queue_bytes: ls.max_backlog_bytes,
            random_drops: self.flows.iter().map(|f| f.random_drops).sum(),
        }
    }

    /// The size of flow `flow` (`None`: bulk).
    pub fn flow_size(&self, flow: u32) -> Option<u64> {
        self.flows[flow as usize].size
    }

    /// When finite flow `flow` delivered its last byte, if it has.
    pub fn completed_at(&self, flow: u32) -> Option<Instant> {
        let fl = &self.flows[flow as usize];
        let size = fl.size?;
        (fl.receiver.bytes_delivered >= size)
            .then_some(fl.receiver.last_delivery)
            .flatten()
    }

    /// Replaces flow `flow` by a fresh connection described by `f` (its
    /// `start` taken as absolute simulated time, moved to now if earlier),
    /// as a request/response workload does when a client's request
    /// completes: the old connection's state, packets on its wires and
    /// timers are dropped (its pending events find nothing and do nothing).
    /// `stream` picks the new controller's random stream. Returns the old
    /// connection's retransmissions.
    pub fn restart_flow(&mut self, flow: u32, f: crate::config::FlowConfig, stream: u64) -> u64 {
        let start = (Instant::ZERO + f.start).max(self.q.now());
        let new = build_flow(&self.cfg, flow, &f, start, stream);
        let old = std::mem::replace(&mut self.flows[flow as usize], new);
        self.cfg.flows[flow as usize] = f;
        self.q.schedule(start, Ev::Start(flow));
        old.sender.stats.retransmits
    }

    /// Read access to a flow's sender (tests, tracing).
    pub fn sender(&self, flow: u32) -> &Sender {
        &self.flows[flow as usize].sender
    }

    /// Read access to a flow's receiver (tests).
    pub fn receiver(&self, flow: u32) -> &Receiver {
        &self.flows[flow as usize].receiver
    }
}
