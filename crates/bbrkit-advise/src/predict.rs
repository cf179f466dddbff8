//! Predicted throughput of CUBIC, BBR (v1) and bbr3 on a group's path, from
//! the deterministic simulator (`bbrkit-sim`, whose CUBIC and BBR agree with
//! the kernel's within a few percent: docs/sim-validation.md).
//!
//! Owns the simulated path built from the estimates and what it assumes:
//! * RTT = the group's minimum RTT (the propagation delay);
//! * random loss = the loss the sender saw, at its estimate and at both ends
//!   of its 95 % interval (three runs per algorithm, so the prediction
//!   carries the data's uncertainty) — unless the flows build a queue (their
//!   smoothed RTT well above the minimum), in which case their losses are
//!   the queue's and the path is simulated without random loss (the
//!   simulator's own bottleneck recreates them);
//! * capacity = `--path-rate` when given; else unknown, and predicted as a
//!   range: from the highest delivery rate any connection of the group
//!   measured (a loss-limited flow does not reveal the path's capacity, so
//!   this is its lower end) up to the speed of the interface that reaches
//!   the group (its upper end, at the loss estimate; open when the driver
//!   reports no speed);
//! * a drop-tail buffer of one bandwidth-delay product, one bulk flow,
//!   Linux defaults (MSS 1448, IW 10, unpaced CUBIC as without `fq`).
//!
//! Every run is seeded (seed 1) and short: 150 RTTs, at least 3 s and at
//! most 10 s simulated, at most ~500 000 packets, on a capacity of at
//! most 1 Gbit/s (a faster path is simulated at 1 Gbit/s: BBR's prediction
//! and gain are then lower bounds, CUBIC's is unchanged while loss, not
//! capacity, limits it). The runs of one prediction are spread over the
//! CPUs; each is deterministic, so threads never change the result. Must
//! never read a clock or touch the host.

use bbrkit_cc::{Algorithm, Duration};
use bbrkit_sim::{FlowConfig, PathConfig, SimConfig};
use bbrkit_vocab::PathConditions;
use serde::Serialize;

use crate::AdviseError;
use crate::estimate::Interval;

/// Seed of every prediction run (the output is reproducible).
pub const SEED: u64 = 1;
/// Groups simulated at most (the largest by bytes); a prediction costs
/// 0.1-3 s of CPU, so a host talking to thousands of prefixes gets its
/// verdicts in seconds, not hours.
pub const MAX_PREDICTIONS: usize = 10;
/// Smoothed RTT over minimum RTT above which a group counts as filling a
/// queue: its losses are then congestion, not random loss. A flow limited
/// by random loss keeps the queue empty (srtt within a few % of min RTT);
/// CUBIC filling a 1-BDP buffer averages about 1.5x.
pub const QUEUE_RTT_RATIO: f64 = 1.25;
/// Simulated round trips per run, and the run-length bounds in seconds.
const SIM_RTTS: f64 = 150.0;
const SIM_MIN_S: f64 = 3.0;
const SIM_MAX_S: f64 = 10.0;
/// Packet budget of one run (a 1 Gbit/s, 50 ms prediction took 2.9 s of
/// wall time with 1 million, at load 6 on 2 CPUs).
const SIM_MAX_PACKETS: f64 = 0.5e6;
/// Largest capacity simulated, bits/s (measured: a 10 Gbit/s, 100 ms
/// prediction took 23 s of wall time uncapped).
pub const RATE_CAP_BPS: u64 = 1_000_000_000;

/// Where the capacity of the simulated path comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RateSource {
    /// `--path-rate`.
    Given,
    /// Not given: the highest delivery rate seen is its lower end (and the
    /// link's speed, when it reports one, its upper end).
    HighestDeliveryRate,
}

/// The path to simulate, as measured: an estimate with its provenance and
/// intervals, from which each simulation takes one bbrkit
/// [`PathConditions`] ([`PathGuess::conditions`]); the estimate itself is
/// not a path's conditions (a rate range and its source, a loss interval).
#[derive(Debug, Clone, PartialEq)]
pub struct PathGuess {
    /// Capacity (its lower end when not given), bits per second.
    pub rate_bps: u64,
    /// Where it comes from.
    pub rate_source: RateSource,
    /// When the capacity is not given: the interface the group is reached
    /// through, whose speed is the capacity's upper end.
    pub link: Option<bbrkit_diag::link::Link>,
    /// Round-trip propagation delay.
    pub rtt: Duration,
    /// Random loss to simulate (estimate and interval).
    pub loss: Interval,
    /// The group's loss was attributed to its own queue (`loss` is then zero).
    pub queue_loss: bool,
}

impl PathGuess {
    /// The conditions one simulation runs: this RTT at `rate_bps` with
    /// random loss `loss`, 1 BDP of buffer, no jitter.
    pub fn conditions(&self, rate_bps: u64, loss: f64) -> PathConditions {
        PathConditions {
            rate_bps: Some(rate_bps),
            ..PathConditions::new(self.rtt, loss)
        }
    }
}

/// Throughput of each algorithm, bits per second.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PerAlgorithm {
    /// CUBIC.
    pub cubic: Interval,
    /// BBR v1 (the kernel's `bbr`).
    pub bbr: Interval,
    /// BBRv3.
    pub bbr3: Interval,
}

/// Predicted throughput of each algorithm at one point, bits/s.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Predicted {
    /// CUBIC.
    pub cubic: f64,
    /// BBR (v1, the kernel's `bbr`).
    pub bbr: f64,
    /// BBRv3.
    pub bbr3: f64,
}

/// The prediction at the upper end of an unknown capacity: the speed of
/// the interface that reaches the group, at the loss estimate.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AtLinkSpeed {
    /// The interface (`eth0`).
    pub link: String,
    /// Its speed, bits/s.
    pub link_bits_per_second: u64,
    /// Capacity simulated (the link's, capped at [`RATE_CAP_BPS`]).
    pub simulated_bits_per_second: u64,
    /// Simulated seconds of each run.
    pub simulated_s: f64,
    /// Per algorithm.
    pub bits_per_second: Predicted,
    /// The baseline's predicted throughput.
    pub baseline_bits_per_second: f64,
    /// BBR over the baseline.
    pub gain: f64,
    /// bbr3 over the baseline.
    pub gain_bbr3: f64,
    /// Number of simulator runs.
    pub runs: usize,
}

/// What the simulator predicts for one group.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Prediction {
    /// Per algorithm: at the loss estimate, and the range over the interval.
    pub bits_per_second: PerAlgorithm,
    /// The algorithm the gain is measured against (the group's, or CUBIC
    /// when its algorithm is not simulated).
    pub baseline: &'static str,
    /// The baseline's predicted throughput, bits/s.
    pub baseline_bits_per_second: Interval,
    /// BBR's predicted throughput over the baseline's, on the same runs.
    pub gain: Interval,
    /// bbr3's predicted throughput over the baseline's.
    pub gain_bbr3: Interval,
    /// Simulated seconds of each run.
    pub simulated_s: f64,
    /// Capacity simulated, bits/s (the path's, capped at [`RATE_CAP_BPS`]).
    pub simulated_bits_per_second: u64,
    /// Number of simulator runs (at the capacity's lower end).
    pub runs: usize,
    /// When the capacity is not given and the interface reports a faster
    /// speed: the same at that speed (`None` otherwise).
    pub at_link_speed: Option<AtLinkSpeed>,
}

/// The simulator's model of the kernel algorithm `cc` (`None`: not modelled).
pub fn model_of(cc: &str) -> Option<Algorithm> {
    match cc {
        "cubic" => Some(Algorithm::Cubic),
        "reno" => Some(Algorithm::Reno),
        "bbr" => Some(Algorithm::Bbr1),
        "bbr3" => Some(Algorithm::Bbr3),
        _ => None,
    }
}

/// Simulated time for a path of `rate_bps` and `rtt`.
pub fn sim_duration(rate_bps: u64, rtt: Duration) -> Duration {
    let by_rtt = (SIM_RTTS * rtt.as_secs_f64()).clamp(SIM_MIN_S, SIM_MAX_S);
    let packets_per_s = rate_bps as f64 / 12_000.0;
    let by_budget = (SIM_MAX_PACKETS / packets_per_s).max(SIM_MIN_S);
    Duration::from_secs_f64(by_rtt.min(by_budget))
}

/// Runs the simulator for CUBIC, BBR, bbr3 (and the group's own algorithm
/// when it is another one, e.g. Reno) at each distinct loss point.
pub fn predict(path: &PathGuess, current: Option<&str>) -> Result<Prediction, AdviseError> {
    let base = current.and_then(model_of).unwrap_or(Algorithm::Cubic);
    let mut algos = vec![Algorithm::Cubic, Algorithm::Bbr1, Algorithm::Bbr3];
    if !algos.contains(&base) {
        algos.push(base);
    }
    let mut points = vec![path.loss.estimate, path.loss.low, path.loss.high];
    points.sort_by(f64::total_cmp);
    points.dedup();
    let rate = path.rate_bps.min(RATE_CAP_BPS);
    let duration = sim_duration(rate, path.rtt);
    let jobs: Vec<(f64, Algorithm)> = points
        .iter()
        .flat_map(|&p| algos.iter().map(move |&a| (p, a)))
        .collect();
    let results = run_all(&jobs, |&(p, a)| simulate(path, rate, a, p, duration))?;
    // rows[i][j]: throughput of algos[j] at points[i].
    let rows: Vec<&[f64]> = results.chunks(algos.len()).collect();
    let at = |p: f64| points.iter().position(|&x| x == p).unwrap_or(0);
    let col = |a: Algorithm| algos.iter().position(|&x| x == a).unwrap_or(0);
    let est = at(path.loss.estimate);
    let interval = |f: &dyn Fn(&[f64]) -> f64| {
        let v: Vec<f64> = rows.iter().map(|r| f(r)).collect();
        Interval {
            low: v.iter().copied().fold(f64::INFINITY, f64::min),
            estimate: v[est],
            high: v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        }
    };
    let (c, b, b3, k) = (
        col(Algorithm::Cubic),
        col(Algorithm::Bbr1),
        col(Algorithm::Bbr3),
        col(base),
    );
    Ok(Prediction {
        bits_per_second: PerAlgorithm {
            cubic: interval(&|r| r[c]),
            bbr: interval(&|r| r[b]),
            bbr3: interval(&|r| r[b3]),
        },
        baseline: base.name(),
        baseline_bits_per_second: interval(&|r| r[k]),
        gain: interval(&|r| ratio(r[b], r[k])),
        gain_bbr3: interval(&|r| ratio(r[b3], r[k])),
        simulated_s: duration.as_secs_f64(),
        simulated_bits_per_second: rate,
        runs: points.len() * algos.len(),
        at_link_speed: at_link_speed(path, &algos, base)?,
    })
}

fn ratio(x: f64, y: f64) -> f64 {
    if y > 0.0 { x / y } else { f64::INFINITY }
}

/// The runs at the link's speed, at the loss estimate, when the capacity is
/// not given and the link (capped at [`RATE_CAP_BPS`]) is faster than the
/// capacity's lower end.
fn at_link_speed(
    path: &PathGuess,
    algos: &[Algorithm],
    base: Algorithm,
) -> Result<Option<AtLinkSpeed>, AdviseError> {
    let Some((link, speed)) = path
        .link
        .as_ref()
        .and_then(|l| Some((l.dev.clone(), l.bits_per_second?)))
    else {
        return Ok(None);
    };
    let rate = speed.min(RATE_CAP_BPS);
    if rate <= path.rate_bps.min(RATE_CAP_BPS) {
        return Ok(None);
    }
    let duration = sim_duration(rate, path.rtt);
    let p = path.loss.estimate;
    let got = run_all(algos, |&a| simulate(path, rate, a, p, duration))?;
    let of = |a: Algorithm| got[algos.iter().position(|&x| x == a).unwrap_or(0)];
    let baseline = of(base);
    Ok(Some(AtLinkSpeed {
        link,
        link_bits_per_second: speed,
        simulated_bits_per_second: rate,
        simulated_s: duration.as_secs_f64(),
        bits_per_second: Predicted {
            cubic: of(Algorithm::Cubic),
            bbr: of(Algorithm::Bbr1),
            bbr3: of(Algorithm::Bbr3),
        },
        baseline_bits_per_second: baseline,
        gain: ratio(of(Algorithm::Bbr1), baseline),
        gain_bbr3: ratio(of(Algorithm::Bbr3), baseline),
        runs: algos.len(),
    }))
}

/// `f` over `jobs` on up to as many threads as CPUs, results in job order.
fn run_all<J: Sync>(
    jobs: &[J],
    f: impl Fn(&J) -> Result<f64, AdviseError> + Sync,
) -> Result<Vec<f64>, AdviseError> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let per = jobs.len().div_ceil(threads.max(1)).max(1);
    std::thread::scope(|s| {
        let handles: Vec<_> = jobs
            .chunks(per)
            .map(|chunk| s.spawn(|| chunk.iter().map(&f).collect::<Result<Vec<_>, _>>()))
            .collect();
        let mut out = Vec::with_capacity(jobs.len());
        for h in handles {
            out.extend(h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))?);
        }
        Ok(out)
    })
}

fn simulate(
    path: &PathGuess,
    rate_bps: u64,
    a: Algorithm,
    p: f64,
    duration: Duration,
) -> Result<f64, AdviseError> {
    let refused = |source| AdviseError::Sim {
        what: format!(
            "{} at {} bit/s, RTT {:?}, loss {p}",
            a.name(),
            rate_bps,
            path.rtt
        ),
        source,
    };
    let sim_path = PathConfig::from_conditions(&path.conditions(rate_bps, p)).map_err(refused)?;
    let cfg = SimConfig::new(sim_path, vec![FlowConfig::bulk(a)], duration, SEED);
    let report = bbrkit_sim::run(&cfg, &mut |_| {}).map_err(refused)?;
    Ok(report.flows.first().map_or(0.0, |f| f.bits_per_second))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(loss: f64, low: f64, high: f64) -> PathGuess {
        PathGuess {
            rate_bps: 100_000_000,
            rate_source: RateSource::Given,
            rtt: Duration::from_millis(10),
            loss: Interval {
                low,
                estimate: loss,
                high,
            },
            queue_loss: false,
            link: None,
        }
    }

    #[test]
    fn random_loss_makes_bbr_win_and_the_interval_orders_the_runs() {
        let p = predict(&path(0.02, 0.015, 0.027), Some("cubic")).unwrap();
        let b = p.bits_per_second;
        // CUBIC collapses under 2 % random loss, BBR keeps ~(1-p)·C.
        assert!(b.cubic.estimate < 15e6, "{b:?}");
        assert!(b.bbr.estimate > 85e6, "{b:?}");
        assert!(b.cubic.low <= b.cubic.estimate && b.cubic.estimate <= b.cubic.high);
        assert!(
            p.gain.low > 5.0 && p.gain.low <= p.gain.estimate && p.gain.estimate <= p.gain.high
        );
        assert_eq!(p.baseline, "cubic");
        assert_eq!(p.runs, 9);
        assert_eq!(p.simulated_s, 3.0);
    }

    #[test]
    fn no_loss_means_no_gain_and_reno_is_its_own_baseline() {
        let p = predict(&path(0.0, 0.0, 0.0), Some("reno")).unwrap();
        assert_eq!(p.baseline, "reno");
        assert_eq!(p.runs, 4, "one loss point, four algorithms");
        assert!(p.gain.estimate < 1.1 && p.gain.estimate > 0.9, "{p:?}");
    }

    #[test]
    fn run_length_follows_rtt_and_packet_budget() {
        let ms = Duration::from_millis;
        assert_eq!(sim_duration(100_000_000, ms(10)).as_secs_f64(), 3.0);
        assert_eq!(sim_duration(100_000_000, ms(40)).as_secs_f64(), 6.0);
        assert_eq!(sim_duration(100_000_000, ms(500)).as_secs_f64(), 10.0);
        assert_eq!(sim_duration(1_000_000_000, ms(100)).as_secs_f64(), 6.0);
        assert_eq!(sim_duration(10_000_000_000, ms(100)).as_secs_f64(), 3.0);
    }

    #[test]
    fn fast_paths_are_simulated_at_the_cap() {
        let mut p = path(0.001, 0.0008, 0.0012);
        p.rate_bps = 40_000_000_000;
        let got = predict(&p, Some("cubic")).unwrap();
        assert_eq!(got.simulated_bits_per_second, RATE_CAP_BPS);
        assert!(got.bits_per_second.bbr.estimate < RATE_CAP_BPS as f64);
    }
}
