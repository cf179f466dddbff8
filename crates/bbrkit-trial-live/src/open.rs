//! Connections still open when the trial ends: one sock_diag census of
//! this network namespace, each connection's rule and arm from
//! `Compiled::decide` (the program's draw, a pure function of the remote
//! address, the ports and the socket cookie, so user space predicts it),
//! and its counters so far from `tcp_info`, as a [`ConnRecord`] with
//! `open: true` (the statistics keep them apart from the closed ones).
//!
//! ```text
//!   socket (not listening, not SYN_SENT/SYN_RECV/TIME_WAIT/CLOSE: those have no open connection)
//!     ──decide(remote, local port, remote port, cookie)──► the trial's rule? its arm a
//!     ──runs arms[a]'s algorithm?──► yes: sampled      no: not_their_arm (not sampled)
//! ```
//!
//! The algorithm check is what tells the trial's connections from others
//! that match the rule: established before the trial, by a process outside
//! the cgroup, with the application's own algorithm, or after a guardrail
//! moved the split to the other arm. A connection of those whose algorithm
//! happens to be its predicted arm's is sampled anyway (the socket's
//! sk_storage would say for sure; the census does not read it yet), and a
//! sampled connection's start is not known (`start_ns` is the trial's
//! start): open connections are counted and summed apart, never compared.

use std::collections::HashSet;
use std::net::SocketAddr;

use bbrkit_diag::{Filter, Socket, StateSet, TcpState};
use bbrkit_policy::{Compiled, ConnRecord, Direction};
use serde::Serialize;

/// What sampling the open connections found.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct OpenSample {
    /// The trial's open connections, as records with `open: true`.
    #[serde(skip)]
    pub records: Vec<ConnRecord>,
    /// Open connections the trial's rule matches.
    pub matched: u64,
    /// ... running another algorithm than their arm's: not sampled.
    pub not_their_arm: u64,
    /// ... sampled, then found closed in the last records (not open).
    pub closed_since: u64,
}

/// What a sampled record is stamped with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    /// The trial's rule index.
    pub rule: u16,
    /// `CLOCK_MONOTONIC` ns when the trial started.
    pub start_ns: u64,
    /// `CLOCK_MONOTONIC` ns of the census.
    pub now_ns: u64,
}

/// States of an open connection the program saw established.
fn open_states() -> StateSet {
    [
        TcpState::Established,
        TcpState::FinWait1,
        TcpState::FinWait2,
        TcpState::CloseWait,
        TcpState::LastAck,
        TcpState::Closing,
        TcpState::Listen,
    ]
    .into_iter()
    .fold(StateSet::empty(), StateSet::with)
}

/// Samples this network namespace's open connections of the trial.
pub fn sample(
    compiled: &Compiled,
    arms_cc: [&str; 2],
    stamp: Stamp,
) -> Result<OpenSample, bbrkit_diag::DiagError> {
    let filter = Filter {
        states: open_states(),
        ..Filter::default()
    };
    let sockets = bbrkit_diag::census(&filter)?;
    Ok(from_sockets(&sockets, compiled, arms_cc, stamp))
}

/// [`sample`] over a census already taken (pure).
pub fn from_sockets(
    sockets: &[Socket],
    compiled: &Compiled,
    arms_cc: [&str; 2],
    stamp: Stamp,
) -> OpenSample {
    let listening: HashSet<u16> = sockets
        .iter()
        .filter(|s| s.state == TcpState::Listen)
        .map(|s| s.local.port())
        .collect();
    let mut out = OpenSample::default();
    for s in sockets.iter().filter(|s| s.state != TcpState::Listen) {
        let remote = s.remote.ip().to_canonical();
        let decision = compiled.decide(remote, s.local.port(), s.remote.port(), s.cookie);
        let Some(arm) = decision
            .filter(|d| d.rule == usize::from(stamp.rule))
            .and_then(|d| d.arm)
        else {
            continue;
        };
        out.matched += 1;
        if s.cc.as_deref() != Some(arms_cc[arm]) {
            out.not_their_arm += 1;
            continue;
        }
        let passive = listening.contains(&s.local.port());
        out.records.push(record(s, arm as u8, passive, stamp));
    }
    out
}

impl OpenSample {
    /// Drops the sampled connections whose close record arrived after the
    /// census (`closed`: the cookies of those records).
    pub fn reconcile(&mut self, closed: &HashSet<u64>) {
        let before = self.records.len();
        self.records.retain(|r| !closed.contains(&r.cookie));
        self.closed_since = (before - self.records.len()) as u64;
    }
}

/// One open socket's counters so far.
fn record(s: &Socket, arm: u8, passive: bool, stamp: Stamp) -> ConnRecord {
    let t = s.tcp_info.clone().unwrap_or_default();
    let remote: SocketAddr = s.remote;
    ConnRecord {
        cookie: s.cookie,
        rule: Some(stamp.rule),
        arm,
        cc: s.cc.clone().unwrap_or_default(),
        assigned: true,
        direction: if passive {
            Direction::Passive
        } else {
            Direction::Active
        },
        remote: remote.ip().to_canonical(),
        local_port: s.local.port(),
        remote_port: remote.port(),
        start_ns: stamp.start_ns,
        end_ns: stamp.now_ns,
        bytes_acked: t.bytes_acked.unwrap_or(0),
        bytes_received: t.bytes_received.unwrap_or(0),
        bytes_retrans: t.bytes_retrans.unwrap_or(0),
        segs_out: t.segs_out.unwrap_or(0),
        total_retrans: t.total_retrans.unwrap_or(0),
        // `tcpi_lost` counts the segments lost now, not over the life as
        // the close record's `tp->lost`: left out.
        lost: 0,
        delivered: t.delivered.unwrap_or(0),
        // u32::MAX: no sample yet.
        min_rtt_us: t.min_rtt_us.filter(|&v| v != u32::MAX).unwrap_or(0),
        srtt_us: t.rtt_us.unwrap_or(0),
        busy_us: t.busy_time_us.unwrap_or(0),
        rwnd_limited_us: t.rwnd_limited_us.unwrap_or(0),
        sndbuf_limited_us: t.sndbuf_limited_us.unwrap_or(0),
        open: true,
    }
}

#[cfg(test)]
mod tests {
    use bbrkit_diag::TcpInfo;
    use bbrkit_diag::testing::socket;
    use bbrkit_policy::Policy;

    use super::*;

    fn compiled() -> Compiled {
        let text = "[[rule]]\nlocal_port = [8080]\nsplit = { cubic = 1, bbr = 1 }\nrecord = true\n";
        let policy: Policy = bbrkit_policy::parse("p", text).unwrap();
        Compiled::new(&policy, 7)
    }

    fn sock(cookie: u64, local: &str, remote: &str, cc: &str) -> Socket {
        Socket {
            cookie,
            tcp_info: Some(TcpInfo {
                bytes_acked: Some(1_000_000),
                busy_time_us: Some(100_000),
                min_rtt_us: Some(u32::MAX),
                ..TcpInfo::default()
            }),
            ..socket(Some(cc), local.parse().unwrap(), remote.parse().unwrap())
        }
    }

    const STAMP: Stamp = Stamp {
        rule: 0,
        start_ns: 1_000,
        now_ns: 9_000,
    };

    #[test]
    fn open_connections_of_the_rule_running_their_arm_are_sampled() {
        let c = compiled();
        let arm_cc = |cookie: u64| {
            let d = c.decide("192.0.2.7".parse().unwrap(), 8080, 40_000, cookie);
            ["cubic", "bbr"][d.unwrap().arm.unwrap()]
        };
        let listener = Socket {
            state: TcpState::Listen,
            ..socket(
                None,
                "0.0.0.0:8080".parse().unwrap(),
                "0.0.0.0:0".parse().unwrap(),
            )
        };
        let other = |cc: &str| if cc == "bbr" { "cubic" } else { "bbr" };
        let sockets = vec![
            listener,
            sock(11, "127.0.0.1:8080", "192.0.2.7:40000", arm_cc(11)),
            sock(12, "127.0.0.1:8080", "192.0.2.7:40000", other(arm_cc(12))),
            // Another service: not the rule's.
            sock(13, "127.0.0.1:22", "192.0.2.7:40000", "cubic"),
            // IPv4-mapped peer of a dual-stack listener: matched as IPv4.
            sock(
                14,
                "[::ffff:127.0.0.1]:8080",
                "[::ffff:192.0.2.7]:40000",
                arm_cc(14),
            ),
        ];
        let mut s = from_sockets(&sockets, &c, ["cubic", "bbr"], STAMP);
        assert_eq!((s.matched, s.not_their_arm), (3, 1));
        let cookies: Vec<u64> = s.records.iter().map(|r| r.cookie).collect();
        assert_eq!(cookies, [11, 14]);
        let r = &s.records[1];
        assert_eq!(r.remote.to_string(), "192.0.2.7", "canonical");
        assert!(r.open && r.direction == Direction::Passive);
        assert_eq!((r.start_ns, r.end_ns, r.min_rtt_us), (1_000, 9_000, 0));
        assert_eq!(r.goodput_bits_per_second(), Some(8e7));
        assert_eq!(
            usize::from(r.arm),
            ["cubic", "bbr"].iter().position(|x| *x == r.cc).unwrap()
        );
        s.reconcile(&HashSet::from([11]));
        assert_eq!((s.records.len(), s.closed_since), (1, 1));
    }
}
