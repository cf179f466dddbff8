//! The lab's own measurements of a foreign server: its TCP sockets in the
//! server namespace, read through sock_diag (`bbrkit_diag::census`, the
//! one census) from a thread inside that namespace — whether it listens
//! yet, and every connection's `TCP_INFO`, sampled every
//! [`SAMPLE_EVERY`] while a run goes, the last sample of each connection
//! kept.
//!
//! Must never look at a socket outside the server namespace.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use bbrkit_diag::{Filter, Socket, StateSet, TcpState, census};
use serde::Serialize;

use crate::error::{LabError, Result};
use crate::netns::Netns;
use crate::report::median;

/// How often the server's connections are sampled: a connection that
/// closes between two samples is reported as last seen (up to this much
/// older than its end).
pub const SAMPLE_EVERY: Duration = Duration::from_millis(20);

/// The server's connections during one run, as the lab read them.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ServerSockets {
    /// Connections seen (distinct socket cookies).
    pub connections: u64,
    /// `tcpi_bytes_acked` summed over connections (last sample of each).
    pub bytes_acked: u64,
    /// `tcpi_total_retrans` summed over connections.
    pub retransmits: u64,
    /// Median over connections of the smoothed RTT, ms.
    pub median_rtt_ms: Option<f64>,
    /// The algorithms the connections ran (`INET_DIAG_CONG`), sorted.
    pub tcp_congestion: Vec<String>,
}

/// One connection's last sample.
#[derive(Debug, Clone)]
struct Last {
    bytes_acked: u64,
    retransmits: u64,
    rtt_ms: Option<f64>,
    cc: Option<String>,
}

/// Whether any TCP socket listens in the calling thread's namespace.
fn listening() -> Result<bool> {
    let filter = Filter {
        states: StateSet::empty().with(TcpState::Listen),
        ..Filter::default()
    };
    Ok(!census(&filter)
        .map_err(|e| LabError::Invalid(format!("sock_diag in the server namespace: {e}")))?
        .is_empty())
}

/// Waits until a socket listens in `ns`, `gone()` says the server ended,
/// or `limit` passes; returns whether one listens.
pub fn wait_listening(
    ns: &Netns,
    limit: Duration,
    gone: &mut dyn FnMut() -> Result<bool>,
) -> Result<bool> {
    let until = Instant::now() + limit;
    loop {
        if ns.run(listening)? {
            return Ok(true);
        }
        if gone()? || Instant::now() >= until {
            return Ok(false);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Samples the connections in `ns` that were not there at the start
/// until `stop` is set, then once more.
pub fn watch(ns: &Netns, stop: &AtomicBool) -> Result<ServerSockets> {
    ns.run(|| {
        let filter = Filter {
            states: StateSet::connected(),
            details: true,
            ..Filter::default()
        };
        let mut seen: BTreeMap<u64, Last> = BTreeMap::new();
        // Connections of an earlier run (closing after its server was
        // stopped) are not this run's.
        let earlier: BTreeSet<u64> = census(&filter)
            .map_err(|e| LabError::Invalid(format!("sock_diag in the server namespace: {e}")))?
            .iter()
            .map(|s| s.cookie)
            .collect();
        loop {
            let last_round = stop.load(Ordering::Relaxed);
            let sockets = census(&filter).map_err(|e| {
                LabError::Invalid(format!("sock_diag in the server namespace: {e}"))
            })?;
            for s in sockets.iter().filter(|s| !earlier.contains(&s.cookie)) {
                if let Some(l) = last_of(s) {
                    seen.insert(s.cookie, l);
                }
            }
            if last_round {
                return Ok(summary(seen.into_values().collect()));
            }
            std::thread::sleep(SAMPLE_EVERY);
        }
    })
}

/// A full socket's sample (`None` for mini-sockets without `TCP_INFO`).
fn last_of(s: &Socket) -> Option<Last> {
    let t = s.tcp_info.as_ref()?;
    Some(Last {
        bytes_acked: t.bytes_acked.unwrap_or(0),
        retransmits: u64::from(t.total_retrans.unwrap_or(0)),
        rtt_ms: t.rtt_us.filter(|&r| r > 0).map(|r| f64::from(r) / 1e3),
        cc: s.cc.clone(),
    })
}

/// The run's summary of its connections' last samples.
fn summary(conns: Vec<Last>) -> ServerSockets {
    let rtts: Vec<f64> = conns.iter().filter_map(|c| c.rtt_ms).collect();
    let mut cc: Vec<String> = conns.iter().filter_map(|c| c.cc.clone()).collect();
    cc.sort();
    cc.dedup();
    ServerSockets {
        connections: conns.len() as u64,
        bytes_acked: conns.iter().map(|c| c.bytes_acked).sum(),
        retransmits: conns.iter().map(|c| c.retransmits).sum(),
        median_rtt_ms: (!rtts.is_empty()).then(|| median(rtts)),
        tcp_congestion: cc,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_summary_sums_and_takes_the_median() {
        let c = |acked, retrans, rtt: Option<f64>, cc: &str| Last {
            bytes_acked: acked,
            retransmits: retrans,
            rtt_ms: rtt,
            cc: Some(cc.into()),
        };
        let s = summary(vec![
            c(100, 1, Some(100.0), "bbr"),
            c(200, 2, Some(120.0), "bbr"),
            c(300, 0, None, "cubic"),
        ]);
        assert_eq!(s.connections, 3);
        assert_eq!((s.bytes_acked, s.retransmits), (600, 3));
        assert_eq!(s.median_rtt_ms, Some(110.0));
        assert_eq!(s.tcp_congestion, ["bbr", "cubic"]);
        assert_eq!(summary(Vec::new()).median_rtt_ms, None);
    }
}
