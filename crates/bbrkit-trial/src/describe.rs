//! What each arm's connections did, described without inference:
//! connections, bytes, goodput quantiles, flow completion time by size
//! class, the pooled retransmit rate and its spread across connections, RTT
//! inflation, and the pooled time fractions limited by the receive window,
//! the send buffer and the application.
//!
//! Every quantile is statrs' R-8 (median-unbiased, Hyndman & Fan 1996,
//! type 8), exact over the values. Pooled rates are ratios of sums (a big
//! connection weighs by its size), spreads are per-connection quantiles.

use std::collections::HashSet;

use serde::Serialize;
use statrs::statistics::{Data, OrderStatistics};

use crate::observe::{Obs, OpenObs};
use crate::words::{FctQuantiles, SizeClass};

/// p10, median and p90 of a per-connection quantity.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Spread {
    /// 10th percentile.
    pub p10: f64,
    /// Median.
    pub median: f64,
    /// 90th percentile.
    pub p90: f64,
}

/// Pooled fractions of time (0..1) limited by something other than the
/// network: when they are large, congestion control cannot help.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Limited {
    /// Receive-window-limited over busy time.
    pub rwnd: f64,
    /// Send-buffer-limited over busy time.
    pub sndbuf: f64,
    /// Time with nothing to send over the connections' lifetime.
    pub app: f64,
}

/// One size class of one arm.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClassSummary {
    /// The class.
    pub class: SizeClass,
    /// Closed connections in it.
    pub connections: u64,
    /// Goodput quantiles (bits per second).
    pub goodput_bits_per_second: Option<Spread>,
    /// Flow completion time (established to close) quantiles, ms.
    pub fct_ms: FctQuantiles,
}

/// One arm of one group: closed connections only.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ArmSummary {
    /// `A` or `B`.
    pub arm: &'static str,
    /// The arm's algorithm.
    pub cc: String,
    /// Closed connections.
    pub connections: u64,
    /// Distinct units of randomization among them.
    pub units: u64,
    /// Connections the program did not set to the arm's algorithm (the
    /// application chose its own, or the kernel refused the name); they
    /// stay in their arm (intention to treat).
    pub not_assigned: u64,
    /// Connections that closed running another algorithm than the arm's
    /// (not assigned, or changed by the application afterwards); they too
    /// stay in their arm.
    pub other_cc: u64,
    /// Payload bytes acknowledged by the peers.
    pub bytes_acked: u64,
    /// Payload bytes received.
    pub bytes_received: u64,
    /// Goodput over busy time, per connection.
    pub goodput_bits_per_second: Option<Spread>,
    /// Retransmitted over sent segments, all connections pooled.
    pub retransmit_rate: Option<f64>,
    /// Retransmit rate per connection.
    pub retransmit_rate_per_connection: Option<Spread>,
    /// Smoothed over minimum RTT, per connection.
    pub rtt_inflation: Option<Spread>,
    /// Pooled limited fractions.
    pub limited: Option<Limited>,
    /// Per size class, classes without a connection left out.
    pub classes: Vec<ClassSummary>,
}

/// Connections of one arm still open at the end (never mixed into the
/// closed ones: their transfers are unfinished and their goodput so far).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OpenSummary {
    /// `A` or `B`.
    pub arm: &'static str,
    /// Connections open at the end.
    pub connections: u64,
    /// Bytes acknowledged so far.
    pub bytes_acked: u64,
    /// Goodput so far.
    pub goodput_bits_per_second: Option<Spread>,
}

/// p10, median, p90 of `values` (none when empty).
pub fn spread(values: Vec<f64>) -> Option<Spread> {
    if values.is_empty() {
        return None;
    }
    let mut d = Data::new(values);
    Some(Spread {
        p10: d.quantile(0.1),
        median: d.quantile(0.5),
        p90: d.quantile(0.9),
    })
}

fn fct(values: Vec<f64>) -> FctQuantiles {
    let mut d = Data::new(values);
    FctQuantiles {
        p50: d.quantile(0.5),
        p90: d.quantile(0.9),
        p99: d.quantile(0.99),
    }
}

fn ratio(part: u64, whole: u64) -> f64 {
    part as f64 / whole as f64
}

/// Describes one arm's closed connections `obs`.
pub(crate) fn arm_summary(name: &'static str, cc: &str, obs: &[&Obs]) -> ArmSummary {
    let units: HashSet<u32> = obs.iter().map(|o| o.unit).collect();
    let sum = |f: fn(&Obs) -> u64| obs.iter().map(|o| f(o)).sum::<u64>();
    let segs = sum(|o| u64::from(o.segs_out));
    let busy = sum(|o| o.busy_us);
    let life = sum(|o| o.duration_us);
    let limited = (busy > 0 && life > 0).then(|| Limited {
        rwnd: ratio(sum(|o| o.rwnd_limited_us), busy),
        sndbuf: ratio(sum(|o| o.sndbuf_limited_us), busy),
        app: 1.0 - ratio(sum(|o| o.busy_us.min(o.duration_us)), life),
    });
    ArmSummary {
        arm: name,
        cc: cc.into(),
        connections: obs.len() as u64,
        units: units.len() as u64,
        not_assigned: obs.iter().filter(|o| !o.assigned).count() as u64,
        other_cc: obs.iter().filter(|o| !o.ran_arm_cc).count() as u64,
        bytes_acked: sum(|o| o.bytes_acked),
        bytes_received: sum(|o| o.bytes_received),
        goodput_bits_per_second: spread(obs.iter().filter_map(|o| o.goodput).collect()),
        retransmit_rate: (segs > 0).then(|| ratio(sum(|o| u64::from(o.total_retrans)), segs)),
        retransmit_rate_per_connection: spread(
            obs.iter()
                .filter(|o| o.segs_out > 0)
                .map(|o| f64::from(o.total_retrans) / f64::from(o.segs_out))
                .collect(),
        ),
        rtt_inflation: spread(obs.iter().filter_map(|o| o.rtt_inflation).collect()),
        limited,
        classes: SizeClass::ALL
            .iter()
            .filter_map(|&c| class_summary(c, obs))
            .collect(),
    }
}

fn class_summary(class: SizeClass, obs: &[&Obs]) -> Option<ClassSummary> {
    let of: Vec<&&Obs> = obs.iter().filter(|o| o.class == class).collect();
    (!of.is_empty()).then(|| ClassSummary {
        class,
        connections: of.len() as u64,
        goodput_bits_per_second: spread(of.iter().filter_map(|o| o.goodput).collect()),
        fct_ms: fct(of.iter().map(|o| o.duration_us as f64 / 1e3).collect()),
    })
}

/// Describes one arm's connections still open at the end.
pub(crate) fn open_summary(name: &'static str, open: &[&OpenObs]) -> OpenSummary {
    OpenSummary {
        arm: name,
        connections: open.len() as u64,
        bytes_acked: open.iter().map(|o| o.bytes_acked).sum(),
        goodput_bits_per_second: spread(open.iter().filter_map(|o| o.goodput).collect()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observe::tests::rec;
    use crate::{Trial, TrialDef};

    fn trial(records: &[bbrkit_policy::ConnRecord]) -> Trial {
        let mut t = Trial::new(TrialDef::new("cubic", "bbr")).unwrap();
        t.extend(records);
        t
    }

    #[test]
    fn quantiles_are_r8_over_the_values() {
        let s = spread((1..=9).map(f64::from).collect()).unwrap();
        assert_eq!(s.median, 5.0);
        // R-8 at 0.1 of 9 values: h = (9 + 1/3) * 0.1 + 1/3 = 1.2667.
        assert!((s.p10 - 1.2667).abs() < 1e-3, "{s:?}");
        assert!((s.p90 - 8.7333).abs() < 1e-3, "{s:?}");
        assert_eq!(spread(vec![]), None);
        assert_eq!(spread(vec![4.0]).unwrap().p90, 4.0);
    }

    #[test]
    fn an_arm_pools_rates_and_spreads_per_connection() {
        let mut a = rec(1, 0, "192.0.2.1", 10_000_000, 8e6); // 6906 segments
        a.segs_out = 1000;
        a.total_retrans = 100;
        a.rwnd_limited_us = a.busy_us / 2;
        let mut b = rec(2, 0, "192.0.2.2", 50_000, 4e6);
        b.segs_out = 9000;
        b.total_retrans = 0;
        b.assigned = false;
        b.cc = "reno".into();
        let t = trial(&[a.clone(), b.clone()]);
        let obs: Vec<&Obs> = t.obs.iter().collect();
        let s = arm_summary("A", "cubic", &obs);
        assert_eq!(
            (s.connections, s.units, s.not_assigned, s.other_cc),
            (2, 2, 1, 1)
        );
        assert_eq!(s.bytes_acked, 10_050_000);
        assert_eq!(s.retransmit_rate, Some(0.01), "pooled: 100 of 10000");
        let per = s.retransmit_rate_per_connection.unwrap();
        assert!(per.p90 > 0.05 && per.p10 < 0.05, "{per:?}");
        assert!((s.goodput_bits_per_second.unwrap().median - 6e6).abs() < 1.0);
        let lim = s.limited.unwrap();
        let busy = (a.busy_us + b.busy_us) as f64;
        assert!((lim.rwnd - (a.busy_us / 2) as f64 / busy).abs() < 1e-9);
        assert!(lim.app > 0.0 && lim.app < 1.0, "{lim:?}");
        assert_eq!(s.classes.len(), 2);
        assert_eq!(s.classes[0].class, SizeClass::Under100Kb);
        assert_eq!(s.classes[1].class, SizeClass::Over10Mb);
        let fct = s.classes[1].fct_ms.p50;
        assert!((fct - a.duration_us() as f64 / 1e3).abs() < 1e-9);
    }

    #[test]
    fn an_empty_arm_has_no_rates() {
        let s = arm_summary("B", "bbr", &[]);
        assert_eq!(s.connections, 0);
        assert_eq!(s.goodput_bits_per_second, None);
        assert_eq!(s.retransmit_rate, None);
        assert_eq!(s.limited, None);
        assert!(s.classes.is_empty());
    }
}
