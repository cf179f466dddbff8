//! The analysis of a sampling window: groups, estimates, predictions,
//! verdicts, as plain serialisable data in SI units with the unit in the key
//! (the CLI's `--json` prints it as it is).
//!
//! Owns which groups get a prediction (enough bytes, a loss estimate, a
//! minimum RTT, a capacity) and the path each is simulated on. Must never
//! print or read a clock.

use std::net::IpAddr;

use bbrkit_cc::Duration;
use bbrkit_diag::link::Link;
use serde::Serialize;

use crate::estimate::{Interval, Limited};
use crate::group::{self, Group};
pub use crate::predict::Predicted;
use crate::predict::{self, PathGuess, Prediction, RateSource};
use crate::sampler::SamplingStats;
use crate::verdict::{self, Advice};
use crate::{AdviseError, Tracker};

/// What to analyse and how.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// IPv4 prefix length of a group.
    pub prefix_v4: u8,
    /// IPv6 prefix length of a group.
    pub prefix_v6: u8,
    /// Bytes (sent + received) a group needs for a verdict other than
    /// `insufficient_data`.
    pub min_bytes: u64,
    /// The paths' capacity, bits/s, when known (`--path-rate`).
    pub path_rate_bps: Option<u64>,
    /// Keep connections to loopback addresses (they never cross a network).
    pub include_loopback: bool,
    /// The port sampling was restricted to (`--port`), for the trial
    /// command that would measure a verdict.
    pub port: Option<u16>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            prefix_v4: 24,
            prefix_v6: 48,
            min_bytes: 1_000_000,
            path_rate_bps: None,
            include_loopback: false,
            port: None,
        }
    }
}

impl Options {
    /// Checks the prefix lengths.
    pub fn check(&self) -> Result<(), AdviseError> {
        if self.prefix_v4 > 32 {
            return Err(AdviseError::Invalid(format!(
                "IPv4 prefix length {} is longer than 32",
                self.prefix_v4
            )));
        }
        if self.prefix_v6 > 128 {
            return Err(AdviseError::Invalid(format!(
                "IPv6 prefix length {} is longer than 128",
                self.prefix_v6
            )));
        }
        Ok(())
    }
}

/// One group in the report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GroupReport {
    /// Remote prefix.
    pub prefix: String,
    /// Distinct connections seen.
    pub connections: usize,
    /// Bytes this host sent (acknowledged by the peers) during the window.
    pub bytes_sent: u64,
    /// Bytes this host received during the window.
    pub bytes_received: u64,
    /// Smallest minimum RTT, ms.
    pub min_rtt_ms: Option<f64>,
    /// Mean smoothed RTT, ms.
    pub mean_rtt_ms: Option<f64>,
    /// Loss the sender saw, 0..1 (`null`: this host sent no data to them).
    pub loss: Option<f64>,
    /// 95 % interval of `loss`.
    pub loss_interval: Option<[f64; 2]>,
    /// Data segments sent and retransmitted (the loss estimate's n and k).
    pub segments_sent: u64,
    /// See `segments_sent`.
    pub segments_retransmitted: u64,
    /// Throughput while busy, per connection, bits/s.
    pub throughput_bits_per_second: Option<f64>,
    /// Algorithm carrying most of the bytes.
    pub cc: Option<String>,
    /// Connections per algorithm.
    pub cc_connections: std::collections::BTreeMap<String, usize>,
    /// Fractions of the observed time (`null`: no connection seen twice).
    pub limited: Option<Limited>,
    /// Capacity the prediction assumed (its lower end when not given), bits/s.
    pub path_rate_bits_per_second: Option<f64>,
    /// `given` (`--path-rate`) or `highest_delivery_rate` (the lower end of
    /// an unknown capacity).
    pub path_rate_source: Option<RateSource>,
    /// When the capacity is not given: the interface that reaches the group.
    pub path_rate_link: Option<String>,
    /// ... and its speed, the capacity's upper end (`null`: not reported).
    pub path_rate_high_bits_per_second: Option<f64>,
    /// Predicted throughput at the loss estimate, bits/s (at the lower end
    /// of an unknown capacity).
    pub predicted_bits_per_second: Option<Predicted>,
    /// The same at the capacity's upper end (the link's speed), when known.
    pub predicted_high_bits_per_second: Option<Predicted>,
    /// BBR's gain over the baseline from the capacity's lower end to its
    /// upper end (`high` `null` when the link reports no speed; equal ends
    /// when the capacity is given).
    pub gain_range: Option<GainRange>,
    /// The full prediction: ranges over the loss interval, gains.
    pub prediction: Option<Prediction>,
    /// Achieved throughput over the simulator's prediction for the group's
    /// own algorithm at the loss estimate: how well the model fits this
    /// path (near 1 for a bulk, loss-limited flow; below 1 when the flows
    /// are short or limited by something the model does not have).
    pub achieved_over_predicted: Option<f64>,
    /// The verdict, why, the command that acts on it and the trial that
    /// would measure it (flattened: `verdict`, `reason`, `action`, `measure`).
    #[serde(flatten)]
    pub advice: Advice,
}

/// A gain from the capacity's lower end to its upper end.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct GainRange {
    /// At the lower end.
    pub low: f64,
    /// At the upper end (`null`: unknown).
    pub high: Option<f64>,
}

/// The whole analysis.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// Sampling cost and size.
    pub sampling: SamplingStats,
    /// Distinct connections seen (after dropping loopback unless kept).
    pub connections: usize,
    /// Connections to loopback addresses left out (0 with `--include-loopback`).
    pub loopback_connections_left_out: usize,
    /// Groups, largest (bytes sent + received) first.
    pub groups: Vec<GroupReport>,
}

pub use crate::predict::MAX_PREDICTIONS;

/// Where the interface that reaches an address is found (and its speed):
/// `sampler::live_links` on the host, a fixture in tests.
pub type Links<'a> = &'a dyn Fn(IpAddr) -> Option<Link>;

/// Analyses what `tracker` saw; `links` names the interface each group is
/// reached through (the upper end of an unknown capacity).
pub fn analyze(
    tracker: &Tracker,
    sampling: SamplingStats,
    opts: &Options,
    links: Links<'_>,
) -> Result<Report, AdviseError> {
    opts.check()?;
    let (conns, loopback): (Vec<_>, Vec<_>) = tracker
        .conns()
        .partition(|c| opts.include_loopback || !group::canonical(c.remote.ip()).is_loopback());
    let mut groups = Vec::new();
    let mut predicted = 0;
    for g in group::groups(conns.iter().copied(), opts.prefix_v4, opts.prefix_v6) {
        let path = path_for(&g, opts, links).filter(|_| predicted < MAX_PREDICTIONS);
        predicted += usize::from(path.is_some());
        groups.push(report_group(g, path, opts)?);
    }
    Ok(Report {
        sampling,
        connections: conns.len(),
        loopback_connections_left_out: loopback.len(),
        groups,
    })
}

/// The path to simulate for `g`, when it has what a prediction needs (a
/// loopback group has no network path: it gets none).
pub fn path_for(g: &Group, opts: &Options, links: Links<'_>) -> Option<PathGuess> {
    let moved = g.bytes_sent + g.bytes_received;
    if moved < opts.min_bytes || g.bytes_sent < g.bytes_received || g.loopback {
        return None;
    }
    let loss = g.loss?;
    let rtt_us = g.min_rtt_us?;
    let (rate_bps, rate_source) = match opts.path_rate_bps {
        Some(r) => (r, RateSource::Given),
        None => (
            g.max_delivery_rate_bits_per_second?.round() as u64,
            RateSource::HighestDeliveryRate,
        ),
    };
    let queue_loss = g
        .mean_srtt_us
        .is_some_and(|s| s > predict::QUEUE_RTT_RATIO * f64::from(rtt_us));
    let zero = Interval {
        low: 0.0,
        estimate: 0.0,
        high: 0.0,
    };
    Some(PathGuess {
        rate_bps: rate_bps.max(1),
        link: (rate_source == RateSource::HighestDeliveryRate)
            .then(|| links(g.address))
            .flatten(),
        rate_source,
        rtt: Duration::from_micros(u64::from(rtt_us)),
        loss: if queue_loss { zero } else { loss },
        queue_loss,
    })
}

fn report_group(
    g: Group,
    path: Option<PathGuess>,
    opts: &Options,
) -> Result<GroupReport, AdviseError> {
    let prediction = path
        .as_ref()
        .map(|p| predict::predict(p, g.main_cc.as_deref()))
        .transpose()?;
    let advice = verdict::decide(
        &g,
        &verdict::Basis {
            path: path.as_ref(),
            prediction: prediction.as_ref(),
            min_bytes: opts.min_bytes,
            port: opts.port,
        },
    );
    Ok(GroupReport {
        prefix: g.prefix.clone(),
        connections: g.connections,
        bytes_sent: g.bytes_sent,
        bytes_received: g.bytes_received,
        min_rtt_ms: g.min_rtt_us.map(|u| f64::from(u) / 1e3),
        mean_rtt_ms: g.mean_srtt_us.map(|u| u / 1e3),
        loss: g.loss.map(|l| l.estimate),
        loss_interval: g.loss.map(|l| [l.low, l.high]),
        segments_sent: g.segments_sent,
        segments_retransmitted: g.segments_retransmitted,
        throughput_bits_per_second: g.throughput_bits_per_second,
        cc: g.main_cc.clone(),
        cc_connections: g.cc.clone(),
        limited: g.limited,
        path_rate_bits_per_second: path.as_ref().map(|p| p.rate_bps as f64),
        path_rate_source: path.as_ref().map(|p| p.rate_source),
        path_rate_link: path
            .as_ref()
            .and_then(|p| Some(p.link.as_ref()?.dev.clone())),
        path_rate_high_bits_per_second: path
            .as_ref()
            .and_then(|p| p.link.as_ref()?.bits_per_second)
            .map(|b| b as f64),
        predicted_bits_per_second: prediction.as_ref().map(|p| Predicted {
            cubic: p.bits_per_second.cubic.estimate,
            bbr: p.bits_per_second.bbr.estimate,
            bbr3: p.bits_per_second.bbr3.estimate,
        }),
        predicted_high_bits_per_second: prediction
            .as_ref()
            .and_then(|p| Some(p.at_link_speed.as_ref()?.bits_per_second)),
        gain_range: prediction
            .as_ref()
            .zip(path.as_ref())
            .map(|(p, path)| GainRange {
                low: p.gain.estimate,
                high: match (&p.at_link_speed, path.rate_source) {
                    (Some(at), _) => Some(at.gain),
                    (None, RateSource::Given) => Some(p.gain.estimate),
                    (None, _) => path
                        .link
                        .as_ref()
                        .and_then(|l| l.bits_per_second)
                        .map(|_| p.gain.estimate),
                },
            }),
        achieved_over_predicted: match (&prediction, g.throughput_bits_per_second) {
            (Some(p), Some(t)) if p.baseline_bits_per_second.estimate > 0.0 => {
                Some(t / p.baseline_bits_per_second.estimate)
            }
            _ => None,
        },
        prediction,
        advice,
    })
}
