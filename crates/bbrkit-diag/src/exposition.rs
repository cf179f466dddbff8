//! The socket and counter metric families of `bbrkit metrics`: sockets by
//! algorithm and state, per-algorithm histograms of min RTT and delivery rate,
//! and the TCP counters that decide a BBR-vs-CUBIC argument.
//!
//! Owns these metric names, their units and buckets (base units: seconds,
//! bytes). Labels are low-cardinality only (`cc`, `state`); never per socket.
//! Host facts (algorithm, qdiscs, verify checks) are written by the command,
//! which gets them from `bbrkit-host`.

use std::collections::BTreeMap;

use crate::nstat::Counters;
use crate::prom::{Exposition, Histogram, MetricType};
use crate::{DiagError, Socket};

/// Upper bounds of the min-RTT histogram, seconds (100 µs to 2.5 s).
pub const MIN_RTT_BUCKETS_S: [f64; 14] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
];

/// Upper bounds of the delivery-rate histogram, bytes per second: one per
/// decade of bit rate, 100 kbit/s to 100 Gbit/s.
pub const DELIVERY_RATE_BUCKETS: [f64; 7] =
    [12_500.0, 125_000.0, 1.25e6, 1.25e7, 1.25e8, 1.25e9, 1.25e10];

/// Label value for sockets without an algorithm (TIME_WAIT, request sockets).
pub const NO_CC: &str = "none";

/// The TCP counters exported, as (nstat name, metric name, help).
pub const TCP_COUNTERS: [(&str, &str, &str); 8] = [
    (
        "TcpOutSegs",
        "bbrkit_tcp_segments_sent_total",
        "TCP segments sent, including retransmissions and pure ACKs (TcpOutSegs).",
    ),
    (
        "TcpExtTCPOrigDataSent",
        "bbrkit_tcp_original_data_segments_sent_total",
        "TCP data segments sent excluding retransmissions (TcpExtTCPOrigDataSent): the denominator of the retransmission rate.",
    ),
    (
        "TcpRetransSegs",
        "bbrkit_tcp_retransmitted_segments_total",
        "TCP segments retransmitted (TcpRetransSegs).",
    ),
    (
        "TcpExtTCPLostRetransmit",
        "bbrkit_tcp_lost_retransmits_total",
        "Retransmissions that were lost again (TcpExtTCPLostRetransmit).",
    ),
    (
        "TcpExtTCPTimeouts",
        "bbrkit_tcp_timeouts_total",
        "Retransmission timeouts (TcpExtTCPTimeouts).",
    ),
    (
        "TcpExtTCPSynRetrans",
        "bbrkit_tcp_syn_retransmits_total",
        "SYN and SYN-ACK retransmissions (TcpExtTCPSynRetrans).",
    ),
    (
        "TcpExtTCPFastRetrans",
        "bbrkit_tcp_fast_retransmits_total",
        "Fast retransmissions (TcpExtTCPFastRetrans).",
    ),
    (
        "TcpExtTCPSpuriousRtxHostQueues",
        "bbrkit_tcp_spurious_host_queue_retransmits_total",
        "Retransmissions skipped because the original was still in a local queue (TcpExtTCPSpuriousRtxHostQueues).",
    ),
];

/// Writes `bbrkit_sockets{cc,state}` and the two histograms by `cc`.
pub fn write_sockets(e: &mut Exposition, socks: &[Socket]) -> Result<(), DiagError> {
    let mut counts: BTreeMap<(&str, String), usize> = BTreeMap::new();
    let mut rtt: BTreeMap<&str, Histogram> = BTreeMap::new();
    let mut rate: BTreeMap<&str, Histogram> = BTreeMap::new();
    for s in socks {
        let cc = s.cc.as_deref().unwrap_or(NO_CC);
        *counts.entry((cc, s.state.to_string())).or_default() += 1;
        let Some(t) = &s.tcp_info else { continue };
        if let Some(us) = t.min_rtt_sample_us() {
            rtt.entry(cc)
                .or_insert_with(|| Histogram::new(&MIN_RTT_BUCKETS_S))
                .observe(f64::from(us) / 1e6);
        }
        if let Some(r) = t.delivery_rate.filter(|&r| r > 0) {
            rate.entry(cc)
                .or_insert_with(|| Histogram::new(&DELIVERY_RATE_BUCKETS))
                .observe(r as f64);
        }
    }
    e.family(
        "bbrkit_sockets",
        MetricType::Gauge,
        "TCP sockets by congestion-control algorithm and state.",
    )?;
    for ((cc, state), n) in &counts {
        e.sample(&[("cc", cc), ("state", state)], *n as f64)?;
    }
    e.family(
        "bbrkit_socket_min_rtt_seconds",
        MetricType::Histogram,
        "Minimum RTT (tcpi_min_rtt) of TCP sockets with an RTT sample, by algorithm.",
    )?;
    for (cc, h) in &rtt {
        e.histogram(&[("cc", cc)], h)?;
    }
    e.family(
        "bbrkit_socket_delivery_rate_bytes_per_second",
        MetricType::Histogram,
        "Latest delivery rate (tcpi_delivery_rate) of TCP sockets that delivered data, by algorithm.",
    )?;
    for (cc, h) in &rate {
        e.histogram(&[("cc", cc)], h)?;
    }
    Ok(())
}

/// Writes the [`TCP_COUNTERS`] present in `c` (absent ones are left out).
pub fn write_tcp_counters(e: &mut Exposition, c: &Counters) -> Result<(), DiagError> {
    for (nstat, name, help) in TCP_COUNTERS {
        if let Some(v) = c.get(nstat) {
            e.family(name, MetricType::Counter, help)?;
            e.sample(&[], v as f64)?;
        }
    }
    Ok(())
}
