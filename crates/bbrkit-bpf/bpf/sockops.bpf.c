// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * sockops.bpf.c: bbrkit's per-connection policy as a cgroup sock_ops
 * program. It chooses each new TCP connection's congestion control by the
 * first rule matching its remote address and ports (bbrkit-policy compiles
 * the rules into the maps below), and for rules marked for recording
 * (a live trial) writes one record per connection to a ring buffer when the
 * connection closes.
 *
 * Per callback
 *
 *   ACTIVE_ESTABLISHED_CB, PASSIVE_ESTABLISHED_CB   (once per connection)
 *     remote address --LPM bkpol_v4 / bkpol_v6--> rule set --+
 *     local port     --LPM bkpol_lport-----------> rule set --+-- AND --> lowest = rule
 *     remote port    --LPM bkpol_rport-----------> rule set --+     (none: host default, count)
 *     rule --bkpol_rules--> arm = draw(unit: cookie | address | /24,/48; salt; weights)
 *     application chose (icsk_ca_setsockopt)? keep, count
 *     route locked (icsk_ca_dst_locked)?      keep, count
 *     else bpf_setsockopt(SOL_TCP, TCP_CONGESTION, arm's name), count assigned | failed
 *     (failed also stamps the time: bkpol_stats[BKPOL_S_LAST_FAILED])
 *     rule recorded? bkpol_conn (sk_storage) = { start, rule, arm, flags },
 *                    and ask for STATE_CB on this socket
 *
 *   STATE_CB, new state TCP_CLOSE   (only sockets that asked)
 *     bkpol_conn has RECORD? read struct tcp_sock (bpf_skc_to_tcp_sock),
 *     reserve a record in bkpol_ring (full: count, drop), fill, submit
 *
 * Every other callback returns at once. No map grows with the number of
 * connections: per-connection state (recorded rules only) is sk_storage,
 * freed with the socket, and records stream through a fixed ring.
 *
 * IPv4-mapped IPv6 peers (dual-stack sockets) are looked up, drawn and
 * recorded as IPv4. The draw is bbrkit-policy's draw.rs, bit for bit.
 */
#include "sockops_kernel.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>
#include "sockops.h"

char _license[] SEC("license") = "Dual BSD/GPL";

/* CONFIG_HZ of the running kernel (libbpf reads /proc/config.gz or
 * /boot/config-*): the chronographs count jiffies. 0 when unknown: the
 * record then has no busy time. */
extern unsigned int CONFIG_HZ __kconfig __weak;

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, BKPOL_ADDR_TRIE);
	__type(key, struct bkpol_v4_key);
	__type(value, __u64);
} bkpol_v4 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, BKPOL_ADDR_TRIE);
	__type(key, struct bkpol_v6_key);
	__type(value, __u64);
} bkpol_v6 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, BKPOL_PORT_TRIE);
	__type(key, struct bkpol_port_key);
	__type(value, __u64);
} bkpol_lport SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, BKPOL_PORT_TRIE);
	__type(key, struct bkpol_port_key);
	__type(value, __u64);
} bkpol_rport SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, BKPOL_MAX_RULES);
	__type(key, __u32);
	__type(value, struct bkpol_rule);
} bkpol_rules SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct bkpol_cfg);
} bkpol_cfg SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct bkpol_conn);
} bkpol_conn SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, BKPOL_MAX_RULES * BKPOL_MAX_ARMS);
	__type(key, __u32);
	__type(value, struct bkpol_hits);
} bkpol_hits SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, BKPOL_S_COUNT);
	__type(key, __u32);
	__type(value, __u64);
} bkpol_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, BKPOL_RING_BYTES);
} bkpol_ring SEC(".maps");

static __always_inline void count(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&bkpol_stats, &idx);

	if (v)
		*v += 1;
}

/* Stamps bkpol_stats[idx] with the monotonic clock (a time, not a count). */
static __always_inline void stamp(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&bkpol_stats, &idx);

	if (v)
		*v = bpf_ktime_get_ns();
}

/* murmur3's fmix64 and the two-word mix: draw.rs `fmix64`, `mix`. */
static __always_inline __u64 fmix64(__u64 x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	return x ^ (x >> 33);
}

static __always_inline __u64 mix(__u64 salt, __u64 a, __u64 b)
{
	return fmix64(fmix64(salt ^ a) ^ b);
}

/* draw.rs `pick_arm`: x = ((h >> 32) * total) >> 32, the first arm whose
 * cumulative weight exceeds x. Returns BKPOL_MAX_ARMS when all are 0. */
static __always_inline __u32 pick_arm(__u64 weights, __u32 narms, __u64 h)
{
	__u64 total = 0, cum = 0, x;
	__u32 i;

	for (i = 0; i < BKPOL_MAX_ARMS; i++)
		if (i < narms)
			total += (weights >> (16 * i)) & 0xffff;
	if (!total)
		return BKPOL_MAX_ARMS;
	x = ((h >> 32) * total) >> 32;
	for (i = 0; i < BKPOL_MAX_ARMS; i++) {
		if (i >= narms)
			break;
		cum += (weights >> (16 * i)) & 0xffff;
		if (x < cum)
			return i;
	}
	return BKPOL_MAX_ARMS;
}

/* The peer as the policy sees it: IPv4 (mapped peers too) or IPv6, as
 * big-endian words (draw.rs `key`: IPv4 in a, IPv6 in a:b). */
struct peer {
	bool v4;
	__u32 ip4;		/* network order */
	__u32 ip6[4];		/* network order */
};

static __always_inline void read_peer(struct bpf_sock_ops *ctx, struct peer *p)
{
	__u32 w0 = ctx->remote_ip6[0], w1 = ctx->remote_ip6[1];
	__u32 w2 = ctx->remote_ip6[2], w3 = ctx->remote_ip6[3];

	if (ctx->family == AF_INET) {
		p->v4 = true;
		p->ip4 = ctx->remote_ip4;
	} else if (!w0 && !w1 && w2 == bpf_htonl(0xffff)) {
		p->v4 = true;
		p->ip4 = w3;
	} else {
		p->v4 = false;
		p->ip6[0] = w0;
		p->ip6[1] = w1;
		p->ip6[2] = w2;
		p->ip6[3] = w3;
	}
}

static __always_inline __u64 remote_rules(const struct peer *p)
{
	__u64 *set;

	if (p->v4) {
		struct bkpol_v4_key k = { .prefixlen = 32 };

		__builtin_memcpy(k.addr, &p->ip4, 4);
		set = bpf_map_lookup_elem(&bkpol_v4, &k);
	} else {
		struct bkpol_v6_key k = { .prefixlen = 128 };

		__builtin_memcpy(k.addr, p->ip6, 16);
		set = bpf_map_lookup_elem(&bkpol_v6, &k);
	}
	return set ? *set : 0;
}

static __always_inline __u64 port_rules(void *trie, __u16 port)
{
	struct bkpol_port_key k = { .prefixlen = 16 };
	__u16 be = bpf_htons(port);
	__u64 *set;

	__builtin_memcpy(k.port, &be, 2);
	set = bpf_map_lookup_elem(trie, &k);
	return set ? *set : 0;
}

/* The draw's two key words for `unit` (draw.rs `key`). */
static __always_inline __u64 draw_hash(struct bpf_sock_ops *ctx, __u8 unit,
				       const struct peer *p, __u64 salt)
{
	__u64 a = 0, b = 0;

	if (unit == BKPOL_UNIT_CONNECTION) {
		a = bpf_get_socket_cookie(ctx);
	} else if (p->v4) {
		a = bpf_ntohl(p->ip4);
		if (unit == BKPOL_UNIT_PREFIX)
			a &= 0xffffff00;	/* /24: draw.rs PREFIX_V4 */
	} else {
		a = ((__u64)bpf_ntohl(p->ip6[0]) << 32) | bpf_ntohl(p->ip6[1]);
		b = ((__u64)bpf_ntohl(p->ip6[2]) << 32) | bpf_ntohl(p->ip6[3]);
		if (unit == BKPOL_UNIT_PREFIX) {
			a &= 0xffffffffffff0000ULL;	/* /48: draw.rs PREFIX_V6 */
			b = 0;
		}
	}
	return mix(salt, a, b);
}

static __always_inline void hit(__u32 rule, __u32 arm, __u8 flags)
{
	__u32 idx = rule * BKPOL_MAX_ARMS + arm;
	struct bkpol_hits *h = bpf_map_lookup_elem(&bkpol_hits, &idx);

	if (!h)
		return;
	h->matched += 1;
	if (flags & BKPOL_F_ASSIGNED)
		h->assigned += 1;
	else if (flags & BKPOL_F_APP)
		h->kept_app += 1;
	else if (flags & BKPOL_F_ROUTE)
		h->kept_route += 1;
	else if (flags & BKPOL_F_FAILED) {
		h->failed += 1;
		stamp(BKPOL_S_LAST_FAILED);
	}
}

/* Sets the arm's algorithm unless the application or a locked route chose
 * one; returns the BKPOL_F_* outcome. */
static __always_inline __u8 apply(struct bpf_sock_ops *ctx, struct bpf_sock *sk,
				  const struct bkpol_rule *r, __u32 arm)
{
	struct tcp_sock *tp = bpf_skc_to_tcp_sock(sk);
	char name[BKPOL_CC_LEN];
	__u32 i;

	if (!tp)
		return BKPOL_F_FAILED;
	if (BPF_CORE_READ_BITFIELD(&tp->inet_conn, icsk_ca_setsockopt))
		return BKPOL_F_APP;
	if (BPF_CORE_READ_BITFIELD(&tp->inet_conn, icsk_ca_dst_locked))
		return BKPOL_F_ROUTE;
	arm &= BKPOL_MAX_ARMS - 1;
	for (i = 0; i < BKPOL_CC_LEN; i++)
		name[i] = r->cc[arm][i];
	name[BKPOL_CC_LEN - 1] = 0;
	if (bpf_setsockopt(ctx, SOL_TCP, TCP_CONGESTION, name, sizeof(name)))
		return BKPOL_F_FAILED;
	return BKPOL_F_ASSIGNED;
}

/* Index of the lowest set bit of a non-zero set, by halving: shift out
 * the low 32, 16, ..., 1 bits while they are all clear. Written out, not
 * as a loop: unrolled or not, a loop here costs the verifier 100 000
 * instructions instead of 1 700; and clang lowers __builtin_ctzll to a
 * table in .rodata, which would be one more map. */
static __always_inline __u32 lowest_bit(__u64 set)
{
	__u32 n = 0;

	if (!(set & 0xffffffffULL)) {
		n += 32;
		set >>= 32;
	}
	if (!(set & 0xffff)) {
		n += 16;
		set >>= 16;
	}
	if (!(set & 0xff)) {
		n += 8;
		set >>= 8;
	}
	if (!(set & 0xf)) {
		n += 4;
		set >>= 4;
	}
	if (!(set & 0x3)) {
		n += 2;
		set >>= 2;
	}
	if (!(set & 0x1))
		n += 1;
	return n;
}

static __always_inline void on_established(struct bpf_sock_ops *ctx)
{
	struct bpf_sock *sk = ctx->sk;
	struct bkpol_rule *r;
	struct bkpol_cfg *cfg;
	struct bkpol_conn *c;
	struct peer p = {};
	__u32 zero = 0, rule, arm;
	__u64 set, weights;
	__u8 flags = 0;

	if (!sk)
		return;
	count(BKPOL_S_ESTABLISHED);
	read_peer(ctx, &p);
	set = remote_rules(&p);
	if (set)
		set &= port_rules(&bkpol_lport, ctx->local_port);
	if (set)
		set &= port_rules(&bkpol_rport, bpf_ntohl(ctx->remote_port));
	if (!set) {
		count(BKPOL_S_UNMATCHED);
		return;
	}
	rule = lowest_bit(set);
	r = bpf_map_lookup_elem(&bkpol_rules, &rule);
	cfg = bpf_map_lookup_elem(&bkpol_cfg, &zero);
	if (!r || !cfg)
		return;
	weights = *(volatile __u64 *)&r->weights;	/* one load: old or new weights */
	arm = pick_arm(weights, r->narms, draw_hash(ctx, r->unit, &p, cfg->salt));
	if (arm >= BKPOL_MAX_ARMS) {
		count(BKPOL_S_NO_ARM);
		flags = BKPOL_F_NO_ARM;
		arm = 0;
	} else {
		flags = apply(ctx, sk, r, arm);
		hit(rule, arm, flags);
	}
	/* Only a recorded connection needs state until it closes: creating
	 * sk_storage is most of this program's cost (about 1.5 µs a socket),
	 * and the rule and arm of any other connection are a pure function of
	 * its addresses, ports and cookie (bbrkit-policy Compiled::decide). */
	if (!(r->flags & BKPOL_RULE_RECORD))
		return;
	if (ctx->op == BPF_SOCK_OPS_PASSIVE_ESTABLISHED_CB)
		flags |= BKPOL_F_PASSIVE;
	c = bpf_sk_storage_get(&bkpol_conn, sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
	if (!c) {
		count(BKPOL_S_NO_STORAGE);
		return;
	}
	flags |= BKPOL_F_RECORD;
	bpf_sock_ops_cb_flags_set(ctx, ctx->bpf_sock_ops_cb_flags | BPF_SOCK_OPS_STATE_CB_FLAG);
	c->start_ns = bpf_ktime_get_ns();
	c->rule = rule;
	c->arm = arm;
	c->flags = flags;
}

/* tcp_get_info_chrono_stats(): each chronograph's jiffies, plus the
 * running one's time so far, in µs. */
static __always_inline void chrono_us(struct tcp_sock *tp, struct bkpol_record *rec)
{
	__u32 type = BPF_CORE_READ_BITFIELD(tp, chrono_type);
	__u32 now = (__u32)bpf_jiffies64();
	__u64 st[3], us_per_jiffy;
	__u32 i;

	if (!CONFIG_HZ)
		return;
	us_per_jiffy = USEC_PER_SEC / CONFIG_HZ;
	for (i = 0; i < 3; i++) {
		st[i] = tp->chrono_stat[i];
		if (type == i + 1)
			st[i] += now - tp->chrono_start;
		st[i] *= us_per_jiffy;
	}
	rec->busy_us = st[0] + st[1] + st[2];
	rec->rwnd_limited_us = st[1];
	rec->sndbuf_limited_us = st[2];
}

/* Fills a record from the socket. Not inlined, so struct bkpol_record is
 * in the object's BTF (a parameter type), where the loader's test checks
 * its Rust mirror field by field. */
static __noinline void fill_record(struct bkpol_record *rec, struct bpf_sock_ops *ctx,
				   struct tcp_sock *tp, const struct bkpol_conn *c)
{
	struct peer p = {};

	if (!rec || !ctx || !tp || !c)
		return;
	__builtin_memset(rec, 0, sizeof(*rec));
	rec->cookie = bpf_get_socket_cookie(ctx);
	rec->start_ns = c->start_ns;
	rec->end_ns = bpf_ktime_get_ns();
	rec->bytes_acked = tp->bytes_acked;
	rec->bytes_received = tp->bytes_received;
	rec->bytes_retrans = tp->bytes_retrans;
	rec->segs_out = tp->segs_out;
	rec->total_retrans = tp->total_retrans;
	rec->lost = tp->lost;
	rec->delivered = tp->delivered;
	rec->min_rtt_us = tp->rtt_min.s[0].v;
	rec->srtt_us = tp->srtt_us >> 3;
	chrono_us(tp, rec);
	read_peer(ctx, &p);
	rec->family = p.v4 ? AF_INET : AF_INET6;
	if (p.v4) {
		rec->remote[0] = p.ip4;
	} else {
		rec->remote[0] = p.ip6[0];
		rec->remote[1] = p.ip6[1];
		rec->remote[2] = p.ip6[2];
		rec->remote[3] = p.ip6[3];
	}
	rec->local_port = ctx->local_port;
	rec->remote_port = bpf_ntohl(ctx->remote_port);
	rec->rule = c->rule;
	rec->arm = c->arm;
	rec->flags = c->flags;
	bpf_getsockopt(ctx, SOL_TCP, TCP_CONGESTION, rec->cc, sizeof(rec->cc));
}

static __always_inline void on_close(struct bpf_sock_ops *ctx)
{
	struct bpf_sock *sk = ctx->sk;
	struct bkpol_record *rec;
	struct tcp_sock *tp;
	struct bkpol_conn *c;

	if (!sk)
		return;
	c = bpf_sk_storage_get(&bkpol_conn, sk, 0, 0);
	if (!c || !(c->flags & BKPOL_F_RECORD))
		return;
	c->flags &= ~BKPOL_F_RECORD;	/* one record per connection */
	tp = bpf_skc_to_tcp_sock(sk);
	if (!tp) {
		count(BKPOL_S_NO_TCP_SOCK);
		return;
	}
	rec = bpf_ringbuf_reserve(&bkpol_ring, sizeof(*rec), 0);
	if (!rec) {
		count(BKPOL_S_RING_FULL);
		return;
	}
	fill_record(rec, ctx, tp, c);
	bpf_ringbuf_submit(rec, 0);
	count(BKPOL_S_RECORDS);
}

SEC("sockops")
int bkpol_sockops(struct bpf_sock_ops *ctx)
{
	switch (ctx->op) {
	case BPF_SOCK_OPS_ACTIVE_ESTABLISHED_CB:
	case BPF_SOCK_OPS_PASSIVE_ESTABLISHED_CB:
		on_established(ctx);
		break;
	case BPF_SOCK_OPS_STATE_CB:
		if (ctx->args[1] == BPF_TCP_CLOSE)
			on_close(ctx);
		break;
	}
	return 1;
}
