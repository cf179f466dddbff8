/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * signals.h: the rate-sample fields google's kernel adds and stock kernels
 * lack, rebuilt from what a CA can read. Not in bbrkit-cc (its transport
 * provides them); see DEVIATIONS.md for each choice and its measured effect.
 *
 *  - rs->tx_in_flight and rs->lost (google stamps scb->tx.in_flight and
 *    scb->tx.lost when an skb is sent): a ring of per-ACK snapshots
 *    {delivered, lost, in_flight, snd_nxt} in sk_storage. The sampled skb
 *    (the most recently sent one this ACK (S)ACKed) was sent after the ACK
 *    that brought tp->delivered to rs->prior_delivered and before the next
 *    one, so from that ACK's snapshot:
 *        tx_in_flight = in_flight + segments sent after it up to the skb's
 *                       end (rs->last_end_seq - snd_nxt, in mss_cache units;
 *                       1 for a retransmitted skb),
 *        lost         = tp->lost now - lost then.
 *    Found by binary search (<= 9 steps) over the last 256 snapshots, one
 *    per cwnd/128 packets delivered (correcting for the packets delivered
 *    between the snapshot and the send). No match
 *    (ring too short, no storage): tx_in_flight = rs->prior_in_flight and
 *    lost = rs->losses, the approximation without a side channel.
 *  - rs->is_ece: flag & FLAG_ECE (the stack's internal ACK flag).
 * A sock_ops side channel stamping each skb was not used: it needs a
 * cgroup-v2 attach that runs for every socket of the cgroup, not only
 * bbr3's.
 */

/* Counters in bbr3_stats (per CPU): how the send snapshot was found. */
enum bbr3_stat {
	BBR3_STAT_TX_EXACT,	/* snapshot with delivered == prior_delivered */
	BBR3_STAT_TX_FLOOR,	/* nearest older snapshot (delivered skipped) */
	BBR3_STAT_TX_MISS,	/* older than the ring or no storage: fallback */
	BBR3_STAT_NO_SAMPLE,	/* ACK without a sampled skb (prior_mstamp 0) */
	BBR3_STAT_TLP_RECOVERY,	/* TLP-repaired losses seen (set_state CWR) */
	BBR3_STAT_COLD_MISSING,	/* sk_storage could not be created */
	BBR3_STAT_MAX,
};

static __always_inline void bbr3_count(u32 which)
{
	u64 *v = bpf_map_lookup_elem(&bbr3_stats, &which);

	if (v)
		*v += 1;
}

/* The cold half of the state and the snapshot ring (NULL if the socket's
 * sk_storage could not be created in init, e.g. optmem exhausted). */
static __always_inline struct bbr_cold *bbr_cold(struct sock *sk)
{
	return bpf_sk_storage_get(&bbr3_sk_stor, sk, NULL, 0);
}

/* Append this ACK's snapshot when tp->delivered moved on by at least
 * max(1, cwnd / BBR_TX_GRAIN_DIV) packets since the newest one, so the ring
 * spans about two windows of data whatever the ACK rate (256 single-ACK
 * snapshots cover only ~0.4 BDP at 100 Mbit/s x 80 ms: 23 % of lookups
 * missed). An ACK that did not change tp->delivered overwrites the newest
 * snapshot; one that moved it less than the grain is skipped (bbr3_fill_rs
 * corrects for the packets delivered since the snapshot it finds). */
BBR3_GLOBAL int bbr3_tx_record(struct tcp_sock *tp __arg_trusted,
			       struct bbr_cold *cold)
{
	struct bbr_tx_snap *e;
	u32 d, h, grain;

	if (!cold)	/* global subprogram: pointer arguments may be NULL */
		return 0;
	d = tp->delivered;
	h = cold->tx_head;

	e = &cold->tx[(h - 1) & BBR_TX_MASK];
	if (h && e->delivered != d) {
		grain = tcp_snd_cwnd(tp) / BBR_TX_GRAIN_DIV;
		if (d - e->delivered < max(grain, 1U))
			return 0;	/* keep the granule's first snapshot */
	}
	if (!h || e->delivered != d) {
		e = &cold->tx[h & BBR_TX_MASK];
		cold->tx_head = h + 1;
	}
	e->delivered = d;
	e->lost = tp->lost;
	e->in_flight = tcp_packets_in_flight(tp);
	e->snd_nxt = tp->snd_nxt;
	return 0;
}

/* Newest snapshot with delivered <= want (wrap-safe: by age relative to
 * the newest); NULL if the ring holds none that old. *exact on equality. */
static struct bbr_tx_snap *bbr_tx_find(struct bbr_cold *cold, u32 want,
				       bool *exact)
{
	u32 h = cold->tx_head, n, newest, age, lo, hi, mid, a, i;
	struct bbr_tx_snap *e;

	*exact = false;
	if (!h)
		return NULL;
	n = min(h, (u32)BBR_TX_RING);
	newest = cold->tx[(h - 1) & BBR_TX_MASK].delivered;
	age = newest - want;	/* how many packets ago the skb was sent */
	/* Offsets j = 0 (newest) .. n-1 (oldest) have increasing ages; find
	 * the smallest j whose age >= age. */
	lo = 0;
	hi = n;		/* answer in [lo, hi]; hi == n: none old enough */
	for (i = 0; i < BBR_TX_SEARCH_STEPS && lo < hi; i++) {
		mid = (lo + hi) / 2;
		a = newest - cold->tx[(h - 1 - mid) & BBR_TX_MASK].delivered;
		if (a >= age)
			hi = mid;
		else
			lo = mid + 1;
	}
	if (lo >= n)
		return NULL;
	e = &cold->tx[(h - 1 - lo) & BBR_TX_MASK];
	*exact = e->delivered == want;
	return e;
}

/* Fill a struct bbr_rs from the kernel's sample plus the rebuilt fields. */
BBR3_GLOBAL int bbr3_fill_rs(struct tcp_sock *tp __arg_trusted, int flag,
			     const struct rate_sample *krs __arg_trusted,
			     struct bbr_cold *cold,	/* NULL: no storage */
			     struct bbr_rs *rs)
{
	struct bbr_tx_snap *e = NULL;
	bool exact = false;
	s32 bytes;
	u32 mss, segs;
	s64 tx;

	if (!rs)
		return 0;

	rs->interval_us = krs->interval_us;
	rs->rtt_us = krs->rtt_us;
	rs->delivered = krs->delivered;
	rs->delivered_ce = krs->delivered_ce;
	rs->prior_delivered = krs->prior_delivered;
	rs->acked_sacked = krs->acked_sacked;
	rs->losses = krs->losses > 0 ? krs->losses : 0;
	rs->prior_in_flight = krs->prior_in_flight;
	rs->is_app_limited = krs->is_app_limited;
	rs->is_ack_delayed = krs->is_ack_delayed;
	rs->is_ece = (flag & FLAG_ECE) != 0;
	rs->tx_in_flight = 0;
	rs->lost = 0;

	if (!krs->prior_mstamp) {	/* no skb sampled: google leaves 0s */
		bbr3_count(BBR3_STAT_NO_SAMPLE);
		return 0;
	}
	if (cold)
		e = bbr_tx_find(cold, rs->prior_delivered, &exact);
	if (!e) {
		bbr3_count(BBR3_STAT_TX_MISS);
		rs->tx_in_flight = rs->prior_in_flight;
		rs->lost = rs->losses;
		return 0;
	}
	bbr3_count(exact ? BBR3_STAT_TX_EXACT : BBR3_STAT_TX_FLOOR);
	mss = max(tp->mss_cache, 1U);
	bytes = (s32)(krs->last_end_seq - e->snd_nxt);
	segs = bytes > 0 ? ((u32)bytes + mss - 1) / mss : 1;
	/* in flight at the snapshot, plus what was sent since up to the skb's
	 * end, minus what was delivered between the snapshot and its send */
	tx = (s64)e->in_flight + segs - (u32)(rs->prior_delivered - e->delivered);
	rs->tx_in_flight = tx > segs ? (u32)tx : segs;
	rs->lost = tp->lost - e->lost;
	return 0;
}
