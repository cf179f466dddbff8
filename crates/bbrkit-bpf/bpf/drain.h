/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * drain.h: DRAIN: entered when STARTUP estimates the pipe is full; pace at
 * drain_gain (0.35) until the data in the network is at most one BDP, then
 * start PROBE_BW in DOWN. bbrkit-cc: bbr3/drain.rs.
 */

/* bbr_check_drain: STARTUP -> DRAIN once full_bw_reached, and in the same
 * call DRAIN -> PROBE_BW DOWN if inflight is already small. */
BBR3_GLOBAL int bbr3_check_drain(struct tcp_sock *tp __arg_trusted)
{
	struct sock *sk = (struct sock *)tp;
	struct bbr *bbr = inet_csk_ca(sk);

	if (bbr->mode == BBR_STARTUP && bbr->full_bw_reached) {
		bbr->mode = BBR_DRAIN;	/* drain queue we created */
		/* Set ssthresh to export purely for monitoring, to signal
		 * completion of initial STARTUP (ssthresh is not used by BBR). */
		tcp_sk(sk)->snd_ssthresh =
			bbr_inflight(sk, bbr_max_bw(sk), BBR_UNIT);
		bbr_reset_congestion_signals(sk);
	}	/* fall through to check if in-flight is already small: */
	if (bbr->mode == BBR_DRAIN &&
	    bbr_packets_in_net_at_edt(sk, tcp_packets_in_flight(tcp_sk(sk))) <=
	    bbr_inflight(sk, bbr_max_bw(sk), BBR_UNIT)) {
		bbr->mode = BBR_PROBE_BW;
		bbr_start_bw_probe_down(sk);
	}
	return 0;
}
