// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * logic.c: bbr3.bpf.c's logic compiled for the host and driven function by
 * function, for what the kernel cannot be made to do on demand (a TLP
 * repair, a reorder-timer loss between two ACKs, an optmem failure) and the
 * verifier cannot show (which code ran). The struct_ops programs become
 * plain functions (shim/bpf/bpf_tracing.h), the socket is one zeroed
 * struct tcp_sock (kernel.h nests the socket structs as the kernel does),
 * sk_storage and the per-CPU counters are the stand-ins below.
 *
 * Built and run by crates/bbrkit-bpf/tests/bpf_logic.rs:
 *   cc -I bpf/test/shim -I bpf bpf/test/logic.c -o logic && ./logic
 * Prints one line per check that failed and exits 1 if any did.
 */
#include "../bbr3.bpf.c"

int printf(const char *fmt, ...);

/* ---- The helpers' stand-ins ---- */

static struct bbr3_sk storage;	/* the one socket's sk_storage */
static int storage_present;
static int storage_alloc_fails;	/* optmem exhausted: creation fails */
static u64 stats[BBR3_STAT_MAX];
static u32 rand_state = 1;

void *bpf_sk_storage_get(void *map, void *sk, void *value, u64 flags)
{
	(void)map; (void)sk; (void)value;
	if (storage_present)
		return &storage;
	if (!(flags & BPF_SK_STORAGE_GET_F_CREATE) || storage_alloc_fails)
		return NULL;
	__builtin_memset(&storage, 0, sizeof(storage));
	storage_present = 1;
	return &storage;
}

long bpf_sk_storage_delete(void *map, void *sk)
{
	(void)map; (void)sk;
	storage_present = 0;
	return 0;
}

void *bpf_map_lookup_elem(void *map, const void *key)
{
	u32 k = *(const u32 *)key;

	(void)map;
	return k < BBR3_STAT_MAX ? &stats[k] : NULL;
}

u32 bpf_get_prandom_u32(void)
{
	rand_state = rand_state * 1103515245u + 12345u;
	return rand_state;
}

/* ---- A socket and ACKs ---- */

static struct tcp_sock tp;
static struct sock *sk = (struct sock *)&tp;
static struct bbr *bbr;
static int failures;

#define CHECK(cond)							\
	do {								\
		if (!(cond)) {						\
			printf("%s:%d: %s: check failed: %s\n", __FILE__,	\
			       __LINE__, __func__, #cond);		\
			failures++;					\
		}							\
	} while (0)

/* A fresh connection at 1 s on bbr3 (v2: bbr2), cwnd 10, mss 1448. */
static void new_socket(bool v2)
{
	__builtin_memset(&tp, 0, sizeof(tp));
	storage_present = 0;
	tp.snd_cwnd = 10;
	tp.snd_cwnd_clamp = ~0U;
	tp.mss_cache = 1448;
	tp.tcp_mstamp = 1000000;
	tp.tcp_clock_cache = tp.tcp_mstamp * 1000;
	tp.rtt_min.s[0].v = ~0U;
	sk->sk_max_pacing_rate = ~0UL;
	sk->sk_gso_max_size = 65536;
	sk->sk_pacing_shift = 10;
	bbr = inet_csk_ca(sk);
	if (v2)
		bbr3_v2_init(sk);
	else
		bbr3_init(sk);
}

/* One ACK at time now_us that (S)ACKs `acked` packets, of which the
 * sampled one was sent when tp.delivered was `prior_delivered`, over a
 * send/ACK interval of `interval_us`; `losses` packets marked lost by it. */
static void ack_ex(u64 now_us, u32 acked, u32 prior_delivered,
		   long interval_us, int losses, int flag, u32 ce, u32 end_seq);

static void ack(u64 now_us, u32 acked, u32 prior_delivered, long interval_us,
		int losses)
{
	tp.snd_nxt += acked * tp.mss_cache;
	ack_ex(now_us, acked, prior_delivered, interval_us, losses, 0, 0,
	       tp.snd_nxt);
}

/* One ACK as ack(), with the stack's ACK flags (FLAG_ECE), `ce` of the
 * acked packets CE-marked, and the sampled skb ending at `end_seq`;
 * interval_us < 0: no skb sampled (rs->prior_mstamp 0, tcp_rate_gen). */
static void ack_ex(u64 now_us, u32 acked, u32 prior_delivered,
		  long interval_us, int losses, int flag, u32 ce, u32 end_seq)
{
	struct rate_sample rs = {0};

	tp.tcp_mstamp = now_us;
	tp.tcp_clock_cache = now_us * 1000;
	tp.delivered_mstamp = now_us;
	tp.delivered += acked;
	tp.delivered_ce += ce;
	tp.lost += losses;
	rs.prior_mstamp = interval_us < 0 ? 0 : now_us - interval_us;
	rs.prior_delivered = prior_delivered;
	rs.delivered = interval_us < 0 ? -1 : tp.delivered - prior_delivered;
	rs.delivered_ce = ce;
	rs.interval_us = interval_us;
	rs.rtt_us = 10000;
	rs.losses = losses;
	rs.acked_sacked = acked;
	rs.prior_in_flight = tp.packets_out;
	rs.last_end_seq = end_seq;
#ifdef BBR3_CC2	/* Linux 6.0-6.9: the ACK's ECE arrives by in_ack_event */
	bbr3_in_ack(sk, (flag & FLAG_ECE) ? CA_ACK_ECE : 0);
	bbr3_main(sk, &rs);
#else
	bbr3_main(sk, 0, flag, &rs);
#endif
}

/* A socket in ProbeBW UP, probing (bw_probe_samples), inflight_hi 100,
 * cwnd 40 under a BDP far above it: a "too high" verdict leaves
 * inflight_hi = target_inflight (cwnd 40) * (1 - beta). */
static void probing_up(bool v2)
{
	new_socket(v2);
	bbr->mode = BBR_PROBE_BW;
	bbr->full_bw_reached = 1;
	bbr_set_cycle_idx(sk, BBR_BW_PROBE_UP);
	bbr->bw_probe_samples = 1;
	bbr->inflight_hi = 100;
	bbr->min_rtt_us = 10000;
	bbr->bw_hi[1] = 100 << 20;
	tp.snd_cwnd = 40;
}
#define HI_AFTER_CUT (40 * (BBR_UNIT - bbr_beta) / BBR_UNIT)

/* ---- The checks ---- */

/* google's bbr_set_cycle_idx: every ProbeBW phase change needs a new cwnd
 * and pacing rate, so the fast path is off until the next control update
 * (the first BPF version set cycle_idx directly and kept try_fast_path). */
static void phase_changes_clear_the_fast_path(void)
{
	new_socket(false);
	bbr->mode = BBR_PROBE_BW;

	bbr->try_fast_path = 1;
	bbr_start_bw_probe_refill(sk, 0);
	CHECK(bbr->cycle_idx == BBR_BW_PROBE_REFILL && !bbr->try_fast_path);

	bbr->try_fast_path = 1;
	bbr_start_bw_probe_down(sk);
	CHECK(bbr->cycle_idx == BBR_BW_PROBE_DOWN && !bbr->try_fast_path);

	bbr->try_fast_path = 1;
	bbr_start_bw_probe_cruise(sk);
	CHECK(bbr->cycle_idx == BBR_BW_PROBE_CRUISE && !bbr->try_fast_path);

	CHECK(storage.cnt.refills == 1);
}

/* A TLP repair in v3's order: CA_EVENT_TLP_RECOVERY cuts inflight_hi, then
 * tcp_init_cwnd_reduction() -> ssthresh() saves the bounds for undo; stock
 * kernels call ssthresh first and reach set_state(CWR) after. An undo of
 * that episode must restore the cut bounds, as google's would. */
static void a_tlp_repair_saves_the_bounds_after_the_cut(void)
{
	new_socket(false);
	bbr->mode = BBR_PROBE_BW;
	bbr_set_cycle_idx(sk, BBR_BW_PROBE_UP);
	bbr->bw_probe_samples = 1;
	bbr->inflight_hi = 100;
	bbr->inflight_latest = 20;	/* lost 1 of 21: above 2 % */
	bbr->min_rtt_us = 10000;
	bbr->bw_hi[1] = 100 << 20;	/* a BDP far above cwnd */
	tp.snd_cwnd = 40;		/* target_inflight: cwnd 40 */

	tp.tlp_retrans = 1;
	tp.snd_nxt = 10 * 1448;
	bbr3_ssthresh(sk);		/* tcp_init_cwnd_reduction() */
	tp.high_seq = tp.snd_nxt;
	bbr3_set_state(sk, TCP_CA_CWR);	/* tcp_set_ca_state(CWR) */
	bbr3_set_state(sk, TCP_CA_Open);	/* tcp_try_keep_open() */
	CHECK(bbr->inflight_hi == 40 * (BBR_UNIT - bbr_beta) / BBR_UNIT);	/* target * (1 - beta) */
	CHECK(storage.cnt.too_high_tlp == 1 && storage.cnt.tlp_repairs == 1);
	CHECK(storage.cnt.hi_at_hit_last == bbr->inflight_hi);

	bbr3_undo_cwnd(sk);		/* the episode was spurious */
	CHECK(bbr->inflight_hi == 40 * (BBR_UNIT - bbr_beta) / BBR_UNIT);
}

/* Losses the stack marks between two ACKs (RACK's reorder timer): google's
 * skb_marked_lost saw them when they were marked; here the next ACK takes
 * the growth of tp->lost that its own rs->losses does not explain as one
 * loss event, before its own, anchoring the loss round where they were
 * marked. */
static void losses_between_acks_are_a_loss_event(void)
{
	u32 delivered_before;

	new_socket(false);
	tp.packets_out = 20;
	ack(1010000, 2, 0, 10000, 0);
	ack(1011000, 2, 1, 10000, 0);
	CHECK(!bbr->loss_in_round);
	delivered_before = tp.delivered;

	tp.lost += 3;			/* the reorder timer marks 3 lost */
	ack(1012000, 2, 2, 10000, 0);	/* rs->losses 0: not this ACK's */
	CHECK(bbr->loss_in_round);
	CHECK(bbr->loss_round_delivered == delivered_before);
	CHECK(storage.cnt.lost_between == 3 && storage.cnt.lost_in_ack == 0);
	CHECK(storage.cnt.loss_events == 1);

	ack(1013000, 2, 3, 10000, 1);	/* this ACK's own loss */
	CHECK(storage.cnt.lost_between == 3 && storage.cnt.lost_in_ack == 1);
	CHECK(storage.cnt.loss_events == 2);
}

/* An RTO's losses are counted at set_state(Loss) and not again at the next
 * ACK. */
static void rto_losses_are_counted_once(void)
{
	new_socket(false);
	ack(1010000, 2, 0, 10000, 0);
	tp.lost += 7;			/* tcp_enter_loss marks the flight */
	bbr3_set_state(sk, TCP_CA_Loss);
	CHECK(storage.cnt.lost_rto == 7 && bbr->loss_in_round);
	ack(1011000, 1, 1, 10000, 0);
	CHECK(storage.cnt.lost_between == 0 && storage.cnt.lost_rto == 7);
}

/* Telemetry is written at a round start or a state change, not per ACK. */
static void the_model_is_written_per_round_not_per_ack(void)
{
	u64 written;

	new_socket(false);
	CHECK(storage.model.layout == BBR3_TELEMETRY_LAYOUT);
	CHECK(storage.model.version == 3 && storage.model.mode == BBR_STARTUP);
	ack(1010000, 2, 0, 10000, 0);	/* prior_delivered 0 >= next_rtt 0 */
	CHECK(bbr->round_start && storage.model.updated_us == 1010000);
	written = storage.model.updated_us;
	ack(1011000, 2, 1, 10000, 0);	/* same round */
	CHECK(!bbr->round_start && storage.model.updated_us == written);
	CHECK(storage.cnt.acks == 2 && storage.cnt.rounds == 1);
	bbr->mode = BBR_DRAIN;		/* a state change */
	ack(1012000, 2, 2, 10000, 0);
	CHECK(storage.model.updated_us == 1012000);
	CHECK(storage.model.mss == 1448 && storage.model.cwnd == tp.snd_cwnd);
}

/* Without storage (optmem exhausted at init) the socket runs on the
 * fallbacks, counted once; a retry at a later round start creates it. */
static void a_failed_storage_is_counted_and_retried(void)
{
	u64 missing = stats[BBR3_STAT_STORAGE_MISSING];
	u64 recovered = stats[BBR3_STAT_STORAGE_RECOVERED];

	storage_alloc_fails = 1;
	new_socket(false);
	CHECK(!storage_present);
	CHECK(stats[BBR3_STAT_STORAGE_MISSING] == missing + 1);
	ack(1010000, 2, 0, 10000, 0);	/* round start, still failing */
	CHECK(!storage_present);
	storage_alloc_fails = 0;
	ack(1011000, 2, 1, 10000, 0);	/* no round start: no retry */
	CHECK(!storage_present);
	ack(1020000, 2, 4, 10000, 0);	/* round start: retried */
	CHECK(storage_present);
	CHECK(stats[BBR3_STAT_STORAGE_RECOVERED] == recovered + 1);
	CHECK(storage.last_lost == tp.lost && storage.tx_head == 1);
}

/* The rebuilt tx_in_flight/lost of an ACK's sample come from the newest
 * snapshot at or before the sampled skb's send, found from the cursor. */
static void the_send_snapshot_is_found(void)
{
	u32 i;

	new_socket(false);
	tp.packets_out = 10;
	for (i = 0; i < 40; i++)
		ack(1010000 + i * 1000, 2, i > 5 ? tp.delivered - 10 : 0,
		    10000, 0);
	CHECK(storage.cnt.tx_exact + storage.cnt.tx_floor > 30);
	CHECK(storage.cnt.tx_miss < 5);
}

/* bbr2 runs v2alpha's logic where tcp_bbr2.c differs from v3
 * (v2alpha.h); each check runs both and shows the difference. */
static void bbr2_follows_v2alpha(void)
{
	u32 i, queue;

	for (i = 0; i < 2; i++) {	/* 0: bbr2, 1: bbr3 */
		bool v2 = i == 0;

		/* PROBE_UP ends after a min_rtt once inflight >= 1.25 x BDP. */
		new_socket(v2);
		bbr->mode = BBR_PROBE_BW;
		bbr->full_bw_reached = 1;
		bbr->min_rtt_us = 10000;
		bbr->bw_hi[1] = bbr->bw_hi[0] = 167772;	/* 10 pkts/ms */
		bbr_start_bw_probe_up(sk, &(struct bbr_context){ 0 });
		queue = bbr_inflight(sk, bbr_max_bw(sk), bbr2_bw_probe_pif_gain);
		tp.tcp_mstamp += 11000;		/* one min_rtt later */
		CHECK(bbr2_probe_up_done(sk, queue, bbr_max_bw(sk)));
		CHECK(!bbr2_probe_up_done(sk, queue - 1, bbr_max_bw(sk)));

		/* An undo keeps the fast path in bbr2 only. */
		bbr->try_fast_path = 1;
		bbr3_undo_cwnd(sk);
		CHECK(bbr->try_fast_path == v2);

		/* An RTO outside probing: inflight_lo from prior_cwnd (bbr2). */
		bbr_start_bw_probe_down(sk);
		bbr->prior_cwnd = 50;
		tp.snd_cwnd = 80;
		bbr->inflight_lo = ~0U;
		bbr3_set_state(sk, TCP_CA_Loss);
		CHECK(bbr->inflight_lo == (v2 ? 50 : 80));

		/* One-segment bursts below 1.2 Mbit/s in bbr2. */
		sk->sk_pacing_rate = 100000;		/* 0.8 Mbit/s */
		bbr->min_rtt_us = 200000;		/* no RTT allowance */
		CHECK(bbr3_min_tso(sk) == (v2 ? 1 : 2));
	}
	/* bbr2's version in its telemetry, v2alpha's DOWN gain. */
	new_socket(true);
	CHECK(storage.model.version == 2);
	CHECK(bbr_pacing_gain(sk, BBR_BW_PROBE_DOWN) == BBR_UNIT * 3 / 4);
}

/* Issue 30 #1: CE marks on an ECN flow. v2alpha's bbr2_adapt_lower_bounds
 * cuts inflight_lo on ECN only when ecn_eligible, which the default
 * bbr_ecn_enable=0 never sets; v3 notes ECE only when eligible
 * (bbr_can_use_ecn: never on a stock kernel). Eligible, both cut. */
static void ce_marks_cut_inflight_lo_only_when_ecn_eligible(void)
{
	u32 i, eligible;

	for (i = 0; i < 4; i++) {
		bool v2 = i & 1;

		eligible = i >> 1;
		new_socket(v2);
		bbr->mode = BBR_PROBE_BW;
		bbr->full_bw_reached = 1;
		bbr_set_cycle_idx(sk, BBR_BW_PROBE_CRUISE);	/* not probing */
		bbr->cycle_mstamp = (u32)tp.tcp_mstamp;
		bbr->probe_wait_us = 2000000;		/* nor about to */
		bbr->min_rtt_us = 10000;
		bbr->bw_hi[1] = 10 << 20;
		bbr->ecn_eligible = eligible;
		tp.snd_cwnd = 40;
		tp.packets_out = 20;
		tp.snd_nxt = 40 * 1448;
		ack_ex(1010000, 4, 0, 10000, 0, 0, 0, tp.snd_nxt);
		/* CE on the ACK that ends the loss round (before v3's ECN
		 * reprobe would move an eligible flow to REFILL) */
		ack_ex(1011000, 4, 2, 10000, 0, FLAG_ECE, 4, tp.snd_nxt);
		if (eligible)
			CHECK(bbr->inflight_lo < 40);
		else
			CHECK(bbr->inflight_lo == ~0U);
	}
}

/* Issue 30 #2: recovery entry. The stack marks the lost skbs first
 * (google's skb_marked_lost: may cut inflight_hi), then
 * tcp_enter_recovery() -> ssthresh() saves the bounds, then
 * set_state(Recovery), then cong_control (where the port takes the
 * marks). A spurious recovery's undo restores the saved, cut, bounds. */
static void an_undo_restores_the_bounds_saved_after_the_loss_cut(void)
{
	probing_up(false);
	tp.snd_nxt = 0;
	bbr3_ssthresh(sk);			/* tcp_init_cwnd_reduction() */
	bbr3_set_state(sk, TCP_CA_Recovery);
	tp.snd_nxt = 10 * 1448;
	ack_ex(1010000, 10, 0, 10000, 5, 0, 0, tp.snd_nxt);	/* 5 of 10 lost */
	CHECK(storage.cnt.too_high_lost == 1);
	CHECK(bbr->inflight_hi == HI_AFTER_CUT);

	bbr3_undo_cwnd(sk);			/* the recovery was spurious */
	CHECK(bbr->inflight_hi == HI_AFTER_CUT);
}

/* Issue 30 #3: the losses of one ACK taken as one skb of pcount packets
 * with the send stamps of the ACK's sampled skb, here a retransmission
 * of data sent before the newest snapshot (tx_in_flight rebuilt as 1,
 * below the group's 5): google's per-skb stamps never get there (it
 * WARNs and returns ~0U); the port must not lift inflight_hi to ~0U. */
static void a_grouped_loss_never_removes_inflight_hi(void)
{
	probing_up(false);
	tp.snd_nxt = 10 * 1448;
	ack_ex(1010000, 10, 0, 10000, 5, 0, 0, (u32)-1448);
	CHECK(storage.cnt.too_high_lost == 1);
	CHECK(bbr->inflight_hi == HI_AFTER_CUT);
	CHECK(storage.cnt.hi_at_hit_max != ~0U);
}

/* Issue 30, minor: losses marked by an ACK that sampled no skb (a dupack
 * delivering nothing new) still get the lost-packet check, on the
 * fallback sample of a snapshot miss: in flight before the ACK (10) and
 * its losses (5), too high. */
static void losses_on_an_ack_without_a_sample_are_checked(void)
{
	probing_up(false);
	tp.packets_out = 10;
	tp.snd_nxt = 10 * 1448;
	ack_ex(1010000, 0, 0, -1, 5, 0, 0, 0);
	CHECK(storage.cnt.no_sample == 1);
	CHECK(storage.cnt.too_high_lost == 1);
	CHECK(bbr->inflight_hi == HI_AFTER_CUT);
}

/* Issue 30 #4: a qdisc drop (tcp_enter_cwr() from __tcp_transmit_skb) on a
 * flow whose last loss probe was a retransmit (tp->tlp_retrans stays set)
 * is no TLP repair: CWR is left a round later, after ACKs, once snd_una
 * passes high_seq. Only tcp_process_tlp_ack() enters CWR and leaves it
 * for Open/Disorder in the same call. Neither is a loss. */
static void a_qdisc_drop_after_a_tlp_is_no_loss(void)
{
	probing_up(false);
	bbr->inflight_latest = 20;	/* a TLP repair would be too high */
	tp.tlp_retrans = 1;		/* from an earlier probe */
	tp.snd_nxt = 10 * 1448;
	bbr3_ssthresh(sk);		/* tcp_enter_cwr(): init_cwnd_reduction */
	tp.high_seq = tp.snd_nxt;
	bbr3_set_state(sk, TCP_CA_CWR);
	tp.snd_nxt += 10 * 1448;	/* the stack sends on */
	ack_ex(1010000, 2, 0, 10000, 0, 0, 0, tp.snd_nxt);
	bbr3_set_state(sk, TCP_CA_Open);	/* snd_una after high_seq */
	CHECK(!bbr->loss_in_round && storage.cnt.loss_events == 0);
	CHECK(storage.cnt.tlp_repairs == 0 && storage.cnt.too_high_tlp == 0);
	CHECK(bbr->inflight_hi == 100);

	/* The same with the ECE of an ACK (tcp_try_to_open -> tcp_enter_cwr). */
	probing_up(false);
	bbr->inflight_latest = 20;
	tp.tlp_retrans = 1;
	tp.snd_nxt = 10 * 1448;
	bbr3_ssthresh(sk);
	tp.high_seq = tp.snd_nxt;
	bbr3_set_state(sk, TCP_CA_CWR);
	ack_ex(1010000, 2, 0, 10000, 0, FLAG_ECE, 2, tp.snd_nxt);
	tp.snd_nxt += 10 * 1448;
	ack_ex(1020000, 2, 2, 10000, 0, 0, 0, tp.snd_nxt);
	bbr3_set_state(sk, TCP_CA_Open);
	CHECK(storage.cnt.tlp_repairs == 0 && storage.cnt.too_high_tlp == 0);
	CHECK(bbr->inflight_hi == 100);
}

/* PROBE_RTT's "ignore low rate samples" (google: tp->app_limited =
 * delivered + in flight). The 4-argument build writes it as google; the
 * 2-argument build (the 6.1 verifier refuses that write) keeps it in the
 * socket's storage and marks the samples of skbs sent up to it itself,
 * until tp->delivered is past it (DEVIATIONS.md #26). */
static void probe_rtt_marks_its_samples_app_limited(void)
{
	u32 until;

	new_socket(false);
	ack(1010000, 10, 0, 10000, 0);
	bbr->probe_rtt_min_stamp = bbr_jiffies(&tp) - 6000;	/* 5 s window over */
	ack(1020000, 10, 10, 10000, 0);
	CHECK(bbr->mode == BBR_PROBE_RTT);
	until = tp.delivered + tcp_packets_in_flight(&tp);
	until = until ? until : 1;
#ifdef BBR3_CC2
	{
		struct rate_sample krs = {0};
		struct bbr_rs rs = {0};

		CHECK(storage.app_limited_until == until && tp.app_limited == 0);
		krs.prior_mstamp = 1;
		krs.prior_delivered = until;	/* sent while marked */
		bbr3_fill_rs(&tp, 0, &krs, &storage, &rs);
		CHECK(rs.is_app_limited);
		tp.delivered = until + 1;	/* delivered is past it: cleared */
		krs.prior_delivered = until + 1;
		__builtin_memset(&rs, 0, sizeof(rs));
		bbr3_fill_rs(&tp, 0, &krs, &storage, &rs);
		CHECK(!rs.is_app_limited && storage.app_limited_until == 0);
	}
#else
	CHECK(tp.app_limited == until);
#endif
}

int main(void)
{
	probe_rtt_marks_its_samples_app_limited();
	phase_changes_clear_the_fast_path();
	a_tlp_repair_saves_the_bounds_after_the_cut();
	losses_between_acks_are_a_loss_event();
	rto_losses_are_counted_once();
	the_model_is_written_per_round_not_per_ack();
	a_failed_storage_is_counted_and_retried();
	the_send_snapshot_is_found();
	bbr2_follows_v2alpha();
	ce_marks_cut_inflight_lo_only_when_ecn_eligible();
	an_undo_restores_the_bounds_saved_after_the_loss_cut();
	a_grouped_loss_never_removes_inflight_hi();
	a_qdisc_drop_after_a_tlp_is_no_loss();
	losses_on_an_ack_without_a_sample_are_checked();
	printf("%d check(s) failed\n", failures);
	return failures ? 1 : 0;
}
