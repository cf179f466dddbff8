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
 *    Found by binary search (<= 6 steps) over the last 32 snapshots, one
 *    per cwnd/16 packets delivered (correcting for the packets delivered
 *    between the snapshot and the send). No match
 *    (ring too short, no storage): tx_in_flight = rs->prior_in_flight and
 *    lost = rs->losses, the approximation without a side channel.
 *  - rs->is_ece: flag & FLAG_ECE (the stack's internal ACK flag).
 * A sock_ops side channel stamping each skb was not used: it needs a
 * cgroup-v2 attach that runs for every socket of the cgroup, not only
 * bbr3's.
 */

/* Counters in bbr3_stats (per CPU): what has no socket storage to count
 * in. Everything else is counted per socket (telemetry.h). */
enum bbr3_stat {
	BBR3_STAT_STORAGE_MISSING,	/* sk_storage could not be created (init or retry) */
	BBR3_STAT_STORAGE_RECOVERED,	/* ... and a later retry created it */
	BBR3_STAT_MAX,
};

static __always_inline void bbr3_count(u32 which)
{
	u64 *v = bpf_map_lookup_elem(&bbr3_stats, &which);

	if (v)
		*v += 1;
}

/* The socket's storage: the telemetry, the rest of the state and the
 * snapshot ring (NULL if it could not be created, e.g. optmem exhausted;
 * bbr3_main retries once per round and counts). */
static __always_inline struct bbr3_sk *bbr_sk(struct sock *sk)
{
	return bpf_sk_storage_get(&bbr3_sk_stor, sk, NULL, 0);
}

/*
 * PROBE_RTT's "ignore low rate samples": google sets tp->app_limited, so
 * the kernel marks every skb sent until tp->delivered passes that value
 * app-limited, and their rate samples with it. Linux < 6.10 (well, the
 * kernels of bbr3-cc2.bpf.o; 6.18 allows it) refuses a CA's write to
 * tp->app_limited ("no write support to tcp_sock"), so there the value is
 * kept in the socket's storage and bbr3_fill_rs marks the samples itself:
 * a sample is app-limited while its skb was sent before tp->delivered
 * passed the value (rs->prior_delivered <= app_limited_until), which then
 * clears as the kernel's does (DEVIATIONS.md #26).
 */
static __always_inline void bbr3_set_app_limited(struct sock *sk, u32 until)
{
#ifdef BBR3_CC2
	struct bbr3_sk *st = bbr_sk(sk);

	if (st)
		st->app_limited_until = until;
#else
	tcp_sk(sk)->app_limited = until;
#endif
}

/* Counts one event in the socket's counters (a storage lookup: for events
 * at most once per round; per-ACK counters are bumped in bbr3_main). */
#define bbr3_cnt_inc(sk, field)					\
	do {							\
		struct bbr3_sk *__st = bbr_sk(sk);		\
								\
		if (__st)					\
			__st->cnt.field++;			\
	} while (0)

/* Append this ACK's snapshot when tp->delivered moved on by at least
 * max(1, cwnd / BBR_TX_GRAIN_DIV) packets since the newest one, so the ring
 * spans about two windows of data whatever the ACK rate (single-ACK
 * snapshots, the first version, covered only ~0.4 BDP at 100 Mbit/s x
 * 80 ms: 23 % of lookups missed). An ACK that did not change tp->delivered overwrites the newest
 * snapshot; one that moved it less than the grain is skipped (bbr3_fill_rs
 * corrects for the packets delivered since the snapshot it finds). */
static __always_inline void bbr3_tx_record(struct tcp_sock *tp,
					   struct bbr3_sk *st)
{
	struct bbr_tx_snap *e;
	u32 d, h, grain;

	d = tp->delivered;
	h = st->tx_head;

	e = &st->tx[(h - 1) & BBR_TX_MASK];
	if (h && e->delivered != d) {
		grain = tcp_snd_cwnd(tp) / BBR_TX_GRAIN_DIV;
		if (d - e->delivered < max(grain, 1U))
			return;	/* keep the granule's first snapshot */
	}
	if (!h || e->delivered != d) {
		e = &st->tx[h & BBR_TX_MASK];
		st->tx_head = h + 1;
	}
	e->delivered = d;
	e->lost = tp->lost;
	e->in_flight = tcp_packets_in_flight(tp);
	e->snd_nxt = tp->snd_nxt;
}

/* The snapshot at offset j from the newest (0 newest .. n-1 oldest). */
#define bbr_tx_at(st, h, j) (&(st)->tx[((h) - 1 - (j)) & BBR_TX_MASK])

/* Whether offset j (< n) is the answer: the newest snapshot at least `age`
 * packets older than the newest, i.e. the newest one with delivered <=
 * want (ages relative to the newest are wrap-safe and grow with j). */
static __always_inline bool bbr_tx_is_floor(struct bbr3_sk *st, u32 h,
					    u32 newest, u32 j, u32 age)
{
	if (newest - bbr_tx_at(st, h, j)->delivered < age)
		return false;
	return j == 0 || newest - bbr_tx_at(st, h, j - 1)->delivered < age;
}

/* Newest snapshot with delivered <= want; NULL if the ring holds none that
 * old. *exact on equality. Consecutive ACKs usually sample skbs of the same
 * or the next snapshot, so the answer of the previous lookup (tx_cursor)
 * and the one after it are tried first (two or three adjacent entries)
 * before a binary search over the ring. */
static struct bbr_tx_snap *bbr_tx_find(struct bbr3_sk *st, u32 want,
				       bool *exact)
{
	u32 h = st->tx_head, n, newest, age, lo, hi, mid, a, i, j;
	struct bbr_tx_snap *e;

	*exact = false;
	if (!h)
		return NULL;
	n = min(h, (u32)BBR_TX_RING);
	newest = bbr_tx_at(st, h, 0)->delivered;
	age = newest - want;	/* how many packets ago the skb was sent */
	j = h - 1 - st->tx_cursor;	/* the last answer's offset now */
	if (j < n && bbr_tx_is_floor(st, h, newest, j, age))
		goto found;
	if (j - 1 < n && bbr_tx_is_floor(st, h, newest, j - 1, age)) {
		j--;
		goto found;
	}
	/* Offsets j = 0 (newest) .. n-1 (oldest) have increasing ages; find
	 * the smallest j whose age >= age. */
	lo = 0;
	hi = n;		/* answer in [lo, hi]; hi == n: none old enough */
	for (i = 0; i < BBR_TX_SEARCH_STEPS && lo < hi; i++) {
		mid = (lo + hi) / 2;
		a = newest - bbr_tx_at(st, h, mid)->delivered;
		if (a >= age)
			hi = mid;
		else
			lo = mid + 1;
	}
	if (lo >= n)
		return NULL;
	j = lo;
found:
	st->tx_cursor = h - 1 - j;
	e = bbr_tx_at(st, h, j);
	*exact = e->delivered == want;
	return e;
}

/* Fill a struct bbr_rs from the kernel's sample plus the rebuilt fields. */
BBR3_GLOBAL int bbr3_fill_rs(struct tcp_sock *tp __arg_trusted, int flag,
			     const struct rate_sample *krs __arg_trusted,
			     struct bbr3_sk *st,	/* NULL: no storage */
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

#ifdef BBR3_CC2
	/* bbr3_set_app_limited: the sampled skb was sent at prior_delivered;
	 * then clear once delivered is past the value (tcp_rate_gen). */
	if (st && st->app_limited_until) {
		if (krs->prior_mstamp &&
		    (s32)(rs->prior_delivered - st->app_limited_until) <= 0)
			rs->is_app_limited = 1;
		if ((s32)(tp->delivered - st->app_limited_until) > 0)
			st->app_limited_until = 0;
	}
#endif
	if (!krs->prior_mstamp) {	/* no skb sampled: google leaves 0s */
		if (st)
			st->cnt.no_sample++;
		return 0;
	}
	if (st)
		e = bbr_tx_find(st, rs->prior_delivered, &exact);
	if (!e) {
		if (st)
			st->cnt.tx_miss++;
		rs->tx_in_flight = rs->prior_in_flight;
		rs->lost = rs->losses;
		return 0;
	}
	if (exact)
		st->cnt.tx_exact++;
	else
		st->cnt.tx_floor++;
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
