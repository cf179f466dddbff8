//! Fixtures for tests of code that consumes the census: a [`Socket`] as the
//! kernel would report it, without a kernel.
//!
//! Compiled for this crate's own tests and, with the `testing` feature, for
//! other crates' tests (they enable it through a dev-dependency); never part
//! of the default public API.

use std::net::SocketAddr;

use crate::{BbrInfo, Family, Socket, TcpInfo, TcpState};

/// An established IPv4 socket from `local` to `remote` on `cc`, with cookie
/// and inode 1, uid 0, no timer, empty queues, and no `tcp_info`, BBR info
/// or warnings: set what a test needs with struct update syntax.
pub fn socket(cc: Option<&str>, local: SocketAddr, remote: SocketAddr) -> Socket {
    Socket {
        family: Family::V4,
        state: TcpState::Established,
        local,
        remote,
        interface: 0,
        cookie: 1,
        uid: 0,
        inode: 1,
        timer: 0,
        timer_retrans: 0,
        expires_ms: 0,
        recv_queue: 0,
        send_queue: 0,
        cc: cc.map(str::to_string),
        tcp_info: None,
        bbr: None,
        bpf_storages: Vec::new(),
        cgroup_id: None,
        warnings: Vec::new(),
    }
}

/// A BBR socket (10.0.0.1:443 → 10.0.0.2:50000) whose kernel sent a
/// `tcp_info` of `info_len` bytes — smoothed RTT 2 ms, cwnd 42, delivery
/// rate 1 MB/s, 4000 bytes sent of which 1000 retransmitted — and `bbr` as
/// its `tcp_bbr_info`.
pub fn bbr_socket(info_len: usize, bbr: &[u8]) -> Socket {
    let mut t = vec![0u8; info_len];
    let mut put = |off: usize, v: &[u8]| {
        if off + v.len() <= t.len() {
            t[off..off + v.len()].copy_from_slice(v);
        }
    };
    put(68, &2000u32.to_ne_bytes()); // rtt 2 ms
    put(80, &42u32.to_ne_bytes()); // cwnd
    put(160, &1_000_000u64.to_ne_bytes()); // delivery rate, B/s
    put(200, &4000u64.to_ne_bytes()); // bytes_sent
    put(208, &1000u64.to_ne_bytes()); // bytes_retrans
    Socket {
        tcp_info: Some(TcpInfo::parse(&t)),
        bbr: Some(BbrInfo::parse(bbr).expect("20 bytes or more")),
        ..socket(
            Some("bbr"),
            "10.0.0.1:443".parse().expect("address"),
            "10.0.0.2:50000".parse().expect("address"),
        )
    }
}

/// A 52-byte v3 `tcp_bbr_info`: bw 125 000 B/s, min RTT 1.5 ms, gains 1.25
/// and 2, bw_hi 250 000 B/s, bw_lo 100 000 B/s, PROBE_BW /
/// BBR_PHASE_PROBE_BW_DOWN, inflight_lo 7, inflight_hi 9, extra_acked 2.
/// Its first 20 bytes are a v1 `tcp_bbr_info`.
pub fn bbr_v3_bytes() -> Vec<u8> {
    let mut b = Vec::new();
    for v in [125_000u32, 0, 1500, 320, 512, 250_000, 0, 100_000, 0] {
        b.extend_from_slice(&v.to_ne_bytes());
    }
    b.extend_from_slice(&[2, 5, 0, 3]); // PROBE_BW, BBR_PHASE_PROBE_BW_DOWN, unused, version 3
    for v in [7u32, 9, 2] {
        b.extend_from_slice(&v.to_ne_bytes());
    }
    b
}
