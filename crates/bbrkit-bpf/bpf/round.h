/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * round.h: packet-timed rounds, the per-ACK bandwidth sample, and the
 * "latest" (one-round) delivery signals with their loss round.
 * bbrkit-cc: bbr3/round.rs. Never decides state transitions.
 */

/* bbr_update_round_start: a round ends when a packet sent after the previous
 * round's end is (S)ACKed. Only valid samples count. (google returns the
 * packets delivered in the round, which only PLB uses.) */
static void bbr_update_round_start(struct sock *sk, const struct bbr_rs *rs)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct bbr *bbr = inet_csk_ca(sk);

	bbr->round_start = 0;

	/* See if we've reached the next RTT */
	if (rs->interval_us > 0 &&
	    !before(rs->prior_delivered, bbr->next_rtt_delivered)) {
		bbr->next_rtt_delivered = tp->delivered;
		bbr->round_start = 1;
	}
}

/* bbr_calculate_bw_sample: ceil(delivered * BW_UNIT / interval_us), 0 if the
 * sample is invalid. v3 rounds up so that low rates can still grow. */
static __always_inline void bbr_calculate_bw_sample(const struct bbr_rs *rs,
						    struct bbr_context *ctx)
{
	u64 bw = 0;

	if (rs->interval_us > 0 && rs->delivered >= 0) {
		u64 den = (u64)rs->interval_us;

		bw = ((u64)rs->delivered * BW_UNIT + den - 1) / den;
	}
	ctx->sample_bw = (u32)bw;	/* truncated like google's u32 store */
}

/* bbr_update_latest_delivery_signals: one-round maxima of the bw sample and
 * of delivered data, and the loss round (bbr_note_loss re-anchors it). */
static void bbr_update_latest_delivery_signals(struct sock *sk,
					       const struct bbr_rs *rs,
					       struct bbr_context *ctx)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct bbr *bbr = inet_csk_ca(sk);

	bbr->loss_round_start = 0;
	if (rs->interval_us <= 0 || !rs->acked_sacked)
		return; /* Not a valid observation */

	bbr->bw_latest = max_t(u32, bbr->bw_latest, ctx->sample_bw);
	bbr->inflight_latest = max_t(u32, bbr->inflight_latest, rs->delivered);

	if (!before(rs->prior_delivered, bbr->loss_round_delivered)) {
		bbr->loss_round_delivered = tp->delivered;
		bbr->loss_round_start = 1;  /* mark start of new round trip */
	}
}

/* bbr_advance_latest_delivery_signals: at a loss-round start, restart the
 * one-round filters from this sample.
 * DEVIATION: stock rate samples have no is_acking_tlp_retrans_seq, so the
 * filters are always advanced (google keeps them on the ACK of a TLP
 * retransmit); as bbrkit-cc. */
static __always_inline void bbr_advance_latest_delivery_signals(struct sock *sk,
							const struct bbr_rs *rs,
							struct bbr_context *ctx)
{
	struct bbr *bbr = inet_csk_ca(sk);

	if (bbr->loss_round_start) {
		bbr->bw_latest = ctx->sample_bw;
		bbr->inflight_latest = rs->delivered > 0 ? rs->delivered : 0;
	}
}
