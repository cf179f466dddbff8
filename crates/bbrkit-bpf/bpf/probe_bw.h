/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * probe_bw.h: PROBE_BW: the DOWN -> CRUISE -> REFILL -> UP cycle and its
 * timing. bbrkit-cc: bbr3/probe_bw.rs. Never enters or leaves PROBE_RTT,
 * STARTUP or DRAIN.
 */

/* bbr_pacing_gain[] by phase, as immediates (no .rodata array). */
static __always_inline u32 bbr_pacing_gain(struct sock *sk, u32 cycle_idx)
{
	if (cycle_idx == BBR_BW_PROBE_UP)
		return bbr_pacing_gain_up;
	if (cycle_idx == BBR_BW_PROBE_DOWN)
		return bbr_vparam(sk, pacing_gain_down);
	return BBR_UNIT;	/* CRUISE, REFILL */
}

/* bbr_is_probing_bandwidth: STARTUP, REFILL and UP push inflight up, so the
 * lower bounds are not cut then. */
static __always_inline bool bbr_is_probing_bandwidth(struct sock *sk)
{
	struct bbr *bbr = inet_csk_ca(sk);

	return (bbr->mode == BBR_STARTUP) ||
	       (bbr->mode == BBR_PROBE_BW &&
		(bbr->cycle_idx == BBR_BW_PROBE_REFILL ||
		 bbr->cycle_idx == BBR_BW_PROBE_UP));
}

/* bbr_has_elapsed_in_phase: strictly more than interval_us since the
 * phase's wall-clock start (u32 µs, wrap-safe; see struct bbr). */
static __always_inline bool bbr_has_elapsed_in_phase(const struct sock *sk,
						     u32 interval_us)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	const struct bbr *bbr = inet_csk_ca(sk);

	return (s32)((u32)tp->tcp_mstamp - (bbr->cycle_mstamp + interval_us)) > 0;
}

/* bbr_is_reno_coexistence_probe_time: a Reno flow with our BDP would take
 * about BDP rounds between losses; probe no later than that, and at least
 * every bw_probe_max_rounds (63) rounds. */
static bool bbr_is_reno_coexistence_probe_time(struct sock *sk)
{
	struct bbr *bbr = inet_csk_ca(sk);
	u32 rounds;

	/* Random loss can shave some small percentage off of our inflight
	 * in each round. To survive this, flows need robust periodic probes. */
	rounds = min_t(u32, bbr_param(sk, bw_probe_max_rounds), bbr_target_inflight(sk));
	return bbr->rounds_since_probe >= rounds;
}

/* bbr_pick_probe_wait: randomise the next probe for mixing and fairness:
 * rounds_since_probe starts at rand{0,1} and the wall-clock wait is
 * 2 s + rand[0, 1 s). Random from bpf_get_prandom_u32(), never stubbed. */
static void bbr_pick_probe_wait(struct sock *sk)
{
	struct bbr *bbr = inet_csk_ca(sk);

	/* Decide the random round-trip bound for wait until probe: */
	bbr->rounds_since_probe =
		get_random_u32_below(bbr_param(sk, bw_probe_rand_rounds));
	/* Decide the random wall clock bound for wait until probe: */
	bbr->probe_wait_us = bbr_param(sk, bw_probe_base_us) +
			     get_random_u32_below(bbr_param(sk, bw_probe_rand_us));
}

/* bbr_set_cycle_idx: a new ProbeBW phase needs a new cwnd and pacing
 * rate, so the next app-limited ACK may not take the fast path (the first
 * version set cycle_idx directly and kept try_fast_path: DEVIATIONS.md). */
static void bbr_set_cycle_idx(struct sock *sk, u32 cycle_idx)
{
	struct bbr *bbr = inet_csk_ca(sk);

	bbr->cycle_idx = cycle_idx;
	/* New phase, so need to update cwnd and pacing rate. */
	bbr->try_fast_path = 0;
}

/* bbr_start_bw_probe_refill: send at the estimated bw for a round to fill the
 * pipe before probing (else a shallow buffer overflows before the pipe is
 * full and the hi bounds underestimate). */
static void bbr_start_bw_probe_refill(struct sock *sk, u32 bw_probe_up_rounds)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct bbr *bbr = inet_csk_ca(sk);

	bbr_reset_lower_bounds(sk);
	bbr->bw_probe_up_rounds = min_t(u32, bw_probe_up_rounds, 31);
	bbr->bw_probe_up_acks = 0;
	bbr->stopped_risky_probe = 0;
	bbr->ack_phase = BBR_ACKS_REFILLING;
	bbr->next_rtt_delivered = tp->delivered;
	bbr_set_cycle_idx(sk, BBR_BW_PROBE_REFILL);
	bbr3_cnt_inc(sk, refills);
}

/* bbr_start_bw_probe_up: probe the max deliverable rate and volume. */
static void bbr_start_bw_probe_up(struct sock *sk, struct bbr_context *ctx)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct bbr *bbr = inet_csk_ca(sk);

	bbr->ack_phase = BBR_ACKS_PROBE_STARTING;
	bbr->next_rtt_delivered = tp->delivered;
	bbr->cycle_mstamp = (u32)tp->tcp_mstamp;
	if (!bbr->v2) {	/* v3 restarts the plateau detector for the probe */
		bbr_reset_full_bw(sk);
		bbr->full_bw = ctx->sample_bw;
	}
	bbr_set_cycle_idx(sk, BBR_BW_PROBE_UP);
	bbr_raise_inflight_hi_slope(sk);
	bbr3_cnt_inc(sk, ups);
}

/* bbr_start_bw_probe_down: start a cycle: reset congestion signals, stop
 * growing inflight_hi, pick the randomised probe wait, start the wall clock
 * and a round. */
static void bbr_start_bw_probe_down(struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct bbr *bbr = inet_csk_ca(sk);

	bbr_reset_congestion_signals(sk);
	bbr->bw_probe_up_cnt = ~0U;     /* not growing inflight_hi any more */
	bbr_pick_probe_wait(sk);
	bbr->cycle_mstamp = (u32)tp->tcp_mstamp;	/* start wall clock */
	bbr->ack_phase = BBR_ACKS_PROBE_STOPPING;
	bbr->next_rtt_delivered = tp->delivered;
	bbr_set_cycle_idx(sk, BBR_BW_PROBE_DOWN);
}

/* bbr_start_bw_probe_cruise: hold a neutral operating point, reducing
 * inflight only on loss/ECN. */
static __always_inline void bbr_start_bw_probe_cruise(struct sock *sk)
{
	struct bbr *bbr = inet_csk_ca(sk);

	if (bbr->inflight_lo != ~0U)
		bbr->inflight_lo = min(bbr->inflight_lo, bbr->inflight_hi);

	bbr_set_cycle_idx(sk, BBR_BW_PROBE_CRUISE);
}

/* bbr_check_time_to_probe_bw: ECN reprobe (marks stopped in a loss-free
 * cycle), or the probe wait elapsed, or Reno-coexistence rounds: go to
 * REFILL. Returns whether it did. */
static bool bbr_check_time_to_probe_bw(struct sock *sk)
{
	struct bbr *bbr = inet_csk_ca(sk);
	u32 n;

	/* If we seem to be at an operating point where we are not seeing loss
	 * but we are seeing ECN marks, then when the ECN marks cease we reprobe
	 * quickly (in case cross-traffic has ceased and freed up bw). */
	if (bbr_vparam(sk, ecn_reprobe_gain) && bbr->ecn_eligible &&
	    bbr->ecn_in_cycle && !bbr->loss_in_cycle &&
	    bbr_ca_state(sk) == TCP_CA_Open) {
		/* Calculate n so that when bbr_raise_inflight_hi_slope()
		 * computes growth_this_round as 2^n it will be roughly the
		 * desired volume of data (inflight_hi*ecn_reprobe_gain).
		 * DEVIATION: ilog2(0) is undefined in the kernel; 0 here. */
		n = bbr_ilog2((u32)(((u64)bbr->inflight_hi *
				     bbr_vparam(sk, ecn_reprobe_gain)) >> BBR_SCALE));
		bbr_start_bw_probe_refill(sk, n);
		return true;
	}

	if (bbr_has_elapsed_in_phase(sk, bbr->probe_wait_us) ||
	    bbr_is_reno_coexistence_probe_time(sk)) {
		bbr_start_bw_probe_refill(sk, 0);
		return true;
	}
	return false;
}

/* bbr_check_time_to_cruise: inflight must be under both the headroom level
 * and the BDP. */
static bool bbr_check_time_to_cruise(struct sock *sk, u32 inflight, u32 bw)
{
	/* Always need to pull inflight down to leave headroom in queue. */
	if (inflight > bbr_inflight_with_headroom(sk))
		return false;

	return inflight <= bbr_inflight(sk, bw, BBR_UNIT);
}

/* bbr_update_cycle_phase: once the pipe was filled, adapt the upper bounds
 * (in DRAIN, PROBE_BW and PROBE_RTT) and run the ProbeBW cycle. */
BBR3_GLOBAL int bbr3_update_cycle_phase(struct tcp_sock *tp __arg_trusted,
					const struct bbr_rs *rs,
					struct bbr_context *ctx)
{
	struct sock *sk = (struct sock *)tp;
	struct bbr *bbr = inet_csk_ca(sk);
	bool is_bw_probe_done = false;
	u32 inflight, bw;

	if (!rs || !ctx)	/* global subprogram: pointers may be NULL */
		return 0;
	if (!bbr->full_bw_reached)
		return 0;

	/* In DRAIN, PROBE_BW, or PROBE_RTT, adjust upper bounds. */
	if (bbr_adapt_upper_bounds(sk, rs, ctx))
		return 0;		/* already decided state transition */

	if (bbr->mode != BBR_PROBE_BW)
		return 0;

	inflight = bbr_packets_in_net_at_edt(sk, rs->prior_in_flight);
	bw = bbr_max_bw(sk);

	switch (bbr->cycle_idx) {
	/* First we spend most of our time cruising with a pacing_gain of 1.0,
	 * which paces at the estimated bw, to try to fully use the pipe
	 * without building queue. If we encounter loss/ECN marks, we adapt
	 * by slowing down. */
	case BBR_BW_PROBE_CRUISE:
		if (bbr_check_time_to_probe_bw(sk))
			return 0;	/* already decided state transition */
		break;

	/* After cruising, when it's time to probe, we first "refill": we send
	 * at the estimated bw to fill the pipe, before probing higher and
	 * knowingly risking overflowing the bottleneck buffer (causing loss). */
	case BBR_BW_PROBE_REFILL:
		if (bbr->round_start) {
			/* After one full round trip of sending in REFILL, we
			 * start to see bw samples reflecting our REFILL, which
			 * may be putting too much data in flight. */
			bbr->bw_probe_samples = 1;
			bbr_start_bw_probe_up(sk, ctx);
		}
		break;

	/* After we refill the pipe, we probe by using a pacing_gain > 1.0, to
	 * put extra data in flight, to try to find the available bandwidth.
	 * We stop probing when (1) inflight reached an inflight_hi that was
	 * too high last time, (2) bw plateaued while inflight_hi was not
	 * limiting; (3) loss and (4) ECN are checked in is_inflight_too_high. */
	case BBR_BW_PROBE_UP:
		if (bbr->v2) {	/* bbr2_update_cycle_phase */
			if (bbr2_probe_up_done(sk, inflight, bw)) {
				bbr->prev_probe_too_high = 0;
				bbr_start_bw_probe_down(sk);
			}
			break;
		}
		if (bbr->prev_probe_too_high &&
		    inflight >= bbr->inflight_hi) {
			bbr->stopped_risky_probe = 1;
			is_bw_probe_done = true;
		} else {
			if (bbr_is_cwnd_limited(tp) &&
			    tcp_snd_cwnd(tp) >= bbr->inflight_hi) {
				/* inflight_hi is limiting bw growth */
				bbr_reset_full_bw(sk);
				bbr->full_bw = ctx->sample_bw;
			} else if (bbr->full_bw_now) {
				/* Plateau in estimated bw. Pipe looks full. */
				is_bw_probe_done = true;
			}
		}
		if (is_bw_probe_done) {
			bbr->prev_probe_too_high = 0;  /* no loss/ECN (yet) */
			bbr_start_bw_probe_down(sk);  /* restart w/ down */
		}
		break;

	/* After probing in PROBE_UP, we have usually accumulated some data in
	 * the bottleneck buffer (if bw probing didn't find more bw). We next
	 * enter PROBE_DOWN to try to drain any excess data from the queue. */
	case BBR_BW_PROBE_DOWN:
		if (bbr_check_time_to_probe_bw(sk))
			return 0;	/* already decided state transition */
		if (bbr_check_time_to_cruise(sk, inflight, bw))
			bbr_start_bw_probe_cruise(sk);
		break;

	default:
		break;
	}
	return 0;
}
