//! De-duplication across samples: every connection seen in any census,
//! counted once, with the `tcp_info` counters advise needs.
//!
//! Owns the connection key and the accounting window. A connection is keyed
//! by its socket cookie (unique for the kernel's uptime) together with its
//! two addresses, and keeps three sets of cumulative counters:
//! * `baseline`: what it had already done before sampling began (its
//!   counters in the first census, for connections present then; zero for
//!   connections that appeared later, which were born inside the window);
//! * `first`: its counters when first seen (the start of the span over which
//!   time fractions can be measured);
//! * `latest`: its counters when last seen (kept as the connection ends: a
//!   closing connection keeps `tcp_info` until it becomes TIME_WAIT).
//!
//! Bytes and segments of the window are `latest − baseline`; time fractions
//! are `(latest − first) / (last_seen − first_seen)`. Must never hold a
//! [`bbrkit_diag::Socket`]: one record is 328 bytes, not ~740.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::Duration;

use bbrkit_diag::{Socket, TcpInfo, TcpState};

/// The cumulative `tcp_info` counters of one connection at one census.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    /// `tcpi_bytes_acked`: bytes the peer acknowledged (sent and delivered).
    pub bytes_acked: u64,
    /// `tcpi_bytes_received`: bytes received in order.
    pub bytes_received: u64,
    /// `tcpi_data_segs_out`: data segments sent, retransmissions included.
    pub data_segs_out: u64,
    /// `tcpi_total_retrans`: segments retransmitted.
    pub total_retrans: u64,
    /// `tcpi_busy_time`, µs: time with data in flight or queued (it includes
    /// the two limited times below).
    pub busy_us: u64,
    /// `tcpi_rwnd_limited`, µs: busy but stopped by the peer's receive window.
    pub rwnd_limited_us: u64,
    /// `tcpi_sndbuf_limited`, µs: busy but out of data because the send
    /// buffer was full and everything in it had been sent.
    pub sndbuf_limited_us: u64,
}

impl Counters {
    /// The counters of `t`; missing fields (an old kernel) are zero.
    pub fn of(t: &TcpInfo) -> Counters {
        Counters {
            bytes_acked: t.bytes_acked.unwrap_or(0),
            bytes_received: t.bytes_received.unwrap_or(0),
            data_segs_out: t.data_segs_out.map_or(0, u64::from),
            total_retrans: t.total_retrans.map_or(0, u64::from),
            busy_us: t.busy_time_us.unwrap_or(0),
            rwnd_limited_us: t.rwnd_limited_us.unwrap_or(0),
            sndbuf_limited_us: t.sndbuf_limited_us.unwrap_or(0),
        }
    }

    /// `self − base`, field by field. The two 32-bit kernel counters
    /// (`data_segs_out`, `total_retrans`) may wrap once between samples; the
    /// others never decrease, so a smaller value saturates at zero.
    pub fn since(&self, base: &Counters) -> Counters {
        let wrap32 = |a: u64, b: u64| u64::from((a as u32).wrapping_sub(b as u32));
        Counters {
            bytes_acked: self.bytes_acked.saturating_sub(base.bytes_acked),
            bytes_received: self.bytes_received.saturating_sub(base.bytes_received),
            data_segs_out: wrap32(self.data_segs_out, base.data_segs_out),
            total_retrans: wrap32(self.total_retrans, base.total_retrans),
            busy_us: self.busy_us.saturating_sub(base.busy_us),
            rwnd_limited_us: self.rwnd_limited_us.saturating_sub(base.rwnd_limited_us),
            sndbuf_limited_us: self
                .sndbuf_limited_us
                .saturating_sub(base.sndbuf_limited_us),
        }
    }
}

/// One connection, across every census that saw it.
#[derive(Debug, Clone, PartialEq)]
pub struct Conn {
    /// Local address and port.
    pub local: SocketAddr,
    /// Remote address and port.
    pub remote: SocketAddr,
    /// Algorithm when last seen (`INET_DIAG_CONG`).
    pub cc: Option<String>,
    /// Time of the first and the last census that saw it.
    pub first_seen: Duration,
    /// See `first_seen`.
    pub last_seen: Duration,
    /// Number of censuses that saw it.
    pub samples: u32,
    /// Counters before the window (zero when born inside it).
    pub baseline: Counters,
    /// Counters when first seen.
    pub first: Counters,
    /// Counters when last seen.
    pub latest: Counters,
    /// Smallest `tcpi_min_rtt` seen, µs.
    pub min_rtt_us: Option<u32>,
    /// Sum and count of `tcpi_rtt` (smoothed RTT) samples, µs.
    pub srtt_sum_us: u64,
    /// See `srtt_sum_us`.
    pub srtt_samples: u32,
    /// Largest `tcpi_delivery_rate` seen while not app-limited, bytes/s.
    pub max_delivery_rate: u64,
    /// The kernel reports the busy/limited times (`tcpi_busy_time`, Linux 4.10+).
    pub limits_known: bool,
}

impl Conn {
    /// Bytes, segments and times of the sampling window.
    pub fn window(&self) -> Counters {
        self.latest.since(&self.baseline)
    }

    /// Counters over the observed span (first to last sighting).
    pub fn span(&self) -> Counters {
        self.latest.since(&self.first)
    }

    /// Length of the observed span.
    pub fn span_time(&self) -> Duration {
        self.last_seen.saturating_sub(self.first_seen)
    }
}

/// The socket cookie: the kernel hands them out from one counter that
/// never repeats while it runs (`sock_gen_cookie`), so two connections with
/// the same four-tuple one after the other (a port reused) stay apart.
type Key = u64;

/// Every connection seen so far.
#[derive(Debug, Default)]
pub struct Tracker {
    conns: HashMap<Key, Conn>,
    sweeps: u32,
    now: Duration,
}

impl Tracker {
    /// An empty tracker.
    pub fn new() -> Tracker {
        Tracker::default()
    }

    /// Starts census number `sweeps()` taken at `at` (time since sampling began).
    pub fn begin_sweep(&mut self, at: Duration) {
        self.now = at;
    }

    /// Ends the current census.
    pub fn end_sweep(&mut self) {
        self.sweeps += 1;
    }

    /// Censuses completed.
    pub fn sweeps(&self) -> u32 {
        self.sweeps
    }

    /// Records one socket of the current census. Sockets without
    /// `tcp_info` (TIME_WAIT, request sockets) and listeners carry no
    /// connection and are ignored.
    pub fn observe(&mut self, s: &Socket) {
        let Some(info) = &s.tcp_info else { return };
        if matches!(s.state, TcpState::Listen | TcpState::Close) || s.remote.port() == 0 {
            return;
        }
        let now = Counters::of(info);
        let first_sweep = self.sweeps == 0;
        let at = self.now;
        let c = self.conns.entry(s.cookie).or_insert_with(|| Conn {
            local: s.local,
            remote: s.remote,
            cc: None,
            first_seen: at,
            last_seen: at,
            samples: 0,
            baseline: if first_sweep {
                now
            } else {
                Counters::default()
            },
            first: now,
            latest: now,
            min_rtt_us: None,
            srtt_sum_us: 0,
            srtt_samples: 0,
            max_delivery_rate: 0,
            limits_known: info.busy_time_us.is_some(),
        });
        if c.samples > 0 && c.last_seen == at {
            return; // the same socket twice in one census (dump race): once
        }
        c.samples += 1;
        c.last_seen = at;
        c.latest = now;
        if s.cc.is_some() && s.cc != c.cc {
            c.cc.clone_from(&s.cc);
        }
        if let Some(m) = info.min_rtt_sample_us() {
            c.min_rtt_us = Some(c.min_rtt_us.map_or(m, |x| x.min(m)));
        }
        if let Some(r) = info.rtt_sample_us() {
            c.srtt_sum_us += u64::from(r);
            c.srtt_samples += 1;
        }
        if info.delivery_rate_app_limited == Some(false) {
            c.max_delivery_rate = c.max_delivery_rate.max(info.delivery_rate.unwrap_or(0));
        }
    }

    /// Every connection seen, in no particular order.
    pub fn conns(&self) -> impl Iterator<Item = &Conn> {
        self.conns.values()
    }

    /// Number of distinct connections seen.
    pub fn len(&self) -> usize {
        self.conns.len()
    }

    /// Whether no connection was seen.
    pub fn is_empty(&self) -> bool {
        self.conns.is_empty()
    }
}
