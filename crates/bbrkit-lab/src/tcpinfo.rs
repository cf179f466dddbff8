//! `TCP_INFO` and `TCP_CONGESTION` of one socket.
//!
//! Owns reading the kernel's per-socket counters into [`TcpSample`], with the
//! units iperf3 uses where its names overlap (`snd_cwnd` in bytes, `rtt`,
//! `min_rtt` in µs) plus SI-named rates. Must never change a socket except
//! through [`set_congestion`].

use std::io;
use std::mem::{size_of, zeroed};
use std::os::fd::{AsFd, AsRawFd};

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

/// Reads `TCP_INFO` of `sock`, stamping it with `t_s`.
pub fn sample(sock: &impl AsRawFd, t_s: f64) -> io::Result<TcpSample> {
    // SAFETY: zeroed tcp_info is valid; the kernel fills at most `len` bytes.
    let mut info: libc::tcp_info = unsafe { zeroed() };
    let mut len = size_of::<libc::tcp_info>() as libc::socklen_t;
    let rc = unsafe {
        libc::getsockopt(
            sock.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&mut info as *mut libc::tcp_info).cast(),
            &mut len,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(TcpSample {
        t_s,
        bytes_acked: info.tcpi_bytes_acked,
        bytes_sent: info.tcpi_bytes_sent,
        retransmits: info.tcpi_total_retrans as u64,
        snd_cwnd: info.tcpi_snd_cwnd as u64 * info.tcpi_snd_mss as u64,
        rtt: info.tcpi_rtt,
        rttvar: info.tcpi_rttvar,
        min_rtt: info.tcpi_min_rtt,
        pacing_rate_bits_per_second: info.tcpi_pacing_rate.saturating_mul(8),
        delivery_rate_bits_per_second: info.tcpi_delivery_rate.saturating_mul(8),
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

/// CPU time consumed so far by the calling thread, in seconds.
pub fn thread_cpu_s() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid timespec pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 / 1e9
}

/// Congestion-control algorithms the kernel offers.
pub fn available_algorithms() -> io::Result<Vec<String>> {
    bbrkit_diag::algorithms::available().map_err(|e| match e {
        bbrkit_diag::DiagError::Read { source, .. } => source,
        e => io::Error::other(e.to_string()),
    })
}
