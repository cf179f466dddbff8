/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * pacing.h: pacing rate, send quantum (TSO/GSO burst size) and the "in
 * network at earliest departure time" estimate. bbrkit-cc: bbr3/pacing.rs.
 *
 * pacing_rate = bw * mss * gain * (1 - 1%), in bytes per second, never
 * lowered before STARTUP fills the pipe, and re-initialised from the first
 * RTT sample (cwnd * 2.77 / srtt). The burst size budgets pacing_rate >>
 * sk_pacing_shift (~1 ms) plus 64 KB >> (min_rtt / 512 µs).
 */

/* bbr_rate_bytes_per_sec: rate (packets/µs << 24) times gain/256 and
 * (100 - margin)%, in bytes/s, at least 1. google's u64 order (works up to
 * 2.9 Tbit/s at gain 2.89x; bbrkit-cc widens to u128). */
static u64 bbr_rate_bytes_per_sec(struct sock *sk, u64 rate, int gain,
				  int margin)
{
	unsigned int mss = tcp_sk(sk)->mss_cache;

	rate *= mss;
	rate *= gain;
	rate >>= BBR_SCALE;
	rate *= USEC_PER_SEC / 100 * (100 - margin);
	rate >>= BW_SCALE;
	rate = max(rate, 1ULL);
	return rate;
}

/* bbr_bw_bytes_per_sec: rate in bytes/s, no gain or margin. */
static __always_inline u64 bbr_bw_bytes_per_sec(struct sock *sk, u64 rate)
{
	return bbr_rate_bytes_per_sec(sk, rate, BBR_UNIT, 0);
}

/* bbr_bw_to_pacing_rate: with the 1% pacing margin, capped at
 * sk_max_pacing_rate. */
static u64 bbr_bw_to_pacing_rate(struct sock *sk, u32 bw, int gain)
{
	u64 rate = bw;

	rate = bbr_rate_bytes_per_sec(sk, rate, gain,
				      bbr_param(sk, pacing_margin_percent));
	rate = min_t(u64, rate, sk->sk_max_pacing_rate);
	return rate;
}

/* bbr_init_pacing_rate_from_rtt: startup_pacing_gain * cwnd / RTT, with a
 * nominal 1 ms RTT before any sample. */
static void bbr_init_pacing_rate_from_rtt(struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct bbr *bbr = inet_csk_ca(sk);
	u64 bw;
	u32 rtt_us;

	if (tp->srtt_us) {		/* any RTT sample yet? */
		rtt_us = max(tp->srtt_us >> 3, 1U);
		bbr->has_seen_rtt = 1;
	} else {			 /* no RTT sample yet */
		rtt_us = USEC_PER_MSEC;	 /* use nominal default RTT */
	}
	bw = (u64)tcp_snd_cwnd(tp) * BW_UNIT;
	bw /= rtt_us;
	sk->sk_pacing_rate =
		bbr_bw_to_pacing_rate(sk, bw, bbr_vparam(sk, startup_pacing_gain));
}

/* bbr_set_pacing_rate: pace at bw * gain; before the pipe is full only ever
 * raise the rate. */
static void bbr_set_pacing_rate(struct sock *sk, u32 bw, int gain)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct bbr *bbr = inet_csk_ca(sk);
	u64 rate = bbr_bw_to_pacing_rate(sk, bw, gain);

	if (!bbr->has_seen_rtt && tp->srtt_us)
		bbr_init_pacing_rate_from_rtt(sk);
	if (bbr->full_bw_reached || rate > sk->sk_pacing_rate)
		sk->sk_pacing_rate = rate;
}

/* bbr_tso_segs_generic: burst size in packets for a GSO size cap. */
static u32 bbr_tso_segs_generic(struct sock *sk, unsigned int mss_now,
				u32 gso_max_size)
{
	struct bbr *bbr = inet_csk_ca(sk);
	u32 segs, r, min_segs;
	u64 bytes;

	/* Budget a TSO/GSO burst size allowance based on bw (pacing_rate). */
	bytes = sk->sk_pacing_rate >> (sk->sk_pacing_shift & 63);

	/* Budget a TSO/GSO burst size allowance based on min_rtt. For every
	 * K = 2^tso_rtt_shift microseconds of min_rtt, halve the burst.
	 * The min_rtt-based burst allowance is: 64 KBytes / 2^(min_rtt/K) */
	if (bbr_param(sk, tso_rtt_shift)) {
		r = bbr->min_rtt_us >> bbr_param(sk, tso_rtt_shift);
		if (r < 32)   /* prevent undefined behavior */
			bytes += GSO_LEGACY_MAX_SIZE >> r;
	}

	bytes = min_t(u32, bytes, gso_max_size - 1 - MAX_TCP_HEADER);
	/* DEVIATION: net.ipv4.tcp_min_tso_segs is not readable from a CA
	 * (sock_net); its default 2 is used. v2alpha's bbr_min_tso_segs:
	 * 1 below 1.2 Mbit/s of pacing, else 2. */
	min_segs = TCP_MIN_TSO_SEGS;
	if (bbr->v2 && sk->sk_pacing_rate < (bbr2_min_tso_rate >> 3))
		min_segs = 1;
	segs = max_t(u32, (u32)bytes / max(mss_now, 1U), min_segs);
	return segs;
}

/* bbr_tso_segs_goal: like tso_segs, with mss_cache and the legacy 64 KB GSO
 * cap. */
static __always_inline u32 bbr_tso_segs_goal(struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);

	return bbr_tso_segs_generic(sk, tp->mss_cache, GSO_LEGACY_MAX_SIZE);
}

/* bbr_packets_in_net_at_edt: packets in the network when the next packet
 * departs: inflight - bw * (EDT - now) (+ one burst when the gain raises
 * inflight). */
static u32 bbr_packets_in_net_at_edt(struct sock *sk, u32 inflight_now)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct bbr *bbr = inet_csk_ca(sk);
	u64 now_ns, edt_ns, interval_us;
	u32 interval_delivered, inflight_at_edt;

	now_ns = tp->tcp_clock_cache;
	edt_ns = max(tp->tcp_wstamp_ns, now_ns);
	interval_us = (edt_ns - now_ns) / NSEC_PER_USEC;
	interval_delivered = (u64)bbr_bw(sk) * interval_us >> BW_SCALE;
	inflight_at_edt = inflight_now;
	if (bbr->pacing_gain > BBR_UNIT)              /* increasing inflight */
		inflight_at_edt += bbr_tso_segs_goal(sk);  /* include EDT skb */
	if (interval_delivered >= inflight_at_edt)
		return 0;
	return inflight_at_edt - interval_delivered;
}
