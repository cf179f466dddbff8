//! A small deterministic packet-level path for BBRv1 tests: one sender, a
//! FIFO bottleneck of fixed rate (optionally a token-bucket policer, a
//! finite buffer, ACK aggregation), and a constant propagation RTT. It drives
//! the real rate sampler (`crate::rate`) and the controller exactly as a
//! Linux sender would call `tcp_congestion_ops`. A dropped packet is marked
//! lost when a later one is ACKed (RACK-like) and retransmitted before new
//! data; fast recovery lasts until everything sent before it, retransmits
//! included, is cumulatively ACKed. Integer nanoseconds throughout.

use std::collections::{BTreeSet, VecDeque};

use crate::bbr1::{Bbr1, Mode};
use crate::controller::CongestionControl;
use crate::random::Random;
use crate::rate::{self, RateSample, TxSnapshot};
use crate::tcp::{CaEvent, CaState, Tcp};
use crate::time::{Duration, Instant};

/// Bytes per packet in every harness run.
pub const MSS: u32 = 1000;

/// Retransmission timeout after the last send when nothing can be ACKed.
const RTO: Duration = Duration::from_millis(300);

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

#[derive(Debug, Clone)]
struct Pkt {
    tx: TxSnapshot,
    sent: Instant,
    end_seq: u64,
    is_retrans: bool,
    /// When its ACK reaches the sender; `None` if the path dropped it.
    ack_at: Option<Instant>,
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

/// The sender, its controller and the path.
pub struct Harness {
    pub tcp: Tcp,
    pub bbr: Bbr1,
    pub link: Link,
    pub now: Instant,
    flight: VecDeque<Pkt>,
    link_free: Instant,
    tokens_nano: u128,
    tokens_at: Instant,
    next_send: Instant,
    /// Packets the application still has to send; `None` = unlimited.
    pub app_data: Option<u64>,
    /// If set, the application writes one packet per interval (`app_data`
    /// should then start at `Some(0)`).
    pub app_interval: Option<Duration>,
    app_next: Instant,
    /// Receive window: never more than this many packets in flight.
    pub rwnd: u32,
    /// Drop the next this-many packets at the bottleneck.
    pub drop_next: u32,
    /// Model fast recovery (`ssthresh`, `set_state(Recovery/Open)`).
    pub recovery: bool,
    high_seq: u64,
    /// Lost packets (end sequence numbers) waiting for retransmission.
    retx_queue: VecDeque<u64>,
    /// Holes below which the cumulative ACK cannot advance.
    holes: BTreeSet<u64>,
    /// Highest end sequence number delivered.
    highest_delivered: u64,
    /// Every ACK, in order.
    pub trace: Vec<Trace>,
    /// TxStart events delivered to the controller.
    pub tx_starts: u32,
    /// Retransmission timeouts.
    pub timeouts: u32,
}

impl Harness {
    pub fn new(link: Link, rng: Box<dyn Random + Send>) -> Self {
        let mut tcp = Tcp::new(Instant::ZERO, MSS);
        let bbr = Bbr1::new(&mut tcp, rng);
        let bucket = link
            .policer
            .map_or(0, |(_, b)| u128::from(b) * 1_000_000_000);
        Harness {
            tcp,
            bbr,
            link,
            now: Instant::ZERO,
            flight: VecDeque::new(),
            link_free: Instant::ZERO,
            tokens_nano: bucket,
            tokens_at: Instant::ZERO,
            next_send: Instant::ZERO,
            app_data: None,
            app_interval: None,
            app_next: Instant::ZERO,
            rwnd: u32::MAX,
            drop_next: 0,
            recovery: true,
            high_seq: 0,
            retx_queue: VecDeque::new(),
            holes: BTreeSet::new(),
            highest_delivered: 0,
            trace: Vec::new(),
            tx_starts: 0,
            timeouts: 0,
        }
    }

    fn has_data(&self) -> bool {
        self.app_data != Some(0) || !self.retx_queue.is_empty()
    }

    fn window_open(&self) -> bool {
        let inflight = self.tcp.packets_in_flight();
        inflight < self.tcp.snd_cwnd && inflight < self.rwnd
    }

    fn next_ack(&self) -> Option<Instant> {
        self.flight.iter().find_map(|p| p.ack_at)
    }

    /// Runs the path until `end`.
    pub fn run_until(&mut self, end: Instant) {
        while self.step(end) {}
        self.now = self.now.max(end);
    }

    /// Processes the next event if it is due by `end`; false if none is.
    pub fn step(&mut self, end: Instant) -> bool {
        // Out of data with room to send: the connection is app-limited
        // (Linux `tcp_rate_check_app_limited`).
        if !self.has_data() && self.window_open() && self.tcp.app_limited == 0 {
            self.tcp.now = self.now;
            rate::check_app_limited(&mut self.tcp, 0, false);
        }
        let next_ack = self.next_ack();
        let next_send =
            (self.has_data() && self.window_open()).then(|| self.next_send.max(self.now));
        // Everything in flight was dropped: a retransmission timeout.
        let rto = (next_ack.is_none() && !self.flight.is_empty())
            .then(|| self.flight.back().map_or(self.now, |p| p.sent) + RTO);
        let app = self.app_interval.map(|_| self.app_next);
        let Some(t) = [next_ack, next_send, rto, app].into_iter().flatten().min() else {
            return false;
        };
        if t > end {
            return false;
        }
        self.now = t;
        if app == Some(t) {
            *self.app_data.get_or_insert(0) += 1;
            self.app_next = t + self.app_interval.unwrap_or_default();
        } else if next_ack == Some(t) {
            self.ack(t);
        } else if next_send == Some(t) {
            self.send(t);
        } else {
            self.timeout(t);
        }
        true
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

    fn send(&mut self, t: Instant) {
        self.tcp.now = t;
        if self.tcp.packets_in_flight() == 0 {
            // Linux `tcp_event_data_sent`: CA_EVENT_TX_START on the first
            // send with nothing in flight.
            self.tx_starts += 1;
            self.bbr.cwnd_event(&mut self.tcp, CaEvent::TxStart);
        }
        let was_idle = self.tcp.packets_out == 0;
        self.tcp.packets_out += 1;
        let (end_seq, is_retrans) = match self.retx_queue.pop_front() {
            Some(seq) => (seq, true),
            None => {
                self.tcp.snd_nxt += u64::from(MSS);
                if let Some(d) = self.app_data.as_mut() {
                    *d -= 1;
                }
                (self.tcp.snd_nxt, false)
            }
        };
        let tx = rate::on_send(&mut self.tcp, was_idle, end_seq, is_retrans);
        let ack_at = self.admit(t);
        self.flight.push_back(Pkt {
            tx,
            sent: t,
            end_seq,
            is_retrans,
            ack_at,
        });
        // Internal pacing: the next departure is one packet time later.
        self.next_send = match (u64::from(MSS) * 1_000_000_000).checked_div(self.tcp.pacing_rate) {
            Some(gap) => t + Duration::from_nanos(gap),
            None => t,
        };
        self.tcp.departure_time = self.next_send;
    }

    /// The bottleneck: returns when the packet's ACK arrives, or `None` if dropped.
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
        let mut ack = depart + self.link.rtt;
        if let Some(p) = self.link.ack_period {
            let p = p.as_nanos() as u64;
            ack = Instant::from_nanos(ack.as_nanos().div_ceil(p) * p);
        }
        Some(ack)
    }

    /// Linux `tcp_enter_loss`: everything in flight is lost; ssthresh()
    /// (saves cwnd), cwnd = in flight + 1, then `set_state(Loss)`.
    fn timeout(&mut self, t: Instant) {
        self.tcp.now = t;
        let n = self.flight.len() as u32;
        for p in self.flight.drain(..) {
            self.holes.insert(p.end_seq);
            self.retx_queue.push_back(p.end_seq);
        }
        self.tcp.lost += u64::from(n);
        self.tcp.packets_out -= n;
        if self.tcp.ca_state <= CaState::Disorder {
            self.tcp.prior_cwnd = self.tcp.snd_cwnd;
            self.tcp.snd_ssthresh = self.bbr.ssthresh(&mut self.tcp);
        }
        self.tcp.snd_cwnd = self.tcp.packets_in_flight() + 1;
        self.bbr.set_state(&mut self.tcp, CaState::Loss);
        self.tcp.ca_state = CaState::Loss;
        self.high_seq = self.tcp.snd_nxt;
        self.timeouts += 1;
    }

    fn ack(&mut self, t: Instant) {
        self.tcp.now = t;
        let prior_in_flight = self.tcp.packets_in_flight();
        let cwnd_before = self.tcp.snd_cwnd;
        let mut rs = RateSample::default();
        let (mut delivered, mut lost, mut rtt) = (0u32, 0u32, None);
        // Packets ACKed now, and the dropped ones sent before them (a
        // RACK-like rule: a hole before a delivered packet is a loss).
        let mut n = 0;
        for (i, p) in self.flight.iter().enumerate() {
            match p.ack_at {
                Some(a) if a == t => n = i + 1,
                Some(_) => break,
                None => {}
            }
        }
        for mut p in self.flight.drain(..n) {
            if p.ack_at.is_some() {
                rate::on_packet_delivered(&mut self.tcp, &mut rs, &mut p.tx, false);
                self.tcp.delivered += 1;
                self.holes.remove(&p.end_seq);
                self.highest_delivered = self.highest_delivered.max(p.end_seq);
                // Karn: no RTT sample from a retransmission.
                if !p.is_retrans {
                    rtt = Some(t - p.sent);
                }
                delivered += 1;
            } else {
                lost += 1;
                self.tcp.lost += 1;
                self.holes.insert(p.end_seq);
                self.retx_queue.push_back(p.end_seq);
            }
            self.tcp.packets_out -= 1;
        }
        self.tcp.snd_una = match self.holes.first() {
            Some(&hole) => hole - u64::from(MSS),
            None => self.highest_delivered,
        };
        // Loss recovery state (Linux `tcp_fastretrans_alert`, before cong_control).
        if self.recovery {
            if lost > 0 && self.tcp.ca_state < CaState::Recovery {
                self.tcp.prior_cwnd = self.tcp.snd_cwnd;
                self.tcp.snd_ssthresh = self.bbr.ssthresh(&mut self.tcp);
                self.bbr.set_state(&mut self.tcp, CaState::Recovery);
                self.tcp.ca_state = CaState::Recovery;
                self.high_seq = self.tcp.snd_nxt;
            } else if self.tcp.ca_state >= CaState::Recovery && self.tcp.snd_una >= self.high_seq {
                self.bbr.set_state(&mut self.tcp, CaState::Open);
                self.tcp.ca_state = CaState::Open;
            }
        }
        if let Some(r) = rtt {
            self.tcp.srtt = if self.tcp.srtt.is_zero() {
                r
            } else {
                (self.tcp.srtt * 7 + r) / 8
            };
            self.tcp.min_rtt = Some(self.tcp.min_rtt.map_or(r, |m| m.min(r)));
        }
        rs.prior_in_flight = prior_in_flight;
        rs.rtt = rtt;
        rate::generate(&mut self.tcp, &mut rs, delivered, lost, false);
        self.bbr.cong_control(&mut self.tcp, &rs);
        self.trace.push(Trace {
            now: t,
            mode: self.bbr.mode(),
            cycle_idx: self.bbr.cycle_idx(),
            round: self.bbr.round_count(),
            round_start: self.bbr.round_start,
            cwnd: self.tcp.snd_cwnd,
            cwnd_before,
            in_flight: self.tcp.packets_in_flight(),
            pacing_rate: self.tcp.pacing_rate,
            pacing_gain: self.bbr.pacing_gain,
            max_bw: self.bbr.max_bw(),
            full_bw_reached: self.bbr.full_bw_reached(),
            lt_bw: self.bbr.lt_bw(),
            ca_state: self.tcp.ca_state,
            conservation: self.bbr.packet_conservation(),
            acked: delivered,
            losses: lost,
            min_rtt_stamp: self.bbr.min_rtt_stamp,
            app_limited: rs.is_app_limited,
            target: self.bbr.quantization_budget(
                &self.tcp,
                self.bbr.bdp(self.bbr.bw(), self.bbr.cwnd_gain) + self.bbr.ack_aggregation_cwnd(),
            ),
        });
    }
}

/// Bandwidth in BBR units (pkts/µs << 24) for `pps` packets per second.
pub fn bw_units(pps: u64) -> u32 {
    ((u128::from(pps) << 24) / 1_000_000) as u32
}
