/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * startup.h: STARTUP and its exits: the bandwidth-plateau detector (also
 * used in PROBE_UP), the loss-based exit, and the shared "queue too high"
 * handler. bbrkit-cc: bbr3/startup.rs. The ECN exit lives in ecn.h; DRAIN is
 * entered by drain.h.
 */

/* bbr_reset_full_bw: restart the plateau detector. */
static __always_inline void bbr_reset_full_bw(struct sock *sk)
{
	struct bbr *bbr = inet_csk_ca(sk);

	bbr->full_bw = 0;
	bbr->full_bw_cnt = 0;
	bbr->full_bw_now = 0;
}

/* bbr_check_full_bw_reached: the pipe is full after full_bw_cnt (3)
 * non-app-limited rounds whose bw samples did not reach full_bw_thresh
 * (1.25x) of the baseline. v3 compares the per-ACK sample and re-arms the
 * baseline on any ACK; the count moves only at round starts. Why 3 rounds:
 * rwin autotuning grows the rwin, we fill it, then we see the higher rate. */
static void bbr_check_full_bw_reached(struct sock *sk, const struct bbr_rs *rs,
				      struct bbr_context *ctx)
{
	struct bbr *bbr = inet_csk_ca(sk);
	u32 bw_thresh, full_cnt, thresh;

	if (bbr->full_bw_now || rs->is_app_limited)
		return;

	thresh = bbr_param(sk, full_bw_thresh);
	full_cnt = bbr_param(sk, full_bw_cnt);
	bw_thresh = (u64)bbr->full_bw * thresh >> BBR_SCALE;
	if (ctx->sample_bw >= bw_thresh) {
		bbr_reset_full_bw(sk);
		bbr->full_bw = ctx->sample_bw;
		return;
	}
	if (!bbr->round_start)
		return;
	if (bbr->full_bw_cnt < 3)	/* 2-bit field; cannot pass 3 (see full_bw_now) */
		++bbr->full_bw_cnt;
	bbr->full_bw_now = bbr->full_bw_cnt >= full_cnt;
	bbr->full_bw_reached |= bbr->full_bw_now;
}

/* bbr_handle_queue_too_high_in_startup: loss or ECN ended STARTUP; remember
 * the volume that was too much as inflight_hi. */
static void bbr_handle_queue_too_high_in_startup(struct sock *sk)
{
	struct bbr *bbr = inet_csk_ca(sk);
	u32 bdp;  /* estimated BDP in packets */

	bbr->full_bw_reached = 1;

	bdp = bbr_inflight(sk, bbr_max_bw(sk), BBR_UNIT);
	/* v2alpha (bbr2_handle_queue_too_high_in_startup): the BDP alone */
	bbr->inflight_hi = bbr->v2 ? bdp : max(bdp, bbr->inflight_latest);
}

/* bbr_check_loss_too_high_in_startup: at the end of each loss round spent in
 * fast Recovery during STARTUP, exit if there were at least full_loss_cnt
 * (v3: 6, v2: 8) loss events and the loss rate of this sample exceeds
 * loss_thresh (2%). */
static void bbr_check_loss_too_high_in_startup(struct sock *sk,
					       const struct bbr_rs *rs)
{
	struct bbr *bbr = inet_csk_ca(sk);

	if (bbr->full_bw_reached)
		return;

	if (rs->losses && bbr->loss_events_in_round < 0xf)
		bbr->loss_events_in_round++;  /* update saturating counter */
	if (bbr_vparam(sk, full_loss_cnt) && bbr->loss_round_start &&
	    bbr_ca_state(sk) == TCP_CA_Recovery &&
	    bbr->loss_events_in_round >= bbr_vparam(sk, full_loss_cnt) &&
	    bbr_is_inflight_too_high(sk, rs)) {
		bbr_handle_queue_too_high_in_startup(sk);
		bbr3_cnt_inc(sk, startup_loss_exits);
		return;
	}
	if (bbr->loss_round_start)
		bbr->loss_events_in_round = 0;
}
