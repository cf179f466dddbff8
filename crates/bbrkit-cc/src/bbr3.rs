//! BBRv3 (google/bbr branch v3 `net/ipv4/tcp_bbr.c`, `BBR_VERSION 3`) and
//! BBRv2 (the same machinery with the google/bbr v2alpha parameter values).
//!
//! Owns the BBRv2/v3 model and state machine. Must never read a clock, draw
//! global randomness or do I/O: time is [`Tcp::now`], randomness the
//! [`Random`] given to [`Bbr3::new`], and all output goes to [`Tcp`]
//! (`snd_cwnd`, `pacing_rate`, `snd_ssthresh`) as in Linux.
//!
//! # The model
//!
//! BBR estimates the path's bottleneck bandwidth and round-trip propagation
//! delay, and paces at about `bw` while keeping about `BDP = bw · min_rtt` in
//! flight. BBRv3 bounds that model from above and below with loss and ECN:
//!
//! ```text
//!   long-term ("hi") bounds, probed for and cut only on high loss/ECN:
//!     max_bw      = max(bw_hi[0], bw_hi[1])      max delivery rate, this + last ProbeBW cycle
//!     inflight_hi                                 most data in flight without >2% loss / >50% CE
//!   short-term ("lo") bounds, cut by beta (×0.7) per round with loss when NOT probing:
//!     bw_lo, inflight_lo                          reset on REFILL and on leaving PROBE_RTT
//!   used:
//!     bw       = min(max_bw, bw_lo)                        pacing_rate = bw · pacing_gain · 0.99
//!     cwnd     = min(bdp(bw)·cwnd_gain + extra_acked,       (quantized, ≥ 4 packets)
//!                    inflight_hi (DOWN/REFILL/UP) | inflight_hi·0.85 (CRUISE, PROBE_RTT),
//!                    inflight_lo)
//!     min_rtt  = min RTT over 10 s; probe_rtt_min = min RTT over 5 s (schedules PROBE_RTT)
//! ```
//!
//! # State diagram
//!
//! ```text
//!              │ init
//!              ▼
//!   ┌─────► STARTUP ── bw plateau (3 rounds < +25%) | loss (≥6 loss events and >2% lost
//!   │        │ gain 2.77/2.0      in a Recovery round) | ECN (2 rounds CE ≥ 50%)
//!   │        ▼
//!   │      DRAIN  (pacing 0.35) ── inflight ≤ BDP ─┐
//!   │                                              ▼
//!   │   ┌──────────────────────── PROBE_BW ───────────────────────────────────┐
//!   │   │ DOWN (0.91) ── inflight ≤ min(BDP, inflight_hi − 15%) ──► CRUISE (1.0)
//!   │   │   │  ▲                                                   │
//!   │   │   │  └──── UP (1.25, cwnd gain 2.25): loss>2% | CE>50% | │ probe time:
//!   │   │   │        plateau | inflight ≥ inflight_hi after a       │ 2–3 s (random) or
//!   │   │   │        too-high probe                ▲                │ min(63, BDP) rounds
//!   │   │   └── probe time ──────────────► REFILL (1.0) ◄──────────┘
//!   │   │                                   └─ one round ─► UP
//!   │   └─────────────────────────────────────────────────────────────────────┘
//!   │        │ any state: no lower RTT for 5 s (and not restarting from idle)
//!   │        ▼
//!   └──── PROBE_RTT: cwnd ≤ max(4, BDP/2) for max(200 ms, 1 round), then
//!          full_bw_reached ? PROBE_BW DOWN→CRUISE : STARTUP
//! ```
//!
//! [`StateSteps::is_legal_step`] lists the single steps; one call may take several
//! (e.g. STARTUP→DRAIN→DOWN→CRUISE on one ACK), recorded in
//! [`Bbr3::last_transitions`].
//!
//! # A flow's life
//!
//! STARTUP doubles the sending rate each round until the delivery rate stops
//! growing, or loss or ECN says the queue overflowed (then `inflight_hi` is
//! set). DRAIN empties the queue STARTUP built. PROBE_BW then cycles: DOWN
//! drains what UP queued, CRUISE sends at `bw` with 15% headroom below
//! `inflight_hi` for 2–3 s (or fewer rounds when a Reno flow with our BDP
//! would probe sooner), REFILL fills the pipe for one round, UP probes with
//! a pacing gain of 1.25 and raises `inflight_hi` exponentially until loss,
//! ECN or a plateau ends the probe. Every 5 s without a new RTT minimum,
//! PROBE_RTT halves cwnd for 200 ms so all flows can see the empty queue.
//!
//! # Per ACK ([`CongestionControl::cong_control`], Linux `bbr_main`)
//!
//! round start → ECN alpha → bw sample → latest delivery signals → (fast
//! path) → update_model {congestion signals and lower bounds, ACK
//! aggregation, Startup loss exit, full-bw detector, drain, ProbeBW cycle and
//! upper bounds, min_rtt and PROBE_RTT} → gains → pacing rate → cwnd →
//! bound cwnd by the inflight model.
//!
//! # References and time units
//!
//! Code: google/bbr v3 `net/ipv4/tcp_bbr.c` (commit 001a430b3ddb); BBRv2
//! values from google/bbr v2alpha `net/ipv4/tcp_bbr2.c` (commit
//! 0487ade55081). Spec: draft-ietf-ccwg-bbr. Cardwell et al., "BBR:
//! Congestion-Based Congestion Control", ACM Queue 14(5), 2016. Where Linux
//! and the draft disagree we follow Linux. Like Linux, counts are packets,
//! bandwidth is packets/µs << 24 ([`params::BW_SCALE`]), gains are /256;
//! min_rtt and PROBE_RTT stamps are jiffies (`HZ = 1000`, derived from
//! [`Tcp::now`]), the ProbeBW clock is µs. Deliberate deviations are marked
//! `DEVIATION` where they happen and listed in docs/cc-bbr3.md.
//!
//! Deployment note (as in Linux): BBR must be paced; the transport must honour
//! [`Tcp::pacing_rate`] and send in bursts of at most [`Bbr3::tso_segs`].

mod ack_aggregation;
mod bounds;
mod counters;
mod cwnd;
mod drain;
mod ecn;
mod loss;
mod pacing;
pub mod params;
mod probe_bw;
mod probe_rtt;
mod round;
mod startup;
mod state;
mod v2alpha;

#[cfg(test)]
mod tests;

pub use counters::{Counters, Hit};
pub use params::Bbr3Params;
pub use state::{LEGAL_STEPS, State, StateSteps};

use std::cell::Cell;

use crate::bbr1::Mode;
use crate::controller::{CongestionControl, Status};
use crate::random::Random;
use crate::rate::{RateSample, TxSnapshot};
use crate::tcp::{CaEvent, CaState, Tcp};
use crate::time::Instant;
use params::{BBR_UNIT, INF, phase};
use round::Sample;

/// Linux `enum bbr_ack_phase`: how the incoming ACKs relate to our probing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AckPhase {
    /// `BBR_ACKS_INIT`: not probing, not getting probe feedback.
    Init,
    /// `BBR_ACKS_REFILLING`: sending at the estimated bw to fill the pipe.
    Refilling,
    /// `BBR_ACKS_PROBE_STARTING`: inflight rising to probe bw.
    ProbeStarting,
    /// `BBR_ACKS_PROBE_FEEDBACK`: getting feedback from bw probing.
    ProbeFeedback,
    /// `BBR_ACKS_PROBE_STOPPING`: stopped probing, still getting feedback.
    ProbeStopping,
}

/// Inputs of `bbr_tso_segs_goal`: (pacing_rate, min_rtt_us, mss, pacing_shift).
type TsoGoalKey = (u64, u32, u32, u8);

/// Per-ACK scratch (`struct bbr_context`).
#[derive(Debug, Clone, Copy, Default)]
struct Ctx {
    /// This ACK's delivery-rate sample, packets/µs << 24 (0 if invalid).
    sample_bw: u32,
}

/// BBRv3 / BBRv2 controller state (Linux `struct bbr`). Fields keep the
/// kernel's names; `u32` sentinels [`INF`] mean the kernel's `~0U`.
pub struct Bbr3 {
    params: Bbr3Params,
    rng: Box<dyn Random + Send>,

    /// Min RTT in the `min_rtt_win_sec` window, µs (`INF` = none yet).
    min_rtt_us: u32,
    /// Jiffies when `min_rtt_us` was taken.
    min_rtt_stamp: u64,
    /// Jiffies at which PROBE_RTT may end (`None` = not yet at low inflight).
    probe_rtt_done_stamp: Option<u64>,
    /// Min RTT in the `probe_rtt_win_ms` window, µs.
    probe_rtt_min_us: u32,
    /// Jiffies when `probe_rtt_min_us` was taken.
    probe_rtt_min_stamp: u64,
    /// `tp->delivered` at which the current packet-timed round ends.
    next_rtt_delivered: u64,
    /// Start of the current ProbeBW phase (wall clock), µs.
    cycle_mstamp: u64,
    mode: Mode,
    /// ProbeBW phase ([`phase`]).
    cycle_idx: usize,
    /// CA state on the previous ACK.
    prev_ca_state: CaState,
    /// Whether this ACK started a new packet-timed round.
    round_start: bool,
    /// Whether the most recent data carried CE (receiver-side DCTCP state).
    ce_state: bool,
    /// cwnd-limited rounds in PROBE_UP (5-bit, ≤ 30 + reprobe).
    bw_probe_up_rounds: u32,
    /// Whether the next app-limited ACK may take the fast path.
    try_fast_path: bool,
    /// Restarting after idle?
    idle_restart: bool,
    /// A PROBE_RTT round at low inflight has passed.
    probe_rtt_round_done: bool,
    /// Initial cwnd (7-bit), the BDP before any RTT sample.
    init_cwnd: u32,
    /// Current pacing gain (/256).
    pacing_gain: u32,
    /// Current cwnd gain (/256).
    cwnd_gain: u32,
    /// STARTUP estimated the pipe full.
    full_bw_reached: bool,
    /// Rounds without 25% bw growth.
    full_bw_cnt: u32,
    /// Have we seen an RTT sample yet (pacing re-init)?
    has_seen_rtt: bool,
    /// cwnd before loss recovery or PROBE_RTT.
    prior_cwnd: u32,
    /// Recent bw, baseline of the plateau detector.
    full_bw: u32,

    /// Start of the ACK-aggregation sampling epoch.
    ack_epoch_mstamp: Instant,
    /// Max excess data ACKed in each of the two windows.
    extra_acked: [u32; 2],
    /// Packets (S)ACKed in the sampling epoch (20-bit).
    ack_epoch_acked: u32,
    /// Age of the current extra_acked window, rounds.
    extra_acked_win_rtts: u32,
    /// Index of the current extra_acked window.
    extra_acked_win_idx: usize,

    /// Recently reached a bw plateau?
    full_bw_now: bool,
    /// Consecutive high-ECN STARTUP rounds.
    startup_ecn_rounds: u32,
    /// Loss in this ProbeBW cycle?
    loss_in_cycle: bool,
    /// ECN in this ProbeBW cycle?
    ecn_in_cycle: bool,
    /// `tp->delivered` at which the current loss round ends.
    loss_round_delivered: u64,
    /// `bw_lo` before the latest losses (undo).
    undo_bw_lo: u32,
    /// `inflight_lo` before the latest losses (undo).
    undo_inflight_lo: u32,
    /// `inflight_hi` before the latest losses (undo).
    undo_inflight_hi: u32,
    /// Max delivered bw in the last round trip.
    bw_latest: u32,
    /// Short-term lower bound on the sending rate.
    bw_lo: u32,
    /// Max bw sample of the previous (`[0]`) and current (`[1]`) ProbeBW cycle.
    bw_hi: [u32; 2],
    /// v2alpha only: its separate upper bound on bw, cut by ECN while
    /// probing (`INF` unset; with ECN off, as by default, always).
    v2_bw_hi: u32,
    /// v2alpha only: a bw probe sample without high loss/ECN was seen.
    got_ok_bw_probe_sample: bool,
    /// Max delivered data in the last round trip.
    inflight_latest: u32,
    /// Short-term lower bound on inflight.
    inflight_lo: u32,
    /// Long-term upper bound on inflight.
    inflight_hi: u32,
    /// Packets delivered per inflight_hi increment in PROBE_UP.
    bw_probe_up_cnt: u32,
    /// Packets (S)ACKed since the last inflight_hi increment.
    bw_probe_up_acks: u32,
    /// Wall-clock wait in DOWN/CRUISE before the next probe, µs.
    probe_wait_us: u32,
    /// ECN sender logic is in use (route, handshake and RTT allow it).
    ecn_eligible: bool,
    /// EWMA of delivered_ce/delivered, /256.
    ecn_alpha: u32,
    /// Rate samples now reflect bw probing.
    bw_probe_samples: bool,
    /// The last PROBE_UP went too high.
    prev_probe_too_high: bool,
    /// The last PROBE_UP stopped because it reached a risky inflight_hi.
    stopped_risky_probe: bool,
    /// Packet-timed rounds since the last bw probe (saturates at 255).
    rounds_since_probe: u32,
    /// This ACK started a new loss round.
    loss_round_start: bool,
    /// Loss marked in this loss round.
    loss_in_round: bool,
    /// ECN marked in this loss round.
    ecn_in_round: bool,
    ack_phase: AckPhase,
    /// Loss events in the current STARTUP loss round (saturates at 15).
    loss_events_in_round: u32,
    /// `tp->delivered` at the last alpha update.
    alpha_last_delivered: u64,
    /// `tp->delivered_ce` at the last alpha update.
    alpha_last_delivered_ce: u64,

    /// Memo of `tso_segs_goal` keyed by (pacing_rate, min_rtt_us, mss,
    /// pacing_shift) (not in Linux; a pure cache).
    tso_goal_memo: Cell<Option<(TsoGoalKey, u32)>>,
    /// Event counts (not in Linux; the BPF object's per-socket counters).
    counters: Counters,
    /// State changes taken during the most recent call (not in Linux).
    steps: [(State, State); 8],
    n_steps: usize,
}

impl std::fmt::Debug for Bbr3 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bbr3")
            .field("version", &self.params.version)
            .field("state", &self.state())
            .field("bw_hi", &self.bw_hi)
            .field("bw_lo", &self.bw_lo)
            .field("inflight_hi", &self.inflight_hi)
            .field("inflight_lo", &self.inflight_lo)
            .field("min_rtt_us", &self.min_rtt_us)
            .finish_non_exhaustive()
    }
}

/// Jiffies (HZ = 1000) at `tcp.now`.
fn jiffies(tcp: &Tcp) -> u64 {
    tcp.now.as_nanos() / (1_000_000_000 / params::HZ)
}

impl Bbr3 {
    /// `bbr_init`: a controller for the connection `tcp` with `params`
    /// ([`Bbr3Params::v3`] or [`Bbr3Params::v2`]).
    pub fn new(tcp: &mut Tcp, rng: Box<dyn Random + Send>, params: Bbr3Params) -> Self {
        let now_j = jiffies(tcp);
        let min_rtt_us = tcp
            .min_rtt
            .map_or(INF, |d| d.as_micros().min(u128::from(INF - 1)) as u32);
        let mut bbr = Bbr3 {
            rng,
            min_rtt_us,
            min_rtt_stamp: now_j,
            probe_rtt_done_stamp: None,
            probe_rtt_min_us: min_rtt_us,
            probe_rtt_min_stamp: now_j,
            // v2alpha: 0 (bbr_init); v3: tp->delivered.
            next_rtt_delivered: if params.is_v2alpha() {
                0
            } else {
                tcp.delivered
            },
            cycle_mstamp: 0,
            mode: Mode::Startup,
            cycle_idx: phase::UP,
            prev_ca_state: CaState::Open,
            round_start: false,
            ce_state: false,
            bw_probe_up_rounds: 0,
            try_fast_path: false,
            idle_restart: false,
            probe_rtt_round_done: false,
            init_cwnd: tcp.snd_cwnd.min(0x7F),
            pacing_gain: 0,
            cwnd_gain: 0,
            full_bw_reached: false,
            full_bw_cnt: 0,
            has_seen_rtt: false,
            prior_cwnd: tcp.prior_cwnd,
            full_bw: 0,
            ack_epoch_mstamp: tcp.now,
            extra_acked: [0, 0],
            ack_epoch_acked: 0,
            extra_acked_win_rtts: 0,
            extra_acked_win_idx: 0,
            full_bw_now: false,
            startup_ecn_rounds: 0,
            loss_in_cycle: false,
            ecn_in_cycle: false,
            // Start sampling ECN/loss rounds after the first full flight is ACKed.
            loss_round_delivered: tcp.delivered + 1,
            undo_bw_lo: 0,
            undo_inflight_lo: 0,
            undo_inflight_hi: 0,
            bw_latest: 0,
            bw_lo: INF,
            bw_hi: [0, 0],
            v2_bw_hi: INF,
            got_ok_bw_probe_sample: false,
            inflight_latest: 0,
            inflight_lo: INF,
            inflight_hi: INF,
            bw_probe_up_cnt: INF,
            bw_probe_up_acks: 0,
            probe_wait_us: 0,
            ecn_eligible: false,
            ecn_alpha: params.ecn_alpha_init.min(BBR_UNIT),
            bw_probe_samples: false,
            prev_probe_too_high: false,
            stopped_risky_probe: false,
            rounds_since_probe: 0,
            loss_round_start: false,
            loss_in_round: false,
            ecn_in_round: false,
            ack_phase: AckPhase::Init,
            loss_events_in_round: 0,
            alpha_last_delivered: 0,
            alpha_last_delivered_ce: 0,
            tso_goal_memo: Cell::new(None),
            counters: Counters::default(),
            steps: [(State::Startup, State::Startup); 8],
            n_steps: 0,
            params,
        };
        tcp.snd_ssthresh = crate::tcp::TCP_INFINITE_SSTHRESH;
        bbr.init_pacing_rate_from_rtt(tcp);
        bbr
    }

    /// The parameters in use.
    pub fn params(&self) -> &Bbr3Params {
        &self.params
    }

    /// The model's event counts so far.
    pub fn counters(&self) -> &Counters {
        &self.counters
    }

    /// `bbr_update_model` (v2alpha: `bbr2_update_model`).
    fn update_model(&mut self, tcp: &mut Tcp, rs: &Sample, ctx: &Ctx) {
        if self.v2alpha() {
            self.bbr2_update_congestion_signals(tcp, rs, ctx);
        } else {
            self.update_congestion_signals(tcp, rs, ctx);
        }
        self.update_ack_aggregation(tcp, rs);
        self.check_loss_too_high_in_startup(tcp, rs);
        if self.v2alpha() {
            self.bbr2_check_full_bw_reached(rs);
        } else {
            self.check_full_bw_reached(rs, ctx);
        }
        self.check_drain(tcp);
        self.update_cycle_phase(tcp, rs, ctx);
        self.update_min_rtt(tcp, rs);
    }

    /// `bbr_run_fast_path`: on an app-limited ACK with no news (sample below
    /// max_bw, no loss/ECN, cwnd at target) skip the model update, and the
    /// control update too if nothing changed. Returns true to skip both.
    fn run_fast_path(
        &mut self,
        tcp: &mut Tcp,
        update_model: &mut bool,
        rs: &Sample,
        ctx: &Ctx,
    ) -> bool {
        if self.params.fast_path
            && self.try_fast_path
            && rs.is_app_limited
            && ctx.sample_bw < self.max_bw()
            && !self.loss_in_round
            && !self.ecn_in_round
        {
            let prev_mode = self.mode;
            let prev_min_rtt_us = self.min_rtt_us;
            self.check_drain(tcp);
            self.update_cycle_phase(tcp, rs, ctx);
            self.update_min_rtt(tcp, rs);
            if self.mode == prev_mode && self.min_rtt_us == prev_min_rtt_us && self.try_fast_path {
                return true;
            }
            *update_model = false;
        }
        false
    }
}

impl CongestionControl for Bbr3 {
    fn name(&self) -> &'static str {
        if self.params.version == 2 {
            "bbr2"
        } else {
            "bbr3"
        }
    }

    fn has_cong_control(&self) -> bool {
        true
    }

    /// `bbr_skb_marked_lost`: the trait hook forwards to the inherent
    /// [`Bbr3::skb_marked_lost`], so transports generic over
    /// `C: CongestionControl` reach it too (not only `AnyController`).
    fn skb_marked_lost(&mut self, tcp: &mut Tcp, tx: &TxSnapshot, pcount: u32) {
        Bbr3::skb_marked_lost(self, tcp, tx, pcount);
    }

    /// `bbr_main` (v2alpha: `bbr2_main`, which has no separate
    /// latest-delivery-signals step and no ECN eligibility gate on
    /// `ecn_in_round`).
    fn cong_control(&mut self, tcp: &mut Tcp, rate: &RateSample) {
        self.n_steps = 0;
        let rs = Sample::from(rate);
        let mut ctx = Ctx::default();
        let mut update_model = true;

        self.counters.acks += 1;
        self.update_round_start(tcp, &rs);
        if self.round_start {
            self.counters.rounds += 1;
            if self.mode == Mode::ProbeBw && self.is_probing_bandwidth() {
                self.counters.probe_rounds += 1;
            }
            self.rounds_since_probe = (self.rounds_since_probe + 1).min(0xFF);
            if self.v2alpha() {
                self.bbr2_update_ecn_alpha(tcp);
            } else {
                self.update_ecn_alpha(tcp);
            }
        }
        // DEVIATION: no Protective Load Balancing (bbr_plb): one path only.
        self.ecn_in_round |= (self.ecn_eligible || self.v2alpha()) && rs.is_ece;
        ctx.sample_bw = round::calculate_bw_sample(&rs);
        if !self.v2alpha() {
            self.update_latest_delivery_signals(tcp, &rs, &ctx);
        }

        if !self.run_fast_path(tcp, &mut update_model, &rs, &ctx) {
            if update_model {
                self.update_model(tcp, &rs, &ctx);
            }
            self.update_gains();
            let bw = self.bw();
            self.set_pacing_rate(tcp, bw, self.pacing_gain);
            self.set_cwnd(tcp, rs.acked_sacked, bw, self.cwnd_gain);
            self.bound_cwnd_for_inflight_model(tcp);
        }

        if !self.v2alpha() {
            self.advance_latest_delivery_signals(&rs, &ctx);
        }
        self.prev_ca_state = tcp.ca_state;
        self.loss_in_cycle |= rs.lost > 0;
        self.ecn_in_cycle |= rs.delivered_ce > 0;
    }

    fn ssthresh(&mut self, tcp: &mut Tcp) -> u32 {
        self.n_steps = 0;
        self.bbr_ssthresh(tcp)
    }

    fn undo_cwnd(&mut self, _tcp: &mut Tcp) -> u32 {
        self.n_steps = 0;
        self.bbr_undo_cwnd()
    }

    fn set_state(&mut self, tcp: &mut Tcp, new_state: CaState) {
        self.n_steps = 0;
        self.bbr_set_state(tcp, new_state);
    }

    /// `bbr_cwnd_event`.
    fn cwnd_event(&mut self, tcp: &mut Tcp, event: CaEvent) {
        self.n_steps = 0;
        match event {
            CaEvent::TxStart => {
                if tcp.app_limited == 0 {
                    return;
                }
                self.idle_restart = true;
                self.ack_epoch_mstamp = tcp.now;
                self.ack_epoch_acked = 0;
                // Avoid pointless buffer overflows: pace at the estimated bw
                // when restarting from idle while app-limited.
                if self.mode == Mode::ProbeBw {
                    let bw = self.bw();
                    self.set_pacing_rate(tcp, bw, BBR_UNIT);
                } else if self.mode == Mode::ProbeRtt {
                    self.check_probe_rtt_done(tcp);
                }
            }
            CaEvent::EcnIsCe | CaEvent::EcnNoCe => self.on_ce_event(tcp, event),
            // v3 `bbr_cwnd_event`: CA_EVENT_TLP_RECOVERY runs
            // bbr_run_loss_probe_recovery (a no-op in v2).
            CaEvent::TlpRecovery => self.on_tlp_recovery(tcp, tcp.tlp_orig_data_app_limited),
            _ => {}
        }
    }

    fn tso_segs(&self, tcp: &Tcp) -> Option<u32> {
        Some(self.bbr_tso_segs(tcp))
    }

    /// `bbr_get_info`, in SI units.
    fn status(&self, tcp: &Tcp) -> Status {
        let opt = |v: u32| (v != INF).then_some(v);
        Status {
            state: self.state().name(),
            // None before the first bw sample (the kernel reports 1 B/s).
            bw_bps: (self.bw() > 0).then(|| self.bw_bytes_per_sec(tcp, u64::from(self.bw())) * 8),
            min_rtt: (self.min_rtt_us != INF)
                .then(|| crate::time::Duration::from_micros(u64::from(self.min_rtt_us))),
            pacing_gain: Some(f64::from(self.pacing_gain) / f64::from(BBR_UNIT)),
            cwnd_gain: Some(f64::from(self.cwnd_gain) / f64::from(BBR_UNIT)),
            inflight_hi: opt(self.inflight_hi),
            inflight_lo: opt(self.inflight_lo),
            bw_lo_bps: opt(self.bw_lo).map(|b| self.bw_bytes_per_sec(tcp, u64::from(b)) * 8),
            lt_bw_bps: None,
        }
    }
}
