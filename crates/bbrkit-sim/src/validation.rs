//! The scenarios of `docs/sim-validation.md`, each comparing the simulator
//! with theory or with a documented property of an algorithm. The tests in
//! `tests/validation.rs` assert tolerances on them and
//! `examples/validation.rs` prints the tables. Owns scenario definitions
//! only; tolerances live with the tests.

use bbrkit_cc::{AckSample, Algorithm, CongestionControl, Duration, Instant, Tcp};

use crate::config::{BufferSize, FlowConfig, PathConfig, SimConfig};
use crate::report::{RunReport, TraceRow};

fn path(rate_bps: u64, rtt_ms: u64, buffer: BufferSize, loss: f64) -> PathConfig {
    PathConfig::bernoulli(rate_bps, rtt_ms, buffer, loss)
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
/// loss-limited window stays far below the BDP (167 packets), so random loss,
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

/// A loss-based flow seen as AIMD: the additive increase and multiplicative
/// decrease it actually achieved in a run (see [`aimd_fit`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AimdFit {
    /// Algorithm.
    pub algorithm: Algorithm,
    /// Loss probability.
    pub p: f64,
    /// Goodput, bits per second.
    pub goodput_bps: f64,
    /// Effective additive increase: cwnd growth per smoothed RTT while
    /// open (between recoveries), packets.
    pub alpha: f64,
    /// Effective decrease: cwnd when a recovery ends / cwnd when it began.
    pub beta: f64,
    /// Mean length of an open period, RTTs.
    pub rtts_between_losses: f64,
}

impl AimdFit {
    /// `sqrt(α(1+β)/(1−β))`: an AIMD flow's rate relative to others on the
    /// same path and loss rate (Mathis' constant is `sqrt(3/2)` times this
    /// over `sqrt(2)` for Reno's α = 1, β = 1/2).
    pub fn relative_rate(&self) -> f64 {
        (self.alpha * (1.0 + self.beta) / (1.0 - self.beta)).sqrt()
    }
}

/// [`mathis`]' scenario sampled every millisecond: fits `alpha` and `beta`
/// from the cwnd trace, ignoring the first 2 s (slow start).
pub fn aimd_fit(algorithm: Algorithm, p: f64, secs: u64, seed: u64) -> AimdFit {
    let mut cfg = SimConfig::new(
        path(100_000_000, 20, BufferSize::Bdp(1.0), p),
        vec![FlowConfig::bulk(algorithm)],
        Duration::from_secs(secs),
        seed,
    );
    cfg.sample_interval = Some(Duration::from_millis(1));
    // (time, cwnd, srtt) of the open period in progress, and the totals.
    let mut open: Vec<(f64, u32, f64)> = Vec::new();
    let (mut grown, mut rtts, mut periods) = (0.0, 0.0, 0u32);
    let mut entered_at: Option<u32> = None;
    let mut ratios: Vec<f64> = Vec::new();
    let mut prev_open = true;
    let report = crate::run(&cfg, &mut |r: &TraceRow| {
        let is_open = matches!(r.ca_state, "open" | "disorder");
        if r.time_s < 2.0 {
            prev_open = is_open;
            return;
        }
        match (prev_open, is_open) {
            (true, false) => {
                // A recovery begins: close the open period.
                if let (Some(a), Some(b)) = (open.first(), open.last())
                    && b.0 > a.0
                {
                    let srtt = open.iter().map(|o| o.2).sum::<f64>() / open.len() as f64;
                    grown += f64::from(b.1) - f64::from(a.1);
                    rtts += (b.0 - a.0) * 1e3 / srtt;
                    periods += 1;
                }
                entered_at = open.last().map(|o| o.1);
                open.clear();
            }
            (false, true) => {
                if let Some(w) = entered_at.take() {
                    ratios.push(f64::from(r.cwnd_pkts) / f64::from(w));
                }
            }
            _ => {}
        }
        if is_open {
            open.push((r.time_s, r.cwnd_pkts, r.srtt_ms));
        }
        prev_open = is_open;
    })
    .expect("valid");
    AimdFit {
        algorithm,
        p,
        goodput_bps: report.flows[0].bits_per_second,
        alpha: grown / rtts.max(f64::MIN_POSITIVE),
        beta: ratios.iter().sum::<f64>() / ratios.len().max(1) as f64,
        rtts_between_losses: rtts / f64::from(periods.max(1)),
    }
}

/// The controller alone, without the simulator's transport: right after a
/// loss at `w_loss` packets (`ssthresh()`, then cwnd = ssthresh), it is fed
/// an ideal ACK clock (one ACK per 2 packets, evenly spread over a fixed
/// 20 ms RTT, min RTT 20 ms, always cwnd-limited) for `rtts` round trips.
/// Returns the cwnd growth per RTT in congestion avoidance.
pub fn ack_clock_growth(algorithm: Algorithm, w_loss: u32, rtts: u32) -> f64 {
    let rtt = Duration::from_millis(20);
    let mut now = Instant::from_nanos(1_000_000_000);
    let mut tcp = Tcp::new(now, DEFAULT_MSS_FOR_CLOCK);
    let mut cc = algorithm.build(&mut tcp, Box::new(bbrkit_cc::SeededRng::new(1, 0)));
    let sample = AckSample {
        pkts_acked: 2,
        rtt: Some(rtt),
        in_flight: w_loss,
    };
    cc.pkts_acked(&mut tcp, &sample);
    tcp.snd_cwnd = w_loss;
    let ssthresh = cc.ssthresh(&mut tcp);
    tcp.snd_ssthresh = ssthresh;
    tcp.snd_cwnd = ssthresh;
    tcp.snd_cwnd_cnt = 0;
    tcp.is_cwnd_limited = true;
    let start = tcp.snd_cwnd;
    let mut acked_total: u64 = 0;
    for _ in 0..rtts {
        let acks = (tcp.snd_cwnd / 2).max(1);
        let step = rtt / acks;
        for _ in 0..acks {
            now = Instant::from_nanos(now.as_nanos() + step.as_nanos() as u64);
            tcp.now = now;
            acked_total += 2;
            tcp.snd_una = acked_total;
            cc.pkts_acked(&mut tcp, &sample);
            cc.cong_avoid(&mut tcp, acked_total, 2);
        }
    }
    (f64::from(tcp.snd_cwnd) - f64::from(start)) / f64::from(rtts)
}

/// MSS for [`ack_clock_growth`] (only cwnd in packets matters there).
const DEFAULT_MSS_FOR_CLOCK: u32 = 1448;
