//! `TCP_INFO` and `TCP_CONGESTION` of one socket.
//!
//! Owns turning the kernel's per-socket counters (read and decoded by
//! `bbrkit_diag::sockopt`) into [`TcpSample`], with the
//! units iperf3 uses where its names overlap (`snd_cwnd` in bytes, `rtt`,
//! `min_rtt` in µs) plus SI-named rates. Must never change a socket except
//! through [`set_congestion`].

use std::io;
use std::os::fd::AsFd;

use serde::Serialize;

/// One reading of a sending socket's `TCP_INFO`.
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq)]
pub struct TcpSample {
    /// Seconds since the start of the test.
    pub t_s: f64,
    /// `tcpi_bytes_acked`.
    pub bytes_acked: u64,
    /// `tcpi_bytes_sent` (including retransmissions).
    pub bytes_sent: u64,
    /// `tcpi_total_retrans`: segments retransmitted so far.
    pub retransmits: u64,
    /// Congestion window in bytes (`tcpi_snd_cwnd * tcpi_snd_mss`), as iperf3.
    pub snd_cwnd: u64,
    /// Smoothed RTT in microseconds (`tcpi_rtt`), as iperf3.
    pub rtt: u32,
    /// RTT variance in microseconds.
    pub rttvar: u32,
    /// Minimum RTT in microseconds (`tcpi_min_rtt`).
    pub min_rtt: u32,
    /// `tcpi_pacing_rate` in bits per second.
    pub pacing_rate_bits_per_second: u64,
    /// `tcpi_delivery_rate` in bits per second.
    pub delivery_rate_bits_per_second: u64,
}

/// Reads `TCP_INFO` of `sock` (decoded by `bbrkit_diag`, the one
/// `tcp_info` decoder), stamping it with `t_s`. A field an older kernel does
/// not report reads 0.
pub fn sample(sock: &impl AsFd, t_s: f64) -> io::Result<TcpSample> {
    let info = bbrkit_diag::sockopt::tcp_info(sock.as_fd())?;
    let u32_ = |v: Option<u32>| v.unwrap_or(0);
    let u64_ = |v: Option<u64>| v.unwrap_or(0);
    Ok(TcpSample {
        t_s,
        bytes_acked: u64_(info.bytes_acked),
        bytes_sent: u64_(info.bytes_sent),
        retransmits: u64::from(u32_(info.total_retrans)),
        snd_cwnd: u64::from(u32_(info.snd_cwnd)) * u64::from(u32_(info.snd_mss)),
        rtt: u32_(info.rtt_us),
        rttvar: u32_(info.rttvar_us),
        min_rtt: u32_(info.min_rtt_us),
        pacing_rate_bits_per_second: u64_(info.pacing_rate).saturating_mul(8),
        delivery_rate_bits_per_second: u64_(info.delivery_rate).saturating_mul(8),
    })
}

/// Sets `TCP_CONGESTION` of `sock` to `name`.
pub fn set_congestion(sock: &impl AsFd, name: &str) -> io::Result<()> {
    socket2::SockRef::from(sock).set_tcp_congestion(name.as_bytes())
}

/// Reads `TCP_CONGESTION` of `sock`.
pub fn congestion(sock: &impl AsFd) -> io::Result<String> {
    let name = socket2::SockRef::from(sock).tcp_congestion()?;
    let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
    Ok(String::from_utf8_lossy(&name[..end]).into_owned())
}

pub use crate::clock::thread_cpu_s;

/// Congestion-control algorithms the kernel offers.
pub fn available_algorithms() -> io::Result<Vec<String>> {
    bbrkit_diag::algorithms::available().map_err(|e| match e {
        bbrkit_diag::DiagError::Read { source, .. } => source,
        e => io::Error::other(e.to_string()),
    })
}
