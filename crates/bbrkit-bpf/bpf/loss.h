/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * loss.h: loss signals and loss recovery: the per-lost-skb check, TLP
 * repaired loss, recovery entry (ssthresh), RTO (set_state(Loss)), undo.
 * bbrkit-cc: bbr3/loss.rs. BBRv3 has no packet conservation in fast
 * recovery (unlike v1): the model bounds are the response. The stack's own
 * recovery (PRR) does not run for a CA with cong_control.
 */

/* bbr_save_cwnd: remember the last known good cwnd (not one cut by recovery
 * or PROBE_RTT). */
static void bbr_save_cwnd(struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct bbr *bbr = inet_csk_ca(sk);

	if (bbr->prev_ca_state < TCP_CA_Recovery && bbr->mode != BBR_PROBE_RTT)
		bbr->prior_cwnd = tcp_snd_cwnd(tp);  /* this cwnd is good enough */
	else  /* loss recovery or BBR_PROBE_RTT have temporarily cut cwnd */
		bbr->prior_cwnd = max(bbr->prior_cwnd, tcp_snd_cwnd(tp));
}

/* bbr_note_loss: mark the current round trip as a loss round; the first
 * loss of a round re-anchors it so it ends one round after that loss.
 * (delivered: tp->delivered when the loss was marked; google reads it then.) */
static void bbr_note_loss(struct sock *sk, u32 delivered)
{
	struct bbr *bbr = inet_csk_ca(sk);

	/* Capture "current" data over the full round trip of loss, to
	 * have a better chance of observing the full capacity of the path. */
	if (!bbr->loss_in_round)  /* first loss in this round trip? */
		bbr->loss_round_delivered = delivered;  /* set round trip */
	bbr->loss_in_round = 1;
	bbr->loss_in_cycle = 1;
	bbr3_cnt_inc(sk, loss_events);
}

/* bbr_skb_marked_lost. google: ops->skb_marked_lost(sk, skb), called for
 * every skb the stack marks lost, with that skb's tx.in_flight/tx.lost.
 * DEVIATION: stock kernels have no such op. bbr3_main calls this once for
 * the pcount packets the stack marked lost since the previous ACK outside
 * cong_control (RACK's reorder timer, SACK of an old ACK; `delivered` is
 * tp->delivered then) and once for the rs->losses packets this ACK marked
 * (the stack marks them just before cong_control, as google's op would
 * run just before bbr_main), each taken as one skb of that pcount whose
 * send snapshot is that of the ACK's sampled skb (signals.h);
 * bbr3_set_state notes an RTO's losses (without the probing check: no
 * sample). */
static void bbr_skb_marked_lost(struct sock *sk, const struct bbr_rs *ack_rs,
				u32 pcount, u32 delivered)
{
	struct bbr *bbr = inet_csk_ca(sk);
	struct bbr_rs rs = {};

	bbr_note_loss(sk, delivered);

	if (!bbr->bw_probe_samples)
		return;  /* not an skb sent while probing for bandwidth */
	/* We are probing for bandwidth. Construct a rate sample that
	 * estimates what happened in the flight leading up to this lost skb,
	 * then see if the loss rate went too high, and if so at which packet.
	 * DEVIATION (#3d): an ACK without a sampled skb has no send snapshot;
	 * its lost packets get the fallback of a snapshot miss (#1/#2: the
	 * flight before this ACK and this ACK's losses, at least pcount). */
	if (ack_rs->tx_in_flight) {
		rs.tx_in_flight = ack_rs->tx_in_flight;
		rs.lost = ack_rs->lost;
	} else {
		rs.tx_in_flight = ack_rs->prior_in_flight;
		rs.lost = max(ack_rs->losses, pcount);
	}
	rs.is_app_limited = ack_rs->is_app_limited;
	if (bbr_is_inflight_too_high(sk, &rs)) {
		rs.tx_in_flight = bbr_inflight_hi_from_lost_skb(sk, &rs, pcount);
		bbr_handle_inflight_too_high(sk, &rs, BBR3_HIT_LOST);
	}
}

/* bbr_run_loss_probe_recovery (google: CA_EVENT_TLP_RECOVERY): a tail-loss
 * probe repaired the loss of one segment.
 * DEVIATION: stock kernels send no such event; bbr3_set_state calls this
 * when tcp_process_tlp_ack()'s sequence (CWR with tp->tlp_retrans, then
 * Open/Disorder in the same call) reports a TLP-repaired loss
 * (bbr3_tlp_repaired, DEVIATIONS.md #4).
 * tlp_orig_data_app_limited does not exist in stock kernels: whether the
 * flow is app-limited now (tp->app_limited) stands in. */
static void bbr_run_loss_probe_recovery(struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct bbr *bbr = inet_csk_ca(sk);
	struct bbr_rs rs = {};

	bbr_note_loss(sk, tp->delivered);

	if (!bbr->bw_probe_samples)
		return;  /* not sent while probing for bandwidth */
	/* We are probing for bandwidth. Construct a rate sample that
	 * estimates what happened in the flight leading up to this
	 * loss, then see if the loss rate went too high. */
	rs.lost = 1;	/* TLP probe repaired loss of a single segment */
	rs.tx_in_flight = bbr->inflight_latest + rs.lost;
	rs.is_app_limited = tp->app_limited != 0;
	if (bbr_is_inflight_too_high(sk, &rs))
		bbr_handle_inflight_too_high(sk, &rs, BBR3_HIT_TLP);
}

/* bbr_undo_cwnd: the recovery was spurious; reset the plateau detector and
 * restore the bounds saved at recovery entry. */
static u32 bbr_undo_cwnd(struct sock *sk)
{
	struct bbr *bbr = inet_csk_ca(sk);
	struct bbr3_sk *st = bbr_sk(sk);

	if (bbr->v2) {	/* bbr2_undo_cwnd: keeps the fast path */
		bbr->full_bw = 0;
		bbr->full_bw_cnt = 0;
	} else {
		bbr_reset_full_bw(sk); /* spurious slow-down; reset full bw detector */
		bbr->try_fast_path = 0;  /* take slow path to set proper cwnd, pacing */
	}
	bbr->loss_in_round = 0;

	/* Revert to cwnd and other state saved before loss episode. */
	if (st) {
		bbr->bw_lo = max(bbr->bw_lo, st->undo_bw_lo);
		bbr->inflight_lo = max(bbr->inflight_lo, st->undo_inflight_lo);
		bbr->inflight_hi = max(bbr->inflight_hi, st->undo_inflight_hi);
	}
	return bbr->prior_cwnd;
}

/* The undo half of bbr_ssthresh: save the loss-adapted bounds. */
static __always_inline void bbr_save_undo_bounds(struct sock *sk,
						 struct bbr3_sk *st)
{
	struct bbr *bbr = inet_csk_ca(sk);

	if (!st)
		return;
	st->undo_bw_lo		= bbr->bw_lo;
	st->undo_inflight_lo	= bbr->inflight_lo;
	st->undo_inflight_hi	= bbr->inflight_hi;
}

/* bbr_ssthresh: entering recovery; save cwnd and the loss-adapted bounds
 * for undo. Returns ssthresh unchanged (BBR does not use it).
 * DEVIATION (#3c): at recovery entry google's bounds already carry the
 * cuts of the skbs marked lost before tcp_enter_recovery() (its
 * skb_marked_lost ran as they were marked); here those marks are taken in
 * the cong_control that follows, so undo_resave asks bbr_main to save the
 * bounds again right after taking them (bbr3_resave_undo_bounds), if
 * set_state(Recovery) follows this call. */
static u32 bbr_ssthresh(struct sock *sk)
{
	bbr_save_cwnd(sk);
	/* For undo, save state that adapts based on loss signal. */
	bbr_save_undo_bounds(sk, bbr_sk(sk));
	inet_csk_ca(sk)->undo_resave = 1;
	return tcp_sk(sk)->snd_ssthresh;
}

/* In bbr_main after the losses are taken: the save of a recovery entry in
 * this ACK, again, with the cuts google's would have made before it. */
static __always_inline void bbr3_resave_undo_bounds(struct sock *sk,
						    struct bbr3_sk *st)
{
	struct bbr *bbr = inet_csk_ca(sk);

	if (!bbr->undo_resave)
		return;
	bbr->undo_resave = 0;
	bbr_save_undo_bounds(sk, st);
}

/* A TLP-repaired loss. google's order is CA_EVENT_TLP_RECOVERY
 * (bbr_run_loss_probe_recovery: may cut inflight_hi) and then
 * tcp_init_cwnd_reduction() -> bbr_ssthresh() (saves the bounds for undo).
 * Stock tcp_process_tlp_ack() calls ssthresh first and reaches us only
 * after; so save the bounds again after the cut, and an undo restores what
 * google's would (DEVIATIONS.md #4). */
static __always_inline void bbr3_tlp_recovery(struct sock *sk)
{
	struct bbr3_sk *st;

	bbr_run_loss_probe_recovery(sk);
	st = bbr_sk(sk);
	if (st)
		st->cnt.tlp_repairs++;
	bbr_save_undo_bounds(sk, st);
}

/* bbr_exit_loss_recovery: on leaving Loss, restore cwnd. */
static void bbr_exit_loss_recovery(struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct bbr *bbr = inet_csk_ca(sk);

	tcp_snd_cwnd_set(tp, max(tcp_snd_cwnd(tp), bbr->prior_cwnd));
	bbr->try_fast_path = 0; /* bound cwnd using latest model */
}

/* bbr_set_state: on RTO reset the plateau detector and, when not probing,
 * start inflight_lo from the pre-RTO cwnd so the next loss round cuts from
 * there; on leaving Loss restore cwnd.
 * DEVIATION: no PLB rehash bookkeeping on RTO. */
static void bbr_set_state(struct sock *sk, u8 new_state)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct bbr *bbr = inet_csk_ca(sk);

	if (new_state == TCP_CA_Loss) {

		bbr->prev_ca_state = TCP_CA_Loss;
		/* The tcp_write_timeout() call to sk_rethink_txhash() likely
		 * repathed this flow, so re-learn the min network RTT on the
		 * new path (bbr2_set_state: full_bw alone): */
		if (bbr->v2)
			bbr->full_bw = 0;
		else
			bbr_reset_full_bw(sk);
		if (!bbr_is_probing_bandwidth(sk) && bbr->inflight_lo == ~0U) {
			/* bbr_adapt_lower_bounds() needs cwnd before
			 * we suffered an RTO, to update inflight_lo
			 * (v2alpha: the cwnd saved at recovery entry): */
			bbr->inflight_lo = bbr->v2 ? bbr->prior_cwnd :
				max(tcp_snd_cwnd(tp), bbr->prior_cwnd);
		}
	} else if (bbr->prev_ca_state == TCP_CA_Loss &&
		   new_state != TCP_CA_Loss) {
		bbr_exit_loss_recovery(sk);
	}
}
