/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * telemetry.h: key and value of the map `bbr3_telemetry` (BPF_MAP_TYPE_LRU_HASH,
 * max_entries 65536) through which bbr3/bbr2 export each socket's model state,
 * since a BPF congestion control may not implement get_info (ss -i shows no
 * BBR fields for it).
 *
 * This file is an interface: the Rust loader (crates/bbrkit-bpf) mirrors both
 * structs byte for byte. Fixed-width types, explicit padding, no implicit
 * holes (checked by the _Static_asserts below). Written by the BPF program on
 * every ACK (cong_control) and deleted in release; an entry whose socket died
 * without release (not expected) ages out of the LRU.
 */
#ifndef BBR3_TELEMETRY_H
#define BBR3_TELEMETRY_H

struct bbr3_sock_key {
	__u32 netns_ino;	/* inode of the socket's network namespace (sk->__sk_common.skc_net.net->ns.inum) */
	__u16 family;		/* AF_INET (2) or AF_INET6 (10) */
	__u16 sport;		/* local port, host byte order */
	__u16 dport;		/* remote port, host byte order */
	__u16 pad;		/* zero */
	__u32 saddr[4];		/* local address, network byte order; IPv4 in saddr[0], rest zero */
	__u32 daddr[4];		/* remote address, likewise */
};

struct bbr3_sock_state {
	__u64 bw_bps;		/* bw used now, min(max_bw, bw_lo), in bits per second */
	__u64 max_bw_bps;	/* max_bw in bits per second */
	__u64 bw_lo_bps;	/* bw_lo in bits per second; ~0ULL when unset */
	__u32 min_rtt_us;	/* ~0U before the first sample */
	__u32 inflight_hi;	/* packets; ~0U when unset */
	__u32 inflight_lo;	/* packets; ~0U when unset */
	__u32 pacing_gain;	/* BBR_UNIT = 256 */
	__u32 cwnd_gain;	/* BBR_UNIT = 256 */
	__u32 cwnd;		/* snd_cwnd, packets */
	__u8 mode;		/* 0 STARTUP, 1 DRAIN, 2 PROBE_BW, 3 PROBE_RTT (the Rust Mode order) */
	__u8 phase;		/* ProbeBW phase: 0 DOWN, 1 CRUISE, 2 REFILL, 3 UP (valid in PROBE_BW) */
	__u8 version;		/* 3 (or 2 for bbr2) */
	__u8 pad8;
	__u32 pad32;
	__u64 updated_ns;	/* bpf_ktime_get_ns() of the last update */
};

_Static_assert(sizeof(struct bbr3_sock_key) == 44, "bbr3_sock_key layout");
_Static_assert(sizeof(struct bbr3_sock_state) == 64, "bbr3_sock_state layout");

#endif /* BBR3_TELEMETRY_H */
