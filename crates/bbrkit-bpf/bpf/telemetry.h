/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * telemetry.h: the public head of each bbr3/bbr2 socket's sk_storage value
 * (map `bbr3_sk_stor`, struct bbr3_sk in bbr3.h): the model state and the
 * per-socket counters bbrkit reads, since a BPF congestion control may not
 * implement get_info (ss -i shows no BBR fields for it).
 *
 * bbrkit reads it with the socket itself, in the same sock_diag dump as
 * tcp_info (INET_DIAG_REQ_SK_BPF_STORAGES; the kernel answers with the
 * map id and the whole value, whose first bytes are these two structs): no
 * second map, no key, no join, nothing to delete.
 *
 * This file is an interface: the Rust loader (crates/bbrkit-bpf,
 * telemetry.rs) mirrors both structs byte for byte. Fixed-width types,
 * explicit padding, no implicit holes (checked by the _Static_asserts
 * below). Values are in the kernel's units (bw in packets/us << 24, gains
 * /256) with the mss to convert them; the model is written at each round
 * start and whenever mode or ProbeBW phase change, never per ACK; counters
 * are bumped where their event happens.
 */
#ifndef BBR3_TELEMETRY_H
#define BBR3_TELEMETRY_H

/* Bumped when the layout below changes; bbrkit refuses other layouts. */
#define BBR3_TELEMETRY_LAYOUT 1

struct bbr3_model {
	__u64 updated_us;	/* tp->tcp_mstamp at the write (CLOCK_MONOTONIC us) */
	__u32 bw;		/* bbr_bw(): bw used now, packets/us << 24 */
	__u32 max_bw;		/* bbr_max_bw(), packets/us << 24 */
	__u32 bw_lo;		/* packets/us << 24; ~0U unset */
	__u32 bw_hi;		/* v2alpha's bw_hi, packets/us << 24; ~0U unset (always for bbr3) */
	__u32 min_rtt_us;	/* ~0U before the first sample */
	__u32 inflight_hi;	/* packets; ~0U unset */
	__u32 inflight_lo;	/* packets; ~0U unset */
	__u32 cwnd;		/* snd_cwnd at the write, packets */
	__u32 mss;		/* mss_cache at the write, bytes (converts bw) */
	__u16 pacing_gain;	/* BBR_UNIT = 256 */
	__u16 cwnd_gain;	/* BBR_UNIT = 256 */
	__u8 layout;		/* BBR3_TELEMETRY_LAYOUT */
	__u8 version;		/* 3 (bbr3) or 2 (bbr2, v2alpha) */
	__u8 mode;		/* enum bbr_mode: 0 STARTUP, 1 DRAIN, 2 PROBE_BW, 3 PROBE_RTT */
	__u8 cycle_idx;		/* enum bbr_pacing_gain_phase: 0 UP, 1 DOWN, 2 CRUISE, 3 REFILL */
	__u8 full_bw_reached;	/* 1 once STARTUP estimated the pipe full */
	__u8 pad[3];
};

/* Per-socket counters (u32, wrapping). Both implementations keep the same
 * set (bbrkit-cc's bbr3::Counters), so a lab run and a simulation compare
 * cell by cell. The first twelve are the ones an ACK may touch: they share
 * a cache line with bbr3_sk's per-ACK fields. */
struct bbr3_counters {
	__u32 acks;		/* cong_control calls */
	__u32 rounds;		/* packet-timed round starts */
	__u32 probe_rounds;	/* round starts spent in PROBE_BW REFILL or UP */
	__u32 tx_exact;		/* send snapshot found exactly (signals.h) */
	__u32 tx_floor;		/* an older snapshot, corrected */
	__u32 tx_miss;		/* none old enough: fallback to prior_in_flight/losses */
	__u32 no_sample;	/* ACKs without a sampled skb */
	__u32 lost_in_ack;	/* packets the ACK being processed marked lost (rs->losses) */
	__u32 lost_between;	/* packets marked lost outside cong_control (RACK timer, old ACKs) */
	__u32 loss_events;	/* loss events noted (bbr_note_loss) */
	__u32 lo_cuts;		/* lower-bound cuts by loss (bw_lo/inflight_lo x 0.7) */
	__u32 refills;		/* PROBE_BW REFILL entries (bandwidth probes begun) */
	__u32 ups;		/* PROBE_BW UP entries */
	__u32 probe_rtts;	/* PROBE_RTT entries */
	__u32 too_high_ack;	/* inflight_too_high handled: an ACK's rate sample (adapt_upper_bounds) */
	__u32 too_high_lost;	/* ... a lost-packet sample (skb_marked_lost) */
	__u32 too_high_tlp;	/* ... a TLP-repaired loss (loss probe recovery) */
	__u32 startup_loss_exits; /* STARTUP ended by loss (queue too high) */
	__u32 lost_rto;		/* packets marked lost by an RTO (seen at set_state(Loss)) */
	__u32 tlp_repairs;	/* TLP-repaired losses (loss.h: bbr3_tlp_repaired) */
	__u64 hi_at_hit_sum;	/* sum of inflight_hi just after each too-high hit */
	__u32 hi_at_hit_last;	/* inflight_hi just after the latest too-high hit */
	__u32 hi_at_hit_min;	/* smallest of them (~0U: none yet) */
	__u32 hi_at_hit_max;	/* largest of them */
	__u32 pad;
};

/* Where they are in the value of bbr3_sk_stor (bbr3.h's struct bbr3_sk
 * starts with 16 bytes of per-ACK bookkeeping): the counters, then the
 * model. */
#define BBR3_COUNTERS_OFFSET 16
#define BBR3_MODEL_OFFSET (BBR3_COUNTERS_OFFSET + 104)

_Static_assert(sizeof(struct bbr3_model) == 56, "bbr3_model layout");
_Static_assert(sizeof(struct bbr3_counters) == 104, "bbr3_counters layout");

#endif /* BBR3_TELEMETRY_H */
