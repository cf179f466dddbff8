/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * sockops_kernel.h: the kernel types and constants sockops.bpf.c touches,
 * by hand instead of a multi-megabyte vmlinux.h (as kernel.h does for bbr3).
 *
 * Two kinds of type here:
 *  - struct bpf_sock_ops is UAPI (include/uapi/linux/bpf.h): the verifier
 *    rewrites context accesses by *offset*, so its layout is written out in
 *    full, field for field, up to the last member used.
 *  - kernel-internal structs (tcp_sock, inet_connection_sock, minmax) are
 *    marked preserve_access_index: libbpf relocates every access to the
 *    running kernel's BTF, so only names and types matter. Bitfields are
 *    read with BPF_CORE_READ_BITFIELD, which also handles a field that is a
 *    plain byte on one kernel and a bitfield on another (chrono_type: u8 on
 *    6.18, `:2` before).
 */
#ifndef BKPOL_KERNEL_H
#define BKPOL_KERNEL_H

typedef unsigned char __u8;
typedef unsigned short __u16;
typedef unsigned int __u32;
typedef unsigned long long __u64;
typedef signed char __s8;
typedef short __s16;
typedef int __s32;
typedef long long __s64;
typedef __u16 __be16;
typedef __u32 __be32;
typedef __u32 __wsum;
typedef __u8 u8;
typedef __u16 u16;
typedef __u32 u32;
typedef __u64 u64;
typedef _Bool bool;
#define true 1
#define false 0
#define NULL ((void *)0)

/* include/uapi/linux/bpf.h: map types, flags, sock_ops callbacks and states */
enum bkpol_bpf_map_type {
	BPF_MAP_TYPE_ARRAY = 2,
	BPF_MAP_TYPE_PERCPU_ARRAY = 6,
	BPF_MAP_TYPE_LPM_TRIE = 11,
	BPF_MAP_TYPE_SK_STORAGE = 24,
	BPF_MAP_TYPE_RINGBUF = 27,
};
#define BPF_F_NO_PREALLOC (1U << 0)
#define BPF_SK_STORAGE_GET_F_CREATE (1ULL << 0)

#define BPF_SOCK_OPS_ACTIVE_ESTABLISHED_CB 4
#define BPF_SOCK_OPS_PASSIVE_ESTABLISHED_CB 5
#define BPF_SOCK_OPS_STATE_CB 10
#define BPF_SOCK_OPS_STATE_CB_FLAG (1 << 2)
#define BPF_TCP_CLOSE 7

struct bpf_sock;

/* The context of a sock_ops program, UAPI layout (Linux 4.13+, fields
 * appended since; every field here exists from 5.10 on). */
struct bpf_sock_ops {
	__u32 op;
	union {
		__u32 args[4];
		__u32 reply;
		__u32 replylong[4];
	};
	__u32 family;
	__u32 remote_ip4;	/* network byte order */
	__u32 local_ip4;	/* network byte order */
	__u32 remote_ip6[4];	/* network byte order */
	__u32 local_ip6[4];	/* network byte order */
	__u32 remote_port;	/* network byte order, in the upper half on little-endian */
	__u32 local_port;	/* host byte order */
	__u32 is_fullsock;
	__u32 snd_cwnd;
	__u32 srtt_us;
	__u32 bpf_sock_ops_cb_flags;
	__u32 state;
	__u32 rtt_min;
	__u32 snd_ssthresh;
	__u32 rcv_nxt;
	__u32 snd_nxt;
	__u32 snd_una;
	__u32 mss_cache;
	__u32 ecn_flags;
	__u32 rate_delivered;
	__u32 rate_interval_us;
	__u32 packets_out;
	__u32 retrans_out;
	__u32 total_retrans;
	__u32 segs_in;
	__u32 data_segs_in;
	__u32 segs_out;
	__u32 data_segs_out;
	__u32 lost_out;
	__u32 sacked_out;
	__u32 sk_txhash;
	__u64 bytes_received;
	__u64 bytes_acked;
	union {
		struct bpf_sock *sk;
		__u64 :64;
	};
};

#pragma clang attribute push(__attribute__((preserve_access_index)), apply_to = record)

struct inet_connection_sock {
	__u8 icsk_ca_setsockopt : 1;	/* the algorithm was chosen by setsockopt (or inherited from the listener) */
	__u8 icsk_ca_dst_locked : 1;	/* a route's `congctl lock` chose it; setsockopt returns EPERM */
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
	u32 segs_out;
	u32 lost;
	u32 delivered;
	u32 total_retrans;
	u32 srtt_us;		/* smoothed RTT << 3, µs */
	struct minmax rtt_min;	/* s[0].v = tcp_min_rtt(), µs */
	u64 bytes_acked;
	u64 bytes_received;
	u64 bytes_retrans;
	u8 chrono_type : 2;	/* enum tcp_chrono running now (0 none) */
	u32 chrono_start;	/* jiffies when it started */
	u32 chrono_stat[3];	/* jiffies busy, rwnd-limited, sndbuf-limited */
};

#pragma clang attribute pop

/* include/linux/socket.h, include/uapi/linux/tcp.h */
#define AF_INET 2
#define AF_INET6 10
#define SOL_TCP 6
#define TCP_CONGESTION 13
/* include/net/tcp.h */
#define TCP_CA_NAME_MAX 16

#define USEC_PER_SEC 1000000u

#endif /* BKPOL_KERNEL_H */
