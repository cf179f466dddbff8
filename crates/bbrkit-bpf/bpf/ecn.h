/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * ecn.h: DCTCP-style ecn_alpha, the ECN Startup exit and the ECN cut of
 * inflight_lo. bbrkit-cc: bbr3/ecn.rs.
 *
 * v3 uses ECN only on "shallow-threshold" paths: ECN negotiated AND the
 * route flagged ECN_LOW (google's TCP_ECN_LOW, from the route's
 * RTAX_FEATURE_ECN_LOW) AND min_rtt <= 5 ms. Stock kernels have no ECN_LOW
 * route feature, so on them bbr_can_use_ecn() is false and none of this
 * runs -- exactly what v3 does on a route without ecn_low. The code is kept
 * so that the three sources stay side by side.
 */

/* DEVIATION: no TCP_ECN_LOW on stock kernels (see above). */
#define BBR3_ROUTE_ECN_LOW false

/* bbr_can_use_ecn: ECN negotiated and the route is ECN_LOW (bbr2: and
 * v2alpha's bbr_ecn_enable, off by default). */
static __always_inline bool bbr_can_use_ecn(const struct sock *sk)
{
	return bbr_vparam(sk, ecn_enable) &&
	       (tcp_sk(sk)->ecn_flags & TCP_ECN_OK) && BBR3_ROUTE_ECN_LOW;
}

/* bbr_check_ecn_too_high_in_startup: exit STARTUP after full_ecn_cnt (2)
 * consecutive rounds with ce_ratio >= ecn_thresh. */
static void bbr_check_ecn_too_high_in_startup(struct sock *sk, u32 ce_ratio)
{
	struct bbr *bbr = inet_csk_ca(sk);

	if (bbr->full_bw_reached || !bbr->ecn_eligible ||
	    !bbr_param(sk, full_ecn_cnt) || !bbr_param(sk, ecn_thresh))
		return;

	if (ce_ratio >= bbr_param(sk, ecn_thresh)) {
		if (bbr->startup_ecn_rounds < 3)	/* 2-bit field */
			bbr->startup_ecn_rounds++;
	} else {
		bbr->startup_ecn_rounds = 0;
	}

	if (bbr->startup_ecn_rounds >= bbr_param(sk, full_ecn_cnt)) {
		bbr_handle_queue_too_high_in_startup(sk);
		return;
	}
}

/* The CE ratio (/256) of what was delivered since alpha's last update, or
 * -1 when nothing was (or the counters went back). Shared by
 * bbr_update_ecn_alpha and v2alpha's bbr2_update_ecn_alpha. */
static __always_inline s64 bbr_ecn_ce_ratio(const struct tcp_sock *tp,
					    const struct bbr3_sk *st)
{
	s32 delivered = tp->delivered - st->alpha_last_delivered;
	s32 delivered_ce = tp->delivered_ce - st->alpha_last_delivered_ce;

	if (delivered == 0 ||		/* avoid divide by zero */
	    delivered < 0 || delivered_ce < 0)  /* wrapped? */
		return -1;
	return ((u64)delivered_ce << BBR_SCALE) / (u32)delivered;
}

/* The DCTCP-style step of both versions: alpha += gain * (ce_ratio -
 * alpha), the counters marked as seen, then the ECN Startup exit. */
static __always_inline void bbr_ecn_alpha_step(struct sock *sk,
					       struct bbr3_sk *st,
					       u64 ce_ratio)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct bbr *bbr = inet_csk_ca(sk);
	u32 gain = bbr_param(sk, ecn_alpha_gain);
	u64 alpha;

	alpha = ((BBR_UNIT - gain) * bbr->ecn_alpha) >> BBR_SCALE;
	alpha += (gain * ce_ratio) >> BBR_SCALE;
	bbr->ecn_alpha = min_t(u32, alpha, BBR_UNIT);

	st->alpha_last_delivered = tp->delivered;
	st->alpha_last_delivered_ce = tp->delivered_ce;

	bbr_check_ecn_too_high_in_startup(sk, ce_ratio);
}

/* bbr_update_ecn_alpha (at each round start): decide ECN eligibility,
 * update alpha, and check the ECN Startup exit. Returns the round's CE
 * ratio (/256), or -1. The last-update counters live in sk_storage. */
static int bbr_update_ecn_alpha(struct sock *sk, struct bbr3_sk *st)
{
	struct bbr *bbr = inet_csk_ca(sk);
	s64 ce_ratio;

	/* See if we should use ECN sender logic for this connection. */
	if (!bbr->ecn_eligible && bbr_can_use_ecn(sk) &&
	    bbr_param(sk, ecn_factor) &&
	    (bbr->min_rtt_us <= bbr_param(sk, ecn_max_rtt_us) ||
	     !bbr_param(sk, ecn_max_rtt_us)))
		bbr->ecn_eligible = 1;

	/* DEVIATION: no PLB, so alpha is tracked only when ECN-eligible (as
	 * bbrkit-cc); and not at all if sk_storage is missing. */
	if (!bbr->ecn_eligible || !st)
		return -1;

	ce_ratio = bbr_ecn_ce_ratio(tcp_sk(sk), st);
	if (ce_ratio < 0)
		return -1;
	bbr_ecn_alpha_step(sk, st, ce_ratio);
	return (int)ce_ratio;
}

/* bbr_ecn_cut: inflight * (1 - alpha * ecn_factor), /256 (google inlines
 * this in bbr_ecn_lower_bounds). */
static u32 bbr_ecn_cut(struct sock *sk, u32 inflight)
{
	struct bbr *bbr = inet_csk_ca(sk);
	u32 cut = BBR_UNIT - ((bbr->ecn_alpha * bbr_param(sk, ecn_factor)) >> BBR_SCALE);

	return (u64)inflight * cut >> BBR_SCALE;
}
