// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * bbr3.bpf.c: BBRv3 (google/bbr branch v3 net/ipv4/tcp_bbr.c, commit
 * 001a430b3ddb, BBR_VERSION 3) as a BPF struct_ops tcp_congestion_ops for
 * stock Linux >= 6.10, registered as "bbr3"; and "bbr2", google/bbr v2alpha
 * (tcp_bbr2.c, commit 0487ade55081): the same machinery, v2alpha's functions
 * where they differ (v2alpha.h) and v2alpha's values (bbrkit-cc's
 * Bbr3Params::v2()).
 *
 * The algorithm is bbrkit-cc's bbr3 module (crates/bbrkit-cc/src/bbr3.rs and
 * bbr3/ *.rs) function for function, with google's function names, constants
 * and order; each .h file here is one of its .rs files. Read, not copied.
 * Every difference from google's file is marked DEVIATION where it happens
 * and listed in DEVIATIONS.md.
 *
 * The model
 *
 * BBR estimates the path's bottleneck bandwidth and round-trip propagation
 * delay, and paces at about bw while keeping about BDP = bw * min_rtt in
 * flight. BBRv3 bounds that model from above and below with loss and ECN:
 *
 *   long-term ("hi") bounds, probed for and cut only on high loss/ECN:
 *     max_bw      = max(bw_hi[0], bw_hi[1])    max delivery rate, this + last ProbeBW cycle
 *     inflight_hi                               most data in flight without >2% loss / >50% CE
 *   short-term ("lo") bounds, cut by beta (x0.7) per round with loss when NOT probing:
 *     bw_lo, inflight_lo                        reset on REFILL and on leaving PROBE_RTT
 *   used:
 *     bw       = min(max_bw, bw_lo)                       pacing_rate = bw * pacing_gain * 0.99
 *     cwnd     = min(bdp(bw)*cwnd_gain + extra_acked,      (quantized, >= 4 packets)
 *                    inflight_hi (DOWN/REFILL/UP) | inflight_hi*0.85 (CRUISE, PROBE_RTT),
 *                    inflight_lo)
 *     min_rtt  = min RTT over 10 s; probe_rtt_min = min RTT over 5 s (schedules PROBE_RTT)
 *
 * State diagram
 *
 *              | init
 *              v
 *   +-----> STARTUP -- bw plateau (3 rounds < +25%) | loss (>=6 loss events and >2% lost
 *   |        | gain 2.77/2.0      in a Recovery round) | ECN (2 rounds CE >= 50%)
 *   |        v
 *   |      DRAIN  (pacing 0.35) -- inflight <= BDP -+
 *   |                                               v
 *   |   +------------------------ PROBE_BW -------------------------------------+
 *   |   | DOWN (0.91) -- inflight <= min(BDP, inflight_hi - 15%) --> CRUISE (1.0)
 *   |   |   |  ^                                                     |
 *   |   |   |  +---- UP (1.25, cwnd gain 2.25): loss>2% | CE>50% |   | probe time:
 *   |   |   |        plateau | inflight >= inflight_hi after a       | 2-3 s (random) or
 *   |   |   |        too-high probe                ^                 | min(63, BDP) rounds
 *   |   |   +-- probe time --------------> REFILL (1.0) <------------+
 *   |   |                                   +- one round -> UP
 *   |   +-----------------------------------------------------------------------+
 *   |        | any state: no lower RTT for 5 s (and not restarting from idle)
 *   |        v
 *   +---- PROBE_RTT: cwnd <= max(4, BDP/2) for max(200 ms, 1 round), then
 *          full_bw_reached ? PROBE_BW DOWN->CRUISE : STARTUP
 *
 * Per ACK (bbr3_main, google's bbr_main): [losses marked since the last
 * ACK, then this ACK's: the lost-skb check] -> round start -> ECN alpha ->
 * bw sample -> latest delivery signals -> (fast path) -> update_model
 * {congestion signals and lower bounds, ACK aggregation, Startup loss exit,
 * full-bw detector, drain, ProbeBW cycle and upper bounds, min_rtt and
 * PROBE_RTT} -> gains -> pacing rate -> cwnd -> bound cwnd by the inflight
 * model -> [counters, telemetry at a round start or state change, send
 * snapshot].
 *
 * Where the state lives: struct bbr (hot, 104 bytes) in icsk_ca_priv;
 * struct bbr3_sk (712 bytes: the telemetry bbrkit reads through sock_diag,
 * the per-socket counters, undo values, ECN counters, loss bookkeeping, the
 * 32-entry send-snapshot ring that rebuilds rs->tx_in_flight/rs->lost) in
 * BPF_MAP_TYPE_SK_STORAGE bbr3_sk_stor, looked up once per ACK and freed
 * with the socket. No per-ACK map update, no clock read, no per-CPU counter
 * on the per-ACK path. Units as google's: packets, bw in packets/us << 24,
 * gains /256, min_rtt/PROBE_RTT stamps in ms (HZ=1000 jiffies), ProbeBW
 * clock in us.
 */
#include "kernel.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "telemetry.h"
#include "bbr3.h"

char _license[] SEC("license") = "Dual BSD/GPL";

/* Per socket: telemetry, counters, the rest of the state, the snapshot
 * ring (struct bbr3_sk). sock_diag returns it with the socket. */
struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct bbr3_sk);
} bbr3_sk_stor SEC(".maps");

/* Counters without a socket to count in (enum bbr3_stat in signals.h). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 8);
	__type(key, u32);
	__type(value, u64);
} bbr3_stats SEC(".maps");

/*
 * BBR3_GLOBAL: a global (non-static, never inlined) BPF subprogram. The
 * verifier checks it once, with its arguments as declared, instead of again
 * at every call site and on every path there; that keeps bbr3_main's
 * verification far below the 1M-instruction limit. Its first argument is the
 * socket as a trusted struct tcp_sock pointer (Linux >= 6.8 "arg:trusted"),
 * which CA programs may write where the stack allows. Each is google's
 * function of the same name without the "3" (bbr3_inflight is bbr_inflight);
 * the macros below keep google's call syntax.
 */
#ifdef BBR3_CC2
/*
 * bbr3-cc2.bpf.o (Linux 6.0-6.9, `make` builds it with -DBBR3_CC2 from this
 * same source): no "arg:trusted" (6.8), and a global subprogram of these
 * kernels cannot take a kernel pointer at all (its pointer arguments are
 * plain memory), so every BBR3_GLOBAL function is a static subprogram
 * instead: the verifier follows it at each call site with the caller's
 * types. The same code, verified along more paths (DEVIATIONS.md #27).
 */
#define __arg_trusted
#define BBR3_GLOBAL static __attribute__((noinline))
#define BBR3_DECL static
#else
#define __arg_trusted __attribute__((btf_decl_tag("arg:trusted")))
#define BBR3_GLOBAL __attribute__((noinline))
#define BBR3_DECL
#endif

struct bbr3_sk;
BBR3_DECL u32 bbr3_inflight(struct tcp_sock *tp, u32 bw, int gain);
BBR3_DECL int bbr3_update_cycle_phase(struct tcp_sock *tp, const struct bbr_rs *rs,
				      struct bbr_context *ctx);
BBR3_DECL int bbr3_update_min_rtt(struct tcp_sock *tp, const struct bbr_rs *rs);
BBR3_DECL int bbr3_check_drain(struct tcp_sock *tp);
BBR3_DECL int bbr3_update_model(struct tcp_sock *tp, const struct bbr_rs *rs,
				struct bbr_context *ctx);
BBR3_DECL int bbr3_update_control(struct tcp_sock *tp, const struct bbr_rs *rs);
BBR3_DECL int bbr3_model_write(struct tcp_sock *tp, struct bbr3_sk *st);
#define bbr_inflight(sk, bw, gain) bbr3_inflight(tcp_sk(sk), (bw), (gain))
#define bbr_update_cycle_phase(sk, rs, ctx) bbr3_update_cycle_phase(tcp_sk(sk), (rs), (ctx))
#define bbr_update_min_rtt(sk, rs) bbr3_update_min_rtt(tcp_sk(sk), (rs))
#define bbr_check_drain(sk) bbr3_check_drain(tcp_sk(sk))
#define bbr_update_model(sk, rs, ctx) bbr3_update_model(tcp_sk(sk), (rs), (ctx))

/* Forward declarations (google's file has the same few). */
static u32 bbr_max_bw(const struct sock *sk);
static u32 bbr_bw(const struct sock *sk);
static u32 bbr_bdp(struct sock *sk, u32 bw, int gain);
static u32 bbr_target_inflight(struct sock *sk);
static u32 bbr_inflight_with_headroom(const struct sock *sk);
static u32 bbr_packets_in_net_at_edt(struct sock *sk, u32 inflight_now);
static u32 bbr_ack_aggregation_cwnd(struct sock *sk);
static bool bbr_is_inflight_too_high(const struct sock *sk, const struct bbr_rs *rs);
static void bbr_handle_inflight_too_high(struct sock *sk, const struct bbr_rs *rs,
					 enum bbr3_hit path);
static void bbr3_note_too_high(struct sock *sk, enum bbr3_hit path);
static void bbr_set_cycle_idx(struct sock *sk, u32 cycle_idx);
static bool bbr2_probe_up_done(struct sock *sk, u32 inflight, u32 bw);
static bool bbr_adapt_upper_bounds(struct sock *sk, const struct bbr_rs *rs,
				   struct bbr_context *ctx);
static void bbr_raise_inflight_hi_slope(struct sock *sk);
static void bbr_reset_lower_bounds(struct sock *sk);
static void bbr_reset_congestion_signals(struct sock *sk);
static void bbr_start_bw_probe_down(struct sock *sk);
static void bbr_save_cwnd(struct sock *sk);
static u32 bbr_ecn_cut(struct sock *sk, u32 inflight);
static struct bbr3_sk *bbr_sk(struct sock *sk);
static bool bbr_is_probing_bandwidth(struct sock *sk);
static void bbr_start_bw_probe_refill(struct sock *sk, u32 bw_probe_up_rounds);
static u32 bbr_pacing_gain(struct sock *sk, u32 cycle_idx);
static u32 bbr_probe_rtt_cwnd(struct sock *sk);
static void bbr_reset_full_bw(struct sock *sk);
static void bbr_handle_queue_too_high_in_startup(struct sock *sk);
static void bbr_check_probe_rtt_done(struct sock *sk);

#include "signals.h"
#include "pacing.h"
#include "bounds.h"
#include "cwnd.h"
#include "round.h"
#include "ack_aggregation.h"
#include "startup.h"
#include "ecn.h"
#include "probe_bw.h"
#include "drain.h"
#include "probe_rtt.h"
#include "loss.h"
#include "v2alpha.h"

/* ---- Telemetry (telemetry.h) ---- */

/* The model part of the socket's storage, at a round start or when mode or
 * ProbeBW phase changed (bbr3_main), in the kernel's units. */
BBR3_GLOBAL int bbr3_model_write(struct tcp_sock *tp __arg_trusted,
				 struct bbr3_sk *st)
{
	struct sock *sk = (struct sock *)tp;
	struct bbr *bbr = inet_csk_ca(sk);
	struct bbr3_model *m;

	if (!st)	/* global subprogram: pointers may be NULL */
		return 0;
	m = &st->model;
	m->updated_us = tp->tcp_mstamp;
	m->bw = bbr_bw(sk);
	m->max_bw = bbr_max_bw(sk);
	m->bw_lo = bbr->bw_lo;
	m->bw_hi = ~0U;
	m->min_rtt_us = bbr->min_rtt_us;
	m->inflight_hi = bbr->inflight_hi;
	m->inflight_lo = bbr->inflight_lo;
	m->cwnd = tcp_snd_cwnd(tp);
	m->mss = tp->mss_cache;
	m->pacing_gain = bbr->pacing_gain;
	m->cwnd_gain = bbr->cwnd_gain;
	m->layout = BBR3_TELEMETRY_LAYOUT;
	m->version = bbr->v2 ? 2 : 3;
	m->mode = bbr->mode;
	m->cycle_idx = bbr->cycle_idx;
	m->full_bw_reached = bbr->full_bw_reached;
	return 0;
}

/* The socket's storage, created and initialised (init, or the retry of a
 * socket whose init could not create it). NULL if optmem is exhausted. */
static __always_inline struct bbr3_sk *bbr3_sk_create(struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct bbr3_sk *st;

	st = bpf_sk_storage_get(&bbr3_sk_stor, sk, NULL,
				BPF_SK_STORAGE_GET_F_CREATE);
	if (!st)
		return NULL;
	st->undo_bw_lo = 0;
	st->undo_inflight_lo = 0;
	st->undo_inflight_hi = 0;
	st->alpha_last_delivered = 0;
	st->alpha_last_delivered_ce = 0;
	st->last_lost = tp->lost;
	st->last_delivered = tp->delivered;
	st->tx_head = 0;
	st->cnt.hi_at_hit_min = ~0U;
	bbr3_tx_record(tp, st);
	bbr3_model_write(tp, st);
	return st;
}

/* Counts a handled "inflight too high" by the path that saw it and the
 * inflight_hi it left (at most once per probe: a storage lookup here). */
static void bbr3_note_too_high(struct sock *sk, enum bbr3_hit path)
{
	struct bbr3_sk *st = bbr_sk(sk);
	u32 hi = inet_csk_ca(sk)->inflight_hi;

	if (!st)
		return;
	if (path == BBR3_HIT_ACK)
		st->cnt.too_high_ack++;
	else if (path == BBR3_HIT_LOST)
		st->cnt.too_high_lost++;
	else
		st->cnt.too_high_tlp++;
	st->cnt.hi_at_hit_last = hi;
	st->cnt.hi_at_hit_sum += hi;
	st->cnt.hi_at_hit_min = min(st->cnt.hi_at_hit_min, hi);
	st->cnt.hi_at_hit_max = max(st->cnt.hi_at_hit_max, hi);
}

/* ---- bbr_main and the fast path ---- */

/* bbr_update_model. */
BBR3_GLOBAL int bbr3_update_model(struct tcp_sock *tp __arg_trusted,
				  const struct bbr_rs *rs,
				  struct bbr_context *ctx)
{
	struct bbr *bbr = inet_csk_ca((struct sock *)tp);
	struct sock *sk = (struct sock *)tp;

	if (!rs || !ctx)	/* global subprogram: pointers may be NULL */
		return 0;
	if (bbr->v2)	/* bbr2_update_model */
		bbr2_update_congestion_signals(sk, rs, ctx);
	else
		bbr_update_congestion_signals(sk, rs, ctx);
	bbr_update_ack_aggregation(sk, rs);
	bbr_check_loss_too_high_in_startup(sk, rs);
	if (bbr->v2)
		bbr2_check_full_bw_reached(sk, rs);
	else
		bbr_check_full_bw_reached(sk, rs, ctx);
	bbr_check_drain(sk);
	bbr_update_cycle_phase(sk, rs, ctx);
	bbr_update_min_rtt(sk, rs);
	return 0;
}

/* The control half of bbr_main: gains, pacing rate, cwnd, inflight bounds. */
BBR3_GLOBAL int bbr3_update_control(struct tcp_sock *tp __arg_trusted,
				    const struct bbr_rs *rs)
{
	struct sock *sk = (struct sock *)tp;
	struct bbr *bbr = inet_csk_ca(sk);
	u32 bw;

	if (!rs)	/* global subprogram: pointers may be NULL */
		return 0;
	bbr_update_gains(sk);
	bw = bbr_bw(sk);
	bbr_set_pacing_rate(sk, bw, bbr->pacing_gain);
	bbr_set_cwnd(sk, rs->acked_sacked, bw, bbr->cwnd_gain);
	bbr_bound_cwnd_for_inflight_model(sk);
	return 0;
}

/* bbr_run_fast_path: on an app-limited ACK with no news (sample below
 * max_bw, no loss/ECN, cwnd at target) skip the model update, and the
 * control update too if nothing changed. Returns true to skip both. */
static bool bbr_run_fast_path(struct sock *sk, bool *update_model,
			      const struct bbr_rs *rs, struct bbr_context *ctx)
{
	struct bbr *bbr = inet_csk_ca(sk);
	u32 prev_min_rtt_us, prev_mode;

	if (bbr_param(sk, fast_path) && bbr->try_fast_path &&
	    rs->is_app_limited && ctx->sample_bw < bbr_max_bw(sk) &&
	    !bbr->loss_in_round && !bbr->ecn_in_round) {
		prev_mode = bbr->mode;
		prev_min_rtt_us = bbr->min_rtt_us;
		bbr_check_drain(sk);
		bbr_update_cycle_phase(sk, rs, ctx);
		bbr_update_min_rtt(sk, rs);

		if (bbr->mode == prev_mode &&
		    bbr->min_rtt_us == prev_min_rtt_us &&
		    bbr->try_fast_path) {
			return true;
		}

		/* Skip model update, but control still needs to be updated */
		*update_model = false;
	}
	return false;
}

/* Losses: those the stack marked outside cong_control since the last ACK
 * (RACK's reorder timer, SACK processing of an old ACK), then this ACK's.
 * google's ops->skb_marked_lost saw each lost skb when it was marked; see
 * bbr_skb_marked_lost for how they are taken here (DEVIATIONS.md #3). */
static __always_inline void bbr3_account_losses(struct sock *sk,
						 struct bbr3_sk *st,
						 const struct bbr_rs *rs)
{
	struct tcp_sock *tp = tcp_sk(sk);
	s32 between;

	if (st) {
		between = (s32)(tp->lost - st->last_lost - rs->losses);
		if (between > 0) {
			st->cnt.lost_between += between;
			bbr_skb_marked_lost(sk, rs, between, st->last_delivered);
		}
		st->cnt.lost_in_ack += rs->losses;
	}
	if (rs->losses)
		bbr_skb_marked_lost(sk, rs, rs->losses, tp->delivered);
}

/* The end of every ACK: per-ACK counters, the model at a round start or
 * state change, the loss bookkeeping and the send snapshot. Without
 * storage (optmem was exhausted at init), retry once per round. */
static __always_inline void bbr3_ack_done(struct sock *sk, struct bbr3_sk *st)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct bbr *bbr = inet_csk_ca(sk);

	if (!st) {
		if (bbr->round_start && bbr3_sk_create(sk))
			bbr3_count(BBR3_STAT_STORAGE_RECOVERED);
		return;
	}
	st->cnt.acks++;
	if (bbr->round_start) {
		st->cnt.rounds++;
		if (bbr_is_probing_bandwidth(sk) && bbr->mode == BBR_PROBE_BW)
			st->cnt.probe_rounds++;
	}
	if (bbr->round_start || st->model.mode != bbr->mode ||
	    st->model.cycle_idx != bbr->cycle_idx)
		bbr3_model_write(tp, st);
	st->last_lost = tp->lost;
	st->last_delivered = tp->delivered;
	bbr3_tx_record(tp, st);
}

/* bbr_main: google's, with the ACK's flag as the 4-argument cong_control
 * of Linux >= 6.10 passes it, or as bbr3_cc2_flag() rebuilds it on 6.0-6.9.
 * Only FLAG_ECE is read (bbr3_fill_rs: rs->is_ece); google's bbr_main does
 * not use `ack` either. */
static __always_inline void bbr_main(struct sock *sk, int flag,
				     const struct rate_sample *krs)
{
	struct bbr *bbr = inet_csk_ca(sk);
	struct bbr_context ctx = { 0 };
	bool update_model = true;
	struct bbr3_sk *st;
	struct bbr_rs rs = {};

	st = bbr_sk(sk);
	bbr3_fill_rs(tcp_sk(sk), flag, krs, st, &rs);
	/* DEVIATION: google's ops->skb_marked_lost ran for each lost skb
	 * when the stack marked it; see bbr_skb_marked_lost. */
	bbr3_account_losses(sk, st, &rs);
	bbr3_resave_undo_bounds(sk, st);
	bbr->tlp_cwr = 0;	/* an ACK since set_state(CWR): no TLP repair */

	bbr_update_round_start(sk, &rs);
	if (bbr->round_start) {
		bbr->rounds_since_probe =
			min_t(s32, bbr->rounds_since_probe + 1, 0xFF);
		if (bbr->v2)
			bbr2_update_ecn_alpha(sk, st);
		else
			bbr_update_ecn_alpha(sk, st);
	}
	/* DEVIATION: no Protective Load Balancing (bbr_plb): one path only. */

	/* v2alpha (bbr2_main): ECE noted without the eligibility gate, and
	 * the latest delivery signals are part of its model update. */
	bbr->ecn_in_round  |= ((bbr->ecn_eligible || bbr->v2) && rs.is_ece);
	bbr_calculate_bw_sample(&rs, &ctx);
	if (!bbr->v2)
		bbr_update_latest_delivery_signals(sk, &rs, &ctx);

	if (bbr_run_fast_path(sk, &update_model, &rs, &ctx))
		goto out;

	if (update_model)
		bbr_update_model(sk, &rs, &ctx);

	bbr3_update_control(tcp_sk(sk), &rs);

out:
	if (!bbr->v2)
		bbr_advance_latest_delivery_signals(sk, &rs, &ctx);
	bbr->prev_ca_state = bbr_ca_state(sk);
	bbr->loss_in_cycle |= rs.lost > 0;
	bbr->ecn_in_cycle  |= rs.delivered_ce > 0;

	bbr3_ack_done(sk, st);
}

/* bbr_init. */
static void bbr_init(struct sock *sk, bool v2)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct bbr *bbr = inet_csk_ca(sk);

	__builtin_memset(bbr, 0, sizeof(*bbr));
	bbr->initialized = 1;
	bbr->v2 = v2;

	bbr->init_cwnd = min(0x7FU, tcp_snd_cwnd(tp));
	bbr->prior_cwnd = tp->prior_cwnd;
	tp->snd_ssthresh = TCP_INFINITE_SSTHRESH;
	bbr->next_rtt_delivered = v2 ? 0 : tp->delivered;	/* v2alpha: 0 */
	bbr->prev_ca_state = TCP_CA_Open;

	bbr->probe_rtt_done_stamp = 0;
	bbr->probe_rtt_round_done = 0;
	bbr->probe_rtt_min_us = tcp_min_rtt(tp);
	bbr->probe_rtt_min_stamp = bbr_jiffies(tp);
	bbr->min_rtt_us = tcp_min_rtt(tp);
	bbr->min_rtt_stamp = bbr_jiffies(tp);

	bbr->has_seen_rtt = 0;
	bbr_init_pacing_rate_from_rtt(sk);

	bbr->round_start = 0;
	bbr->idle_restart = 0;
	bbr->full_bw_reached = 0;
	bbr->full_bw = 0;
	bbr->full_bw_cnt = 0;
	bbr->cycle_mstamp = 0;
	bbr->cycle_idx = 0;

	bbr->mode = BBR_STARTUP;	/* bbr_reset_startup_mode */

	bbr->ack_epoch_mstamp = (u32)tp->tcp_mstamp;
	bbr->ack_epoch_acked = 0;
	bbr->extra_acked_win_rtts = 0;
	bbr->extra_acked_win_idx = 0;
	bbr->extra_acked[0] = 0;
	bbr->extra_acked[1] = 0;

	bbr->ce_state = 0;
	bbr->try_fast_path = 0;

	/* cmpxchg(&sk->sk_pacing_status, SK_PACING_NONE, SK_PACING_NEEDED) */
	if (sk->sk_pacing_status == SK_PACING_NONE)
		sk->sk_pacing_status = SK_PACING_NEEDED;

	/* Start sampling ECN mark rate after first full flight is ACKed: */
	bbr->loss_round_delivered = tp->delivered + 1;
	bbr->loss_round_start = 0;
	bbr->loss_events_in_round = 0;
	bbr->startup_ecn_rounds = 0;
	bbr_reset_congestion_signals(sk);
	bbr->bw_lo = ~0U;
	bbr->bw_hi[0] = 0;
	bbr->bw_hi[1] = 0;
	bbr->inflight_lo = ~0U;
	bbr->inflight_hi = ~0U;
	bbr_reset_full_bw(sk);
	bbr->bw_probe_up_cnt = ~0U;
	bbr->bw_probe_up_acks = 0;
	bbr->bw_probe_up_rounds = 0;
	bbr->probe_wait_us = 0;
	bbr->stopped_risky_probe = 0;
	bbr->ack_phase = BBR_ACKS_INIT;
	bbr->rounds_since_probe = 0;
	bbr->bw_probe_samples = 0;
	bbr->prev_probe_too_high = 0;
	bbr->ecn_eligible = 0;
	bbr->ecn_alpha = bbr_param(sk, ecn_alpha_init);
	/* DEVIATION: tp->fast_ack_mode (google-only field) and
	 * TCP_ECN_ECT_PERMANENT (only with ECN_LOW) are not available. */

	/* DEVIATION (#12): without storage (optmem exhausted) the socket runs
	 * with the fallbacks of signals.h and no undo of the bounds until a
	 * retry at a later round start succeeds; both are counted. */
	if (!bbr3_sk_create(sk))
		bbr3_count(BBR3_STAT_STORAGE_MISSING);
}

/* bbr_cwnd_event. */
static void bbr_cwnd_event(struct sock *sk, enum tcp_ca_event event)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct bbr *bbr = inet_csk_ca(sk);

	if (event == CA_EVENT_TX_START) {
		if (!tp->app_limited)
			return;
		bbr->idle_restart = 1;
		bbr->ack_epoch_mstamp = (u32)tp->tcp_mstamp;
		bbr->ack_epoch_acked = 0;
		/* Avoid pointless buffer overflows: pace at est. bw if we don't
		 * need more speed (we're restarting from idle and app-limited). */
		if (bbr->mode == BBR_PROBE_BW)
			bbr_set_pacing_rate(sk, bbr_bw(sk), BBR_UNIT);
		else if (bbr->mode == BBR_PROBE_RTT)
			bbr_check_probe_rtt_done(sk);
	} else if ((event == CA_EVENT_ECN_IS_CE ||
		    event == CA_EVENT_ECN_NO_CE) &&
		   bbr_can_use_ecn(sk) &&
		   bbr_param(sk, precise_ece_ack)) {
		/* DEVIATION: dctcp_ece_ack_update() (receiver: ACK at once
		 * when the CE state flips) is not callable from BPF; only the
		 * state is kept. Unreachable without ECN_LOW (ecn.h). */
		bbr->ce_state = event == CA_EVENT_ECN_IS_CE;
	}
	/* CA_EVENT_TLP_RECOVERY does not exist in stock kernels: see
	 * bbr3_set_state. */
}

/* ---- struct_ops programs ---- */

/* DEVIATION: google's ops have .tso_segs (the skb size at transmit); stock
 * kernels only ask for .min_tso_segs, the floor of tcp_tso_autosize(),
 * which itself budgets pacing_rate >> pacing_shift plus the same min_rtt
 * allowance (tcp_tso_rtt_log 9). Returning google's bbr_tso_segs() as that
 * floor gives the same size (autosize can only raise it). */
static __always_inline u32 bbr3_tso_segs(struct sock *sk)
{
	return bbr_tso_segs_generic(sk, tcp_sk(sk)->mss_cache,
				    sk->sk_gso_max_size);
}

/* Whether this set_state is the end of a TLP repair (google:
 * CA_EVENT_TLP_RECOVERY). tcp_process_tlp_ack() reports one as
 * tcp_init_cwnd_reduction() (high_seq = snd_nxt, ssthresh),
 * set_state(CWR), then tcp_try_keep_open(): set_state(Open or Disorder),
 * all in one call. tcp_enter_cwr() (ECE in tcp_try_to_open, a qdisc drop
 * or congestion return in __tcp_transmit_skb) leaves CWR only in a later
 * ACK's tcp_fastretrans_alert, once snd_una is past high_seq: after a
 * cong_control (which clears tlp_cwr), or with data sent since (high_seq
 * below snd_nxt). tp->tlp_retrans stays set until the next probe, so it
 * alone matched those too (DEVIATIONS.md #4). */
static __always_inline bool bbr3_tlp_repaired(struct sock *sk, u8 new_state)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct bbr *bbr = inet_csk_ca(sk);
	bool cwr = bbr->tlp_cwr;

	bbr->tlp_cwr = new_state == TCP_CA_CWR &&
		       BPF_CORE_READ_BITFIELD(tp, tlp_retrans);
	return cwr && (new_state == TCP_CA_Open ||
		       new_state == TCP_CA_Disorder) &&
	       tp->high_seq == tp->snd_nxt;
}

/* set_state, plus the two events stock kernels do not send (loss.h). */
static __always_inline void bbr3_do_set_state(struct sock *sk, u8 new_state)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct bbr *bbr = inet_csk_ca(sk);
	struct bbr3_sk *st;

	/* ssthresh's save is redone after the ACK's losses only for a
	 * recovery entry (tcp_enter_recovery); CWR and RTO entries mark
	 * nothing before it (loss.h). */
	if (new_state != TCP_CA_Recovery)
		bbr->undo_resave = 0;

	if (new_state == TCP_CA_Loss && bbr->initialized) {
		/* An RTO marked the flight lost (tcp_enter_loss, before this
		 * call, where google's skb_marked_lost saw each skb). */
		st = bbr_sk(sk);
		if (st) {
			st->cnt.lost_rto += tp->lost - st->last_lost;
			st->last_lost = tp->lost;
		}
		bbr_note_loss(sk, tp->delivered);
	}
	if (bbr3_tlp_repaired(sk, new_state) &&
	    bbr_vparam(sk, loss_probe_recovery))
		bbr3_tlp_recovery(sk);
	bbr_set_state(sk, new_state);
}

/* release: drop the socket's storage (the kernel would free it with the
 * socket; a socket that moves on to another algorithm must not keep a
 * stale bbr3 model that sock_diag would still report). */
static __always_inline void bbr3_release_sock(struct sock *sk)
{
	bpf_sk_storage_delete(&bbr3_sk_stor, sk);
}

#ifdef BBR3_CC2
/*
 * Linux 6.0-6.9: cong_control(sk, rs). The ACK's `flag` is not passed; the
 * one bit of it bbr_main reads, FLAG_ECE, comes from in_ack_event: tcp_ack()
 * sets CA_ACK_ECE in its event flags exactly where it sets FLAG_ECE
 * (tcp_ecn_rcv_ecn_echo() on the slow path; the fast path has neither) and
 * calls in_ack_event once per ACK before tcp_cong_control(), which only
 * tcp_ack() calls. So the bit cong_control reads is this ACK's: the same
 * value as the 4-argument flag (DEVIATIONS.md #6, #25). `ack` (the new
 * snd_una) is not used by google's bbr_main.
 */
static __always_inline int bbr3_cc2_flag(struct sock *sk)
{
	return inet_csk_ca(sk)->ack_ece ? FLAG_ECE : 0;
}

#define BBR3_MAIN_PROGRAMS(PFX)							\
SEC("struct_ops")								\
void BPF_PROG(PFX##main, struct sock *sk, const struct rate_sample *rs)		\
{										\
	bbr_main(sk, bbr3_cc2_flag(sk), rs);					\
}										\
										\
SEC("struct_ops")								\
void BPF_PROG(PFX##in_ack, struct sock *sk, u32 flags)			\
{										\
	inet_csk_ca(sk)->ack_ece = (flags & CA_ACK_ECE) != 0;			\
}
#define BBR3_IN_ACK_EVENT(PFX) .in_ack_event = (void *)PFX##in_ack,
#else
#define BBR3_MAIN_PROGRAMS(PFX)							\
SEC("struct_ops")								\
void BPF_PROG(PFX##main, struct sock *sk, u32 ack, int flag,			\
	      const struct rate_sample *rs)					\
{										\
	bbr_main(sk, flag, rs);							\
}
#define BBR3_IN_ACK_EVENT(PFX)
#endif

/* One set of programs per registered name: PFX is the program-name prefix,
 * V2 the parameter set given to init (the other ops read it from state). */
#define BBR3_OPS_PROGRAMS(PFX, V2)						\
SEC("struct_ops")								\
void BPF_PROG(PFX##init, struct sock *sk)					\
{										\
	bbr_init(sk, V2);							\
}										\
										\
SEC("struct_ops")								\
void BPF_PROG(PFX##release, struct sock *sk)					\
{										\
	bbr3_release_sock(sk);							\
}										\
										\
BBR3_MAIN_PROGRAMS(PFX)							\
										\
SEC("struct_ops")								\
u32 BPF_PROG(PFX##ssthresh, struct sock *sk)					\
{										\
	return bbr_ssthresh(sk);						\
}										\
										\
SEC("struct_ops")								\
u32 BPF_PROG(PFX##undo_cwnd, struct sock *sk)					\
{										\
	return bbr_undo_cwnd(sk);						\
}										\
										\
SEC("struct_ops")								\
void BPF_PROG(PFX##set_state, struct sock *sk, u8 new_state)			\
{										\
	bbr3_do_set_state(sk, new_state);					\
}										\
										\
SEC("struct_ops")								\
void BPF_PROG(PFX##cwnd_event, struct sock *sk, enum tcp_ca_event event)	\
{										\
	bbr_cwnd_event(sk, event);						\
}										\
										\
SEC("struct_ops")								\
u32 BPF_PROG(PFX##min_tso, struct sock *sk)					\
{										\
	return bbr3_tso_segs(sk);						\
}										\
										\
/* bbr_sndbuf_expand: provision 3 * cwnd since BBR may slow-start even	\
 * during recovery. */								\
SEC("struct_ops")								\
u32 BPF_PROG(PFX##sndbuf, struct sock *sk)					\
{										\
	return 3;								\
}

/* TCP_CONG_NON_RESTRICTED (include/net/tcp.h): unprivileged users may pick
 * it, as google's and Linux's bbr. TCP_CONG_WANTS_CE_EVENTS is google-only. */
#define TCP_CONG_NON_RESTRICTED 0x1

#ifdef BBR3_PLAIN_STRUCT_OPS	/* quick checks with libbpf < 1.2 only */
#define BBR3_OPS_SEC ".struct_ops"
#else
#define BBR3_OPS_SEC ".struct_ops.link"
#endif

#define BBR3_OPS_MAP(VAR, PFX, NAME)						\
SEC(BBR3_OPS_SEC)								\
struct tcp_congestion_ops VAR = {						\
	.flags		= TCP_CONG_NON_RESTRICTED,				\
	.init		= (void *)PFX##init,					\
	.release	= (void *)PFX##release,					\
	.cong_control	= (void *)PFX##main,					\
	.sndbuf_expand	= (void *)PFX##sndbuf,					\
	.undo_cwnd	= (void *)PFX##undo_cwnd,				\
	.cwnd_event	= (void *)PFX##cwnd_event,				\
	.ssthresh	= (void *)PFX##ssthresh,				\
	.min_tso_segs	= (void *)PFX##min_tso,					\
	.set_state	= (void *)PFX##set_state,				\
	BBR3_IN_ACK_EVENT(PFX)							\
	.name		= NAME,							\
};

BBR3_OPS_PROGRAMS(bbr3_, false)
BBR3_OPS_MAP(bbr3, bbr3_, "bbr3")

BBR3_OPS_PROGRAMS(bbr3_v2_, true)
BBR3_OPS_MAP(bbr2, bbr3_v2_, "bbr2")
