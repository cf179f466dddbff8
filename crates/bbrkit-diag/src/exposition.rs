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
use crate::{BbrInfo, DiagError, Socket, TcpState};

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

/// Socket aggregates for the exposition, fed one socket at a time (so an
/// exporter can use [`crate::census_each`] and never hold every socket).
#[derive(Debug, Clone, Default)]
pub struct SocketStats {
    counts: BTreeMap<(String, TcpState), usize>,
    rtt: BTreeMap<String, Histogram>,
    rate: BTreeMap<String, Histogram>,
    bbr_version: Option<u8>,
}

impl SocketStats {
    /// Counts `s`.
    pub fn observe(&mut self, s: &Socket) {
        let cc = s.cc.as_deref().unwrap_or(NO_CC);
        *self.counts.entry((cc.to_string(), s.state)).or_default() += 1;
        if self.bbr_version.is_none() {
            self.bbr_version = s.bbr.as_ref().map(BbrInfo::version);
        }
        let Some(t) = &s.tcp_info else { return };
        if let Some(us) = t.min_rtt_sample_us() {
            entry(&mut self.rtt, cc, &MIN_RTT_BUCKETS_S).observe(f64::from(us) / 1e6);
        }
        if let Some(r) = t.delivery_rate.filter(|&r| r > 0) {
            entry(&mut self.rate, cc, &DELIVERY_RATE_BUCKETS).observe(r as f64);
        }
    }

    /// Number of sockets observed.
    pub fn sockets(&self) -> usize {
        self.counts.values().sum()
    }

    /// BBR version of the first BBR socket with BBR info (see [`BbrInfo::version`]).
    pub fn bbr_version(&self) -> Option<u8> {
        self.bbr_version
    }

    /// Writes `bbrkit_sockets{cc,state}` and the two histograms by `cc`.
    pub fn write(&self, e: &mut Exposition) -> Result<(), DiagError> {
        e.family(
            "bbrkit_sockets",
            MetricType::Gauge,
            "TCP sockets by congestion-control algorithm and state.",
        )?;
        for ((cc, state), n) in &self.counts {
            e.sample(&[("cc", cc), ("state", state.name())], *n as f64)?;
        }
        e.family(
            "bbrkit_socket_min_rtt_seconds",
            MetricType::Histogram,
            "Minimum RTT (tcpi_min_rtt) of TCP sockets with an RTT sample, by algorithm.",
        )?;
        for (cc, h) in &self.rtt {
            e.histogram(&[("cc", cc)], h)?;
        }
        e.family(
            "bbrkit_socket_delivery_rate_bytes_per_second",
            MetricType::Histogram,
            "Latest delivery rate (tcpi_delivery_rate) of TCP sockets that delivered data, by algorithm.",
        )?;
        for (cc, h) in &self.rate {
            e.histogram(&[("cc", cc)], h)?;
        }
        Ok(())
    }
}

fn entry<'a>(
    m: &'a mut BTreeMap<String, Histogram>,
    cc: &str,
    bounds: &[f64],
) -> &'a mut Histogram {
    if !m.contains_key(cc) {
        m.insert(cc.to_string(), Histogram::new(bounds));
    }
    m.get_mut(cc).expect("inserted")
}

/// Writes `bbrkit_sockets{cc,state}` and the two histograms by `cc` for `socks`.
pub fn write_sockets(e: &mut Exposition, socks: &[Socket]) -> Result<(), DiagError> {
    let mut st = SocketStats::default();
    socks.iter().for_each(|s| st.observe(s));
    st.write(e)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire;

    fn fixture_sockets() -> Vec<Socket> {
        let mut out = Vec::new();
        for f in ["ipv4-0.bin", "ipv4-1.bin", "ipv6-0.bin"] {
            let path = format!("{}/tests/fixtures/{f}", env!("CARGO_MANIFEST_DIR"));
            let buf = std::fs::read(path).unwrap();
            wire::parse_datagram(&buf, "x", &mut |s| out.push(s)).unwrap();
        }
        out
    }

    #[test]
    fn families_from_captured_sockets() {
        let socks = fixture_sockets();
        let mut st = SocketStats::default();
        socks.iter().for_each(|s| st.observe(s));
        assert_eq!(st.sockets(), 16);
        assert_eq!(st.bbr_version(), Some(1));
        let mut e = Exposition::new();
        st.write(&mut e).unwrap();
        let t = e.finish();
        // fixtures: 4 TIME_WAIT (no algorithm), bbr 2+4 established + 2 listeners.
        assert!(
            t.contains("bbrkit_sockets{cc=\"none\",state=\"TIME_WAIT\"} 4\n"),
            "{t}"
        );
        assert!(
            t.contains("bbrkit_sockets{cc=\"bbr\",state=\"ESTABLISHED\"} 4\n"),
            "{t}"
        );
        assert!(
            t.contains("bbrkit_sockets{cc=\"bbr\",state=\"LISTEN\"} 2\n"),
            "{t}"
        );
        assert!(
            t.contains("bbrkit_socket_min_rtt_seconds_count{cc=\"bbr\"} 4\n"),
            "{t}"
        );
        assert!(
            t.contains("bbrkit_socket_min_rtt_seconds_count{cc=\"reno\"} 2\n"),
            "{t}"
        );
        assert!(
            !t.contains("cc=\"none\",le="),
            "no histogram for sockets without tcp_info"
        );
    }

    #[test]
    fn counters_present_are_written_absent_left_out() {
        let mut c = Counters::default();
        c.0.insert("TcpRetransSegs".into(), 5);
        let mut e = Exposition::new();
        write_tcp_counters(&mut e, &c).unwrap();
        let t = e.finish();
        assert!(
            t.contains("bbrkit_tcp_retransmitted_segments_total 5\n"),
            "{t}"
        );
        assert!(!t.contains("bbrkit_tcp_timeouts_total"), "{t}");
    }
}
