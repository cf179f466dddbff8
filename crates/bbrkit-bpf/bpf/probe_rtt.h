/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * probe_rtt.h: min_rtt estimation and PROBE_RTT. bbrkit-cc: bbr3/probe_rtt.rs.
 *
 * probe_rtt_min_us is the min RTT over probe_rtt_win_ms (5 s); min_rtt_us
 * the min over min_rtt_win_sec (10 s). When the 5 s window expires without
 * a new minimum (and we are not restarting from idle), the flow enters
 * PROBE_RTT: cwnd <= max(4, 0.5*BDP) until inflight is that low, then for
 * probe_rtt_mode_ms (200 ms) and at least one round (~2% throughput cost).
 * Stamps are ms (bbr_jiffies), "expired" means strictly later (after()).
 */

/* bbr_probe_rtt_cwnd: max(cwnd_min_target, bdp(bw, 0.5)). */
static u32 bbr_probe_rtt_cwnd(struct sock *sk)
{
	return max_t(u32, bbr_param(sk, cwnd_min_target),
		     bbr_bdp(sk, bbr_bw(sk), bbr_param(sk, probe_rtt_cwnd_gain)));
}

/* bbr_exit_probe_rtt: reset the lower bounds; with a full pipe go to
 * PROBE_BW (DOWN restarts the probe clock at a randomised time, then CRUISE
 * at once since inflight is below BDP), else back to STARTUP. */
static void bbr_exit_probe_rtt(struct sock *sk)
{
	struct bbr *bbr = inet_csk_ca(sk);

	bbr_reset_lower_bounds(sk);
	if (bbr->full_bw_reached) {
		bbr->mode = BBR_PROBE_BW;
		/* Raising inflight after PROBE_RTT may cause loss, so reset
		 * the PROBE_BW clock and schedule the next bandwidth probe for
		 * a friendly and randomized future point in time. */
		bbr_start_bw_probe_down(sk);
		/* Since we are exiting PROBE_RTT, we know inflight is
		 * below our estimated BDP, so it is reasonable to cruise. */
		bbr_start_bw_probe_cruise(sk);
	} else {
		bbr->mode = BBR_STARTUP;
	}
}

/* bbr_check_probe_rtt_done: once the hold time has passed, schedule the
 * next PROBE_RTT, restore cwnd and leave. */
static void bbr_check_probe_rtt_done(struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct bbr *bbr = inet_csk_ca(sk);

	if (!(bbr->probe_rtt_done_stamp &&
	      after(bbr_jiffies(tp), bbr->probe_rtt_done_stamp)))
		return;

	bbr->probe_rtt_min_stamp = bbr_jiffies(tp); /* schedule next PROBE_RTT */
	tcp_snd_cwnd_set(tp, max(tcp_snd_cwnd(tp), bbr->prior_cwnd));
	bbr_exit_probe_rtt(sk);
}

/* bbr_update_min_rtt: update both RTT filters, enter PROBE_RTT when the 5 s
 * window expired, and run PROBE_RTT's hold timer. */
BBR3_GLOBAL int bbr3_update_min_rtt(struct tcp_sock *tp __arg_trusted,
				    const struct bbr_rs *rs)
{
	struct sock *sk = (struct sock *)tp;
	struct bbr *bbr = inet_csk_ca(sk);
	bool probe_rtt_expired, min_rtt_expired;
	u32 now = bbr_jiffies(tp);
	u32 expire;

	if (!rs)	/* global subprogram: pointers may be NULL */
		return 0;
	/* Track min RTT in probe_rtt_win_ms to time next PROBE_RTT state. */
	probe_rtt_expired = after(now, bbr->probe_rtt_min_stamp +
				  msecs_to_jiffies(bbr_param(sk, probe_rtt_win_ms)));
	if (rs->rtt_us >= 0 &&
	    (rs->rtt_us < bbr->probe_rtt_min_us ||
	     (bbr->v2 && rs->rtt_us == bbr->probe_rtt_min_us) ||	/* v2alpha: <= */
	     (probe_rtt_expired && !rs->is_ack_delayed))) {
		bbr->probe_rtt_min_us = (u32)rs->rtt_us;
		bbr->probe_rtt_min_stamp = now;
	}
	/* Track min RTT seen in the min_rtt_win_sec filter window: */
	expire = bbr->min_rtt_stamp + bbr_param(sk, min_rtt_win_sec) * HZ;
	min_rtt_expired = after(now, expire);
	if (bbr->probe_rtt_min_us <= bbr->min_rtt_us ||
	    min_rtt_expired) {
		bbr->min_rtt_us = bbr->probe_rtt_min_us;
		bbr->min_rtt_stamp = bbr->probe_rtt_min_stamp;
	}

	if (bbr_param(sk, probe_rtt_mode_ms) > 0 && probe_rtt_expired &&
	    !bbr->idle_restart && bbr->mode != BBR_PROBE_RTT) {
		bbr->mode = BBR_PROBE_RTT;  /* dip, drain queue */
		bbr_save_cwnd(sk);  /* note cwnd so we can restore it */
		bbr->probe_rtt_done_stamp = 0;
		bbr->ack_phase = BBR_ACKS_PROBE_STOPPING;
		bbr->next_rtt_delivered = tp->delivered;
		bbr3_cnt_inc(sk, probe_rtts);
	}

	if (bbr->mode == BBR_PROBE_RTT) {
		/* Ignore low rate samples during this mode. */
		bbr3_set_app_limited(sk,
			(tp->delivered + tcp_packets_in_flight(tp)) ? : 1);
		/* Maintain min packets in flight for max(200 ms, 1 round). */
		if (!bbr->probe_rtt_done_stamp &&
		    tcp_packets_in_flight(tp) <= bbr_probe_rtt_cwnd(sk)) {
			bbr->probe_rtt_done_stamp = now +
				msecs_to_jiffies(bbr_param(sk, probe_rtt_mode_ms));
			bbr->probe_rtt_round_done = 0;
			bbr->next_rtt_delivered = tp->delivered;
		} else if (bbr->probe_rtt_done_stamp) {
			if (bbr->round_start)
				bbr->probe_rtt_round_done = 1;
			if (bbr->probe_rtt_round_done)
				bbr_check_probe_rtt_done(sk);
		}
	}
	/* Restart after idle ends only once we process a new S/ACK for data */
	if (rs->delivered > 0)
		bbr->idle_restart = 0;
	return 0;
}
