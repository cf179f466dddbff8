/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * sockops.h: the interface between sockops.bpf.c and its loader: map keys
 * and values, the ring-buffer record, flags and counter indices. The Rust
 * mirror is crates/bbrkit-bpf/src/sockops/layout.rs (#[repr(C)], byte for
 * byte; a test checks every offset against this object's BTF). Limits are
 * bbrkit-policy's (rule.rs): 64 rules, 4 arms, 15-byte names.
 */
#ifndef BKPOL_SOCKOPS_H
#define BKPOL_SOCKOPS_H

#define BKPOL_MAX_RULES 64	/* a rule set is one u64 */
#define BKPOL_MAX_ARMS 4	/* weights are 4 x u16 in one u64 */
#define BKPOL_CC_LEN 16		/* TCP_CA_NAME_MAX */
#define BKPOL_ADDR_TRIE 262144	/* entries per address family (ADDR_TRIE_CAPACITY) */
#define BKPOL_PORT_TRIE 131072	/* entries per port trie (PORT_TRIE_CAPACITY) */
#define BKPOL_RING_BYTES (256 * 1024)	/* default ring: ~1800 records; the loader may resize */

/* Longest-prefix-match keys: the prefix length in bits, then the key in
 * network byte order. */
struct bkpol_v4_key {
	__u32 prefixlen;
	__u8 addr[4];
};

struct bkpol_v6_key {
	__u32 prefixlen;
	__u8 addr[16];
};

struct bkpol_port_key {
	__u32 prefixlen;
	__u8 port[2];
} __attribute__((packed));

/* bkpol_unit: what a split's draw is keyed by (bbrkit-policy Unit) */
#define BKPOL_UNIT_CONNECTION 0
#define BKPOL_UNIT_CLIENT 1
#define BKPOL_UNIT_PREFIX 2

/* bkpol_rule.flags */
#define BKPOL_RULE_RECORD 1	/* record matching connections at close */

/* One row of bkpol_rules. `weights` is one word (arm i in bits 16i..16i+15)
 * so a run-time rewrite by user space is seen whole or not at all. */
struct bkpol_rule {
	__u64 weights;
	char cc[BKPOL_MAX_ARMS][BKPOL_CC_LEN];
	__u8 narms;
	__u8 unit;
	__u8 flags;
	__u8 pad[5];
};

/* bkpol_cfg[0] */
struct bkpol_cfg {
	__u64 salt;	/* the draw's salt */
	__u32 nrules;	/* rows of bkpol_rules in use */
	__u32 pad;
};

/* bkpol_conn.flags and bkpol_record.flags */
#define BKPOL_F_ASSIGNED 1	/* the program set the arm's algorithm */
#define BKPOL_F_PASSIVE 2	/* accepted (PASSIVE_ESTABLISHED_CB) */
#define BKPOL_F_APP 4		/* the application (or its listener) had chosen: kept */
#define BKPOL_F_ROUTE 8		/* a route's `congctl lock` had chosen: kept */
#define BKPOL_F_FAILED 16	/* bpf_setsockopt refused the name (e.g. not registered) */
#define BKPOL_F_RECORD 32	/* a record is due at close */
#define BKPOL_F_NO_ARM 64	/* every weight of the rule was 0: nothing set */

/* Per recorded connection (sk_storage bkpol_conn): dies with the socket. */
struct bkpol_conn {
	__u64 start_ns;	/* bpf_ktime_get_ns() at established */
	__u16 rule;
	__u8 arm;
	__u8 flags;
	__u32 pad;
};

/* bkpol_hits[rule * BKPOL_MAX_ARMS + arm], per CPU */
struct bkpol_hits {
	__u64 matched;		/* connections that matched the rule and drew the arm */
	__u64 assigned;		/* ... whose algorithm the program set */
	__u64 kept_app;		/* ... kept the application's (or listener's) choice */
	__u64 kept_route;	/* ... kept a locked route's choice */
	__u64 failed;		/* ... where bpf_setsockopt failed */
};

/* bkpol_stats[i], per CPU */
#define BKPOL_S_ESTABLISHED 0	/* connections seen established */
#define BKPOL_S_UNMATCHED 1	/* no rule matched: host default */
#define BKPOL_S_NO_ARM 2	/* the rule's weights were all 0 */
#define BKPOL_S_NO_STORAGE 3	/* sk_storage could not be created */
#define BKPOL_S_RECORDS 4	/* records written to the ring */
#define BKPOL_S_RING_FULL 5	/* records lost: the ring was full */
#define BKPOL_S_NO_TCP_SOCK 6	/* bpf_skc_to_tcp_sock gave nothing */
#define BKPOL_S_LAST_FAILED 7	/* not a count: bpf_ktime_get_ns() (CLOCK_MONOTONIC)
				 * of this CPU's latest failed setsockopt, 0 never;
				 * the maximum over CPUs is the latest (verify's window) */
#define BKPOL_S_COUNT 8

/* One closed connection, written to bkpol_ring at TCP_CLOSE. */
struct bkpol_record {
	__u64 cookie;
	__u64 start_ns;
	__u64 end_ns;
	__u64 bytes_acked;
	__u64 bytes_received;
	__u64 bytes_retrans;
	__u64 busy_us;
	__u64 rwnd_limited_us;
	__u64 sndbuf_limited_us;
	__u32 segs_out;
	__u32 total_retrans;
	__u32 lost;
	__u32 delivered;
	__u32 min_rtt_us;
	__u32 srtt_us;
	__u32 remote[4];	/* network byte order; IPv4 (mapped peers too) in remote[0] */
	__u16 family;		/* AF_INET or AF_INET6 */
	__u16 local_port;
	__u16 remote_port;
	__u16 rule;
	__u8 arm;
	__u8 flags;		/* BKPOL_F_* */
	__u8 pad[6];
	char cc[BKPOL_CC_LEN];	/* TCP_CONGESTION at close */
};

#endif /* BKPOL_SOCKOPS_H */
