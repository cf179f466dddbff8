//! Estimators over the connections of one group: loss with its binomial
//! interval, and the fractions of time limited by the receive window, the
//! send buffer and the application.
//!
//! Owns the formulas and what they mean:
//!
//! * **Loss the sender saw** = `Σ Δtcpi_total_retrans / Σ Δtcpi_data_segs_out`
//!   over the window. Linux retransmits each segment it marks lost once per
//!   loss, and `data_segs_out` counts retransmissions too, so on a path that
//!   drops each packet with probability p this ratio estimates p (a lost
//!   retransmission is itself a sent segment lost with probability p).
//!   Spurious retransmissions (reordering, a too-early RTO) count as loss; so
//!   does every segment an RTO re-sends. Only a *sender* sees this: for data
//!   the host receives, its own `total_retrans` counts nothing (pure ACKs
//!   are never retransmitted) and the loss stays unknown (`None`).
//! * **Interval**: Wilson's score interval for k losses in n segments at
//!   z = 1.96 (95 %), treating segments as independent trials. It is honest
//!   about small samples: 0 losses in 200 segments gives [0, 1.9 %].
//! * **Limited fractions**, of the observed time (`Σ Δt` over connections seen
//!   at least twice): `rwnd = Σ Δtcpi_rwnd_limited / Σ Δt`,
//!   `sndbuf = Σ Δtcpi_sndbuf_limited / Σ Δt`, `app = 1 − Σ Δtcpi_busy_time / Σ Δt`
//!   (the kernel's busy time includes both limited times, so what is left,
//!   `busy − rwnd − sndbuf`, is the time the congestion window or pacing —
//!   the network — set the pace). The kernel counts these in jiffies (1–4 ms).
//!
//! Must never read anything but [`Conn`] records.

use serde::Serialize;

use crate::track::Conn;

/// z of a two-sided 95 % interval.
pub const Z95: f64 = 1.96;

/// An estimate with its interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Interval {
    /// Lower bound.
    pub low: f64,
    /// Point estimate.
    pub estimate: f64,
    /// Upper bound.
    pub high: f64,
}

/// Wilson score interval of `k` successes in `n` trials at `z`; `None` for
/// no trials.
pub fn wilson(k: u64, n: u64, z: f64) -> Option<Interval> {
    if n == 0 {
        return None;
    }
    let (k, n) = (k.min(n) as f64, n as f64);
    let p = k / n;
    let z2 = z * z;
    let centre = (p + z2 / (2.0 * n)) / (1.0 + z2 / n);
    let half = z / (1.0 + z2 / n) * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt();
    Some(Interval {
        low: (centre - half).max(0.0),
        estimate: p,
        high: (centre + half).min(1.0),
    })
}

/// Segments sent and retransmitted by `conns` over the window.
pub fn segments<'a>(conns: impl IntoIterator<Item = &'a Conn>) -> (u64, u64) {
    conns.into_iter().fold((0, 0), |(sent, re), c| {
        let w = c.window();
        (sent + w.data_segs_out, re + w.total_retrans)
    })
}

/// Loss the senders saw with its 95 % interval; `None` when they sent no data.
pub fn loss<'a>(conns: impl IntoIterator<Item = &'a Conn>) -> Option<Interval> {
    let (sent, re) = segments(conns);
    wilson(re, sent, Z95)
}

/// Fractions of the observed time (0..1).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Limited {
    /// Limited by the peer's receive window.
    pub rwnd: f64,
    /// Limited by the send buffer.
    pub sndbuf: f64,
    /// Idle: the application had nothing to send.
    pub app: f64,
    /// The rest: the congestion window or pacing set the rate.
    pub network: f64,
    /// Observed connection-seconds the fractions are taken over.
    pub observed_s: f64,
}

/// Limited fractions over the connections seen at least twice, whose kernel
/// reports the busy times; `None` when there are none.
pub fn limited<'a>(conns: impl IntoIterator<Item = &'a Conn>) -> Option<Limited> {
    let (mut t, mut busy, mut rwnd, mut sndbuf) = (0.0, 0.0, 0.0, 0.0);
    for c in conns {
        let dt = c.span_time().as_secs_f64();
        if c.samples < 2 || !c.limits_known || dt <= 0.0 {
            continue;
        }
        let s = c.span();
        t += dt;
        // A counter can run a jiffy ahead of the census clock: clamp per connection.
        busy += (s.busy_us as f64 / 1e6).min(dt);
        rwnd += (s.rwnd_limited_us as f64 / 1e6).min(dt);
        sndbuf += (s.sndbuf_limited_us as f64 / 1e6).min(dt);
    }
    if t <= 0.0 {
        return None;
    }
    let (rwnd, sndbuf) = (rwnd / t, sndbuf / t);
    let busy = busy / t;
    Some(Limited {
        rwnd,
        sndbuf,
        app: (1.0 - busy).max(0.0),
        network: (busy - rwnd - sndbuf).max(0.0),
        observed_s: t,
    })
}

/// Throughput while busy, bits per second: bytes acknowledged over the
/// observed span divided by the busy time of that span, summed over the
/// connections (so it is a per-connection rate, comparable to one simulated
/// flow). Falls back to the span's wall time when busy times are unknown.
pub fn throughput<'a>(conns: impl IntoIterator<Item = &'a Conn>) -> Option<f64> {
    let (mut bytes, mut secs) = (0.0, 0.0);
    for c in conns {
        let dt = c.span_time().as_secs_f64();
        if c.samples < 2 || dt <= 0.0 {
            continue;
        }
        let s = c.span();
        let busy = if c.limits_known {
            (s.busy_us as f64 / 1e6).min(dt)
        } else {
            dt
        };
        bytes += s.bytes_acked as f64;
        secs += busy;
    }
    (secs > 0.0 && bytes > 0.0).then(|| bytes * 8.0 / secs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wilson_matches_reference_values() {
        // 20 in 1000 at 95 %: [1.30 %, 3.07 %] (Wilson 1927; e.g. R's prop.test without continuity correction).
        let i = wilson(20, 1000, Z95).unwrap();
        assert!((i.estimate - 0.02).abs() < 1e-12);
        assert!((i.low - 0.01300).abs() < 5e-5, "{i:?}");
        assert!((i.high - 0.03070).abs() < 5e-5, "{i:?}");
        // No loss in 200: the upper bound is z²/(n+z²).
        let z = wilson(0, 200, Z95).unwrap();
        assert_eq!(z.low, 0.0);
        assert!((z.high - Z95 * Z95 / (200.0 + Z95 * Z95)).abs() < 1e-12);
        assert!(wilson(0, 0, Z95).is_none());
        // More "losses" than trials cannot give more than 1.
        assert_eq!(wilson(5, 3, Z95).unwrap().high, 1.0);
    }
}
