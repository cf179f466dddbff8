//! A ping-like probe through the emulator: UDP datagrams from the server
//! (across the impaired direction) echoed back by the client.
//!
//! Owns measuring the path's round-trip time and the fraction of probes lost,
//! to check the emulator's fidelity against its configuration. Must never
//! send outside the lab namespaces.

use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::error::{LabError, Result};
use crate::topology::{CLIENT_ADDR, SERVER_ADDR, Topology};

/// Round-trip statistics of one probe series.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ProbeResult {
    /// Probes sent.
    pub sent: u64,
    /// Probes answered.
    pub received: u64,
    /// Fraction of probes lost (0..1).
    pub loss: f64,
    /// Smallest RTT, ms.
    pub rtt_min_ms: f64,
    /// Median RTT, ms.
    pub rtt_median_ms: f64,
    /// 99th-percentile RTT, ms.
    pub rtt_p99_ms: f64,
    /// Largest RTT, ms.
    pub rtt_max_ms: f64,
}

/// Sends `count` probes, one every `gap`, and waits up to `timeout` for the
/// last answers.
pub fn probe(topo: &Topology, count: u64, gap: Duration, timeout: Duration) -> Result<ProbeResult> {
    let io = |what: &'static str| move |e| LabError::io(what, e);
    let echo = topo
        .client
        .run(|| UdpSocket::bind(SocketAddr::from((CLIENT_ADDR, 0))).map_err(io("bind echo")))?;
    let echo_addr = echo.local_addr().map_err(io("echo address"))?;
    let pinger = topo
        .server
        .run(|| UdpSocket::bind(SocketAddr::from((SERVER_ADDR, 0))).map_err(io("bind probe")))?;
    echo.set_read_timeout(Some(Duration::from_millis(20)))
        .map_err(io("echo timeout"))?;
    pinger
        .set_read_timeout(Some(Duration::from_millis(1)))
        .map_err(io("probe timeout"))?;
    let done = AtomicBool::new(false);
    let origin = Instant::now();
    let mut rtts: Vec<f64> = Vec::new();
    std::thread::scope(|s| -> Result<()> {
        s.spawn(|| {
            let mut buf = [0u8; 64];
            while !done.load(Ordering::Relaxed) {
                if let Ok((n, from)) = echo.recv_from(&mut buf) {
                    let _ = echo.send_to(&buf[..n], from);
                }
            }
        });
        let mut buf = [0u8; 64];
        let mut next = Instant::now();
        let mut sent = 0u64;
        let mut last_send = Instant::now();
        loop {
            let now = Instant::now();
            if sent < count && now >= next {
                let stamp = (now - origin).as_nanos() as u64;
                pinger
                    .send_to(&stamp.to_ne_bytes(), echo_addr)
                    .map_err(io("send probe"))?;
                sent += 1;
                next += gap;
                last_send = now;
            }
            if sent == count && now > last_send + timeout {
                break;
            }
            if let Ok(n) = pinger.recv(&mut buf)
                && n == 8
            {
                let stamp = u64::from_ne_bytes(buf[..8].try_into().expect("8 bytes"));
                let rtt_ns = (Instant::now() - origin).as_nanos() as u64 - stamp;
                rtts.push(rtt_ns as f64 / 1e6);
            }
        }
        done.store(true, Ordering::Relaxed);
        Ok(())
    })?;
    rtts.sort_by(f64::total_cmp);
    let q = |p: f64| {
        if rtts.is_empty() {
            0.0
        } else {
            rtts[((rtts.len() - 1) as f64 * p).round() as usize]
        }
    };
    Ok(ProbeResult {
        sent: count,
        received: rtts.len() as u64,
        loss: 1.0 - rtts.len() as f64 / count.max(1) as f64,
        rtt_min_ms: q(0.0),
        rtt_median_ms: q(0.5),
        rtt_p99_ms: q(0.99),
        rtt_max_ms: q(1.0),
    })
}
