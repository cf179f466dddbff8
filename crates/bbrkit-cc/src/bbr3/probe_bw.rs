//! PROBE_BW: the DOWN → CRUISE → REFILL → UP cycle and its timing.
//!
//! Owns `bbr_is_probing_bandwidth`, `bbr_has_elapsed_in_phase`,
//! `bbr_is_reno_coexistence_probe_time`, `bbr_pick_probe_wait`, the
//! `bbr_start_bw_probe_*` entry actions, `bbr_check_time_to_probe_bw`,
//! `bbr_check_time_to_cruise` and `bbr_update_cycle_phase`.
//! Must never enter or leave PROBE_RTT, STARTUP or DRAIN.

use super::params::{BBR_UNIT, phase};
use super::round::Sample;
use super::{AckPhase, Bbr3, Ctx, Mode, State};
use crate::tcp::{CaState, Tcp};

impl Bbr3 {
    /// `bbr_is_probing_bandwidth`: STARTUP, REFILL and UP push inflight up,
    /// so the lower bounds are not cut then.
    pub(super) fn is_probing_bandwidth(&self) -> bool {
        self.mode == Mode::Startup
            || (self.mode == Mode::ProbeBw
                && (self.cycle_idx == phase::REFILL || self.cycle_idx == phase::UP))
    }

    /// `bbr_has_elapsed_in_phase`: strictly more than `interval_us` since the
    /// phase's wall-clock start.
    pub(super) fn has_elapsed_in_phase(&self, tcp: &Tcp, interval_us: u64) -> bool {
        tcp.now.as_micros() > self.cycle_mstamp + interval_us
    }

    /// `bbr_is_reno_coexistence_probe_time`: a Reno flow with our BDP would
    /// take about BDP rounds between losses; probe no later than that, and
    /// at least every `bw_probe_max_rounds` (63) rounds.
    fn is_reno_coexistence_probe_time(&self, tcp: &Tcp) -> bool {
        let rounds = self
            .params
            .bw_probe_max_rounds
            .min(self.target_inflight(tcp));
        self.rounds_since_probe >= rounds
    }

    /// `bbr_pick_probe_wait`: randomise the next probe for mixing and
    /// fairness: `rounds_since_probe` starts at rand{0,1}, and the wall-clock
    /// wait is 2 s + rand[0, 1 s).
    fn pick_probe_wait(&mut self) {
        self.rounds_since_probe = self.rng.below(self.params.bw_probe_rand_rounds);
        self.probe_wait_us =
            self.params.bw_probe_base_us + self.rng.below(self.params.bw_probe_rand_us);
    }

    /// `bbr_start_bw_probe_refill`: send at the estimated bw for a round to
    /// fill the pipe before probing (else a shallow buffer overflows before
    /// the pipe is full and the hi bounds underestimate).
    pub(super) fn start_bw_probe_refill(&mut self, tcp: &Tcp, bw_probe_up_rounds: u32) {
        self.reset_lower_bounds();
        self.bw_probe_up_rounds = bw_probe_up_rounds.min(31);
        self.bw_probe_up_acks = 0;
        self.stopped_risky_probe = false;
        self.ack_phase = AckPhase::Refilling;
        self.next_rtt_delivered = tcp.delivered;
        self.transition_to(State::ProbeBwRefill);
        self.counters.refills += 1;
    }

    /// `bbr_start_bw_probe_up`: probe the max deliverable rate and volume.
    fn start_bw_probe_up(&mut self, tcp: &Tcp, ctx: &Ctx) {
        self.ack_phase = AckPhase::ProbeStarting;
        self.next_rtt_delivered = tcp.delivered;
        self.cycle_mstamp = tcp.now.as_micros();
        if !self.v2alpha() {
            // v3 restarts the plateau detector for the probe.
            self.reset_full_bw();
            self.full_bw = ctx.sample_bw;
        }
        self.transition_to(State::ProbeBwUp);
        self.raise_inflight_hi_slope(tcp);
        self.counters.ups += 1;
    }

    /// `bbr_start_bw_probe_down`: start a cycle: reset congestion signals,
    /// stop growing inflight_hi, pick the randomised probe wait, start the
    /// wall clock and a round.
    pub(super) fn start_bw_probe_down(&mut self, tcp: &Tcp) {
        self.reset_congestion_signals();
        self.bw_probe_up_cnt = super::params::INF;
        self.pick_probe_wait();
        self.cycle_mstamp = tcp.now.as_micros();
        self.ack_phase = AckPhase::ProbeStopping;
        self.next_rtt_delivered = tcp.delivered;
        self.transition_to(State::ProbeBwDown);
    }

    /// `bbr_start_bw_probe_cruise`: hold a neutral operating point, reducing
    /// inflight only on loss/ECN.
    pub(super) fn start_bw_probe_cruise(&mut self) {
        if self.inflight_lo != super::params::INF {
            self.inflight_lo = self.inflight_lo.min(self.inflight_hi);
        }
        self.transition_to(State::ProbeBwCruise);
    }

    /// `bbr_check_time_to_probe_bw`: ECN reprobe (marks stopped in a
    /// loss-free cycle), or the probe wait elapsed, or Reno-coexistence
    /// rounds: go to REFILL. Returns whether it did.
    fn check_time_to_probe_bw(&mut self, tcp: &Tcp) -> bool {
        if self.params.ecn_reprobe_gain > 0
            && self.ecn_eligible
            && self.ecn_in_cycle
            && !self.loss_in_cycle
            && tcp.ca_state == CaState::Open
        {
            // n so that raise_inflight_hi_slope's first growth 2^n is about
            // inflight_hi · ecn_reprobe_gain.
            let target = (u64::from(self.inflight_hi) * u64::from(self.params.ecn_reprobe_gain))
                >> super::params::BBR_SCALE;
            // DEVIATION: ilog2(0) is undefined in the kernel; we use 0.
            let n = if target == 0 { 0 } else { target.ilog2() };
            self.start_bw_probe_refill(tcp, n);
            return true;
        }
        if self.has_elapsed_in_phase(tcp, u64::from(self.probe_wait_us))
            || self.is_reno_coexistence_probe_time(tcp)
        {
            self.start_bw_probe_refill(tcp, 0);
            return true;
        }
        false
    }

    /// `bbr_check_time_to_cruise`: inflight must be under both the headroom
    /// level and the BDP.
    fn check_time_to_cruise(&self, tcp: &Tcp, inflight: u32, bw: u32) -> bool {
        if inflight > self.inflight_with_headroom() {
            return false;
        }
        inflight <= self.inflight(tcp, bw, BBR_UNIT)
    }

    /// `bbr_update_cycle_phase`: once the pipe was filled, adapt the upper
    /// bounds (in DRAIN, PROBE_BW and PROBE_RTT) and run the ProbeBW cycle.
    pub(super) fn update_cycle_phase(&mut self, tcp: &mut Tcp, rs: &Sample, ctx: &Ctx) {
        if !self.full_bw_reached {
            return;
        }
        if self.adapt_upper_bounds(tcp, rs, ctx) {
            return; // Already decided a state transition.
        }
        if self.mode != Mode::ProbeBw {
            return;
        }
        let inflight = self.packets_in_net_at_edt(tcp, rs.prior_in_flight);
        let bw = self.max_bw();
        match self.cycle_idx {
            // Cruise at pacing gain 1.0 most of the time; adapt to loss/ECN.
            phase::CRUISE => {
                self.check_time_to_probe_bw(tcp);
            }
            // After one round of refilling, samples reflect REFILL: start UP.
            phase::REFILL => {
                if self.round_start {
                    self.bw_probe_samples = true;
                    self.start_bw_probe_up(tcp, ctx);
                }
            }
            // Stop probing when (1) inflight reached an inflight_hi that was
            // too high last time, (2) bw plateaued while inflight_hi was not
            // limiting; (3) loss and (4) ECN are checked in
            // is_inflight_too_high.
            phase::UP if self.v2alpha() => {
                if self.bbr2_probe_up_done(tcp, inflight, bw) {
                    self.prev_probe_too_high = false;
                    self.start_bw_probe_down(tcp);
                }
            }
            phase::UP => {
                let mut is_bw_probe_done = false;
                if self.prev_probe_too_high && inflight >= self.inflight_hi {
                    self.stopped_risky_probe = true;
                    is_bw_probe_done = true;
                } else if tcp.is_cwnd_limited && tcp.snd_cwnd >= self.inflight_hi {
                    // inflight_hi is limiting bw growth: keep probing.
                    self.reset_full_bw();
                    self.full_bw = ctx.sample_bw;
                } else if self.full_bw_now {
                    // Plateau in estimated bw: the pipe looks full.
                    is_bw_probe_done = true;
                }
                if is_bw_probe_done {
                    self.prev_probe_too_high = false;
                    self.start_bw_probe_down(tcp);
                }
            }
            // Drain the queue UP built until inflight reaches the cruise
            // target; persisting would under-utilise the pipe.
            _ => {
                if self.check_time_to_probe_bw(tcp) {
                    return;
                }
                if self.check_time_to_cruise(tcp, inflight, bw) {
                    self.start_bw_probe_cruise();
                }
            }
        }
    }
}
