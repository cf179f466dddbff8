//! Records for tests (this crate's, and with the `testing` feature other
//! crates' and its integration tests and benches): a closed connection of a
//! given arm, remote, size and goodput, with the kernel counters consistent
//! with them. Never part of the default API.

use bbrkit_policy::{ConnRecord, Direction};

/// A closed connection of `arm` (0: A cubic, 1: B bbr) from `remote` that
/// acked `bytes` at `goodput` bits per second over its busy time (20 ms of
/// handshake and idle besides), 1448-byte segments, no retransmits, 30 ms
/// minimum RTT and 36 ms smoothed.
pub fn conn(cookie: u64, arm: u8, remote: &str, bytes: u64, goodput: f64) -> ConnRecord {
    let busy_us = ((bytes as f64 * 8e6 / goodput).round() as u64).max(1);
    let segs = (bytes / 1448).max(1) as u32;
    ConnRecord {
        cookie,
        rule: Some(0),
        arm,
        cc: if arm == 0 { "cubic" } else { "bbr" }.into(),
        assigned: true,
        direction: Direction::Passive,
        remote: remote.parse().expect("an IP address"),
        local_port: 443,
        remote_port: 40_000 + (cookie % 20_000) as u16,
        start_ns: 1_000_000_000,
        end_ns: 1_000_000_000 + busy_us * 1_000 + 20_000_000,
        bytes_acked: bytes,
        bytes_received: 300,
        bytes_retrans: 0,
        segs_out: segs,
        total_retrans: 0,
        lost: 0,
        delivered: segs,
        min_rtt_us: 30_000,
        srtt_us: 36_000,
        busy_us,
        rwnd_limited_us: 0,
        sndbuf_limited_us: 0,
        open: false,
    }
}
