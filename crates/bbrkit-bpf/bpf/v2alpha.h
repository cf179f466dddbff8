/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * v2alpha.h: bbr2, as google/bbr v2alpha's net/ipv4/tcp_bbr2.c (commit
 * 0487ade55081, XanMod 6.2's bbr2) has it, where its logic differs from v3.
 * bbrkit-cc: bbr3/v2alpha.rs, which has the function-by-function table of
 * tcp_bbr2.c; the same functions are here, selected by the v2 bit that the
 * bbr2 ops' init sets. The small differences sit at their call sites,
 * marked "v2alpha":
 *   bounds.h   adapt_lower_bounds: no bw_lo >= 1 floor; is_inflight_too_high:
 *              CE at the threshold; probe_inflight_hi_upward: unused credit
 *              dropped, fast path kept
 *   startup.h  handle_queue_too_high_in_startup: inflight_hi = BDP
 *   probe_bw.h start_bw_probe_up: no plateau restart; the UP exit below
 *   probe_rtt.h update_min_rtt: refresh on rtt <= min
 *   loss.h     set_state(Loss): full_bw = 0, inflight_lo = prior_cwnd;
 *              undo: full_bw/full_bw_cnt reset, fast path kept
 *   pacing.h   min TSO burst 1 below 1.2 Mbit/s
 *   bbr3.bpf.c bbr_main: no separate latest-delivery step, ECE noted
 *              without the eligibility gate; init: next_rtt_delivered 0
 * DEVIATION: v2alpha's separate bw_hi (and got_ok_bw_probe_sample, the
 * delivered_ce of the lost-packet sample) only change anything when ECN
 * cuts them, and v2alpha's ECN is off (module parameter bbr_ecn_enable,
 * default false; not settable here): bw_hi is not stored (always ~0U).
 */

/* bbr2_update_congestion_signals: feed the max-bw filter, note loss, keep
 * the one-round maxima and, once per loss round, adapt the lower bounds
 * and restart the one-round filters from this sample. */
static void bbr2_update_congestion_signals(struct sock *sk,
					   const struct bbr_rs *rs,
					   struct bbr_context *ctx)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct bbr *bbr = inet_csk_ca(sk);

	bbr->loss_round_start = 0;
	if (!bbr_take_sample(sk, rs, ctx))
		return;

	/* Update rate and volume of delivered data from latest round trip: */
	bbr->bw_latest       = max_t(u32, bbr->bw_latest,       ctx->sample_bw);
	bbr->inflight_latest = max_t(u32, bbr->inflight_latest,
				     rs->delivered > 0 ? rs->delivered : 0);

	if (before(rs->prior_delivered, bbr->loss_round_delivered))
		return;		/* skip the per-round-trip updates */
	/* Now do per-round-trip updates. */
	bbr->loss_round_delivered = tp->delivered;  /* mark round trip */
	bbr->loss_round_start = 1;
	bbr_adapt_lower_bounds(sk);

	/* Update windowed "latest" (single-round-trip) filters. */
	bbr->loss_in_round = 0;
	bbr->ecn_in_round  = 0;
	bbr->bw_latest = ctx->sample_bw;
	bbr->inflight_latest = rs->delivered > 0 ? rs->delivered : 0;
}

/* v1's bbr_check_full_bw_reached, which v2alpha keeps: at each
 * non-app-limited round start in STARTUP, the pipe is full after
 * full_bw_cnt rounds whose max_bw did not grow 25 % over the baseline. */
static void bbr2_check_full_bw_reached(struct sock *sk, const struct bbr_rs *rs)
{
	struct bbr *bbr = inet_csk_ca(sk);
	u32 bw_thresh;

	if (bbr->full_bw_reached || !bbr->round_start || rs->is_app_limited)
		return;

	bw_thresh = (u64)bbr->full_bw * bbr_param(sk, full_bw_thresh) >> BBR_SCALE;
	if (bbr_max_bw(sk) >= bw_thresh) {
		bbr->full_bw = bbr_max_bw(sk);
		bbr->full_bw_cnt = 0;
		return;
	}
	if (bbr->full_bw_cnt < 3)	/* 2-bit field */
		++bbr->full_bw_cnt;
	bbr->full_bw_reached = bbr->full_bw_cnt >= bbr_param(sk, full_bw_cnt);
}

/* The PROBE_UP arm of bbr2_update_cycle_phase: stop probing when (1)
 * inflight reached an inflight_hi that was too high last time, or (2)
 * after at least one min_rtt inflight reached 1.25 x BDP (a queue is
 * building); (3) loss and (4) ECN are judged in is_inflight_too_high. */
static bool bbr2_probe_up_done(struct sock *sk, u32 inflight, u32 bw)
{
	struct bbr *bbr = inet_csk_ca(sk);

	if (bbr->prev_probe_too_high && inflight >= bbr->inflight_hi) {
		bbr->stopped_risky_probe = 1;
		return true;
	}
	return bbr_has_elapsed_in_phase(sk, bbr->min_rtt_us) &&
	       inflight >= bbr_inflight(sk, bw, bbr2_bw_probe_pif_gain);
}

/* bbr2_update_ecn_alpha (each round start): alpha follows the CE ratio
 * whenever ecn_factor is set, eligible or not; eligibility needs the
 * bbr_ecn_enable module parameter (off) and a short min_rtt. */
static void bbr2_update_ecn_alpha(struct sock *sk, struct bbr3_sk *st)
{
	struct bbr *bbr = inet_csk_ca(sk);
	s64 ce_ratio;

	if (!bbr_param(sk, ecn_factor) || !st)
		return;

	ce_ratio = bbr_ecn_ce_ratio(tcp_sk(sk), st);
	if (ce_ratio < 0)	/* nothing delivered, or backwards? */
		return;

	/* See if we should use ECN sender logic for this connection. */
	if (!bbr->ecn_eligible && bbr_vparam(sk, ecn_enable) &&
	    (bbr->min_rtt_us <= bbr_param(sk, ecn_max_rtt_us) ||
	     !bbr_param(sk, ecn_max_rtt_us)))
		bbr->ecn_eligible = 1;

	bbr_ecn_alpha_step(sk, st, ce_ratio);
}
