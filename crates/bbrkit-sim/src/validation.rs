//! The scenarios of `docs/sim-validation.md`, each comparing the simulator
//! with theory or with a documented property of an algorithm. The tests in
//! `tests/validation.rs` assert tolerances on them and
//! `examples/validation.rs` prints the tables. Owns scenario definitions
//! only; tolerances live with the tests.

use bbrkit_cc::{Algorithm, Duration};

use crate::config::{BufferSize, FlowConfig, PathConfig, SimConfig};
use crate::loss::LossModel;
use crate::report::{RunReport, TraceRow};

fn path(rate_bps: u64, rtt_ms: u64, buffer: BufferSize, loss: f64) -> PathConfig {
    PathConfig {
        rate_bps,
        rtt: Duration::from_millis(rtt_ms),
        buffer,
        loss: LossModel::bernoulli(loss),
        ack_loss: 0.0,
    }
}

fn run(cfg: &SimConfig) -> RunReport {
    crate::run(cfg, &mut |_| {}).expect("validation scenarios are valid")
}

/// BBRv1 alone under random loss: goodput vs the `(1-p)·C` ceiling.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LossRow {
    /// Loss probability.
    pub p: f64,
    /// Measured goodput, bits per second.
    pub goodput_bps: f64,
    /// `(1-p)·C`, bits per second.
    pub ceiling_bps: f64,
}

/// BBRv1 on 100 Mbit/s, 10 ms RTT, 1 BDP buffer, loss `p`, for `secs` seconds.
pub fn bbr1_random_loss(p: f64, secs: u64, seed: u64) -> LossRow {
    let rate = 100_000_000;
    let cfg = SimConfig::new(
        path(rate, 10, BufferSize::Bdp(1.0), p),
        vec![FlowConfig::bulk(Algorithm::Bbr1)],
        Duration::from_secs(secs),
        seed,
    );
    let r = run(&cfg);
    LossRow {
        p,
        goodput_bps: r.flows[0].bits_per_second,
        ceiling_bps: (1.0 - p) * rate as f64,
    }
}

/// A loss-based algorithm against the Mathis model.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MathisRow {
    /// Algorithm.
    pub algorithm: Algorithm,
    /// Loss probability.
    pub p: f64,
    /// Measured goodput, bits per second.
    pub goodput_bps: f64,
    /// `MSS/RTT · sqrt(3/2)/sqrt(p)`, bits per second.
    pub mathis_bps: f64,
}

/// Mathis et al. 1997: `MSS/RTT · C/sqrt(p)` with `C = sqrt(3/2) ≈ 1.22`.
pub fn mathis_bps(mss: u32, rtt: Duration, p: f64) -> f64 {
    f64::from(mss) * 8.0 / rtt.as_secs_f64() * (1.5f64).sqrt() / p.sqrt()
}

/// `algorithm` alone on 100 Mbit/s, 20 ms RTT, 1 BDP buffer, loss `p`: the
/// loss-limited window stays far below the BDP (417 packets), so random loss,
/// not the link, sets the rate.
pub fn mathis(algorithm: Algorithm, p: f64, secs: u64, seed: u64) -> MathisRow {
    let rtt = Duration::from_millis(20);
    let cfg = SimConfig::new(
        path(100_000_000, 20, BufferSize::Bdp(1.0), p),
        vec![FlowConfig::bulk(algorithm)],
        Duration::from_secs(secs),
        seed,
    );
    let r = run(&cfg);
    MathisRow {
        algorithm,
        p,
        goodput_bps: r.flows[0].bits_per_second,
        mathis_bps: mathis_bps(cfg.mss, rtt, p),
    }
}

/// Two BBRv1 flows on 100 Mbit/s, `rtt_ms`, 1 BDP buffer, the second
/// starting `stagger_s` later.
pub fn bbr1_pair(rtt_ms: u64, stagger_s: u64, secs: u64, seed: u64) -> RunReport {
    let second = FlowConfig {
        start: Duration::from_secs(stagger_s),
        ..FlowConfig::bulk(Algorithm::Bbr1)
    };
    let cfg = SimConfig::new(
        path(100_000_000, rtt_ms, BufferSize::Bdp(1.0), 0.0),
        vec![FlowConfig::bulk(Algorithm::Bbr1), second],
        Duration::from_secs(secs),
        seed,
    );
    run(&cfg)
}

/// One ProbeRTT episode seen in a time series.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ProbeRttEpisode {
    /// First sample in `probe_rtt`, seconds.
    pub start_s: f64,
    /// Time until the last sample in `probe_rtt`, seconds.
    pub duration_s: f64,
    /// Smallest cwnd seen in it, packets.
    pub min_cwnd: u32,
}

/// ProbeRTT episodes of one BBRv1 flow (100 Mbit/s, 20 ms, 1 BDP), sampled
/// every 5 ms.
pub fn bbr1_probe_rtt(secs: u64, seed: u64) -> Vec<ProbeRttEpisode> {
    let mut cfg = SimConfig::new(
        path(100_000_000, 20, BufferSize::Bdp(1.0), 0.0),
        vec![FlowConfig::bulk(Algorithm::Bbr1)],
        Duration::from_secs(secs),
        seed,
    );
    let step = Duration::from_millis(5);
    cfg.sample_interval = Some(step);
    let mut episodes: Vec<ProbeRttEpisode> = Vec::new();
    let mut last: Option<f64> = None;
    crate::run(&cfg, &mut |r: &TraceRow| {
        if r.state != "probe_rtt" {
            return;
        }
        let contiguous = last.is_some_and(|t| r.time_s - t < 2.5 * step.as_secs_f64());
        match episodes.last_mut() {
            Some(e) if contiguous => {
                e.duration_s = r.time_s - e.start_s;
                e.min_cwnd = e.min_cwnd.min(r.cwnd_pkts);
            }
            _ => episodes.push(ProbeRttEpisode {
                start_s: r.time_s,
                duration_s: 0.0,
                min_cwnd: r.cwnd_pkts,
            }),
        }
        last = Some(r.time_s);
    })
    .expect("valid");
    episodes
}

/// `algorithm` alone on 100 Mbit/s, 20 ms RTT, with a deep 10 BDP buffer
/// (200 ms of queue).
pub fn deep_buffer(algorithm: Algorithm, secs: u64, seed: u64) -> RunReport {
    let cfg = SimConfig::new(
        path(100_000_000, 20, BufferSize::Bdp(10.0), 0.0),
        vec![FlowConfig::bulk(algorithm)],
        Duration::from_secs(secs),
        seed,
    );
    run(&cfg)
}
