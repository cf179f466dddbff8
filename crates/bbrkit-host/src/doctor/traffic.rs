//! `doctor`'s finding about the direction of the host's traffic
//! (`mostly_receives`): BBR only changes what a host sends.

use bbrkit_diag::nstat::Counters;

use super::{Finding, Level};

/// Classifies traffic direction from cumulative byte counters: returns a
/// finding when the host received over 4x what it sent (and > 100 MB).
pub fn receive_finding(in_octets: u64, out_octets: u64) -> Option<Finding> {
    if in_octets < 100_000_000 || in_octets < out_octets.saturating_mul(4) {
        return None;
    }
    Some(Finding::new(
        "mostly_receives",
        Level::Info,
        "this host mostly receives: BBR only changes what it sends (its uploads)",
        vec![format!(
            "IP bytes received {in_octets}, sent {out_octets} ({:.1}x more received; /proc/net/netstat IpExt InOctets/OutOctets minus loopback)",
            in_octets as f64 / out_octets.max(1) as f64
        )],
        "enable BBR on the sending side (the server or tunnel end that uploads to you); here it helps only uploads",
    ))
}

/// Received and sent bytes of `lo` from `/proc/net/dev`.
pub fn loopback_bytes(dev: &str) -> Option<(u64, u64)> {
    let rest = dev
        .lines()
        .find_map(|l| l.trim_start().strip_prefix("lo:"))?;
    let f: Vec<u64> = rest
        .split_whitespace()
        .map(|x| x.parse().ok())
        .collect::<Option<_>>()?;
    Some((*f.first()?, *f.get(8)?))
}

/// TCP segment counters of `/proc/net/snmp` as evidence of the direction:
/// a host that mostly receives sends little more than ACKs.
fn snmp_tcp_evidence(c: &Counters) -> Option<String> {
    let (i, o) = (c.get("TcpInSegs")?, c.get("TcpOutSegs")?);
    Some(format!(
        "/proc/net/snmp Tcp InSegs={i} OutSegs={o} (loopback included)"
    ))
}

/// The direction of this namespace's traffic from its IP byte counters
/// (read with `bbrkit_diag::nstat`), loopback subtracted.
pub(super) fn mostly_receives() -> Option<Finding> {
    let c = bbrkit_diag::nstat::read().ok()?;
    let (i, o) = (c.get("IpExtInOctets")?, c.get("IpExtOutOctets")?);
    // Loopback traffic is counted both ways; it says nothing about the
    // direction of this host's network traffic.
    let (lo_rx, lo_tx) = std::fs::read_to_string("/proc/net/dev")
        .ok()
        .and_then(|t| loopback_bytes(&t))
        .unwrap_or((0, 0));
    let mut fi = receive_finding(i.saturating_sub(lo_rx), o.saturating_sub(lo_tx))?;
    fi.evidence.push(format!(
        "/proc/net/netstat IpExt InOctets={i} OutOctets={o}; /proc/net/dev lo rx={lo_rx} tx={lo_tx} bytes"
    ));
    fi.evidence.extend(snmp_tcp_evidence(&c));
    Some(fi)
}
