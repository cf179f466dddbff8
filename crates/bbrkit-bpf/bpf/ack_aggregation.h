/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * ack_aggregation.h: estimate how much more data was ACKed than bw predicts
 * over an epoch (extra_acked), and add that much cwnd so the sender keeps
 * going through ACK silences (Wi-Fi, cable, LRO/GRO). Two windows of
 * extra_acked_win_rtts (5) rounds each (1 while STARTUP has not filled the
 * pipe). Capped at cwnd when sampled and at bw * 100 ms when used.
 * bbrkit-cc: bbr3/ack_aggregation.rs.
 */

/* bbr_extra_acked: max over the two windows. */
static __always_inline u16 bbr_extra_acked(const struct sock *sk)
{
	const struct bbr *bbr = inet_csk_ca(sk);

	return max(bbr->extra_acked[0], bbr->extra_acked[1]);
}

/* bbr_ack_aggregation_cwnd: min(extra_acked * gain, bw * 100 ms). */
static u32 bbr_ack_aggregation_cwnd(struct sock *sk)
{
	u32 max_aggr_cwnd, aggr_cwnd = 0;

	if (bbr_param(sk, extra_acked_gain)) {
		max_aggr_cwnd = ((u64)bbr_bw(sk) * bbr_extra_acked_max_us)
				/ BW_UNIT;
		aggr_cwnd = (bbr_param(sk, extra_acked_gain) * bbr_extra_acked(sk))
			     >> BBR_SCALE;
		aggr_cwnd = min(aggr_cwnd, max_aggr_cwnd);
	}

	return aggr_cwnd;
}

/* bbr->extra_acked[bbr->extra_acked_win_idx], with constant offsets: the
 * verifier refuses a variable offset into icsk_ca_priv. */
static __always_inline u16 bbr_extra_acked_cur(const struct bbr *bbr)
{
	return bbr->extra_acked_win_idx ? bbr->extra_acked[1] : bbr->extra_acked[0];
}

static __always_inline void bbr_set_extra_acked_cur(struct bbr *bbr, u16 v)
{
	if (bbr->extra_acked_win_idx)
		bbr->extra_acked[1] = v;
	else
		bbr->extra_acked[0] = v;
}

/* bbr_update_ack_aggregation. */
static void bbr_update_ack_aggregation(struct sock *sk,
				       const struct bbr_rs *rs)
{
	u32 epoch_us, expected_acked, extra_acked;
	struct bbr *bbr = inet_csk_ca(sk);
	struct tcp_sock *tp = tcp_sk(sk);
	u32 extra_acked_win_rtts_thresh = bbr_param(sk, extra_acked_win_rtts);
	s32 delta;

	if (!bbr_param(sk, extra_acked_gain) || rs->acked_sacked <= 0 ||
	    rs->delivered < 0 || rs->interval_us <= 0)
		return;

	if (bbr->round_start) {
		bbr->extra_acked_win_rtts = min(0x1F,
						bbr->extra_acked_win_rtts + 1);
		if (!bbr->full_bw_reached)
			extra_acked_win_rtts_thresh = 1;
		if (bbr->extra_acked_win_rtts >=
		    extra_acked_win_rtts_thresh) {
			bbr->extra_acked_win_rtts = 0;
			bbr->extra_acked_win_idx = bbr->extra_acked_win_idx ?
						   0 : 1;
			bbr_set_extra_acked_cur(bbr, 0);
		}
	}

	/* Compute how many packets we expected to be delivered over epoch.
	 * tcp_stamp_us_delta() on the low 32 bits (see struct bbr). */
	delta = (s32)((u32)tp->delivered_mstamp - bbr->ack_epoch_mstamp);
	epoch_us = delta > 0 ? delta : 0;
	expected_acked = ((u64)bbr_bw(sk) * epoch_us) / BW_UNIT;

	/* Reset the aggregation epoch if ACK rate is below expected rate or
	 * significantly large no. of ack received since epoch (potentially
	 * quite old epoch). */
	if (bbr->ack_epoch_acked <= expected_acked ||
	    (bbr->ack_epoch_acked + rs->acked_sacked >=
	     bbr_param(sk, ack_epoch_acked_reset_thresh))) {
		bbr->ack_epoch_acked = 0;
		bbr->ack_epoch_mstamp = (u32)tp->delivered_mstamp;
		expected_acked = 0;
	}

	/* Compute excess data delivered, beyond what was expected. */
	bbr->ack_epoch_acked = min_t(u32, 0xFFFFF,
				     bbr->ack_epoch_acked + rs->acked_sacked);
	extra_acked = bbr->ack_epoch_acked - expected_acked;
	extra_acked = min(extra_acked, tcp_snd_cwnd(tp));
	if (extra_acked > bbr_extra_acked_cur(bbr))
		bbr_set_extra_acked_cur(bbr, extra_acked);
}
