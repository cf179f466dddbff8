/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * bounds.h: the model's bounds: long-term bw_hi/inflight_hi (probed for, cut
 * on high loss or ECN while probing) and short-term bw_lo/inflight_lo (cut
 * by beta once per loss round with loss/ECN while not probing).
 * bbrkit-cc: bbr3/bounds.rs.
 */

/* bbr_max_bw: max bw sample of this and the previous ProbeBW cycle. */
static __always_inline u32 bbr_max_bw(const struct sock *sk)
{
	const struct bbr *bbr = inet_csk_ca(sk);

	return max(bbr->bw_hi[0], bbr->bw_hi[1]);
}

/* bbr_bw: the bandwidth the flow uses, min(max_bw, bw_lo). */
static __always_inline u32 bbr_bw(const struct sock *sk)
{
	const struct bbr *bbr = inet_csk_ca(sk);

	return min(bbr_max_bw(sk), bbr->bw_lo);
}

/* bbr_take_max_bw_sample: into the current cycle's slot. */
static __always_inline void bbr_take_max_bw_sample(struct sock *sk, u32 bw)
{
	struct bbr *bbr = inet_csk_ca(sk);

	bbr->bw_hi[1] = max(bw, bbr->bw_hi[1]);
}

/* bbr_advance_max_bw_filter: once per ProbeBW cycle forget the older cycle,
 * unless the current one has no sample yet. */
static __always_inline void bbr_advance_max_bw_filter(struct sock *sk)
{
	struct bbr *bbr = inet_csk_ca(sk);

	if (!bbr->bw_hi[1])
		return;  /* no samples in this window; remember old window */
	bbr->bw_hi[0] = bbr->bw_hi[1];
	bbr->bw_hi[1] = 0;
}

/* bbr_reset_lower_bounds. */
static __always_inline void bbr_reset_lower_bounds(struct sock *sk)
{
	struct bbr *bbr = inet_csk_ca(sk);

	bbr->bw_lo = ~0U;
	bbr->inflight_lo = ~0U;
}

/* bbr_reset_congestion_signals: after probing, before a phase that adapts
 * the lower bounds. */
static __always_inline void bbr_reset_congestion_signals(struct sock *sk)
{
	struct bbr *bbr = inet_csk_ca(sk);

	bbr->loss_in_round = 0;
	bbr->ecn_in_round = 0;
	bbr->loss_in_cycle = 0;
	bbr->ecn_in_cycle = 0;
	bbr->bw_latest = 0;
	bbr->inflight_latest = 0;
}

/* bbr_init_lower_bounds. */
static __always_inline void bbr_init_lower_bounds(struct sock *sk, bool init_bw)
{
	struct bbr *bbr = inet_csk_ca(sk);

	if (init_bw && bbr->bw_lo == ~0U)
		bbr->bw_lo = bbr_max_bw(sk);
	if (bbr->inflight_lo == ~0U)
		bbr->inflight_lo = tcp_snd_cwnd(tcp_sk(sk));
}

/* bbr_loss_lower_bounds: bw_lo/inflight_lo cut to (1 - beta) ~ 0.7, but not
 * below what the last round delivered. */
static __always_inline void bbr_loss_lower_bounds(struct sock *sk)
{
	struct bbr *bbr = inet_csk_ca(sk);
	u32 loss_cut = BBR_UNIT - bbr_param(sk, beta);

	bbr->bw_lo = max_t(u32, bbr->bw_latest,
			   (u64)bbr->bw_lo * loss_cut >> BBR_SCALE);
	bbr->inflight_lo = max_t(u32, bbr->inflight_latest,
				 (u64)bbr->inflight_lo * loss_cut >> BBR_SCALE);
}

/* bbr_adapt_lower_bounds: when not
 * probing, cut bw_lo and inflight_lo per round with loss, and inflight_lo by
 * (1 - alpha*ecn_factor) per round with ECN on an ECN-eligible flow.
 * v2alpha (bbr2_adapt_lower_bounds) checks ecn_eligible here, since its
 * ecn_in_round counts every ECE; v3 notes ECE only when eligible (bbr_main)
 * and eligibility never ends, so the check is v3's own too. */
static void bbr_adapt_lower_bounds(struct sock *sk)
{
	struct bbr *bbr = inet_csk_ca(sk);
	u32 ecn_inflight_lo = ~0U;

	/* We only use lower-bound estimates when not probing bw.
	 * When probing we need to push inflight higher to probe bw. */
	if (bbr_is_probing_bandwidth(sk))
		return;

	/* ECN response. */
	if (bbr->ecn_in_round && bbr->ecn_eligible &&
	    bbr_param(sk, ecn_factor)) {
		bbr_init_lower_bounds(sk, false);
		ecn_inflight_lo = bbr_ecn_cut(sk, bbr->inflight_lo);
	}

	/* Loss response. */
	if (bbr->loss_in_round) {
		bbr_init_lower_bounds(sk, true);
		bbr_loss_lower_bounds(sk);
		bbr3_cnt_inc(sk, lo_cuts);
	}

	/* Adjust to the lower of the levels implied by loss/ECN. */
	bbr->inflight_lo = min(bbr->inflight_lo, ecn_inflight_lo);
	if (!bbr->v2)	/* v2alpha: no floor */
		bbr->bw_lo = max(1U, bbr->bw_lo);
}

/* The head of bbr_update_congestion_signals and v2alpha's
 * bbr2_update_congestion_signals: for a valid observation, feed the max-bw
 * filter (app-limited samples only if they raise it) and note loss.
 * Returns whether the observation was valid. */
static __always_inline bool bbr_take_sample(struct sock *sk,
					    const struct bbr_rs *rs,
					    struct bbr_context *ctx)
{
	struct bbr *bbr = inet_csk_ca(sk);
	u64 bw;

	if (rs->interval_us <= 0 || !rs->acked_sacked)
		return false; /* Not a valid observation */
	bw = ctx->sample_bw;

	if (!rs->is_app_limited || bw >= bbr_max_bw(sk))
		bbr_take_max_bw_sample(sk, bw);

	bbr->loss_in_round |= (rs->losses > 0);
	return true;
}

/* bbr_update_congestion_signals: take the sample, and once per loss round
 * adapt the lower bounds. */
static void bbr_update_congestion_signals(struct sock *sk,
					  const struct bbr_rs *rs,
					  struct bbr_context *ctx)
{
	struct bbr *bbr = inet_csk_ca(sk);

	if (!bbr_take_sample(sk, rs, ctx))
		return;
	if (!bbr->loss_round_start)
		return;		/* skip lo-bound updates until round start */

	bbr_adapt_lower_bounds(sk);

	bbr->loss_in_round = 0;
	bbr->ecn_in_round  = 0;
}

/* bbr_is_inflight_too_high: loss above loss_thresh (2%) of tx_in_flight, or
 * (ECN-eligible) CE above ecn_thresh (50%) of delivered. */
static bool bbr_is_inflight_too_high(const struct sock *sk,
				     const struct bbr_rs *rs)
{
	const struct bbr *bbr = inet_csk_ca(sk);
	u32 loss_thresh, ecn_thresh;

	if (rs->lost > 0 && rs->tx_in_flight) {
		loss_thresh = (u64)rs->tx_in_flight * bbr_param(sk, loss_thresh) >>
				BBR_SCALE;
		if (rs->lost > loss_thresh)
			return true;
	}

	if (rs->delivered_ce > 0 && rs->delivered > 0 &&
	    bbr->ecn_eligible && bbr_param(sk, ecn_thresh)) {
		ecn_thresh = (u64)rs->delivered * bbr_param(sk, ecn_thresh) >>
				BBR_SCALE;
		/* v2alpha: at the threshold already */
		if (rs->delivered_ce > ecn_thresh ||
		    (bbr->v2 && rs->delivered_ce == ecn_thresh))
			return true;
	}

	return false;
}

/* bbr_inflight_hi_from_lost_skb: the inflight at which the loss rate crossed
 * loss_thresh inside the lost skb of pcount packets, solving
 * (lost_prev + p) / (inflight_prev + p) = loss_thresh for the prefix p,
 * rounded up. (google takes the skb; here its pcount, see loss.h.)
 * DEVIATION (#3b): google's skb carries its own stamps, so its pcount is
 * within its tx.in_flight and tx.lost, and it returns ~0U (removing the
 * bound) only after a WARN on an inconsistent skb. Here a group of lost
 * packets shares the stamps of the ACK's sampled skb (a retransmission
 * has tx_in_flight 1), so the group can exceed them: it is taken as the
 * part of it the sample holds, min(pcount, tx_in_flight, lost), and the
 * answer is never ~0U. */
static u32 bbr_inflight_hi_from_lost_skb(const struct sock *sk,
					 const struct bbr_rs *rs, u32 pcount)
{
	u32 loss_thresh  = bbr_param(sk, loss_thresh);
	u32 divisor, inflight_hi;
	s32 inflight_prev, lost_prev;
	u64 loss_budget, lost_prefix;

	pcount = min(pcount, min(rs->tx_in_flight, rs->lost));

	/* How much data was in flight before this skb? */
	inflight_prev = rs->tx_in_flight - pcount;

	/* How much inflight data was marked lost before this skb? */
	lost_prev = rs->lost - pcount;

	/* At what prefix of this lost skb did losss rate exceed loss_thresh? */
	loss_budget = (u64)inflight_prev * loss_thresh + BBR_UNIT - 1;
	loss_budget >>= BBR_SCALE;
	if (lost_prev >= loss_budget) {
		lost_prefix = 0;   /* previous losses crossed loss_thresh */
	} else {
		lost_prefix = loss_budget - lost_prev;
		lost_prefix <<= BBR_SCALE;
		divisor = BBR_UNIT - loss_thresh;	/* > 0: 8-bit loss_thresh */
		lost_prefix /= divisor;
	}

	inflight_hi = inflight_prev + lost_prefix;
	return inflight_hi;
}

/* bbr_inflight_with_headroom: inflight_hi minus inflight_headroom (15%, at
 * least one packet), at least cwnd_min_target. */
static u32 bbr_inflight_with_headroom(const struct sock *sk)
{
	const struct bbr *bbr = inet_csk_ca(sk);
	u32 headroom, headroom_fraction;

	if (bbr->inflight_hi == ~0U)
		return ~0U;

	headroom_fraction = bbr_param(sk, inflight_headroom);
	headroom = ((u64)bbr->inflight_hi * headroom_fraction) >> BBR_SCALE;
	headroom = max(headroom, 1U);
	return max_t(s32, bbr->inflight_hi - headroom,
		     bbr_param(sk, cwnd_min_target));
}

/* bbr_handle_inflight_too_high: react once per probe: inflight_hi =
 * max(tx_in_flight, target_inflight * (1 - beta)) (unless app-limited) and,
 * if in UP, go DOWN. (path: only for the counters, not in google.) */
static void bbr_handle_inflight_too_high(struct sock *sk,
					 const struct bbr_rs *rs,
					 enum bbr3_hit path)
{
	struct bbr *bbr = inet_csk_ca(sk);
	const u32 beta = bbr_param(sk, beta);

	bbr->prev_probe_too_high = 1;
	bbr->bw_probe_samples = 0;  /* only react once per probe */
	/* If we are app-limited then we are not robustly
	 * probing the max volume of inflight data we think
	 * might be safe (analogous to how app-limited bw
	 * samples are not known to be robustly probing bw). */
	if (!rs->is_app_limited) {
		bbr->inflight_hi = max_t(u32, rs->tx_in_flight,
					 (u64)bbr_target_inflight(sk) *
					 (BBR_UNIT - beta) >> BBR_SCALE);
	}
	bbr3_note_too_high(sk, path);
	if (bbr->mode == BBR_PROBE_BW && bbr->cycle_idx == BBR_BW_PROBE_UP)
		bbr_start_bw_probe_down(sk);
}

/* bbr_raise_inflight_hi_slope: each UP round double the growth: +1, +2,
 * +4, ... packets of inflight_hi per round. */
static void bbr_raise_inflight_hi_slope(struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct bbr *bbr = inet_csk_ca(sk);
	u32 growth_this_round, cnt;

	/* Calculate "slope": packets S/Acked per inflight_hi increment. */
	growth_this_round = 1 << bbr->bw_probe_up_rounds;
	bbr->bw_probe_up_rounds = min(bbr->bw_probe_up_rounds + 1, 30);
	cnt = tcp_snd_cwnd(tp) / growth_this_round;
	cnt = max(cnt, 1U);
	bbr->bw_probe_up_cnt = cnt;
}

/* bbr_probe_inflight_hi_upward: while cwnd-limited at inflight_hi, add one
 * packet of inflight_hi per bw_probe_up_cnt packets ACKed. */
static void bbr_probe_inflight_hi_upward(struct sock *sk,
					 const struct bbr_rs *rs)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct bbr *bbr = inet_csk_ca(sk);
	u32 delta;

	if (!bbr_is_cwnd_limited(tp) || tcp_snd_cwnd(tp) < bbr->inflight_hi) {
		if (bbr->v2)	/* v2alpha: don't accumulate unused credits */
			bbr->bw_probe_up_acks = 0;
		return;  /* not fully using inflight_hi, so don't grow it */
	}

	/* For each bw_probe_up_cnt packets ACKed, increase inflight_hi by 1. */
	bbr->bw_probe_up_acks += rs->acked_sacked;
	if (bbr->bw_probe_up_acks >=  bbr->bw_probe_up_cnt) {
		delta = bbr->bw_probe_up_acks / bbr->bw_probe_up_cnt;
		bbr->bw_probe_up_acks -= delta * bbr->bw_probe_up_cnt;
		bbr->inflight_hi += delta;
		if (!bbr->v2)	/* v2alpha keeps the fast path */
			bbr->try_fast_path = 0;  /* Need to update cwnd */
	}

	if (bbr->round_start)
		bbr_raise_inflight_hi_slope(sk);
}

/* bbr_adapt_upper_bounds: track the ACK phase of a probe; at the end of a
 * probe's feedback advance the max-bw filter and maybe re-probe; cut
 * inflight_hi if a probing sample was too high, else raise it to any higher
 * level seen safe (and grow it in UP). Returns true if it decided a state
 * transition. */
static bool bbr_adapt_upper_bounds(struct sock *sk, const struct bbr_rs *rs,
				   struct bbr_context *ctx)
{
	struct bbr *bbr = inet_csk_ca(sk);

	/* Track when we'll see bw/loss samples resulting from our bw probes. */
	if (bbr->ack_phase == BBR_ACKS_PROBE_STARTING && bbr->round_start)
		bbr->ack_phase = BBR_ACKS_PROBE_FEEDBACK;
	if (bbr->ack_phase == BBR_ACKS_PROBE_STOPPING && bbr->round_start) {
		/* End of samples from bw probing phase. */
		bbr->bw_probe_samples = 0;
		bbr->ack_phase = BBR_ACKS_INIT;
		/* At this point in the cycle, our current bw sample is also
		 * our best recent chance at finding the highest available bw
		 * for this flow. So now is the best time to forget the bw
		 * samples from the previous cycle, by advancing the window. */
		if (bbr->mode == BBR_PROBE_BW && !rs->is_app_limited)
			bbr_advance_max_bw_filter(sk);
		/* If we had an inflight_hi, then probed and pushed inflight all
		 * the way up to hit that inflight_hi without seeing any
		 * high loss/ECN in all the resulting ACKs from that probing,
		 * then probe up again, this time letting inflight persist at
		 * inflight_hi for a round trip, then accelerating beyond. */
		if (bbr->mode == BBR_PROBE_BW &&
		    bbr->stopped_risky_probe && !bbr->prev_probe_too_high) {
			bbr_start_bw_probe_refill(sk, 0);
			return true;  /* yes, decided state transition */
		}
	}
	if (bbr_is_inflight_too_high(sk, rs)) {
		if (bbr->bw_probe_samples)  /*  sample is from bw probing? */
			bbr_handle_inflight_too_high(sk, rs, BBR3_HIT_ACK);
	} else {
		/* Loss/ECN rate is declared safe. Adjust upper bound upward. */

		if (bbr->inflight_hi == ~0U)
			return false;   /* no excess queue signals yet */

		/* To be resilient to random loss, we must raise bw/inflight_hi
		 * if we observe in any phase that a higher level is safe. */
		if (rs->tx_in_flight > bbr->inflight_hi) {
			bbr->inflight_hi = rs->tx_in_flight;
		}

		if (bbr->mode == BBR_PROBE_BW &&
		    bbr->cycle_idx == BBR_BW_PROBE_UP)
			bbr_probe_inflight_hi_upward(sk, rs);
	}

	return false;
}
