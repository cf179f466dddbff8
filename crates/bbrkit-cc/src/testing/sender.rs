//! The sending side of the test transport: a SACK scoreboard over packet
//! numbers plus the Linux per-ACK call sequence on [`Tcp`] and a
//! [`CongestionControl`]. Used by [`super::Driver`] and directly by property
//! tests that script sends, ACKs, losses and timeouts themselves.
//!
//! Call order per ACK (Linux `tcp_ack`, see [`crate::controller`]):
//!
//! ```text
//!  1 SACK + cumulative ACK: for each newly delivered packet delivered += 1,
//!    rate::on_packet_delivered                  (tcp_sacktag_one, tcp_clean_rtx_queue)
//!  2 RTT estimator (srtt, rttvar, 300 s min_rtt filter), re-arm RTO
//!  3 pkts_acked(AckSample)                       (every ACK; rtt None if Karn forbids)
//!  4 loss marking: a packet is lost once a packet transmitted DUPTHRESH
//!    transmissions after it is delivered (RACK-like by transmission order);
//!    each mark: tcp.lost += 1, skb_marked_lost(tx)   (tcp_mark_skb_lost)
//!  5 recovery exit (snd_una >= high_seq): set_state(Open), then (not for
//!    cong_control controllers) cwnd = ssthresh, cwnd_event(CompleteCwr); recovery entry: prior_cwnd, ssthresh(), PRR reset,
//!    set_state(Recovery); ECE in Open/Disorder: the same into CWR (tcp_enter_cwr);
//!    Open <-> Disorder on SACKs                 (tcp_fastretrans_alert)
//!  6 rate::generate                              (tcp_rate_gen)
//!  7 cong_control(rs) if the controller has it; else PRR in CWR/Recovery,
//!    or cong_avoid if the ACK advanced snd_una; then tcp_update_pacing_rate
//! ```
//!
//! RTO (`tcp_enter_loss`): mark every unSACKed packet lost, `ssthresh()` +
//! `cwnd_event(Loss)` once per window, `cwnd = in_flight + 1`,
//! `set_state(Loss)`. Undo (`undo_cwnd`, ssthresh restored, `set_state(Open)`)
//! when the episode was declared spurious with [`Sender::mark_spurious`].
//! Simplifications (test tool): no DSACK/F-RTO detection, no TLP, no
//! RACK reordering timer (tail losses end in an RTO), one packet per
//! transmission (no TSO), no TCP timestamps. RTTs as in `tcp_clean_rtx_queue`
//! / `tcp_ack_update_rtt` (Karn: never-retransmitted packets only): srtt
//! from the earliest-sent newly ACKed packet (none if the ACK covers a
//! retransmission), else the earliest-sent newly SACKed one; `rs.rtt`,
//! `pkts_acked` and the min-RTT filter from the latest-sent one (SACKed
//! preferred).

mod recovery;

use std::collections::VecDeque;

use crate::controller::CongestionControl;
use crate::filter::MinMax;
use crate::pacing::tcp_update_pacing_rate;
use crate::rate::{self, RateSample, TxSnapshot};
use crate::tcp::{AckSample, CaEvent, CaState, Tcp};
use crate::time::{Duration, Instant};

/// Delivered transmissions after a packet's own that mark it lost (RFC 5681
/// DupThresh, applied to transmission order like RACK).
pub const DUPTHRESH: u64 = 3;
/// Linux `TCP_RTO_MIN` (200 ms).
pub const TCP_RTO_MIN: Duration = Duration::from_millis(200);
/// Linux `TCP_TIMEOUT_INIT` (1 s, RFC 6298).
pub const TCP_TIMEOUT_INIT: Duration = Duration::from_secs(1);
/// Linux `TCP_RTO_MAX` (120 s).
pub const TCP_RTO_MAX: Duration = Duration::from_secs(120);
/// Linux `tcp_min_rtt_wlen` (300 s): window of the transport's min RTT filter.
pub const TCP_MIN_RTT_WLEN_MS: u64 = 300_000;

/// An acknowledgement as the sender sees it (packet numbers, not bytes).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ack {
    /// Cumulative ACK: the next packet number the receiver expects.
    pub cum: u64,
    /// Packet numbers received out of order since the previous ACK (SACK).
    pub sacked: Vec<u64>,
    /// ECN echo: a packet covered by this ACK carried CE.
    pub ece: bool,
}

/// One transmission handed to the network.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transmission {
    /// Packet number (its data is bytes `num*mss .. (num+1)*mss`).
    pub num: u64,
    /// Global transmission counter (retransmissions get new ones).
    pub tx_index: u64,
    /// Whether this is a retransmission.
    pub is_retrans: bool,
}

/// What one ACK did.
#[derive(Debug, Clone, Default)]
pub struct AckOutcome {
    /// The rate sample given to the controller.
    pub rs: RateSample,
    /// Packets newly delivered (SACKed or cumulatively ACKed).
    pub delivered: u32,
    /// Packets newly marked lost.
    pub lost: u32,
    /// Recovery states entered while processing the ACK, in order.
    pub transitions: Vec<CaState>,
}

/// Counters over the connection's life.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SenderStats {
    /// Transmissions (including retransmissions).
    pub sent: u64,
    /// Retransmissions.
    pub retransmitted: u64,
    /// Retransmission timeouts.
    pub rtos: u64,
    /// Fast-recovery episodes entered.
    pub recoveries: u64,
    /// Episodes undone as spurious ([`Sender::mark_spurious`]).
    pub undos: u64,
}

/// Send times of the packets one ACK delivers (Linux `first_ackt`,
/// `last_ackt`, `sack->first_sackt`, `sack->last_sackt`).
#[derive(Debug, Default)]
struct AckTimes {
    ackt: Option<(Instant, Instant)>,
    sackt: Option<(Instant, Instant)>,
    /// A cumulatively ACKed packet had been retransmitted
    /// (`FLAG_RETRANS_DATA_ACKED`): no RTT from the cumulative part.
    retrans_acked: bool,
    /// Highest transmission index delivered (for loss marking).
    max_tx: Option<u64>,
}

impl AckTimes {
    fn add(&mut self, sent: Instant, sacked: bool, ever_retrans: bool) {
        if ever_retrans {
            self.retrans_acked |= !sacked;
            return;
        }
        let span = if sacked {
            &mut self.sackt
        } else {
            &mut self.ackt
        };
        *span = Some(span.map_or((sent, sent), |(f, l)| (f.min(sent), l.max(sent))));
    }

    /// (`seq_rtt` for srtt, `ca_rtt` for rs.rtt / min_rtt), as
    /// `tcp_clean_rtx_queue` + `tcp_ack_update_rtt` choose them.
    fn rtts(&self, now: Instant) -> (Option<Duration>, Option<Duration>) {
        let (mut seq, mut ca) = (None, None);
        if let Some((first, last)) = self.ackt.filter(|_| !self.retrans_acked) {
            seq = Some(now - first);
            ca = Some(now - last);
        }
        if let Some((first, last)) = self.sackt {
            seq = seq.or(Some(now - first));
            ca = Some(now - last);
        }
        (seq, ca)
    }
}

/// Linux `tcp_mark_skb_lost` + `tcp_notify_skb_loss_event`: marks `p` lost
/// (or, if only its retransmission was in flight, that retransmission), and
/// tells the controller. A packet already lost with nothing in flight is left
/// alone.
fn mark_skb_lost<C: CongestionControl>(p: &mut Pkt, tcp: &mut Tcp, cc: &mut C) {
    if !p.lost {
        p.lost = true;
        tcp.lost_out += 1;
    } else if p.retrans {
        // The retransmission was lost too.
        p.retrans = false;
        tcp.retrans_out -= 1;
    } else {
        return;
    }
    tcp.lost += 1;
    cc.skb_marked_lost(tcp, &p.tx, 1);
}

#[derive(Debug, Clone)]
struct Pkt {
    num: u64,
    tx: TxSnapshot,
    tx_index: u64,
    sacked: bool,
    lost: bool,
    /// A retransmission of it is in flight (`TCPCB_SACKED_RETRANS`).
    retrans: bool,
    ever_retrans: bool,
}

/// The sender: transport state, controller and scoreboard.
#[derive(Debug)]
pub struct Sender<C> {
    /// The transport state the controller reads and writes.
    pub tcp: Tcp,
    /// The congestion controller.
    pub cc: C,
    /// Pace sends at `tcp.pacing_rate` (TCP internal pacing / fq).
    pub pacing: bool,
    /// Linux `tcp_slow_start_after_idle` (default on): shrink cwnd after an
    /// idle period longer than the RTO (not for `cong_control` controllers).
    pub slow_start_after_idle: bool,
    pkts: VecDeque<Pkt>,
    next_num: u64,
    next_tx_index: u64,
    high_seq: u64,
    prr_delivered: u32,
    prr_out: u32,
    rto_deadline: Option<Instant>,
    backoff: u32,
    min_rtt: Option<MinMax<u64, u64>>,
    cwnd_limited_flag: bool,
    max_packets_out: u32,
    cwnd_usage_seq: u64,
    round: u64,
    round_end: u64,
    stats: SenderStats,
    /// `tp->prior_ssthresh`: ssthresh to restore on undo.
    prior_ssthresh: u32,
    /// Treat the end of the current Recovery/Loss episode as spurious.
    undo_next_exit: bool,
}

impl<C: CongestionControl> Sender<C> {
    /// A sender whose controller is built from the fresh `tcp` (`ops->init`).
    pub fn new(mut tcp: Tcp, build: impl FnOnce(&mut Tcp) -> C) -> Self {
        let cc = build(&mut tcp);
        let pacing = cc.has_cong_control();
        Sender {
            tcp,
            cc,
            pacing,
            slow_start_after_idle: true,
            pkts: VecDeque::new(),
            next_num: 0,
            next_tx_index: 0,
            high_seq: 0,
            prr_delivered: 0,
            prr_out: 0,
            rto_deadline: None,
            backoff: 0,
            min_rtt: None,
            cwnd_limited_flag: false,
            max_packets_out: 0,
            cwnd_usage_seq: 0,
            round: 0,
            round_end: 0,
            stats: SenderStats::default(),
            prior_ssthresh: 0,
            undo_next_exit: false,
        }
    }

    /// Packet-timed rounds completed (a round ends when a packet sent after
    /// the previous round ended is delivered, as BBR counts them).
    pub fn round(&self) -> u64 {
        self.round
    }

    /// Life-time counters.
    pub fn stats(&self) -> SenderStats {
        self.stats
    }

    /// When the RTO timer fires, if armed.
    pub fn rto_deadline(&self) -> Option<Instant> {
        self.rto_deadline
    }

    /// The next new packet number.
    pub fn next_num(&self) -> u64 {
        self.next_num
    }

    /// Whether cwnd allows another transmission (`tcp_cwnd_test`).
    pub fn cwnd_allows(&self) -> bool {
        self.tcp.packets_in_flight() < self.tcp.snd_cwnd
    }

    /// Whether a lost packet waits for retransmission.
    pub fn has_retransmit(&self) -> bool {
        self.tcp.lost_out > self.tcp.retrans_out
    }

    /// Earliest time the pacer lets the next packet go (`tcp_wstamp_ns`), or
    /// `now` when not pacing.
    pub fn pacing_time(&self) -> Instant {
        if self.pacing && self.tcp.pacing_rate > 0 {
            self.tcp.departure_time
        } else {
            self.tcp.now
        }
    }

    /// Transmit one packet at `now`: the first lost packet awaiting
    /// retransmission, else (if `new_data`) a new one. The caller checks cwnd
    /// and pacing. Returns `None` if there is nothing to send.
    pub fn send(&mut self, now: Instant, new_data: bool) -> Option<Transmission> {
        self.tcp.now = now;
        let idx = self
            .pkts
            .iter()
            .position(|p| p.lost && !p.retrans && !p.sacked);
        if idx.is_none() && !new_data {
            return None;
        }
        let was_idle = self.tcp.packets_out == 0;
        if self.tcp.packets_in_flight() == 0 {
            if was_idle && self.slow_start_after_idle && !self.cc.has_cong_control() {
                self.cwnd_restart();
            }
            // tcp_event_data_sent: TX_START before lsndtime moves.
            self.cc.cwnd_event(&mut self.tcp, CaEvent::TxStart);
        }
        let mss = u64::from(self.tcp.mss);
        let (num, is_retrans) = match idx {
            Some(i) => {
                self.pkts[i].retrans = true;
                self.pkts[i].ever_retrans = true;
                self.tcp.retrans_out += 1;
                self.stats.retransmitted += 1;
                (self.pkts[i].num, true)
            }
            None => {
                let num = self.next_num;
                self.next_num += 1;
                self.tcp.packets_out += 1;
                self.tcp.snd_nxt = self.next_num * mss;
                (num, false)
            }
        };
        if matches!(self.tcp.ca_state, CaState::Cwr | CaState::Recovery) {
            self.prr_out += 1;
        }
        let tx = rate::on_send(&mut self.tcp, was_idle, (num + 1) * mss, is_retrans);
        let tx_index = self.next_tx_index;
        self.next_tx_index += 1;
        let pkt = Pkt {
            num,
            tx,
            tx_index,
            sacked: false,
            lost: false,
            retrans: false,
            ever_retrans: false,
        };
        match idx {
            Some(i) => {
                self.pkts[i].tx = tx;
                self.pkts[i].tx_index = tx_index;
            }
            None => self.pkts.push_back(pkt),
        }
        self.tcp.lsndtime = now;
        self.stats.sent += 1;
        // tcp_update_skb_after_send: the pacer's next departure time.
        if self.pacing && self.tcp.pacing_rate > 0 {
            let len_ns = (mss * 1_000_000_000 / self.tcp.pacing_rate).max(1);
            self.tcp.departure_time =
                self.tcp.departure_time.max(now) + Duration::from_nanos(len_ns);
        } else {
            self.tcp.departure_time = now;
        }
        if self.rto_deadline.is_none() {
            self.rto_deadline = Some(now + self.rto());
        }
        Some(Transmission {
            num,
            tx_index,
            is_retrans,
        })
    }

    /// Linux `tcp_cwnd_validate`, called after a burst of sends;
    /// `is_cwnd_limited` = the burst stopped because cwnd was full.
    pub fn cwnd_validate(&mut self, is_cwnd_limited: bool) {
        if self.tcp.snd_una >= self.cwnd_usage_seq
            || is_cwnd_limited
            || (!self.cwnd_limited_flag && self.tcp.packets_out > self.max_packets_out)
        {
            self.cwnd_limited_flag = is_cwnd_limited;
            self.max_packets_out = self.tcp.packets_out;
            self.cwnd_usage_seq = self.tcp.snd_nxt;
        }
        self.tcp.is_cwnd_limited = self.is_cwnd_limited();
    }

    /// Linux `tcp_is_cwnd_limited`.
    fn is_cwnd_limited(&self) -> bool {
        self.cwnd_limited_flag
            || (self.tcp.in_slow_start() && self.tcp.snd_cwnd < 2 * self.max_packets_out)
    }

    /// Linux `tcp_cwnd_restart` after an idle period longer than the RTO.
    fn cwnd_restart(&mut self) {
        let idle = self.tcp.now - self.tcp.lsndtime;
        let rto = self.rto();
        if self.stats.sent == 0 || idle <= rto {
            return;
        }
        self.cc.cwnd_event(&mut self.tcp, CaEvent::CwndRestart);
        let restart = crate::tcp::TCP_INIT_CWND.min(self.tcp.snd_cwnd);
        // tcp_current_ssthresh: keep 3/4 of cwnd as ssthresh.
        let cur = self
            .tcp
            .snd_ssthresh
            .max((self.tcp.snd_cwnd >> 1) + (self.tcp.snd_cwnd >> 2));
        self.tcp.snd_ssthresh = cur;
        // `while ((delta -= rto) > 0 && cwnd > restart) cwnd >>= 1`: one
        // halving per whole RTO of idleness beyond the first.
        let mut delta = ((idle.as_nanos() - 1) / rto.as_nanos().max(1)) as u32;
        let mut cwnd = self.tcp.snd_cwnd;
        while delta > 0 && cwnd > restart {
            cwnd >>= 1;
            delta -= 1;
        }
        self.tcp.set_cwnd(cwnd.max(restart));
    }

    /// Current RTO with exponential backoff (RFC 6298, Linux `__tcp_set_rto`).
    pub fn rto(&self) -> Duration {
        let base = if self.tcp.srtt.is_zero() {
            TCP_TIMEOUT_INIT
        } else {
            self.tcp.srtt + (self.tcp.rttvar * 4).max(TCP_RTO_MIN)
        };
        (base * (1u32 << self.backoff.min(16))).min(TCP_RTO_MAX)
    }

    /// `tcp_rtt_estimator` (RFC 6298 smoothing) for `rtt`, and
    /// `tcp_update_rtt_min` (300 s windowed min) for `ca_rtt`.
    fn rtt_sample(&mut self, rtt: Duration, ca_rtt: Duration) {
        let t = &mut self.tcp;
        if t.srtt.is_zero() {
            t.srtt = rtt;
            t.rttvar = rtt / 2;
        } else {
            let err = rtt.abs_diff(t.srtt);
            t.rttvar = (t.rttvar * 3 + err) / 4;
            t.srtt = (t.srtt * 7 + rtt) / 8;
        }
        let now_ms = t.now.as_nanos() / 1_000_000;
        let ns = ca_rtt.as_nanos() as u64;
        let f = self.min_rtt.get_or_insert(MinMax::new(now_ms, ns));
        let m = f.running_min(TCP_MIN_RTT_WLEN_MS, now_ms, ns);
        self.tcp.min_rtt = Some(Duration::from_nanos(m));
    }

    /// Process one ACK at `now` (Linux `tcp_ack`), calling the controller.
    pub fn on_ack(&mut self, now: Instant, ack: &Ack) -> AckOutcome {
        self.tcp.now = now;
        self.tcp.is_cwnd_limited = self.is_cwnd_limited();
        let prior_in_flight = self.tcp.packets_in_flight();
        let prior_lost = self.tcp.lost;
        let prior_una = self.tcp.snd_una;
        let mut rs = RateSample::default();
        rs.prior_in_flight = prior_in_flight;
        rs.is_ece = ack.ece;
        let mut out = AckOutcome::default();
        let mut times = AckTimes::default();
        let cum = ack.cum.min(self.next_num);
        let front = self.pkts.front().map_or(self.next_num, |p| p.num);

        // 1. SACKs (tcp_sacktag_write_queue), then the cumulative ACK
        // (tcp_clean_rtx_queue); a SACKed packet is counted once.
        for &n in &ack.sacked {
            if n < cum.max(front) || n >= self.next_num {
                continue;
            }
            let i = (n - front) as usize;
            if self.pkts[i].sacked {
                continue;
            }
            self.pkts[i].sacked = true;
            self.tcp.sacked_out += 1;
            self.deliver(i, true, ack.ece, &mut rs, &mut times);
            out.delivered += 1;
        }
        let mut pkts_acked = 0;
        while self.pkts.front().is_some_and(|p| p.num < cum) {
            if self.pkts[0].sacked {
                self.tcp.sacked_out -= 1;
                times.retrans_acked |= self.pkts[0].ever_retrans;
            } else {
                self.deliver(0, false, ack.ece, &mut rs, &mut times);
                out.delivered += 1;
            }
            self.pkts.pop_front();
            self.tcp.packets_out -= 1;
            pkts_acked += 1;
        }
        let mss = u64::from(self.tcp.mss);
        self.tcp.snd_una = self.tcp.snd_una.max(cum * mss);
        let una_advanced = self.tcp.snd_una > prior_una;

        // 2. RTT and RTO timer.
        let (seq_rtt, ca_rtt) = times.rtts(now);
        rs.rtt = ca_rtt;
        if let (Some(rtt), Some(ca_rtt)) = (seq_rtt, ca_rtt) {
            self.rtt_sample(rtt, ca_rtt);
        }
        if una_advanced {
            self.backoff = 0;
            self.rto_deadline = (self.tcp.packets_out > 0).then(|| now + self.rto());
        }
        // 3. pkts_acked.
        let sample = AckSample {
            pkts_acked,
            rtt: rs.rtt,
            in_flight: prior_in_flight,
        };
        self.cc.pkts_acked(&mut self.tcp, &sample);

        // 4. Loss marking by transmission order.
        if let Some(max_tx) = times.max_tx {
            self.mark_losses(max_tx);
        }
        out.lost = (self.tcp.lost - prior_lost) as u32;

        // 5. Recovery state machine.
        self.recovery_state(ack.ece, &mut out.transitions);

        // 6. Rate sample; packet-timed round for tracing.
        rate::generate(&mut self.tcp, &mut rs, out.delivered, out.lost, false);
        if rs.delivered.is_some() && rs.prior_delivered >= self.round_end {
            self.round += 1;
            self.round_end = self.tcp.delivered;
        }

        // 7. tcp_cong_control.
        if self.cc.has_cong_control() {
            self.cc.cong_control(&mut self.tcp, &rs);
        } else {
            if matches!(self.tcp.ca_state, CaState::Cwr | CaState::Recovery) {
                self.prr(out.delivered, out.lost, una_advanced);
            } else if una_advanced {
                let ack = self.tcp.snd_una;
                self.cc.cong_avoid(&mut self.tcp, ack, out.delivered);
            }
            tcp_update_pacing_rate(&mut self.tcp);
        }
        if self.tcp.packets_out == 0 {
            self.rto_deadline = None;
        }
        out.rs = rs;
        out
    }

    fn deliver(
        &mut self,
        i: usize,
        sacked: bool,
        ece: bool,
        rs: &mut RateSample,
        times: &mut AckTimes,
    ) {
        let p = &mut self.pkts[i];
        if p.lost {
            p.lost = false;
            self.tcp.lost_out -= 1;
        }
        if p.retrans {
            p.retrans = false;
            self.tcp.retrans_out -= 1;
        }
        self.tcp.delivered += 1;
        if ece {
            self.tcp.delivered_ce += 1;
        }
        rate::on_packet_delivered(&mut self.tcp, rs, &mut p.tx, sacked);
        times.add(p.tx.send_time, sacked, p.ever_retrans);
        times.max_tx = Some(times.max_tx.map_or(p.tx_index, |m| m.max(p.tx_index)));
    }

    fn mark_losses(&mut self, max_tx: u64) {
        for p in self.pkts.iter_mut() {
            let late = p.tx_index + DUPTHRESH <= max_tx;
            if !late && !p.ever_retrans {
                // Originals are transmitted in packet order: none later is late.
                break;
            }
            if p.sacked || !late {
                continue;
            }
            mark_skb_lost(p, &mut self.tcp, &mut self.cc);
        }
    }
}
