//! What the host's TCP is doing now: a socket census through sock_diag netlink
//! (`inet_diag` with `INET_DIAG_INFO`, `INET_DIAG_CONG`, `INET_DIAG_BBRINFO`),
//! tolerant `tcp_info` / `tcp_bbr_info` parsing, and the nstat counters of
//! `/proc/net/snmp` and `/proc/net/netstat`.
//!
//! Must never change anything on the host: it only reads.
