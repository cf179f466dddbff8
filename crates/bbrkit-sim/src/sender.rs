//! The TCP-like sender: the parts of Linux TCP that decide results under
//! loss, driving a `bbrkit-cc` controller exactly as `tcp_ack` drives
//! `tcp_congestion_ops`.
//!
//! Per ACK (Linux order): SACK tagging → cumulative ACK (`tcp_clean_rtx_queue`:
//! delivery accounting, rate-sampler hooks, RTT samples, `pkts_acked`) →
//! RACK loss detection (`tcp_rack_mark_lost`) → recovery state machine
//! (`tcp_fastretrans_alert`: enter Recovery with `ssthresh`, leave it at
//! `high_seq`) → `tcp_rate_gen` → `tcp_cong_control` (`cong_control` for
//! BBR; PRR (RFC 6937) in Recovery or `cong_avoid` otherwise for Reno/CUBIC,
//! then `tcp_update_pacing_rate`) → re-arm the RTO → transmit.
//!
//! Loss detection is RACK-TLP's RACK part only (time-based, with Linux's
//! reordering window: `min_rtt/4` until three segments are SACKed, then 0);
//! there is no tail-loss probe, so a tail loss waits for the RTO (RFC 6298
//! with Linux's 200 ms floor and exponential backoff). No F-RTO or undo: the
//! simulated path never reorders, so reductions are never spurious.
//!
//! Pacing follows Linux's EDT model (`tcp_update_skb_after_send`): a burst of
//! `tso_segs` segments leaves when `now >= wstamp`, then `wstamp` advances by
//! its payload length at `pacing_rate` (not for the first 10 segments).
//! RACK, the recovery states, PRR and the RTO live in `recovery`.
//! Owns the flow's sequence space; must never read a clock or randomness
//! other than what the simulation passes in.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use bbrkit_cc::pacing::tcp_update_pacing_rate;
use bbrkit_cc::rate::{self, RateSample, TxSnapshot};
use bbrkit_cc::{
    AckSample, Algorithm, AnyController, CaEvent, CaState, CongestionControl, Duration, Instant,
    Random, Status, Tcp,
};

use crate::histogram::Histogram;
use crate::packet::{AckPacket, DataPacket};
use crate::ranges::RangeSet;
use crate::rtt::RttEstimator;

mod recovery;

const F_SACKED: u8 = 1;
const F_LOST: u8 = 2;
/// A retransmission of this segment is in flight (`TCPCB_SACKED_RETRANS`).
const F_RETRANS: u8 = 4;
/// Ever retransmitted (`TCPCB_EVER_RETRANS`): Karn's rule.
const F_EVER_RETRANS: u8 = 8;

/// Linux `tp->reordering` default (`sysctl_tcp_reordering`).
const REORDERING: u32 = 3;
/// Linux `GSO_LEGACY_MAX_SIZE` 64 KiB bounds one TSO burst.
const GSO_MAX_BYTES: u64 = 65_536;

#[derive(Debug, Clone, Copy)]
struct Seg {
    tx: TxSnapshot,
    flags: u8,
}

/// RACK state (`tp->rack`).
#[derive(Debug, Clone, Copy, Default)]
struct Rack {
    /// Send time and segment of the most recently sent delivered segment.
    newest: Option<(Instant, u64)>,
    rtt: Duration,
    advanced: bool,
}

/// Transport settings of one flow.
#[derive(Debug, Clone)]
pub struct SenderConfig {
    /// Maximum segment size (payload bytes).
    pub mss: u32,
    /// Bytes to send; `None` = unlimited (bulk).
    pub size: Option<u64>,
    /// Pace even if the controller does not (Reno/CUBIC with fq); BBR always paces.
    pub pace_loss_based: bool,
    /// Receive window in bytes; `None` = unlimited.
    pub rwnd: Option<u64>,
    /// Initial congestion window, packets.
    pub init_cwnd: u32,
}

/// Counters of one sender.
#[derive(Debug, Clone, Default)]
pub struct SenderStats {
    /// Data packets sent, including retransmissions.
    pub packets_sent: u64,
    /// Retransmitted packets.
    pub retransmits: u64,
    /// Retransmission timeouts.
    pub rtos: u64,
    /// Fast-recovery episodes.
    pub recoveries: u64,
    /// RTT samples (per ACK, of the newest delivered segment), ns.
    pub rtt: Histogram,
}

/// One flow's sending side.
pub struct Sender {
    /// The controller-visible transport state.
    pub tcp: Tcp,
    cc: AnyController,
    cfg: SenderConfig,
    flow: u32,
    paced: bool,
    total_segs: Option<u64>,
    una: u64,
    nxt: u64,
    segs: VecDeque<Seg>,
    sacked: RangeSet,
    lost_heap: BinaryHeap<Reverse<u64>>,
    rack_list: VecDeque<(u64, Instant)>,
    rack: Rack,
    rtt: RttEstimator,
    backoff: u32,
    high_seq: u64,
    prr_delivered: u32,
    prr_out: u32,
    cwnd_usage_seq: u64,
    max_packets_out: u32,
    cwnd_limited: bool,
    wstamp: Instant,
    data_segs_out: u64,
    last_rs: Option<RateSample>,
    /// When the retransmission timer is due.
    pub rto_deadline: Option<Instant>,
    /// When the RACK reordering timer is due.
    pub reo_deadline: Option<Instant>,
    /// When the pacer allows the next send (only while blocked by pacing).
    pub pace_deadline: Option<Instant>,
    /// When every byte was acknowledged (finite flows).
    pub completed: Option<Instant>,
    /// Counters.
    pub stats: SenderStats,
}

impl std::fmt::Debug for Sender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sender")
            .field("flow", &self.flow)
            .field("una", &self.una)
            .field("nxt", &self.nxt)
            .field("tcp", &self.tcp)
            .finish_non_exhaustive()
    }
}

impl Sender {
    /// A sender for `flow` running `algorithm` (its randomness from `rng`),
    /// created at `now`.
    pub fn new(
        flow: u32,
        algorithm: Algorithm,
        rng: Box<dyn Random + Send>,
        cfg: SenderConfig,
        now: Instant,
    ) -> Self {
        let mut tcp = Tcp::new(now, cfg.mss);
        tcp.snd_cwnd = cfg.init_cwnd.max(1);
        // BBR asks for internal pacing in bbr_init (SK_PACING_NEEDED).
        let paced = cfg.pace_loss_based
            || matches!(
                algorithm,
                Algorithm::Bbr1 | Algorithm::Bbr2 | Algorithm::Bbr3
            );
        tcp.paced = paced;
        let cc = algorithm.build(&mut tcp, rng);
        let total_segs = cfg.size.map(|s| s.div_ceil(u64::from(cfg.mss)));
        Sender {
            tcp,
            cc,
            flow,
            paced,
            total_segs,
            una: 0,
            nxt: 0,
            segs: VecDeque::new(),
            sacked: RangeSet::default(),
            lost_heap: BinaryHeap::new(),
            rack_list: VecDeque::new(),
            rack: Rack::default(),
            rtt: RttEstimator::default(),
            backoff: 0,
            high_seq: 0,
            prr_delivered: 0,
            prr_out: 0,
            cwnd_usage_seq: 0,
            max_packets_out: 0,
            cwnd_limited: false,
            wstamp: now,
            data_segs_out: 0,
            last_rs: None,
            rto_deadline: None,
            reo_deadline: None,
            pace_deadline: None,
            completed: None,
            stats: SenderStats::default(),
            cfg,
        }
    }

    /// Payload bytes of segment `k`.
    pub fn seg_len(&self, k: u64) -> u32 {
        seg_len(self.cfg.mss, self.cfg.size, k)
    }

    fn seq_bytes(&self, k: u64) -> u64 {
        let b = k * u64::from(self.cfg.mss);
        self.cfg.size.map_or(b, |s| b.min(s))
    }

    /// Whether the sender paces.
    pub fn paced(&self) -> bool {
        self.paced
    }

    /// The controller's state for tracing.
    pub fn status(&self) -> Status {
        self.cc.status(&self.tcp)
    }

    /// The latest valid delivery rate, bits per second.
    pub fn delivery_rate_bps(&self) -> Option<f64> {
        let rs = self.last_rs?;
        Some(rs.delivery_rate_pps()? * f64::from(self.cfg.mss) * 8.0)
    }

    /// Segments cumulatively acknowledged.
    pub fn una(&self) -> u64 {
        self.una
    }

    /// Segments in the scoreboard (sent, not cumulatively acknowledged).
    pub fn scoreboard_len(&self) -> usize {
        self.segs.len()
    }

    fn has_unsent(&self) -> bool {
        self.total_segs.is_none_or(|t| self.nxt < t)
    }

    fn unsent_bytes(&self) -> u64 {
        match self.cfg.size {
            None => u64::MAX,
            Some(s) => s - self.seq_bytes(self.nxt),
        }
    }

    fn set_state(&mut self, state: CaState) {
        if self.tcp.ca_state != state {
            self.cc.set_state(&mut self.tcp, state);
            self.tcp.ca_state = state;
        }
    }

    /// Linux `tcp_is_cwnd_limited`.
    fn is_cwnd_limited(&self) -> bool {
        if self.cwnd_limited {
            return true;
        }
        self.tcp.in_slow_start() && self.tcp.snd_cwnd < 2 * self.max_packets_out
    }

    /// Linux `tcp_cwnd_validate`'s bookkeeping.
    fn cwnd_validate(&mut self, limited: bool) {
        if self.una >= self.cwnd_usage_seq || (limited && !self.cwnd_limited) {
            self.cwnd_limited = limited;
            self.max_packets_out = self.tcp.packets_out;
            self.cwnd_usage_seq = self.nxt;
        }
    }

    fn arm_rto(&mut self, now: Instant) {
        if self.tcp.packets_out == 0 {
            self.rto_deadline = None;
        } else {
            self.rto_deadline = Some(now + self.rtt.rto_backed_off(self.backoff));
        }
    }

    /// The connection starts at `now`: send the initial window.
    pub fn start(&mut self, now: Instant, out: &mut Vec<DataPacket>) {
        self.tcp.now = now;
        self.wstamp = now;
        self.try_send(now, out);
    }

    fn next_lost(&mut self) -> Option<u64> {
        while let Some(&Reverse(k)) = self.lost_heap.peek() {
            if k >= self.una {
                let f = self.segs[(k - self.una) as usize].flags;
                if f & (F_LOST | F_RETRANS | F_SACKED) == F_LOST {
                    return Some(k);
                }
            }
            self.lost_heap.pop();
        }
        None
    }

    fn transmit(&mut self, now: Instant, k: u64, out: &mut Vec<DataPacket>) {
        if self.tcp.packets_in_flight() == 0 {
            self.cc.cwnd_event(&mut self.tcp, CaEvent::TxStart);
        }
        let was_idle = self.tcp.packets_out == 0;
        let is_retrans = k < self.nxt;
        if is_retrans {
            let seg = &mut self.segs[(k - self.una) as usize];
            seg.flags |= F_RETRANS | F_EVER_RETRANS;
            self.tcp.retrans_out += 1;
            self.stats.retransmits += 1;
            self.lost_heap.pop();
        } else {
            self.nxt += 1;
            self.tcp.packets_out += 1;
            self.tcp.snd_nxt = self.seq_bytes(self.nxt);
            self.segs.push_back(Seg {
                tx: TxSnapshot::default(),
                flags: 0,
            });
        }
        if matches!(self.tcp.ca_state, CaState::Recovery | CaState::Cwr) {
            self.prr_out += 1;
        }
        let end_seq = self.seq_bytes(k + 1);
        let tx = rate::on_send(&mut self.tcp, was_idle, end_seq, is_retrans);
        self.segs[(k - self.una) as usize].tx = tx;
        self.rack_list.push_back((k, now));
        self.tcp.lsndtime = now;
        self.data_segs_out += 1;
        self.stats.packets_sent += 1;
        if is_retrans && k == self.una || self.rto_deadline.is_none() {
            self.arm_rto(now);
        }
        out.push(DataPacket {
            flow: self.flow,
            seg: k,
            len: self.seg_len(k),
            enqueued: now,
        });
    }

    /// Linux `tcp_tso_autosize` / `ca_ops->tso_segs`: segments per burst.
    fn burst_segs(&self) -> u32 {
        if let Some(n) = self.cc.tso_segs(&self.tcp) {
            return n.max(1);
        }
        let mss = u64::from(self.cfg.mss);
        let bytes = (self.tcp.pacing_rate >> self.tcp.pacing_shift).min(GSO_MAX_BYTES);
        ((bytes / mss) as u32).max(2)
    }

    /// Sends what cwnd, the pacer and the receive window allow at `now`.
    pub fn try_send(&mut self, now: Instant, out: &mut Vec<DataPacket>) {
        if self.completed.is_some() {
            return;
        }
        self.tcp.now = now;
        self.pace_deadline = None;
        let mut limited = false;
        let mut sent_any = false;
        loop {
            if self.paced && self.wstamp > now {
                self.pace_deadline = Some(self.wstamp);
                break;
            }
            let in_flight = self.tcp.packets_in_flight();
            if in_flight >= self.tcp.snd_cwnd {
                limited = true;
                break;
            }
            let quota = self.tcp.snd_cwnd - in_flight;
            let burst = if self.paced {
                self.burst_segs().min(quota)
            } else {
                quota
            };
            let mut sent = 0;
            let mut bytes = 0u64;
            while sent < burst {
                let Some(k) = self.next_lost() else { break };
                self.transmit(now, k, out);
                bytes += u64::from(self.seg_len(k));
                sent += 1;
            }
            if sent == 0 {
                while sent < burst && self.has_unsent() && self.rwnd_allows() {
                    let k = self.nxt;
                    self.transmit(now, k, out);
                    bytes += u64::from(self.seg_len(k));
                    sent += 1;
                }
            }
            if sent == 0 {
                break;
            }
            sent_any = true;
            if self.paced {
                self.advance_wstamp(now, bytes);
            }
        }
        if sent_any || limited {
            self.cwnd_validate(limited);
        }
    }

    fn rwnd_allows(&self) -> bool {
        self.cfg.rwnd.is_none_or(|w| {
            (self.nxt + 1 - self.una) * u64::from(self.cfg.mss) <= w.max(u64::from(self.cfg.mss))
        })
    }

    /// Linux `tcp_update_skb_after_send` (EDT pacing).
    fn advance_wstamp(&mut self, now: Instant, bytes: u64) {
        let prior = self.wstamp;
        self.wstamp = self.wstamp.max(now);
        let rate = self.tcp.pacing_rate;
        if rate != 0 && rate != u64::MAX && self.data_segs_out >= 10 {
            let mut len_ns = (u128::from(bytes) * 1_000_000_000 / u128::from(rate)) as u64;
            let credit = (self.wstamp - prior).as_nanos() as u64;
            len_ns -= (len_ns / 2).min(credit);
            self.wstamp += Duration::from_nanos(len_ns);
        }
        self.tcp.departure_time = self.wstamp;
    }

    /// Processes an ACK arriving at `now`; appends packets to send to `out`.
    pub fn on_ack(&mut self, now: Instant, ack: &AckPacket, out: &mut Vec<DataPacket>) {
        if self.completed.is_some() || ack.cum < self.una {
            return;
        }
        self.tcp.now = now;
        let unsent = self.unsent_bytes();
        rate::check_app_limited(&mut self.tcp, unsent, false);
        let prior_in_flight = self.tcp.packets_in_flight();
        let prior_delivered = self.tcp.delivered;
        let prior_lost = self.tcp.lost;
        let mut rs = RateSample::default();
        rs.prior_in_flight = prior_in_flight;
        // Newest-sent delivered never-retransmitted segment: ca_rtt.
        let mut newest_xmit: Option<Instant> = None;
        let mut first_sack_xmit: Option<Instant> = None;
        let mut first_cum_xmit: Option<Instant> = None;

        // 1. SACK blocks (tcp_sacktag_write_queue).
        let una = self.una;
        let nxt = self.nxt;
        let mut fresh: [(u64, u64); 8] = [(0, 0); 8];
        let mut nfresh = 0;
        let mut overflow: Vec<(u64, u64)> = Vec::new();
        for &(s, e) in ack.sack_blocks() {
            let (s, e) = (s.max(una), e.min(nxt));
            if s >= e {
                continue;
            }
            self.sacked.insert(s, e, |a, b| {
                if nfresh < fresh.len() {
                    fresh[nfresh] = (a, b);
                    nfresh += 1;
                } else {
                    overflow.push((a, b));
                }
            });
        }
        for &(a, b) in fresh[..nfresh].iter().chain(overflow.iter()) {
            for k in a..b {
                let i = (k - self.una) as usize;
                let flags = self.segs[i].flags;
                if flags & F_SACKED != 0 {
                    continue;
                }
                let seg = &mut self.segs[i];
                seg.flags |= F_SACKED;
                if flags & F_LOST != 0 {
                    seg.flags &= !F_LOST;
                    self.tcp.lost_out -= 1;
                }
                if flags & F_RETRANS != 0 {
                    seg.flags &= !F_RETRANS;
                    self.tcp.retrans_out -= 1;
                }
                self.tcp.sacked_out += 1;
                self.tcp.delivered += 1;
                let xmit = seg.tx.send_time;
                rate::on_packet_delivered(&mut self.tcp, &mut rs, &mut self.segs[i].tx, true);
                self.rack_advance(k, flags, xmit, now);
                if flags & F_EVER_RETRANS == 0 {
                    // first_sackt: the earliest-sent newly SACKed segment.
                    first_sack_xmit = Some(first_sack_xmit.map_or(xmit, |t| t.min(xmit)));
                    newest_xmit = newest_xmit.max(Some(xmit));
                }
            }
        }

        // 2. Cumulative ACK (tcp_clean_rtx_queue).
        let cum = ack.cum.min(self.nxt);
        let una_advanced = cum > self.una;
        let mut pkts_acked = 0u32;
        let mut last_acked_flags = 0u8;
        while self.una < cum {
            let k = self.una;
            let mut seg = self.segs.pop_front().expect("scoreboard covers una..nxt");
            let flags = seg.flags;
            if flags & F_SACKED == 0 {
                self.tcp.delivered += 1;
                rate::on_packet_delivered(&mut self.tcp, &mut rs, &mut seg.tx, false);
                self.rack_advance(k, flags, seg.tx.send_time, now);
                if flags & F_EVER_RETRANS == 0 {
                    first_cum_xmit.get_or_insert(seg.tx.send_time);
                    newest_xmit = newest_xmit.max(Some(seg.tx.send_time));
                }
            } else {
                self.tcp.sacked_out -= 1;
            }
            if flags & F_LOST != 0 {
                self.tcp.lost_out -= 1;
            }
            if flags & F_RETRANS != 0 {
                self.tcp.retrans_out -= 1;
            }
            self.tcp.packets_out -= 1;
            pkts_acked += 1;
            last_acked_flags = flags;
            self.una += 1;
        }
        if una_advanced {
            self.sacked.remove_below(self.una);
            self.tcp.snd_una = self.seq_bytes(self.una);
        }
        let newly_delivered = (self.tcp.delivered - prior_delivered) as u32;

        // RTT samples (tcp_ack_update_rtt): seq_rtt from the oldest newly
        // cum-acked segment, else the oldest newly SACKed; ca_rtt from the newest.
        if let Some(t) = first_cum_xmit.or(first_sack_xmit) {
            self.rtt.update(now - t, self.una, self.nxt);
            self.backoff = 0;
            self.tcp.srtt = self.rtt.srtt();
            self.tcp.rttvar = self.rtt.rttvar();
        }
        let ca_rtt = newest_xmit.map(|t| now - t);
        if let Some(r) = ca_rtt {
            self.rtt.update_min(r, now);
            self.tcp.min_rtt = self.rtt.min_rtt();
            self.stats.rtt.record(r.as_nanos() as u64);
        }
        rs.rtt = ca_rtt;
        if pkts_acked > 0 || newly_delivered > 0 {
            let sample = AckSample {
                pkts_acked,
                rtt: ca_rtt,
                in_flight: prior_in_flight,
            };
            self.cc.pkts_acked(&mut self.tcp, &sample);
        }
        // FLAG_ACK_MAYBE_DELAYED: one segment, the last one sent, acked alone.
        rs.is_ack_delayed = pkts_acked == 1
            && newly_delivered == 1
            && self.una == self.nxt
            && last_acked_flags & F_SACKED == 0;

        // 3. Loss detection (RACK).
        if self.rack.advanced {
            self.rack.advanced = false;
            self.rack_detect(now);
        }
        let newly_lost = (self.tcp.lost - prior_lost) as u32;

        // 4. Recovery state machine.
        self.fastretrans_alert();

        // 5. Rate sample and 6. congestion control.
        rate::generate(&mut self.tcp, &mut rs, newly_delivered, newly_lost, false);
        if rs.delivered.is_some() && rs.interval.is_some() {
            self.last_rs = Some(rs);
        }
        self.tcp.is_cwnd_limited = self.is_cwnd_limited();
        if self.cc.has_cong_control() {
            self.cc.cong_control(&mut self.tcp, &rs);
        } else {
            if matches!(self.tcp.ca_state, CaState::Recovery | CaState::Cwr) {
                self.prr(newly_delivered, newly_lost, una_advanced);
            } else if una_advanced {
                let ack_bytes = self.tcp.snd_una;
                self.cc
                    .cong_avoid(&mut self.tcp, ack_bytes, newly_delivered);
            }
            tcp_update_pacing_rate(&mut self.tcp);
        }

        // 7. Timers and transmission.
        if self.total_segs.is_some_and(|t| self.una >= t) {
            self.completed = Some(now);
            self.rto_deadline = None;
            self.reo_deadline = None;
            self.pace_deadline = None;
            return;
        }
        if una_advanced {
            self.arm_rto(now);
        }
        self.try_send(now, out);
    }
}

/// Payload bytes of segment `k` of a flow of `size` bytes.
pub fn seg_len(mss: u32, size: Option<u64>, k: u64) -> u32 {
    match size {
        None => mss,
        Some(s) => {
            let start = k * u64::from(mss);
            (s.saturating_sub(start)).min(u64::from(mss)) as u32
        }
    }
}

/// Linux `tcp_skb_sent_after`: `(t1, k1)` was sent after `(t2, k2)`.
fn sent_after(t1: Instant, k1: u64, t2: Instant, k2: u64) -> bool {
    t1 > t2 || (t1 == t2 && k1 > k2)
}
