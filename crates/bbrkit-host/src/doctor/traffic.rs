//! `doctor`'s finding about the direction of the host's traffic
//! (`mostly_receives`): BBR only changes what a host sends.

use crate::outcome::{Finding, FindingId, Level};
use crate::snapshot::Snapshot;

/// Classifies traffic direction from cumulative byte counters: returns a
/// finding when the host received over 4x what it sent (and > 100 MB).
pub fn receive_finding(in_octets: u64, out_octets: u64) -> Option<Finding> {
    if in_octets < 100_000_000 || in_octets < out_octets.saturating_mul(4) {
        return None;
    }
    Some(Finding::new(
        FindingId::MostlyReceives,
        Level::Info,
        "this host mostly receives: BBR only changes what it sends (its uploads)",
        vec![format!(
            "IP bytes received {in_octets}, sent {out_octets} ({:.1}x more received; /proc/net/netstat IpExt InOctets/OutOctets minus loopback)",
            in_octets as f64 / out_octets.max(1) as f64
        )],
        "enable BBR on the sending side (the server or tunnel end that uploads to you); here it helps only uploads",
    ))
}

/// The direction of this namespace's traffic from its IP byte counters,
/// loopback subtracted (loopback traffic is counted both ways; it says
/// nothing about the direction of this host's network traffic).
pub(super) fn mostly_receives(snap: &Snapshot) -> Option<Finding> {
    let t = snap.doctor.traffic.as_ref()?;
    let (i, o) = (t.in_octets, t.out_octets);
    let (lo_rx, lo_tx) = t.loopback.unwrap_or((0, 0));
    let mut fi = receive_finding(i.saturating_sub(lo_rx), o.saturating_sub(lo_tx))?;
    fi.evidence.push(format!(
        "/proc/net/netstat IpExt InOctets={i} OutOctets={o}; /proc/net/dev lo rx={lo_rx} tx={lo_tx} bytes"
    ));
    // TCP segment counters as evidence of the direction: a host that
    // mostly receives sends little more than ACKs.
    if let Some((si, so)) = t.tcp_segs {
        fi.evidence.push(format!(
            "/proc/net/snmp Tcp InSegs={si} OutSegs={so} (loopback included)"
        ));
    }
    Some(fi)
}
