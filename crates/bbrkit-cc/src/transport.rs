//! The one TCP transport: the parts of Linux `tcp_input.c`, `tcp_output.c`,
//! `tcp_recovery.c` and `tcp_timer.c` that decide results under loss,
//! sans-IO and generic over the controller, driving a
//! [`CongestionControl`] exactly as the kernel drives `tcp_congestion_ops`.
//! `bbrkit-sim` runs every flow on it; the controllers' unit, property and
//! snapshot tests run it through the small synthetic path of
//! `crate::testing` (feature `testing`). Owns one flow's sequence space,
//! scoreboard, timers and counters; must never read a clock or randomness
//! (time comes in as `now`, the controller brings its own `Random`), and
//! never decides what the network does with a segment.
//!
//! ```text
//!  app ──write──► Sender ──DataPacket──► (network) ──► Receiver
//!                   ▲  on_ack / on_rto / on_reo_timer / on_tlp_timer / on_pace_timer
//!                   └────────────── AckPacket (cum, SACK blocks, ECE) ◄──┘
//! ```
//!
//! Per ACK, in Linux `tcp_ack` order (`transport/ack.rs`): SACK tagging
//! (`tcp_sacktag_write_queue`) → cumulative ACK (`tcp_clean_rtx_queue`:
//! delivery accounting, rate-sampler hooks, RTT samples, `pkts_acked`) →
//! RACK loss detection (`tcp_rack_mark_lost`) → the recovery state machine
//! (`tcp_fastretrans_alert`; ECE: `tcp_enter_cwr`) → `tcp_rate_gen` →
//! `tcp_cong_control` (`cong_control` for BBR; PRR (RFC 6937) in CWR and
//! Recovery or `cong_avoid` otherwise for Reno/CUBIC, then
//! `tcp_update_pacing_rate`) → re-arm the RTO → transmit.
//!
//! Loss detection is RACK (time-based, with Linux's reordering window:
//! `min_rtt/4` until three segments are SACKed, then 0) and the RTO
//! (`tcp_rtt_estimator`, `__tcp_set_rto`, exponential backoff), in
//! `transport/recovery.rs` and [`rtt`]; a tail loss is probed after two RTTs
//! (`transport/tlp.rs`, `tcp_send_loss_probe`, with v3's `CA_EVENT_TLP_RECOVERY`).
//! Spurious episodes are not detected (the paths
//! here never reorder); a test may declare one ([`Sender::mark_spurious`]),
//! and the episode then ends in undo (`tcp_try_undo_recovery`).
//!
//! Transmission (`transport/output.rs`) follows `tcp_write_xmit` with Linux's EDT
//! pacing (`tcp_update_skb_after_send`): a burst of `tso_segs` segments
//! leaves when `now >= wstamp`, then `wstamp` advances by its payload length
//! at `pacing_rate` (not for the first 10 segments); `tcp_cwnd_validate`
//! keeps the raw `tp->is_cwnd_limited` and `max_packets_out`.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use crate::controller::{CongestionControl, Status};
use crate::rate::{RateSample, TxSnapshot};
use crate::tcp::{CaEvent, CaState, Tcp};
use crate::time::{Duration, Instant};

mod ack;
mod output;
pub mod ranges;
pub mod receiver;
mod recovery;
pub mod rtt;
mod tlp;
pub mod wire;

use ranges::RangeSet;
pub use receiver::Receiver;
use rtt::RttEstimator;
pub use wire::{AckPacket, DataPacket, HEADER_BYTES, MAX_SACK_BLOCKS, SackBlock};

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
    /// Bytes to send; `None` = unlimited (bulk). A finite flow completes
    /// when every byte is acknowledged.
    pub size: Option<u64>,
    /// Pace even if the controller does not (Reno/CUBIC with fq); a
    /// controller with `cong_control` (BBR) always paces, as `bbr_init`
    /// asks for (`SK_PACING_NEEDED`).
    pub pace_loss_based: bool,
    /// Receive window in bytes; `None` = unlimited.
    pub rwnd: Option<u64>,
    /// Initial congestion window, packets.
    pub init_cwnd: u32,
    /// Linux `tcp_slow_start_after_idle`: `tcp_cwnd_restart` after an idle
    /// period longer than the RTO (not for `cong_control` controllers).
    pub slow_start_after_idle: bool,
    /// The application writes data itself ([`Sender::write`]) instead of
    /// having `size` (or unlimited) bytes ready from the start.
    pub app_writes: bool,
    /// Tail loss probes (Linux `tcp_early_retrans` = 3, the default; see
    /// `transport/tlp.rs`).
    pub tlp: bool,
    /// ECN negotiated on a path with a shallow, step-threshold marker
    /// (DCTCP/L4S style): sets `tcp.ecn_enabled` and `tcp.ecn_low`.
    pub ecn: bool,
}

impl SenderConfig {
    /// A bulk flow with Linux's defaults: initial window 10, unpaced unless
    /// the controller paces, no receive-window limit, idle restart on.
    pub fn bulk(mss: u32) -> Self {
        SenderConfig {
            mss,
            size: None,
            pace_loss_based: false,
            rwnd: None,
            init_cwnd: crate::tcp::TCP_INIT_CWND,
            slow_start_after_idle: true,
            app_writes: false,
            tlp: true,
            ecn: false,
        }
    }
}

/// Counters of one sender.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SenderStats {
    /// Data packets sent, including retransmissions.
    pub packets_sent: u64,
    /// Retransmitted packets.
    pub retransmits: u64,
    /// Retransmission timeouts.
    pub rtos: u64,
    /// Fast-recovery episodes.
    pub recoveries: u64,
    /// Episodes undone as spurious ([`Sender::mark_spurious`]).
    pub undos: u64,
    /// Tail-loss probes sent.
    pub tlps: u64,
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
    /// RTT of the newest delivered never-retransmitted segment (`ca_rtt`).
    pub rtt: Option<Duration>,
}

/// One flow's sending side, generic over its controller.
pub struct Sender<C> {
    /// The controller-visible transport state.
    pub tcp: Tcp,
    /// The congestion controller.
    pub cc: C,
    cfg: SenderConfig,
    flow: u32,
    paced: bool,
    /// Segments the application has made available (`write_seq`); `None` =
    /// unlimited.
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
    /// `tp->prior_ssthresh`: ssthresh to restore on undo.
    prior_ssthresh: u32,
    /// The current (or next) episode ends in undo ([`Sender::mark_spurious`]).
    undo_next_exit: bool,
    /// `tp->tlp_high_seq`: `snd_nxt` when the outstanding probe was sent.
    tlp_high_seq: Option<u64>,
    /// `tp->tlp_retrans`: the outstanding probe was a retransmission.
    tlp_retrans: bool,
    cwnd_usage_seq: u64,
    wstamp: Instant,
    data_segs_out: u64,
    last_rs: Option<RateSample>,
    /// When the retransmission timer is due.
    pub rto_deadline: Option<Instant>,
    /// When the RACK reordering timer is due.
    pub reo_deadline: Option<Instant>,
    /// When the tail-loss probe is due.
    pub tlp_deadline: Option<Instant>,
    /// When the pacer allows the next send (only while blocked by pacing).
    pub pace_deadline: Option<Instant>,
    /// When every byte was acknowledged (finite flows).
    pub completed: Option<Instant>,
    /// Counters.
    pub stats: SenderStats,
}

impl<C> std::fmt::Debug for Sender<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sender")
            .field("flow", &self.flow)
            .field("una", &self.una)
            .field("nxt", &self.nxt)
            .field("tcp", &self.tcp)
            .finish_non_exhaustive()
    }
}

impl<C: CongestionControl> Sender<C> {
    /// A sender for `flow` created at `now`, its controller built from the
    /// fresh `Tcp` by `build` (`ops->init`).
    pub fn new(
        flow: u32,
        cfg: SenderConfig,
        now: Instant,
        build: impl FnOnce(&mut Tcp) -> C,
    ) -> Self {
        let mut tcp = Tcp::new(now, cfg.mss);
        tcp.snd_cwnd = cfg.init_cwnd.max(1);
        tcp.ecn_enabled = cfg.ecn;
        tcp.ecn_low = cfg.ecn;
        Self::with_tcp(flow, cfg, tcp, build)
    }

    /// As [`Sender::new`] on a prepared `tcp` (ECN negotiated, ...).
    pub fn with_tcp(
        flow: u32,
        cfg: SenderConfig,
        mut tcp: Tcp,
        build: impl FnOnce(&mut Tcp) -> C,
    ) -> Self {
        let cc = build(&mut tcp);
        let paced = cfg.pace_loss_based || cc.has_cong_control();
        tcp.paced = paced;
        let total_segs = if cfg.app_writes {
            Some(0)
        } else {
            cfg.size.map(|s| s.div_ceil(u64::from(cfg.mss)))
        };
        let now = tcp.now;
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
            prior_ssthresh: 0,
            undo_next_exit: false,
            tlp_high_seq: None,
            tlp_retrans: false,
            cwnd_usage_seq: 0,
            wstamp: now,
            data_segs_out: 0,
            last_rs: None,
            rto_deadline: None,
            reo_deadline: None,
            tlp_deadline: None,
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

    /// The next new segment number (`snd_nxt` in segments).
    pub fn nxt(&self) -> u64 {
        self.nxt
    }

    /// Segments in the scoreboard (sent, not cumulatively acknowledged).
    pub fn scoreboard_len(&self) -> usize {
        self.segs.len()
    }

    /// The RTO with the current backoff (`inet_csk(sk)->icsk_rto`).
    pub fn rto(&self) -> Duration {
        self.rtt.rto_backed_off(self.backoff)
    }

    /// The application writes `segs` more segments (`tcp_sendmsg`); only
    /// with [`SenderConfig::app_writes`]. Call [`Sender::try_send`] after.
    pub fn write(&mut self, segs: u64) {
        if let Some(t) = self.total_segs.as_mut() {
            *t += segs;
        }
    }

    /// The application has `segs` segments ready beyond what was sent
    /// (`None`: unlimited), replacing what it had written before.
    pub fn set_unsent(&mut self, segs: Option<u64>) {
        self.total_segs = segs.map(|n| self.nxt + n);
    }

    /// Change the receive window (bytes; `None` = unlimited).
    pub fn set_rwnd(&mut self, rwnd: Option<u64>) {
        self.cfg.rwnd = rwnd;
    }

    /// Segments written by the application and not yet sent.
    pub fn unsent_segs(&self) -> u64 {
        self.total_segs.map_or(u64::MAX, |t| t - self.nxt)
    }

    /// Declare the current (or next) fast recovery or RTO episode spurious,
    /// as DSACKs or timestamps would show (Linux `tcp_may_undo`): when it
    /// ends (`snd_una >= high_seq`) the transport calls `undo_cwnd()` and
    /// restores ssthresh instead of setting cwnd = ssthresh
    /// (`tcp_try_undo_recovery` / `tcp_try_undo_loss`).
    pub fn mark_spurious(&mut self) {
        self.undo_next_exit = true;
    }

    fn has_unsent(&self) -> bool {
        self.total_segs.is_none_or(|t| self.nxt < t)
    }

    fn unsent_bytes(&self) -> u64 {
        match (self.total_segs, self.cfg.size) {
            (None, _) => u64::MAX,
            (Some(t), None) => (t - self.nxt) * u64::from(self.cfg.mss),
            (Some(_), Some(s)) => s - self.seq_bytes(self.nxt),
        }
    }

    fn set_state(&mut self, state: CaState) {
        if self.tcp.ca_state != state {
            self.cc.set_state(&mut self.tcp, state);
            self.tcp.ca_state = state;
        }
    }

    fn arm_rto(&mut self, now: Instant) {
        if self.tcp.packets_out == 0 {
            self.rto_deadline = None;
        } else {
            self.rto_deadline = Some(now + self.rto());
        }
    }

    /// The connection starts at `now`: send the initial window.
    pub fn start(&mut self, now: Instant, out: &mut Vec<DataPacket>) {
        self.tcp.now = now;
        self.wstamp = now;
        self.try_send(now, out);
    }

    /// Linux `tcp_cwnd_restart`: the first send after an idle period longer
    /// than the RTO halves cwnd once per idle RTO, down to the restart window.
    fn cwnd_restart(&mut self, now: Instant) {
        let idle = now - self.tcp.lsndtime;
        let rto = self.rto();
        if self.stats.packets_sent == 0 || idle <= rto {
            return;
        }
        self.cc.cwnd_event(&mut self.tcp, CaEvent::CwndRestart);
        let restart = crate::tcp::TCP_INIT_CWND.min(self.tcp.snd_cwnd);
        // tcp_current_ssthresh: keep 3/4 of cwnd as ssthresh.
        let cwnd = self.tcp.snd_cwnd;
        self.tcp.snd_ssthresh = self.tcp.snd_ssthresh.max((cwnd >> 1) + (cwnd >> 2));
        // `while ((delta -= rto) > 0 && cwnd > restart) cwnd >>= 1`.
        let mut delta = ((idle.as_nanos() - 1) / rto.as_nanos().max(1)) as u32;
        let mut cwnd = cwnd;
        while delta > 0 && cwnd > restart {
            cwnd >>= 1;
            delta -= 1;
        }
        self.tcp.set_cwnd(cwnd.max(restart));
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
