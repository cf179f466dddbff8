//! Per-algorithm summary of a census: what `bbrkit conns` prints first.
//!
//! Owns the statistics (medians, totals, retransmission ratio). Must never
//! read the kernel: it works on [`Socket`]s it is given.

use std::collections::BTreeMap;

use crate::Socket;

/// The sockets of one congestion-control algorithm, summarised.
#[derive(Debug, Clone, PartialEq)]
pub struct AlgoSummary {
    /// Algorithm name; `None` for sockets that have none (TIME_WAIT, request sockets).
    pub cc: Option<String>,
    /// Number of sockets.
    pub sockets: usize,
    /// Sockets with a smoothed-RTT sample.
    pub rtt_samples: usize,
    /// Median smoothed RTT over sockets with a sample, microseconds.
    pub median_rtt_us: Option<f64>,
    /// Median of the sockets' minimum RTTs, microseconds.
    pub median_min_rtt_us: Option<f64>,
    /// Sum of the delivery rates that measured the path, bytes per second:
    /// an app-limited sample (`tcpi_delivery_rate_app_limited`) measured
    /// how fast the application wrote, not the path, and is left out.
    pub delivery_rate_total: u64,
    /// Sockets whose delivery rate is in the total.
    pub delivery_rate_samples: usize,
    /// Sockets with an app-limited delivery rate (left out of the total).
    pub delivery_rate_app_limited: usize,
    /// Sum of bytes sent (including retransmissions).
    pub bytes_sent: u64,
    /// Sum of bytes retransmitted.
    pub bytes_retrans: u64,
    /// Sum of segments retransmitted over the sockets' lives.
    pub total_retrans: u64,
}

impl AlgoSummary {
    /// Retransmitted bytes over bytes sent (0..1); `None` when nothing was sent.
    pub fn retrans_ratio(&self) -> Option<f64> {
        (self.bytes_sent > 0).then(|| self.bytes_retrans as f64 / self.bytes_sent as f64)
    }
}

/// Median of `v` (mean of the two middle values for an even count).
pub fn median(v: &mut [f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

/// One summary per algorithm, most sockets first (ties by name, sockets
/// without an algorithm last).
pub fn by_algorithm(socks: &[Socket]) -> Vec<AlgoSummary> {
    #[derive(Default)]
    struct Acc {
        sockets: usize,
        rtt: Vec<f64>,
        min_rtt: Vec<f64>,
        rate: u64,
        rate_samples: usize,
        app_limited: usize,
        sent: u64,
        retrans: u64,
        total_retrans: u64,
    }
    let mut groups: BTreeMap<Option<&str>, Acc> = BTreeMap::new();
    for s in socks {
        let a = groups.entry(s.cc.as_deref()).or_default();
        a.sockets += 1;
        let Some(t) = &s.tcp_info else { continue };
        a.rtt.extend(t.rtt_sample_us().map(f64::from));
        a.min_rtt.extend(t.min_rtt_sample_us().map(f64::from));
        match (
            t.delivery_rate.filter(|&r| r > 0),
            t.delivery_rate_app_limited,
        ) {
            (None, _) => {}
            (Some(_), Some(true)) => a.app_limited += 1,
            (Some(r), _) => {
                a.rate = a.rate.saturating_add(r);
                a.rate_samples += 1;
            }
        }
        a.sent = a.sent.saturating_add(t.bytes_sent.unwrap_or(0));
        a.retrans = a.retrans.saturating_add(t.bytes_retrans.unwrap_or(0));
        a.total_retrans += u64::from(t.total_retrans.unwrap_or(0));
    }
    let mut out: Vec<AlgoSummary> = groups
        .into_iter()
        .map(|(cc, mut a)| AlgoSummary {
            cc: cc.map(str::to_string),
            sockets: a.sockets,
            rtt_samples: a.rtt.len(),
            median_rtt_us: median(&mut a.rtt),
            median_min_rtt_us: median(&mut a.min_rtt),
            delivery_rate_total: a.rate,
            delivery_rate_samples: a.rate_samples,
            delivery_rate_app_limited: a.app_limited,
            bytes_sent: a.sent,
            bytes_retrans: a.retrans,
            total_retrans: a.total_retrans,
        })
        .collect();
    out.sort_by(|a, b| {
        b.sockets
            .cmp(&a.sockets)
            .then_with(|| (a.cc.is_none(), &a.cc).cmp(&(b.cc.is_none(), &b.cc)))
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::TcpInfo;

    fn sock(
        cc: Option<&str>,
        rtt: u32,
        min_rtt: u32,
        rate: u64,
        sent: u64,
        retrans: u64,
    ) -> Socket {
        let mut b = vec![0u8; crate::TCP_INFO_KNOWN_LEN];
        b[68..72].copy_from_slice(&rtt.to_ne_bytes());
        b[148..152].copy_from_slice(&min_rtt.to_ne_bytes());
        b[160..168].copy_from_slice(&rate.to_ne_bytes());
        b[200..208].copy_from_slice(&sent.to_ne_bytes());
        b[208..216].copy_from_slice(&retrans.to_ne_bytes());
        Socket {
            tcp_info: cc.map(|_| TcpInfo::parse(&b)),
            ..crate::testing::socket(
                cc,
                "127.0.0.1:1".parse().unwrap(),
                "127.0.0.1:2".parse().unwrap(),
            )
        }
    }

    #[test]
    fn medians_totals_and_ratio() {
        let socks = vec![
            sock(Some("bbr"), 1000, 500, 10, 1000, 10),
            sock(Some("bbr"), 3000, u32::MAX, 20, 1000, 30),
            sock(Some("bbr"), 0, 900, 30, 0, 0),
            sock(Some("cubic"), 2000, 100, 5, 0, 0),
            sock(None, 0, 0, 0, 0, 0),
        ];
        let s = by_algorithm(&socks);
        assert_eq!(s.len(), 3);
        let bbr = &s[0];
        assert_eq!(
            (bbr.cc.as_deref(), bbr.sockets, bbr.rtt_samples),
            (Some("bbr"), 3, 2)
        );
        assert_eq!(bbr.median_rtt_us, Some(2000.0), "zero RTT = no sample");
        assert_eq!(
            bbr.median_min_rtt_us,
            Some(700.0),
            "~0U min RTT = no sample"
        );
        assert_eq!(bbr.delivery_rate_total, 60);
        assert_eq!(
            (bbr.delivery_rate_samples, bbr.delivery_rate_app_limited),
            (3, 0)
        );
        assert_eq!(bbr.retrans_ratio(), Some(0.02));
        assert_eq!(s[1].cc.as_deref(), Some("cubic"));
        assert_eq!(s[1].retrans_ratio(), None);
        assert_eq!(
            (s[2].cc.as_deref(), s[2].sockets, s[2].median_rtt_us),
            (None, 1, None)
        );
    }

    /// Issue 21 item 9: two idle BBR sockets that sent 189 bytes reported
    /// app-limited delivery rates (the application, not the path) and the
    /// total added them up to 46.6 Gbit/s. They are counted apart now.
    #[test]
    fn app_limited_rates_are_left_out_of_the_total() {
        let mut socks = vec![
            sock(Some("bbr"), 11, 11, 2_975_000_000, 189, 0),
            sock(Some("bbr"), 11, 11, 2_850_000_000, 189, 0),
            sock(Some("bbr"), 11, 11, 1_000, 5000, 0),
            sock(Some("bbr"), 11, 11, 0, 0, 0),
        ];
        for s in &mut socks[..2] {
            s.tcp_info.as_mut().unwrap().delivery_rate_app_limited = Some(true);
        }
        let bbr = &by_algorithm(&socks)[0];
        assert_eq!(bbr.delivery_rate_total, 1_000, "only the path's sample");
        assert_eq!(bbr.delivery_rate_samples, 1);
        assert_eq!(bbr.delivery_rate_app_limited, 2);
        let idle = &by_algorithm(&socks[..2])[0];
        assert_eq!(
            (idle.delivery_rate_total, idle.delivery_rate_samples),
            (0, 0)
        );
    }

    #[test]
    fn median_of_odd_even_and_empty() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&mut [4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(&mut []), None);
    }
}
