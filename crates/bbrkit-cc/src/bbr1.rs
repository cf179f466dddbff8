//! BBRv1: Bottleneck Bandwidth and RTT, as Linux mainline `net/ipv4/tcp_bbr.c`.
//!
//! Owns the BBRv1 model and control loop. Must never read a clock (time is
//! `tcp.now`), draw randomness other than from the injected [`Random`], or do
//! I/O. Every constant below carries the kernel's name, value and fixed-point
//! unit, so traces can be compared with `ss -ti` output from a kernel flow.
//!
//! # The model
//!
//! On each ACK, update the model of the network path:
//!
//! ```text
//!   bottleneck_bandwidth = windowed_max(delivered / elapsed, 10 round trips)
//!   min_rtt              = windowed_min(rtt, 10 seconds)
//!   pacing_rate          = pacing_gain * bottleneck_bandwidth
//!   cwnd                 = max(cwnd_gain * bottleneck_bandwidth * min_rtt, 4)
//! ```
//!
//! The core algorithm does not react directly to packet loss or delay. It
//! may adjust the size of the next send per ACK when loss is observed
//! (packet conservation in the first round of recovery), or the sending rate
//! when it estimates there is a token-bucket policer (long-term `lt_bw`), to
//! keep the drop rate reasonable.
//!
//! # State machine (`enum bbr_mode`)
//!
//! ```text
//!              |
//!              V
//!     +---> STARTUP  ----+
//!     |        |         |
//!     |        V         |
//!     |      DRAIN   ----+
//!     |        |         |
//!     |        V         |
//!     +---> PROBE_BW ----+
//!     |      ^    |      |
//!     |      |    |      |
//!     |      +----+      |
//!     |                  |
//!     +---- PROBE_RTT <--+
//! ```
//!
//! A flow starts in STARTUP and doubles its sending rate each round
//! (pacing and cwnd gain 2/ln2). When the bandwidth estimate stops growing by
//! 25% for 3 rounds the pipe is full: DRAIN paces at 1/2.885 until the
//! in-flight data fits one BDP, then PROBE_BW cycles its pacing gain through
//! [5/4, 3/4, 1, 1, 1, 1, 1, 1], one phase per min_rtt, starting at a random
//! phase. If the min_rtt estimate has not been refreshed for 10 s, PROBE_RTT
//! cuts cwnd to 4 packets for 200 ms and one round, then returns to PROBE_BW
//! (or STARTUP if the pipe was never found full). The PROBE_BW → PROBE_BW
//! edge is the gain cycle, and the restart of gain cycling when the policer
//! model (`lt_bw`) is dropped after 48 rounds. [`LEGAL_TRANSITIONS`] lists the
//! edges; `docs/cc-bbr1.md` lists every deliberate deviation from the kernel.
//!
//! Reference: N. Cardwell, Y. Cheng, C. S. Gunn, S. Hassas Yeganeh,
//! V. Jacobson, "BBR: Congestion-Based Congestion Control", ACM Queue 14(5),
//! 2016. Like the kernel, BBR needs pacing: the transport must pace at
//! `tcp.pacing_rate` (Linux uses `fq` or TCP's internal pacing timer).
//!
//! # Units and time
//!
//! As in Linux: cwnd and in-flight data are in packets; bandwidth is
//! packets per microsecond `<< BW_SCALE` in a `u32`; gains are fractions of
//! [`BBR_UNIT`]. The rate sample's interval and RTT (nanoseconds here) are
//! truncated to whole microseconds where the kernel uses `tcp_mstamp` (µs);
//! the min_rtt stamp and the PROBE_RTT deadline use jiffies at [`HZ`].

mod ack_aggregation;
mod cwnd;
mod drain;
mod lt_bw;
mod mode;
mod pacing;
mod probe_bw;
mod probe_rtt;
mod round;
mod startup;
#[cfg(test)]
mod tests;

use crate::controller::{CongestionControl, Status};
use crate::filter::MinMax;
use crate::random::Random;
use crate::rate::RateSample;
use crate::tcp::{CaEvent, CaState, TCP_INFINITE_SSTHRESH, Tcp};
use crate::time::{Duration, Instant};
pub use mode::{LEGAL_TRANSITIONS, Mode, OBSERVABLE_TRANSITIONS};

/// `BW_SCALE`: bandwidth is packets/µs scaled by 2^24. One unit ≈ 715 bit/s
/// at a 1500-byte MSS; a `u32` holds 0.06 pkt/s (715 bit/s) to 256 Mpkt/s
/// (3 Tbit/s).
pub const BW_SCALE: u32 = 24;
/// `BW_UNIT = 1 << BW_SCALE`: one packet per microsecond.
pub const BW_UNIT: u64 = 1 << BW_SCALE;
/// `BBR_SCALE`: fractions (gains) are scaled by 2^8.
pub const BBR_SCALE: u32 = 8;
/// `BBR_UNIT = 1 << BBR_SCALE`: a gain of 1.0.
pub const BBR_UNIT: u32 = 1 << BBR_SCALE;

/// `CYCLE_LEN`: number of phases in the PROBE_BW pacing-gain cycle.
pub const CYCLE_LEN: u8 = 8;
/// `bbr_bw_rtts = CYCLE_LEN + 2`: window of the max-bandwidth filter, in
/// packet-timed rounds (a full gain cycle plus slack).
pub const BBR_BW_RTTS: u32 = CYCLE_LEN as u32 + 2;
/// `bbr_min_rtt_win_sec`: window of the min_rtt filter, in seconds; also
/// how long without a new min_rtt before PROBE_RTT.
pub const BBR_MIN_RTT_WIN_SEC: u64 = 10;
/// `bbr_probe_rtt_mode_ms`: minimum time at [`BBR_CWND_MIN_TARGET`] in
/// PROBE_RTT. 200 ms every 10 s bounds its throughput cost to about 2%.
pub const BBR_PROBE_RTT_MODE_MS: u64 = 200;
/// `bbr_min_tso_rate`: below this pacing rate (bit/s) send 1-packet bursts.
pub const BBR_MIN_TSO_RATE: u64 = 1_200_000;
/// `bbr_pacing_margin_percent`: pace about 1% below the estimated bw, on
/// average, to drive the bottleneck queue toward empty.
pub const BBR_PACING_MARGIN_PERCENT: u64 = 1;
/// `bbr_high_gain = BBR_UNIT * 2885 / 1000 + 1` (= 739, 2.887): 2/ln2, the
/// smallest pacing gain that doubles the sending rate each round, like slow
/// start. STARTUP pacing and cwnd gain; DRAIN cwnd gain.
pub const BBR_HIGH_GAIN: u32 = BBR_UNIT * 2885 / 1000 + 1;
/// `bbr_drain_gain = BBR_UNIT * 1000 / 2885` (= 88, 0.344): DRAIN pacing
/// gain, the inverse of the high gain, to drain STARTUP's queue in one round.
pub const BBR_DRAIN_GAIN: u32 = BBR_UNIT * 1000 / 2885;
/// `bbr_cwnd_gain = BBR_UNIT * 2` (2.0): PROBE_BW cwnd gain; tolerates
/// delayed and stretched ACKs.
pub const BBR_CWND_GAIN: u32 = BBR_UNIT * 2;
/// `bbr_pacing_gain[]`: the PROBE_BW cycle. 5/4 probes for more bandwidth,
/// 3/4 drains the queue that probe may have built (or yields to other
/// flows), then six phases cruise at 1.0.
pub const BBR_PACING_GAIN: [u32; CYCLE_LEN as usize] = [
    BBR_UNIT * 5 / 4,
    BBR_UNIT * 3 / 4,
    BBR_UNIT,
    BBR_UNIT,
    BBR_UNIT,
    BBR_UNIT,
    BBR_UNIT,
    BBR_UNIT,
];
/// `bbr_cycle_rand`: the starting PROBE_BW phase is randomised over this
/// many phases (every phase except the 3/4 one).
pub const BBR_CYCLE_RAND: u32 = 7;
/// `bbr_cwnd_min_target`: minimum cwnd, and the PROBE_RTT cwnd, in packets.
/// A sliding window ACKing every other packet needs 4 in flight.
pub const BBR_CWND_MIN_TARGET: u32 = 4;
/// `bbr_full_bw_thresh = BBR_UNIT * 5 / 4`: bandwidth growth of at least
/// 25% in a round means the pipe may not be full yet.
pub const BBR_FULL_BW_THRESH: u32 = BBR_UNIT * 5 / 4;
/// `bbr_full_bw_cnt`: after this many rounds without such growth, STARTUP
/// estimates the pipe is full (1: receive-window autotuning grows rwin,
/// 2: the sender fills it, 3: higher delivery-rate samples arrive).
pub const BBR_FULL_BW_CNT: u8 = 3;
/// `bbr_lt_intvl_min_rtts`: minimum rounds in a long-term sampling interval
/// (at most 4× this, 16, before the interval is abandoned).
pub const BBR_LT_INTVL_MIN_RTTS: u8 = 4;
/// `bbr_lt_loss_thresh`: an interval with lost/delivered ≥ 50/256 (≈ 19.5%,
/// "20%") is lossy enough to suggest a policer.
pub const BBR_LT_LOSS_THRESH: u64 = 50;
/// `bbr_lt_bw_ratio = BBR_UNIT / 8`: two intervals whose bandwidths differ
/// by at most 1/8 are "consistent".
pub const BBR_LT_BW_RATIO: u64 = BBR_UNIT as u64 / 8;
/// `bbr_lt_bw_diff = 4000 / 8`: ... or by at most 4 kbit/s (500 bytes/s).
pub const BBR_LT_BW_DIFF: u64 = 4000 / 8;
/// `bbr_lt_bw_max_rtts`: once policed, use `lt_bw` for this many rounds.
pub const BBR_LT_BW_MAX_RTTS: u8 = 48;
/// `bbr_extra_acked_gain = BBR_UNIT`: gain on the ACK-aggregation cwnd bonus.
pub const BBR_EXTRA_ACKED_GAIN: u32 = BBR_UNIT;
/// `bbr_extra_acked_win_rtts`: rounds per extra_acked max-filter slot (two
/// slots, so the filter spans 5–10 rounds).
pub const BBR_EXTRA_ACKED_WIN_RTTS: u8 = 5;
/// `bbr_ack_epoch_acked_reset_thresh = 1 << 20`: restart the aggregation
/// epoch after this many packets ACKed in it (a very old epoch).
pub const BBR_ACK_EPOCH_ACKED_RESET_THRESH: u32 = 1 << 20;
/// `bbr_extra_acked_max_us`: the aggregation bonus is capped at bw × 100 ms.
pub const BBR_EXTRA_ACKED_MAX_US: u64 = 100 * 1000;

/// Linux `TCP_INIT_CWND`, used by BBR as the cwnd cap without an RTT sample
/// and as the "too little delivered yet" threshold in STARTUP.
pub const TCP_INIT_CWND: u32 = crate::tcp::TCP_INIT_CWND;

/// `CONFIG_HZ` assumed for the kernel's `tcp_jiffies32` stamps (min_rtt
/// stamp, PROBE_RTT deadline). 1000 gives 1 ms resolution (Fedora, RHEL,
/// Ubuntu lowlatency); Debian and this project's CI kernel use 250 (4 ms).
/// The difference shifts PROBE_RTT entry and exit by at most one jiffy.
pub const HZ: u64 = 1000;

const USEC_PER_SEC: u64 = 1_000_000;
const USEC_PER_MSEC: u64 = 1_000;

/// `bbr->mode` with the data that belongs to one mode inside its variant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Startup,
    Drain,
    ProbeBw(probe_bw::Cycle),
    ProbeRtt(probe_rtt::Probe),
}

impl State {
    fn mode(self) -> Mode {
        match self {
            State::Startup => Mode::Startup,
            State::Drain => Mode::Drain,
            State::ProbeBw(_) => Mode::ProbeBw,
            State::ProbeRtt(_) => Mode::ProbeRtt,
        }
    }
}

/// BBRv1 congestion control block (Linux `struct bbr`).
pub struct Bbr1 {
    /// The only source of randomness (the kernel's `prandom_u32_max`).
    rng: Box<dyn Random + Send>,
    /// `mode` plus the per-mode data (`cycle_idx`, `cycle_mstamp`,
    /// `probe_rtt_done_stamp`, `probe_rtt_round_done`).
    state: State,
    /// `min_rtt_us`: min RTT in the 10 s window; `None` = the kernel's `~0U`.
    min_rtt_us: Option<u32>,
    /// `min_rtt_stamp`: when `min_rtt_us` was taken, in jiffies.
    min_rtt_stamp: u64,
    /// `bw`: max recent delivery rate (pkts/µs << 24) over 10 rounds.
    bw: MinMax<u32, u32>,
    /// `rtt_cnt`: packet-timed rounds elapsed.
    rtt_cnt: u32,
    /// `next_rtt_delivered`: `tcp.delivered` at the end of the current round.
    next_rtt_delivered: u64,
    /// `prev_ca_state`: the loss-recovery state on the previous ACK.
    prev_ca_state: CaState,
    /// `packet_conservation`: in the first round of fast recovery.
    packet_conservation: bool,
    /// `round_start`: this ACK started a new packet-timed round.
    round_start: bool,
    /// `idle_restart`: restarting after idle (until data is ACKed again).
    idle_restart: bool,
    /// `pacing_gain` / BBR_UNIT.
    pacing_gain: u32,
    /// `cwnd_gain` / BBR_UNIT.
    cwnd_gain: u32,
    /// `full_bw_reached`: STARTUP estimated the pipe full (never cleared).
    full_bw_reached: bool,
    /// `full_bw_cnt`: rounds without 25% bw growth.
    full_bw_cnt: u8,
    /// `full_bw`: bw at the last 25% growth step.
    full_bw: u32,
    /// `has_seen_rtt`: the pacing rate was initialised from a real RTT.
    has_seen_rtt: bool,
    /// `prior_cwnd`: cwnd before recovery or PROBE_RTT, restored after.
    prior_cwnd: u32,
    /// Long-term (policer) bandwidth sampling.
    lt: lt_bw::LtBw,
    /// ACK-aggregation (`extra_acked`) estimator.
    aggr: ack_aggregation::AckAggregation,
}

impl std::fmt::Debug for Bbr1 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bbr1")
            .field("state", &self.state)
            .field("min_rtt_us", &self.min_rtt_us)
            .field("max_bw", &self.bw.get())
            .field("rtt_cnt", &self.rtt_cnt)
            .field("pacing_gain", &self.pacing_gain)
            .field("cwnd_gain", &self.cwnd_gain)
            .field("full_bw_reached", &self.full_bw_reached)
            .field("lt", &self.lt)
            .field("aggr", &self.aggr)
            .finish_non_exhaustive()
    }
}

/// `tcp_jiffies32` at [`HZ`] (without the kernel's 32-bit wrap).
fn jiffies(now: Instant) -> u64 {
    now.as_nanos() / (1_000_000_000 / HZ)
}

/// `msecs_to_jiffies`.
const fn msecs_to_jiffies(ms: u64) -> u64 {
    ms * HZ / 1000
}

/// `tcp_stamp_us_delta(t1, t0)`: microseconds from `t0` to `t1`, at least 0.
fn us_delta(t1: u64, t0: u64) -> u64 {
    t1.saturating_sub(t0)
}

/// A rate sample's interval in whole microseconds (`rs->interval_us`); 0 if
/// invalid. Deviation (docs/cc-bbr1.md #5): the sampler works in ns; like the
/// kernel's µs `tcp_mstamp`, BBR sees it truncated to µs.
fn interval_us(rs: &RateSample) -> u64 {
    rs.interval
        .map_or(0, |d| d.as_micros().min(u64::MAX as u128) as u64)
}

/// Whether `rs` is a valid bandwidth observation (`rs->delivered >= 0 &&
/// rs->interval_us > 0`).
fn is_valid_sample(rs: &RateSample) -> bool {
    rs.delivered.is_some() && interval_us(rs) > 0
}

impl Bbr1 {
    /// `bbr_init`: a fresh BBRv1 for the connection `tcp` (sets ssthresh to
    /// infinity and the initial pacing rate). `rng` is used only for the
    /// random starting phase of PROBE_BW.
    pub fn new(tcp: &mut Tcp, rng: Box<dyn Random + Send>) -> Self {
        tcp.snd_ssthresh = TCP_INFINITE_SSTHRESH;
        let mut bbr = Bbr1 {
            rng,
            state: State::Startup,
            min_rtt_us: tcp
                .min_rtt
                .map(|d| d.as_micros().min(u128::from(u32::MAX)) as u32),
            min_rtt_stamp: jiffies(tcp.now),
            bw: MinMax::new(0, 0),
            rtt_cnt: 0,
            // Mainline since 2022 ("fix u32 wrap bug in round logic if
            // bbr_init() called after 2B packets") starts the first round
            // at the current delivered count; older kernels used 0.
            next_rtt_delivered: tcp.delivered,
            prev_ca_state: CaState::Open,
            packet_conservation: false,
            round_start: false,
            idle_restart: false,
            // The kernel's struct is zeroed; gains are set on the first ACK.
            pacing_gain: 0,
            cwnd_gain: 0,
            full_bw_reached: false,
            full_bw_cnt: 0,
            full_bw: 0,
            has_seen_rtt: false,
            prior_cwnd: 0,
            lt: lt_bw::LtBw::default(),
            aggr: ack_aggregation::AckAggregation::new(tcp.now.as_micros()),
        };
        bbr.init_pacing_rate_from_rtt(tcp);
        bbr.reset_lt_bw_sampling(tcp);
        bbr
    }

    /// The current mode.
    pub fn mode(&self) -> Mode {
        self.state.mode()
    }

    /// The PROBE_BW gain-cycle index (`cycle_idx`), `None` outside PROBE_BW.
    pub fn cycle_idx(&self) -> Option<u8> {
        match self.state {
            State::ProbeBw(c) => Some(c.idx),
            _ => None,
        }
    }

    /// Packet-timed rounds elapsed (`rtt_cnt`); never decreases.
    pub fn round_count(&self) -> u32 {
        self.rtt_cnt
    }

    /// `bbr_full_bw_reached`: STARTUP has estimated the pipe is full.
    pub fn full_bw_reached(&self) -> bool {
        self.full_bw_reached
    }

    /// `bbr_max_bw`: the windowed max delivery rate, pkts/µs << [`BW_SCALE`].
    pub fn max_bw(&self) -> u32 {
        self.bw.get()
    }

    /// `bbr_bw`: the bandwidth in use, `lt_bw` while policed, else [`Self::max_bw`].
    pub fn bw(&self) -> u32 {
        if self.lt.use_bw {
            self.lt.bw
        } else {
            self.max_bw()
        }
    }

    /// The long-term (policer) bandwidth, if it is in use.
    pub fn lt_bw(&self) -> Option<u32> {
        self.lt.use_bw.then_some(self.lt.bw)
    }

    /// `min_rtt_us`, `None` before the first RTT sample.
    pub fn min_rtt_us(&self) -> Option<u32> {
        self.min_rtt_us
    }

    /// Current pacing and cwnd gains, over [`BBR_UNIT`].
    pub fn gains(&self) -> (u32, u32) {
        (self.pacing_gain, self.cwnd_gain)
    }

    /// `bbr_extra_acked`: recent ACK-aggregation excess, packets.
    pub fn extra_acked(&self) -> u32 {
        self.aggr.extra_acked()
    }

    /// Whether the first round of fast recovery (packet conservation) is on.
    pub fn packet_conservation(&self) -> bool {
        self.packet_conservation
    }

    /// `prior_cwnd`: the cwnd to restore after recovery or PROBE_RTT.
    pub fn prior_cwnd(&self) -> u32 {
        self.prior_cwnd
    }

    /// Changes mode, checking in debug builds that the edge is legal.
    fn transition_to(&mut self, next: State) {
        debug_assert!(
            LEGAL_TRANSITIONS.contains(&(self.state.mode(), next.mode())),
            "illegal BBRv1 transition {:?} -> {:?}",
            self.state.mode(),
            next.mode()
        );
        self.state = next;
    }

    /// `bbr_update_model`.
    fn update_model(&mut self, tcp: &mut Tcp, rs: &RateSample) {
        self.update_bw(tcp, rs);
        self.update_ack_aggregation(tcp, rs);
        self.update_cycle_phase(tcp, rs);
        self.check_full_bw_reached(rs);
        self.check_drain(tcp);
        self.update_min_rtt(tcp, rs);
        self.update_gains();
    }

    /// `bbr_update_gains`: the pacing and cwnd gains of the current mode.
    fn update_gains(&mut self) {
        (self.pacing_gain, self.cwnd_gain) = match self.state {
            State::Startup => (BBR_HIGH_GAIN, BBR_HIGH_GAIN),
            State::Drain => (BBR_DRAIN_GAIN, BBR_HIGH_GAIN),
            State::ProbeBw(c) => {
                let pacing = if self.lt.use_bw {
                    BBR_UNIT
                } else {
                    BBR_PACING_GAIN[usize::from(c.idx)]
                };
                (pacing, BBR_CWND_GAIN)
            }
            State::ProbeRtt(_) => (BBR_UNIT, BBR_UNIT),
        };
    }

    /// `bbr_save_cwnd`: remember the "last known good" cwnd, to restore it
    /// after recovery or PROBE_RTT.
    fn save_cwnd(&mut self, tcp: &Tcp) {
        if self.prev_ca_state < CaState::Recovery && self.mode() != Mode::ProbeRtt {
            self.prior_cwnd = tcp.snd_cwnd;
        } else {
            // Recovery or PROBE_RTT have temporarily cut cwnd.
            self.prior_cwnd = self.prior_cwnd.max(tcp.snd_cwnd);
        }
    }

    /// Bits per second for a bandwidth in BBR units (as `bbr_get_info`,
    /// without the pacing margin).
    fn bw_to_bps(tcp: &Tcp, bw: u32) -> u64 {
        let bytes = (u128::from(bw) * u128::from(tcp.mss) * u128::from(USEC_PER_SEC)) >> BW_SCALE;
        (bytes * 8).min(u128::from(u64::MAX)) as u64
    }
}

impl CongestionControl for Bbr1 {
    fn name(&self) -> &'static str {
        "bbr"
    }

    fn has_cong_control(&self) -> bool {
        true
    }

    /// `bbr_main`: update the model, then set pacing rate and cwnd.
    fn cong_control(&mut self, tcp: &mut Tcp, rs: &RateSample) {
        self.update_model(tcp, rs);
        let bw = self.bw();
        self.set_pacing_rate(tcp, bw, self.pacing_gain);
        self.set_cwnd(tcp, rs, rs.acked_sacked, bw, self.cwnd_gain);
    }

    /// `bbr_ssthresh`: entering loss recovery, so save cwnd for when we exit
    /// or undo recovery. BBR does not use ssthresh; it is returned unchanged.
    fn ssthresh(&mut self, tcp: &mut Tcp) -> u32 {
        self.save_cwnd(tcp);
        tcp.snd_ssthresh
    }

    /// `bbr_undo_cwnd`: a spurious slow-down; reset full-pipe detection and
    /// long-term sampling, keep the current cwnd.
    fn undo_cwnd(&mut self, tcp: &mut Tcp) -> u32 {
        self.full_bw = 0;
        self.full_bw_cnt = 0;
        self.reset_lt_bw_sampling(tcp);
        tcp.snd_cwnd
    }

    /// `bbr_set_state`: an RTO (`Loss`) ends the round and counts as a loss
    /// for policer detection.
    fn set_state(&mut self, tcp: &mut Tcp, new_state: CaState) {
        if new_state == CaState::Loss {
            self.prev_ca_state = CaState::Loss;
            self.full_bw = 0;
            self.round_start = true; // treat RTO like the end of a round
            // The kernel passes a rate sample with only `losses = 1` set.
            self.lt_bw_sampling(tcp, 1, false);
        }
    }

    /// `bbr_cwnd_event`: on the first send after idle (`TxStart` while
    /// app-limited), mark the restart and pace at the estimated bw.
    fn cwnd_event(&mut self, tcp: &mut Tcp, event: CaEvent) {
        if event == CaEvent::TxStart && tcp.app_limited != 0 {
            self.idle_restart = true;
            self.aggr.restart_epoch(tcp.now.as_micros());
            // Avoid pointless buffer overflows: pace at est. bw if we don't
            // need more speed (restarting from idle and app-limited).
            match self.state {
                State::ProbeBw(_) => self.set_pacing_rate(tcp, self.bw(), BBR_UNIT),
                State::ProbeRtt(_) => self.check_probe_rtt_done(tcp),
                State::Startup | State::Drain => {}
            }
        }
    }

    /// `bbr_tso_segs_goal` (the kernel's `min_tso_segs` hook feeds the same
    /// value into `tcp_tso_autosize`): the send quantum in packets.
    fn tso_segs(&self, tcp: &Tcp) -> Option<u32> {
        Some(Self::tso_segs_goal(tcp))
    }

    fn status(&self, tcp: &Tcp) -> Status {
        Status {
            state: self.mode().name(),
            bw_bps: Some(Self::bw_to_bps(tcp, self.bw())),
            min_rtt: self
                .min_rtt_us
                .map(|us| Duration::from_micros(u64::from(us))),
            pacing_gain: Some(f64::from(self.pacing_gain) / f64::from(BBR_UNIT)),
            cwnd_gain: Some(f64::from(self.cwnd_gain) / f64::from(BBR_UNIT)),
            lt_bw_bps: self.lt_bw().map(|bw| Self::bw_to_bps(tcp, bw)),
            ..Status::default()
        }
    }
}
