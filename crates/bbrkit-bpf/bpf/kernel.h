/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * kernel.h: the few kernel types and constants bbr3.bpf.c touches, written by
 * hand instead of a multi-megabyte vmlinux.h.
 *
 * Every struct is marked preserve_access_index, so clang emits CO-RE
 * relocations and libbpf moves each field access to the field's offset in
 * the *running* kernel's BTF (/sys/kernel/btf/vmlinux). The layouts below are
 * therefore only name lists: member order and padding do not matter, names
 * and types do. Only fields this program reads or writes are listed. The
 * socket structs nest as the kernel's do (tcp_sock > inet_connection_sock >
 * inet_sock > sock), so the casts between them are sound on a host too:
 * bpf/test/ compiles these sources natively to test their logic.
 *
 * Constants that are not in BTF (#defines of include/net/tcp.h,
 * include/uapi/linux/bpf.h) are copied with their source.
 */
#ifndef BBR3_KERNEL_H
#define BBR3_KERNEL_H

typedef unsigned char __u8;
typedef unsigned short __u16;
typedef unsigned int __u32;
typedef unsigned long long __u64;
typedef signed char __s8;
typedef short __s16;
typedef int __s32;
typedef long long __s64;
/* For libbpf's bpf_helper_defs.h, which names them in prototypes. */
typedef __u16 __be16;
typedef __u32 __be32;
typedef __u32 __wsum;
typedef __u8 u8;
typedef __u16 u16;
typedef __u32 u32;
typedef __u64 u64;
typedef __s32 s32;
typedef __s64 s64;
typedef _Bool bool;
#define true 1
#define false 0
#define NULL ((void *)0)

/* include/uapi/linux/bpf.h */
enum bpf_map_type_used {
	BPF_MAP_TYPE_PERCPU_ARRAY = 6,
	BPF_MAP_TYPE_LRU_HASH = 9,
	BPF_MAP_TYPE_SK_STORAGE = 24,
};
#define BPF_ANY 0
#define BPF_F_NO_PREALLOC (1U << 0)
#define BPF_SK_STORAGE_GET_F_CREATE (1ULL << 0)

#pragma clang attribute push(__attribute__((preserve_access_index)), apply_to = record)

struct sock {
	u32 sk_pacing_status;		/* enum sk_pacing; writable from a CA */
	unsigned long sk_pacing_rate;	/* bytes/s; writable from a CA */
	unsigned long sk_max_pacing_rate;
	unsigned int sk_gso_max_size;
	u8 sk_pacing_shift;
};

struct inet_sock {
	struct sock sk;
};

struct tcp_congestion_ops;

struct inet_connection_sock {
	struct inet_sock icsk_inet;
	const struct tcp_congestion_ops *icsk_ca_ops;
	__u8 icsk_ca_state : 5;		/* read with BPF_CORE_READ_BITFIELD */
	u64 icsk_ca_priv[13];		/* 104 bytes on 6.18: struct bbr */
};

struct minmax_sample {
	u32 t;
	u32 v;
};

struct minmax {
	struct minmax_sample s[3];
};

struct tcp_sock {
	struct inet_connection_sock inet_conn;
	u32 snd_cwnd;
	u32 snd_cwnd_clamp;
	u32 snd_ssthresh;
	u32 snd_nxt;
	u32 high_seq;
	u32 prior_cwnd;
	u32 mss_cache;
	u32 srtt_us;
	u32 packets_out;
	u32 sacked_out;
	u32 lost_out;
	u32 retrans_out;
	u32 lost;
	u32 delivered;
	u32 delivered_ce;
	u32 app_limited;
	u32 tlp_high_seq;
	u32 ecn_flags;
	u8 is_cwnd_limited : 1;
	u8 tlp_retrans : 1;
	u64 tcp_mstamp;
	u64 tcp_clock_cache;
	u64 tcp_wstamp_ns;
	u64 delivered_mstamp;
	struct minmax rtt_min;
};

struct rate_sample {
	u64 prior_mstamp;
	u32 prior_delivered;
	u32 prior_delivered_ce;
	s32 delivered;
	s32 delivered_ce;
	long interval_us;
	long rtt_us;
	int losses;
	u32 acked_sacked;
	u32 prior_in_flight;
	u32 last_end_seq;
	bool is_app_limited;
	bool is_retrans;
	bool is_ack_delayed;
};

#pragma clang attribute pop

struct ack_sample;
union tcp_cc_info;

/* The struct_ops value type. libbpf matches members by name against the
 * kernel's struct tcp_congestion_ops; members absent here stay NULL.
 */
enum tcp_ca_event {
	CA_EVENT_TX_START = 0,
	CA_EVENT_CWND_RESTART = 1,
	CA_EVENT_COMPLETE_CWR = 2,
	CA_EVENT_LOSS = 3,
	CA_EVENT_ECN_NO_CE = 4,
	CA_EVENT_ECN_IS_CE = 5,
};

struct tcp_congestion_ops {
	u32 (*ssthresh)(struct sock *sk);
	void (*set_state)(struct sock *sk, u8 new_state);
	void (*cwnd_event)(struct sock *sk, enum tcp_ca_event ev);
	u32 (*min_tso_segs)(struct sock *sk);
#ifdef BBR3_CC2	/* Linux 6.0-6.9 */
	void (*cong_control)(struct sock *sk, const struct rate_sample *rs);
	void (*in_ack_event)(struct sock *sk, u32 flags);
#else		/* Linux >= 6.10 */
	void (*cong_control)(struct sock *sk, u32 ack, int flag,
			     const struct rate_sample *rs);
#endif
	u32 (*undo_cwnd)(struct sock *sk);
	u32 (*sndbuf_expand)(struct sock *sk);
	char name[16];
	u32 flags;
	void (*init)(struct sock *sk);
	void (*release)(struct sock *sk);
};

/* include/net/inet_connection_sock.h, enum tcp_ca_state */
#define TCP_CA_Open 0
#define TCP_CA_Disorder 1
#define TCP_CA_CWR 2
#define TCP_CA_Recovery 3
#define TCP_CA_Loss 4

/* include/net/sock.h, enum sk_pacing */
#define SK_PACING_NONE 0
#define SK_PACING_NEEDED 1

/* include/net/tcp.h */
#define TCP_INFINITE_SSTHRESH 0x7fffffff
#define TCP_ECN_OK 1		/* ecn_flags: ECN negotiated (RFC 3168 mode) */
#define GSO_LEGACY_MAX_SIZE 65536u
/* MAX_TCP_HEADER = L1_CACHE_ALIGN(128 + MAX_HEADER) on x86-64 distribution
 * kernels (MAX_HEADER = 128 + 48): 320, as bbrkit-cc's params.rs. */
#define MAX_TCP_HEADER 320u
/* net/ipv4/tcp_input.c (internal, not ABI): the ACK carried ECE. Stable
 * since 2.6 (0x40); checked against 6.18. */
#define FLAG_ECE 0x40
/* include/net/tcp.h, enum tcp_ca_ack_event_flags: in_ack_event's flag for
 * an ACK with ECE (set in tcp_ack() beside FLAG_ECE). */
#define CA_ACK_ECE (1 << 2)
/* net.ipv4.tcp_min_tso_segs default (not readable from BPF: sock_net). */
#define TCP_MIN_TSO_SEGS 2u

#define USEC_PER_SEC 1000000u
#define USEC_PER_MSEC 1000u
#define NSEC_PER_USEC 1000u

#endif /* BBR3_KERNEL_H */
