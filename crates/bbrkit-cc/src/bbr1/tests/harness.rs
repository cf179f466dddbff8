//! A small deterministic packet-level path for BBRv1 tests: the one
//! transport ([`crate::transport`]'s `Sender` and `Receiver`, the code
//! `bbrkit-sim` runs) over a FIFO bottleneck of fixed rate, optionally
//! behind a token-bucket policer, with a finite buffer, ACK aggregation and
//! a constant propagation RTT. The harness owns only the path and the
//! application (how much data it offers); loss detection, recovery, RTO and
//! pacing are the transport's. Integer nanoseconds throughout.

use std::collections::VecDeque;

use crate::bbr1::{Bbr1, Mode};
use crate::controller::{CongestionControl, Status};
use crate::random::Random;
use crate::rate::{RateSample, TxSnapshot};
use crate::tcp::{AckSample, CaEvent, CaState, Tcp};
use crate::time::{Duration, Instant};
use crate::transport::{AckPacket, DataPacket, Receiver, Sender, SenderConfig};

/// Bytes per packet in every harness run.
pub const MSS: u32 = 1000;

/// The path.
#[derive(Debug, Clone)]
pub struct Link {
    /// Bottleneck rate, packets per second (divides 1e9 for exact timing).
    pub rate_pps: u64,
    /// Propagation round-trip time.
    pub rtt: Duration,
    /// Bottleneck queue limit in packets.
    pub buffer: u64,
    /// Token-bucket policer: (rate pps, bucket depth packets).
    pub policer: Option<(u64, u64)>,
    /// ACKs are held and released together at multiples of this period.
    pub ack_period: Option<Duration>,
}

impl Link {
    /// 1000 packets/s (8 Mbit/s at 1000 B), 40 ms RTT, a deep buffer: BDP 40.
    pub fn basic() -> Self {
        Link {
            rate_pps: 1000,
            rtt: Duration::from_millis(40),
            buffer: 10_000,
            policer: None,
            ack_period: None,
        }
    }
}

/// BBRv1 with a count of the `TxStart` events the transport raised.
#[derive(Debug)]
pub struct Counted {
    /// The controller under test.
    pub bbr: Bbr1,
    /// `CA_EVENT_TX_START` events seen.
    pub tx_starts: u32,
}

impl CongestionControl for Counted {
    fn name(&self) -> &'static str {
        self.bbr.name()
    }
    fn has_cong_control(&self) -> bool {
        self.bbr.has_cong_control()
    }
    fn cong_control(&mut self, tcp: &mut Tcp, rs: &RateSample) {
        self.bbr.cong_control(tcp, rs)
    }
    fn pkts_acked(&mut self, tcp: &mut Tcp, sample: &AckSample) {
        self.bbr.pkts_acked(tcp, sample)
    }
    fn ssthresh(&mut self, tcp: &mut Tcp) -> u32 {
        self.bbr.ssthresh(tcp)
    }
    fn undo_cwnd(&mut self, tcp: &mut Tcp) -> u32 {
        self.bbr.undo_cwnd(tcp)
    }
    fn set_state(&mut self, tcp: &mut Tcp, new_state: CaState) {
        self.bbr.set_state(tcp, new_state)
    }
    fn cwnd_event(&mut self, tcp: &mut Tcp, event: CaEvent) {
        self.tx_starts += u32::from(event == CaEvent::TxStart);
        self.bbr.cwnd_event(tcp, event)
    }
    fn skb_marked_lost(&mut self, tcp: &mut Tcp, tx: &TxSnapshot, pcount: u32) {
        self.bbr.skb_marked_lost(tcp, tx, pcount)
    }
    fn tso_segs(&self, tcp: &Tcp) -> Option<u32> {
        self.bbr.tso_segs(tcp)
    }
    fn status(&self, tcp: &Tcp) -> Status {
        self.bbr.status(tcp)
    }
}

/// One ACK as the controller saw it.
#[derive(Debug, Clone)]
#[allow(dead_code)] // fields are there for assertions and debugging
pub struct Trace {
    pub now: Instant,
    pub mode: Mode,
    pub cycle_idx: Option<u8>,
    pub round: u32,
    pub round_start: bool,
    pub cwnd: u32,
    pub cwnd_before: u32,
    pub in_flight: u32,
    pub pacing_rate: u64,
    pub pacing_gain: u32,
    pub max_bw: u32,
    pub full_bw_reached: bool,
    pub lt_bw: Option<u32>,
    pub ca_state: CaState,
    pub conservation: bool,
    pub acked: u32,
    pub losses: u32,
    pub min_rtt_stamp: u64,
    pub app_limited: bool,
    /// The cwnd target `set_cwnd` aimed at (outside packet conservation).
    pub target: u32,
}

/// The transport with BBRv1, the path and the application.
pub struct Harness {
    /// The one transport's sender running BBRv1.
    pub s: Sender<Counted>,
    rx: Receiver,
    pub link: Link,
    pub now: Instant,
    started: bool,
    link_free: Instant,
    tokens_nano: u128,
    tokens_at: Instant,
    to_rx: VecDeque<(Instant, DataPacket)>,
    to_tx: VecDeque<(Instant, AckPacket)>,
    out: Vec<DataPacket>,
    /// Packets the application still has to send; `None` = unlimited.
    pub app_data: Option<u64>,
    /// If set, the application writes one packet per interval (`app_data`
    /// should then start at `Some(0)`).
    pub app_interval: Option<Duration>,
    app_next: Instant,
    /// Receive window: never more than this many packets outstanding.
    pub rwnd: u32,
    /// Drop the next this-many packets at the bottleneck.
    pub drop_next: u32,
    /// Every ACK, in order.
    pub trace: Vec<Trace>,
}

impl Harness {
    pub fn new(link: Link, rng: Box<dyn Random + Send>) -> Self {
        let bucket = link
            .policer
            .map_or(0, |(_, b)| u128::from(b) * 1_000_000_000);
        // No tail-loss probes: these tests were written for tail losses
        // repaired by the RTO.
        let cfg = SenderConfig {
            tlp: false,
            ..SenderConfig::bulk(MSS)
        };
        let s = Sender::new(0, cfg, Instant::ZERO, |tcp| Counted {
            bbr: Bbr1::new(tcp, rng),
            tx_starts: 0,
        });
        Harness {
            s,
            rx: Receiver::new(0, Duration::from_millis(40)).with_ack_every(1),
            link,
            now: Instant::ZERO,
            started: false,
            link_free: Instant::ZERO,
            tokens_nano: bucket,
            tokens_at: Instant::ZERO,
            to_rx: VecDeque::new(),
            to_tx: VecDeque::new(),
            out: Vec::new(),
            app_data: None,
            app_interval: None,
            app_next: Instant::ZERO,
            rwnd: u32::MAX,
            drop_next: 0,
            trace: Vec::new(),
        }
    }

    /// `CA_EVENT_TX_START` events delivered to the controller.
    pub fn tx_starts(&self) -> u32 {
        self.s.cc.tx_starts
    }

    /// Runs the path until `end`.
    pub fn run_until(&mut self, end: Instant) {
        while self.step(end) {}
        self.now = self.now.max(end);
    }

    /// Hands the application's offer and the receive window to the
    /// transport and lets it send what they allow now.
    fn offer(&mut self) -> bool {
        self.s.set_unsent(self.app_data);
        let rwnd = (self.rwnd != u32::MAX).then(|| u64::from(self.rwnd) * u64::from(MSS));
        self.s.set_rwnd(rwnd);
        if !self.started {
            self.started = true;
            self.s.start(self.now, &mut self.out);
        } else if self.s.pace_deadline.is_none() {
            self.s.try_send(self.now, &mut self.out);
        }
        let sent = !self.out.is_empty();
        self.admit_out();
        self.sync_app();
        sent
    }

    /// Processes the next event if it is due by `end`; false if none is.
    pub fn step(&mut self, end: Instant) -> bool {
        if self.offer() {
            // Sending is this step's event.
            return true;
        }
        let app = self.app_interval.map(|_| self.app_next);
        let t = [
            self.to_rx.front().map(|e| e.0),
            self.to_tx.front().map(|e| e.0),
            self.s.rto_deadline,
            self.s.reo_deadline,
            self.s.pace_deadline,
            app,
        ]
        .into_iter()
        .flatten()
        .min();
        let Some(t) = t.filter(|&t| t <= end) else {
            return false;
        };
        self.now = t;
        if app == Some(t) {
            // The application writes; the transport hears of it next step.
            *self.app_data.get_or_insert(0) += 1;
            self.app_next = t + self.app_interval.unwrap_or_default();
            return true;
        }
        if self.to_rx.front().is_some_and(|e| e.0 == t) {
            let (_, p) = self.to_rx.pop_front().expect("front checked");
            if let Some(ack) = self.rx.on_data(t, &p, |_| MSS) {
                self.return_ack(t, ack);
            }
        } else if self.to_tx.front().is_some_and(|e| e.0 == t) {
            let (_, ack) = self.to_tx.pop_front().expect("front checked");
            self.ack(t, &ack);
        } else if self.s.rto_deadline == Some(t) {
            self.s.on_rto(t, &mut self.out);
        } else if self.s.reo_deadline == Some(t) {
            self.s.on_reo_timer(t, &mut self.out);
        } else {
            self.s.on_pace_timer(t, &mut self.out);
        }
        self.admit_out();
        self.sync_app();
        true
    }

    /// What the application still has to send, after the transport sent.
    fn sync_app(&mut self) {
        if self.app_data.is_some() {
            self.app_data = Some(self.s.unsent_segs());
        }
    }

    /// Steps until `stop` holds after an event, or `deadline`; returns whether `stop` held.
    pub fn run_until_cond(
        &mut self,
        deadline: Instant,
        mut stop: impl FnMut(&Harness) -> bool,
    ) -> bool {
        while self.step(deadline) {
            if stop(self) {
                return true;
            }
        }
        false
    }

    /// Runs for `d` more.
    pub fn run_for(&mut self, d: Duration) {
        let end = self.now + d;
        self.run_until(end);
    }

    /// Puts what the transport sent on the path.
    fn admit_out(&mut self) {
        for p in std::mem::take(&mut self.out) {
            if let Some(arrive) = self.admit(self.now) {
                let arrive = arrive + self.link.rtt / 2;
                let arrive = self.to_rx.back().map_or(arrive, |b| b.0.max(arrive));
                self.to_rx.push_back((arrive, p));
            }
        }
    }

    /// The bottleneck: returns when the packet leaves it, or `None` if dropped.
    fn admit(&mut self, t: Instant) -> Option<Instant> {
        if self.drop_next > 0 {
            self.drop_next -= 1;
            return None;
        }
        if let Some((rate, bucket)) = self.link.policer {
            let dt = u128::from((t - self.tokens_at).as_nanos() as u64);
            self.tokens_at = t;
            self.tokens_nano =
                (self.tokens_nano + dt * u128::from(rate)).min(u128::from(bucket) * 1_000_000_000);
            if self.tokens_nano < 1_000_000_000 {
                return None;
            }
            self.tokens_nano -= 1_000_000_000;
        }
        let tx_ns = 1_000_000_000 / self.link.rate_pps;
        let backlog = (self.link_free - t).as_nanos() as u64 / tx_ns;
        if backlog >= self.link.buffer {
            return None;
        }
        let depart = self.link_free.max(t) + Duration::from_nanos(tx_ns);
        self.link_free = depart;
        Some(depart)
    }

    /// The ACK travels back; with aggregation it waits for the next period.
    fn return_ack(&mut self, t: Instant, ack: AckPacket) {
        let mut at = t + (self.link.rtt - self.link.rtt / 2);
        if let Some(p) = self.link.ack_period {
            let p = p.as_nanos() as u64;
            at = Instant::from_nanos(at.as_nanos().div_ceil(p) * p);
        }
        let at = self.to_tx.back().map_or(at, |b| b.0.max(at));
        self.to_tx.push_back((at, ack));
    }

    fn ack(&mut self, t: Instant, ack: &AckPacket) {
        let cwnd_before = self.s.tcp.snd_cwnd;
        let o = self.s.on_ack(t, ack, &mut self.out);
        let (tcp, bbr) = (&self.s.tcp, &self.s.cc.bbr);
        self.trace.push(Trace {
            now: t,
            mode: bbr.mode(),
            cycle_idx: bbr.cycle_idx(),
            round: bbr.round_count(),
            round_start: bbr.round_start,
            cwnd: tcp.snd_cwnd,
            cwnd_before,
            in_flight: tcp.packets_in_flight(),
            pacing_rate: tcp.pacing_rate,
            pacing_gain: bbr.pacing_gain,
            max_bw: bbr.max_bw(),
            full_bw_reached: bbr.full_bw_reached(),
            lt_bw: bbr.lt_bw(),
            ca_state: tcp.ca_state,
            conservation: bbr.packet_conservation(),
            acked: o.delivered,
            losses: o.lost,
            min_rtt_stamp: bbr.min_rtt_stamp,
            app_limited: o.rs.is_app_limited,
            target: bbr.quantization_budget(
                tcp,
                bbr.bdp(bbr.bw(), bbr.cwnd_gain) + bbr.ack_aggregation_cwnd(),
            ),
        });
    }
}

/// Bandwidth in BBR units (pkts/µs << 24) for `pps` packets per second.
pub fn bw_units(pps: u64) -> u32 {
    ((u128::from(pps) << 24) / 1_000_000) as u32
}
