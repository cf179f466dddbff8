/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * bbr3.h: BBRv3 constants, parameters, per-socket state and small helpers.
 * The counterpart of bbrkit-cc's bbr3/params.rs and the struct of bbr3.rs;
 * values, names and comments follow google/bbr v3 net/ipv4/tcp_bbr.c
 * (commit 001a430b3ddb, BBR_VERSION 3) and, for bbr2, the v2alpha values of
 * tcp_bbr2.c (commit 0487ade55081) as bbrkit-cc's Bbr3Params::v2() has them
 * (its logic: v2alpha.h).
 *
 * No .rodata: every parameter is an immediate (a `#define`), so the object
 * has no internal maps and every map it creates is named bbr3_*.
 */
#ifndef BBR3_H
#define BBR3_H

/* Scale factor for rate in pkt/uSec unit to avoid truncation in bandwidth
 * estimation. The rate unit ~= (1500 bytes / 1 usec / 2^24) ~= 715 bps.
 * This handles bandwidths from 0.06pps (715bps) to 256Mpps (3Tbps) in a u32.
 */
#define BW_SCALE 24
#define BW_UNIT (1 << BW_SCALE)

#define BBR_SCALE 8	/* scaling factor for fractions in BBR (e.g. gains) */
#define BBR_UNIT (1 << BBR_SCALE)

/* BBR has the following modes for deciding how fast to send: */
enum bbr_mode {
	BBR_STARTUP,	/* ramp up sending rate rapidly to fill pipe */
	BBR_DRAIN,	/* drain any queue created during startup */
	BBR_PROBE_BW,	/* discover, share bw: pace around estimated bw */
	BBR_PROBE_RTT,	/* cut inflight to min to probe min_rtt */
};

/* How does the incoming ACK stream relate to our bandwidth probing? */
enum bbr_ack_phase {
	BBR_ACKS_INIT,		  /* not probing; not getting probe feedback */
	BBR_ACKS_REFILLING,	  /* sending at est. bw to fill pipe */
	BBR_ACKS_PROBE_STARTING,  /* inflight rising to probe bw */
	BBR_ACKS_PROBE_FEEDBACK,  /* getting feedback from bw probing */
	BBR_ACKS_PROBE_STOPPING,  /* stopped probing; still getting feedback */
};

/* ProbeBW phases, the index of bbr_pacing_gain[] (enum bbr_pacing_gain_phase) */
enum bbr_pacing_gain_phase {
	BBR_BW_PROBE_UP		= 0,  /* push up inflight to probe for bw/vol */
	BBR_BW_PROBE_DOWN	= 1,  /* drain excess inflight from the queue */
	BBR_BW_PROBE_CRUISE	= 2,  /* use pipe, w/ headroom in queue/pipe */
	BBR_BW_PROBE_REFILL	= 3,  /* try to refill the pipe again to 100% */
};

/*
 * BBR congestion control block, kept in icsk_ca_priv (104 bytes on 6.18;
 * google's tree raises ICSK_CA_PRIV_SIZE to 144). google's struct bbr is 136
 * bytes without PLB; to fit, this one
 *  - keeps cycle_mstamp and ack_epoch_mstamp as the low 32 bits of the µs
 *    clock (DEVIATION: compared wrap-safely; a phase or ACK epoch longer than
 *    35 minutes reads as 0 elapsed, google's u64 as its true length),
 *  - drops prior_rcv_nxt (only for dctcp_ece_ack_update, see ecn.h),
 *  - moves undo_bw_lo, undo_inflight_lo, undo_inflight_hi,
 *    alpha_last_delivered, alpha_last_delivered_ce to sk_storage
 *    (struct bbr3_sk): they are touched on recovery entry/undo and, with
 *    ECN, once per round, never on the common per-ACK path.
 * Field order and bit widths otherwise are google's.
 */
struct bbr {
	u32	min_rtt_us;	        /* min RTT in min_rtt_win_sec window */
	u32	min_rtt_stamp;	        /* timestamp of min_rtt_us (ms, see bbr_jiffies) */
	u32	probe_rtt_done_stamp;   /* end time for BBR_PROBE_RTT mode */
	u32	probe_rtt_min_us;	/* min RTT in probe_rtt_win_ms win */
	u32	probe_rtt_min_stamp;	/* timestamp of probe_rtt_min_us*/
	u32     next_rtt_delivered; /* scb->tx.delivered at end of round */
	u32	cycle_mstamp;	     /* time of this cycle phase start (µs, low 32 bits) */
	u32     mode:2,		     /* current bbr_mode in state machine */
		prev_ca_state:3,     /* CA state on previous ACK */
		round_start:1,	     /* start of packet-timed tx->ack round? */
		ce_state:1,          /* If most recent data has CE bit set */
		bw_probe_up_rounds:5,   /* cwnd-limited rounds in PROBE_UP */
		try_fast_path:1,	/* can we take fast path? */
		idle_restart:1,	     /* restarting after idle? */
		probe_rtt_round_done:1,  /* a BBR_PROBE_RTT round at 4 pkts? */
		init_cwnd:7,         /* initial cwnd */
		v2:1,		     /* not in google: bbr2 (v2alpha) ops */
		undo_resave:1,	     /* not in google: ssthresh saved the undo
				      * bounds at recovery entry; save them
				      * again after this ACK's losses (loss.h) */
		tlp_cwr:1,	     /* not in google: set_state(CWR) with
				      * tlp_retrans, no ACK since (loss.h) */
#ifdef BBR3_CC2
		ack_ece:1,	     /* not in google: this ACK's CA_ACK_ECE
				      * (in_ack_event), for the 2-argument
				      * cong_control (bbr3.bpf.c) */
		unused_1:6;
#else
		unused_1:7;
#endif
	u32	pacing_gain:10,	/* current gain for setting pacing rate */
		cwnd_gain:10,	/* current gain for setting cwnd */
		full_bw_reached:1,   /* reached full bw in Startup? */
		full_bw_cnt:2,	/* number of rounds without large bw gains */
		cycle_idx:2,	/* current index in pacing_gain cycle array */
		has_seen_rtt:1, /* have we seen an RTT sample yet? */
		unused_2:6;
	u32	prior_cwnd;	/* prior cwnd upon entering loss recovery */
	u32	full_bw;	/* recent bw, to estimate if pipe is full */

	/* For tracking ACK aggregation: */
	u32	ack_epoch_mstamp;	/* start of ACK sampling epoch (µs, low 32 bits) */
	u16	extra_acked[2];		/* max excess data ACKed in epoch */
	u32	ack_epoch_acked:20,	/* packets (S)ACKed in sampling epoch */
		extra_acked_win_rtts:5,	/* age of extra_acked, in round trips */
		extra_acked_win_idx:1,	/* current index in extra_acked array */
	/* BBR v3 state: */
		full_bw_now:1,		/* recently reached full bw plateau? */
		startup_ecn_rounds:2,	/* consecutive hi ECN STARTUP rounds */
		loss_in_cycle:1,	/* packet loss in this cycle? */
		ecn_in_cycle:1,		/* ECN in this cycle? */
		unused_3:1;
	u32	loss_round_delivered; /* scb->tx.delivered ending loss round */
	u32	bw_latest;	 /* max delivered bw in last round trip */
	u32	bw_lo;		 /* lower bound on sending bandwidth */
	u32	bw_hi[2];	 /* max recent measured bw sample */
	u32	inflight_latest; /* max delivered data in last round trip */
	u32	inflight_lo;	 /* lower bound of inflight data range */
	u32	inflight_hi;	 /* upper bound of inflight data range */
	u32	bw_probe_up_cnt; /* packets delivered per inflight_hi incr */
	u32	bw_probe_up_acks;  /* packets (S)ACKed since inflight_hi incr */
	u32	probe_wait_us;	 /* PROBE_DOWN until next clock-driven probe */
	u32	ecn_eligible:1,	/* sender can use ECN (RTT, handshake)? */
		ecn_alpha:9,	/* EWMA delivered_ce/delivered; 0..256 */
		bw_probe_samples:1,    /* rate samples reflect bw probing? */
		prev_probe_too_high:1, /* did last PROBE_UP go too high? */
		stopped_risky_probe:1, /* last PROBE_UP stopped due to risk? */
		rounds_since_probe:8,  /* packet-timed rounds since probed bw */
		loss_round_start:1,    /* loss_round_delivered round trip? */
		loss_in_round:1,       /* loss marked in this round trip? */
		ecn_in_round:1,	       /* ECN marked in this round trip? */
		ack_phase:3,	       /* bbr_ack_phase: meaning of ACKs */
		loss_events_in_round:4,/* losses in STARTUP round */
		initialized:1;	       /* has bbr_init() been called? */
};
_Static_assert(sizeof(struct bbr) <= 104, "struct bbr must fit icsk_ca_priv");

/*
 * What stock kernels do not stamp per skb (google adds scb->tx.in_flight and
 * scb->tx.lost): a snapshot taken at the end of an ACK (cong_control) and
 * at init. A packet sent between two ACKs carries tx.delivered = the
 * delivered count of the earlier one, which is rs->prior_delivered when it
 * is (S)ACKed; signals.h finds the newest snapshot at or before that by
 * binary search and rebuilds tx_in_flight and tx.lost from it (see
 * DEVIATIONS.md, "tx_in_flight").
 */
struct bbr_tx_snap {
	u32 delivered;	/* tp->delivered after this ACK (unique, increasing) */
	u32 lost;	/* tp->lost after this ACK */
	u32 in_flight;	/* tcp_packets_in_flight() after this ACK */
	u32 snd_nxt;	/* tp->snd_nxt after this ACK */
};

/* Snapshots kept: 32 (512 bytes), one per cwnd/16 packets delivered, so
 * they reach back about two windows: further than the sampled skb (sent at
 * most one window plus the recovery's reordering ago). The first version
 * kept 256 at cwnd/128 (4 KB per socket): the same reach, finer grain; the
 * grain only decides how many losses marked between a snapshot and the
 * skb's send read as "after" (DEVIATIONS.md #2). */
#define BBR_TX_RING 32
#define BBR_TX_MASK (BBR_TX_RING - 1)
#define BBR_TX_SEARCH_STEPS 6	/* ceil(log2(BBR_TX_RING)) + 1 */
/* A snapshot per cwnd/16 packets delivered: 32 of them span two cwnds. */
#define BBR_TX_GRAIN_DIV 16

/*
 * Each socket's sk_storage (map bbr3_sk_stor), 712 bytes (the kernel
 * charges 248 more per socket to optmem; measured: examples/cost): first
 * what every ACK touches (one cache line with the per-ACK counters), then
 * what bbrkit reads through sock_diag (telemetry.h: counters and model),
 * then the rest of google's struct bbr that does not fit icsk_ca_priv and
 * the send-snapshot ring.
 */
struct bbr3_sk {
	u32	tx_head;	/* snapshots written so far (next index & MASK) */
	u32	tx_cursor;	/* index of the snapshot the last lookup found */
	u32	last_lost;	/* tp->lost when cong_control or set_state(Loss) last saw it */
	u32	last_delivered;	/* tp->delivered at the end of the last cong_control */
	struct bbr3_counters cnt;	/* telemetry.h: public */
	struct bbr3_model model;	/* telemetry.h: public */
	u32	undo_bw_lo;	     /* bw_lo before latest losses */
	u32	undo_inflight_lo;    /* inflight_lo before latest losses */
	u32	undo_inflight_hi;    /* inflight_hi before latest losses */
	u32	alpha_last_delivered;	 /* tp->delivered    at alpha update */
	u32	alpha_last_delivered_ce; /* tp->delivered_ce at alpha update */
#ifdef BBR3_CC2
	u32	app_limited_until;   /* Linux < 6.10: PROBE_RTT's tp->app_limited,
				      * which a CA there may not write (signals.h) */
#else
	u32	pad;
#endif
	struct bbr_tx_snap tx[BBR_TX_RING];
};
_Static_assert(sizeof(struct bbr3_sk) == 712, "bbr3_sk size (documented)");
_Static_assert(__builtin_offsetof(struct bbr3_sk, cnt) == BBR3_COUNTERS_OFFSET,
	       "telemetry.h offsets");
_Static_assert(__builtin_offsetof(struct bbr3_sk, model) == BBR3_MODEL_OFFSET,
	       "telemetry.h offsets");

/* The kernel's struct rate_sample as google's tcp_rate.c fills it, with the
 * three fields stock kernels lack (tx_in_flight, lost, is_ece) rebuilt by
 * signals.h. Like bbrkit-cc's round::Sample. A private struct, so that a
 * sample built on the stack (TLP recovery, the lost-skb check) is never a
 * CO-RE-relocated kernel struct.
 */
struct bbr_rs {
	s64 interval_us;	/* rs->interval_us: -1 if invalid */
	s64 rtt_us;		/* rs->rtt_us: -1 if not measured */
	s32 delivered;		/* rs->delivered: -1 if invalid */
	s32 delivered_ce;	/* rs->delivered_ce */
	u32 prior_delivered;	/* rs->prior_delivered */
	u32 acked_sacked;	/* rs->acked_sacked */
	u32 losses;		/* rs->losses: newly marked lost on this ACK */
	u32 prior_in_flight;	/* rs->prior_in_flight */
	u32 tx_in_flight;	/* google: packets in flight when the sampled skb was sent */
	u32 lost;		/* google: packets lost since the sampled skb was sent */
	u8 is_app_limited;	/* rs->is_app_limited */
	u8 is_ack_delayed;	/* rs->is_ack_delayed */
	u8 is_ece;		/* google: the ACK carried ECE */
	u8 pad;
};

struct bbr_context {
	u32 sample_bw;
};

/* Where an "inflight too high" verdict came from (a per-socket counter
 * each, telemetry.h): an ACK's rate sample, a lost-packet sample, a
 * TLP-repaired loss. */
enum bbr3_hit {
	BBR3_HIT_ACK,
	BBR3_HIT_LOST,
	BBR3_HIT_TLP,
};

/* ---- Parameters (google's `static const`s; bbr2 = Bbr3Params::v2()) ---- */

/* Window length of min_rtt filter (in sec): */
#define bbr_min_rtt_win_sec 10u
/* Minimum time (in ms) spent at bbr_cwnd_min_target in BBR_PROBE_RTT mode: */
#define bbr_probe_rtt_mode_ms 200u
/* Window length of probe_rtt_min_us filter (in ms), and consequently the
 * typical interval between PROBE_RTT mode entries. */
#define bbr_probe_rtt_win_ms 5000u
/* Proportion of cwnd to estimated BDP in PROBE_RTT, in units of BBR_UNIT: */
#define bbr_probe_rtt_cwnd_gain (BBR_UNIT * 1 / 2)
/* Use min_rtt to help adapt TSO burst size: halve the RTT-based allowance
 * for every 2^9 usec (aka 512 us) of RTT. */
#define bbr_tso_rtt_shift 9u
/* Pace at ~1% below estimated bw, on average, to reduce queue at bottleneck. */
#define bbr_pacing_margin_percent 1u
/* 4*ln(2): the smallest gain that doubles the sending rate each round like
 * slow start (v3); v2alpha's bbr_high_gain 2/ln(2) = 2.885 for bbr2. */
#define bbr_startup_pacing_gain (BBR_UNIT * 277 / 100 + 1)		/* 710 */
#define bbr2_startup_pacing_gain (BBR_UNIT * 2885 / 1000 + 1)		/* 739 */
/* The gain for deriving startup cwnd (v2alpha: bbr_high_gain): */
#define bbr_startup_cwnd_gain (BBR_UNIT * 2)				/* 512 */
#define bbr2_startup_cwnd_gain (BBR_UNIT * 2885 / 1000 + 1)		/* 739 */
/* Drain the queue created in BBR_STARTUP in a single round: */
#define bbr_drain_gain (BBR_UNIT * 1000 / 2885)			/* 88 */
/* The gain for deriving steady-state cwnd tolerates delayed/stretched ACKs: */
#define bbr_cwnd_gain (BBR_UNIT * 2)
/* bbr_pacing_gain[]: UP 5/4, DOWN 0.91 (v2alpha 3/4), CRUISE 1, REFILL 1 */
#define bbr_pacing_gain_up (BBR_UNIT * 5 / 4)				/* 320 */
#define bbr_pacing_gain_down (BBR_UNIT * 91 / 100)			/* 232 */
#define bbr2_pacing_gain_down (BBR_UNIT * 3 / 4)			/* 192 */
#define bbr_pacing_gain_cruise BBR_UNIT
#define bbr_pacing_gain_refill BBR_UNIT
/* A sliding window protocol ACKing every other packet needs at least 4
 * packets in flight: */
#define bbr_cwnd_min_target 4u
/* If bw has increased significantly (1.25x), there may be more bw available: */
#define bbr_full_bw_thresh (BBR_UNIT * 5 / 4)
/* But after 3 rounds w/o significant bw growth, estimate pipe is full: */
#define bbr_full_bw_cnt 3u
/* Gain factor for adding extra_acked to target cwnd: */
#define bbr_extra_acked_gain BBR_UNIT
/* Window length of extra_acked window. */
#define bbr_extra_acked_win_rtts 5u
/* Max allowed val for ack_epoch_acked, after which sampling epoch is reset */
#define bbr_ack_epoch_acked_reset_thresh (1u << 20)
/* Time period for clamping cwnd increment due to ack aggregation */
#define bbr_extra_acked_max_us (100u * 1000)
/* Ensure ACKs only ACK packets with consistent ECN CE status? */
#define bbr_precise_ece_ack true
/* Max RTT (in usec) at which to use sender-side ECN logic (0: any RTT). */
#define bbr_ecn_max_rtt_us 5000u
/* On losses, scale down inflight and pacing rate by beta: */
#define bbr_beta (BBR_UNIT * 30 / 100)					/* 76 */
/* Gain factor for ECN mark ratio samples (1/16): */
#define bbr_ecn_alpha_gain (BBR_UNIT * 1 / 16)
/* The initial value for ecn_alpha; 1.0 responds quickly at startup: */
#define bbr_ecn_alpha_init BBR_UNIT
/* On ECN, cut inflight_lo to (1 - ecn_factor * ecn_alpha): */
#define bbr_ecn_factor (BBR_UNIT * 1 / 3)				/* 85 */
/* Estimate bw probing has gone too far if CE ratio exceeds this: */
#define bbr_ecn_thresh (BBR_UNIT * 1 / 2)
/* After ECN clears in a loss-free cycle, reprobe from this fraction of
 * inflight_hi (v3: 1/2; v2alpha: none). */
#define bbr_ecn_reprobe_gain (BBR_UNIT * 1 / 2)
#define bbr2_ecn_reprobe_gain 0u
/* Estimate bw probing has gone too far if loss rate exceeds this level: */
#define bbr_loss_thresh (BBR_UNIT * 2 / 100)				/* 5 */
/* Slow down for a packet loss recovered by TLP? (v2alpha: no hook) */
#define bbr_loss_probe_recovery true
#define bbr2_loss_probe_recovery false
/* Exit STARTUP if number of loss marking events in a Recovery round is >= N,
 * and loss rate is higher than bbr_loss_thresh (v2alpha: 8). */
#define bbr_full_loss_cnt 6u
#define bbr2_full_loss_cnt 8u
/* Exit STARTUP after this many rounds with ECN mark rate above ecn_thresh: */
#define bbr_full_ecn_cnt 2u
/* Fraction of unutilized headroom to try to leave in path upon high loss: */
#define bbr_inflight_headroom (BBR_UNIT * 15 / 100)			/* 38 */
/* Extra cwnd gain in BBR_BW_PROBE_UP, in units of BBR_UNIT/4 (v2alpha: 0): */
#define bbr_bw_probe_cwnd_gain 1u
#define bbr2_bw_probe_cwnd_gain 0u
/* Max number of packet-timed rounds to wait before probing for bandwidth
 * (Reno coexistence up to BDP = 25Mbps * .030sec / 1514 bytes = 61.9): */
#define bbr_bw_probe_max_rounds 63u
/* Max amount of randomness to inject in round counting: */
#define bbr_bw_probe_rand_rounds 2u
/* Use BBR-native probe time scale starting at this many usec: */
#define bbr_bw_probe_base_us (2u * USEC_PER_SEC)
/* Use BBR-native probes spread over this many usec: */
#define bbr_bw_probe_rand_us (1u * USEC_PER_SEC)
/* Use fast path if app-limited, no loss/ECN, and target cwnd was reached? */
#define bbr_fast_path true
/* bbr2 only: v2alpha's bbr_ecn_enable module parameter (default off). v3
 * has no switch; its ECN is gated by the route's ECN_LOW flag. */
#define bbr_ecn_enable true
#define bbr2_ecn_enable false

/* v2alpha only (v2alpha.h): PROBE_UP has built a queue once inflight
 * reaches bbr_bw_probe_pif_gain = 1.25 x BDP; below bbr_min_tso_rate =
 * 1.2 Mbit/s of pacing, one-segment bursts. */
#define bbr2_bw_probe_pif_gain (BBR_UNIT * 5 / 4)
#define bbr2_min_tso_rate 1200000u

/* bbr_param(): a tunable shared by bbr3 and bbr2. bbr_vparam(): one whose
 * bbr2 (v2alpha) value differs; picked by the v2 bit set in init. */
#define bbr_param(sk, name) (bbr_##name)
#define bbr_vparam(sk, name) (inet_csk_ca(sk)->v2 ? bbr2_##name : bbr_##name)

/* ---- Kernel helpers BPF lacks ---- */

#define min(a, b) ((a) < (b) ? (a) : (b))
#define max(a, b) ((a) > (b) ? (a) : (b))
#define min_t(t, a, b) ((t)(a) < (t)(b) ? (t)(a) : (t)(b))
#define max_t(t, a, b) ((t)(a) > (t)(b) ? (t)(a) : (t)(b))
#define before(seq1, seq2) ((s32)((seq1) - (seq2)) < 0)
#define after(seq2, seq1) before(seq1, seq2)

static __always_inline struct tcp_sock *tcp_sk(const struct sock *sk)
{
	return (struct tcp_sock *)sk;
}

static __always_inline struct inet_connection_sock *inet_csk(const struct sock *sk)
{
	return (struct inet_connection_sock *)sk;
}

static __always_inline struct bbr *inet_csk_ca(const struct sock *sk)
{
	return (struct bbr *)inet_csk(sk)->icsk_ca_priv;
}

static __always_inline u32 tcp_snd_cwnd(const struct tcp_sock *tp)
{
	return tp->snd_cwnd;
}

static __always_inline void tcp_snd_cwnd_set(struct tcp_sock *tp, u32 val)
{
	tp->snd_cwnd = val;
}

static __always_inline u32 tcp_min_rtt(const struct tcp_sock *tp)
{
	return tp->rtt_min.s[0].v;
}

static __always_inline u32 tcp_packets_in_flight(const struct tcp_sock *tp)
{
	return tp->packets_out - (tp->sacked_out + tp->lost_out) + tp->retrans_out;
}

static __always_inline u8 bbr_ca_state(const struct sock *sk)
{
	return BPF_CORE_READ_BITFIELD(inet_csk(sk), icsk_ca_state);
}

/* tp->is_cwnd_limited (a bitfield: CO-RE-relocated bit read). */
static __always_inline bool bbr_is_cwnd_limited(const struct tcp_sock *tp)
{
	return BPF_CORE_READ_BITFIELD(tp, is_cwnd_limited);
}

/* DEVIATION (clock): google stamps min_rtt and PROBE_RTT in jiffies
 * (tcp_jiffies32). BPF has no jiffies symbol and no HZ; we use milliseconds
 * of the socket's µs clock (tp->tcp_mstamp), i.e. jiffies at HZ=1000, which
 * is also what bbrkit-cc's model uses. msecs_to_jiffies(x) is then x. */
static __always_inline u32 bbr_jiffies(const struct tcp_sock *tp)
{
	return (u32)(tp->tcp_mstamp / USEC_PER_MSEC);
}
#define HZ 1000u
#define msecs_to_jiffies(ms) (ms)

/* get_random_u32_below(): Lemire's multiply-shift on bpf_get_prandom_u32()
 * (the kernel adds a rejection step for exact uniformity; the bias here is
 * below ceil/2^32, < 0.03 % for ceil = 10^6). */
static __always_inline u32 get_random_u32_below(u32 ceil)
{
	return (u32)(((u64)bpf_get_prandom_u32() * ceil) >> 32);
}

/* ilog2() of a u32 (0 for 0, see bbr_check_time_to_probe_bw). */
static __always_inline u32 bbr_ilog2(u32 v)
{
	u32 r = 0;

	if (v >> 16) { v >>= 16; r += 16; }
	if (v >> 8)  { v >>= 8;  r += 8; }
	if (v >> 4)  { v >>= 4;  r += 4; }
	if (v >> 2)  { v >>= 2;  r += 2; }
	if (v >> 1)  { r += 1; }
	return r;
}

#endif /* BBR3_H */
