//! What to simulate: the path, the flows and the transport settings, with
//! validation. Owns no behaviour; must never hold defaults that contradict
//! the documentation in `docs/sim.md`.

use bbrkit_cc::{Algorithm, Duration};

use crate::loss::LossModel;
use bbrkit_cc::transport::HEADER_BYTES;

/// Linux's default MSS on a 1500-byte Ethernet path with timestamps.
pub const DEFAULT_MSS: u32 = 1448;

/// The bottleneck's buffer size (packets are MSS + headers each here):
/// bbrkit's one buffer-size type.
pub use bbrkit_vocab::BufferSize;
use bbrkit_vocab::PathConditions;

/// The bottleneck path shared by every flow: bbrkit's one
/// [`PathConditions`] as the simulator runs it ([`PathConfig::from_conditions`],
/// [`PathConfig::conditions`]).
///
/// It stays a type of its own because the simulator needs more and less
/// than the shared description: a rate is required (a path without one has
/// no bottleneck to simulate), loss is a *model* (Bernoulli or bursty
/// Gilbert–Elliott, whose mean is the conditions' `loss`), the ACK path can
/// lose too, and there is no jitter (the simulator's delays are exact).
#[derive(Debug, Clone, PartialEq)]
pub struct PathConfig {
    /// Bottleneck rate, bits per second (on the wire, headers included).
    pub rate_bps: u64,
    /// Base round-trip propagation delay (half each way).
    pub rtt: Duration,
    /// Drop-tail buffer at the bottleneck.
    pub buffer: BufferSize,
    /// Random loss on the data path, after the bottleneck.
    pub loss: LossModel,
    /// Random loss on the ACK path (Bernoulli).
    pub ack_loss: f64,
}

impl PathConfig {
    /// The simulator's path for `c`: Bernoulli loss of `c.loss`, no ACK
    /// loss. Refused without a rate, or with jitter (not modelled).
    pub fn from_conditions(c: &PathConditions) -> Result<Self, ConfigError> {
        if !c.jitter.is_zero() {
            return Err(ConfigError::Jitter);
        }
        Ok(PathConfig {
            rate_bps: c.rate_bps.ok_or(ConfigError::ZeroRate)?,
            rtt: c.rtt,
            buffer: c.buffer,
            loss: LossModel::bernoulli(c.loss),
            ack_loss: 0.0,
        })
    }

    /// The shared description of this path: its rate, RTT, buffer and mean
    /// data loss (`ack_loss` and the loss model's burstiness have no place
    /// there).
    pub fn conditions(&self) -> PathConditions {
        PathConditions {
            rate_bps: Some(self.rate_bps),
            buffer: self.buffer,
            ..PathConditions::new(self.rtt, self.loss.mean_loss())
        }
    }

    /// A path of `rate_bps`, `rtt_ms` of round trip, `buffer` and Bernoulli
    /// data loss `loss` (no ACK loss): the shape of most scenarios.
    pub fn bernoulli(rate_bps: u64, rtt_ms: u64, buffer: BufferSize, loss: f64) -> Self {
        PathConfig {
            rate_bps,
            rtt: Duration::from_millis(rtt_ms),
            buffer,
            loss: LossModel::bernoulli(loss),
            ack_loss: 0.0,
        }
    }

    /// The buffer limit in bytes for segments of `mss` payload bytes
    /// (at least one full packet).
    pub fn buffer_bytes(&self, mss: u32) -> u64 {
        self.size_bytes(self.buffer, mss)
            .max(u64::from(mss + HEADER_BYTES))
    }

    /// `size` in bytes on this path (BDP multiples of its rate × RTT,
    /// packets of `mss` payload plus headers).
    pub fn size_bytes(&self, size: BufferSize, mss: u32) -> u64 {
        size.bytes(self.bdp_bytes(), u64::from(mss + HEADER_BYTES))
    }

    /// Bandwidth-delay product, bytes.
    pub fn bdp_bytes(&self) -> f64 {
        self.rate_bps as f64 / 8.0 * self.rtt.as_secs_f64()
    }
}

/// One flow: its algorithm, when it starts, how much it sends.
#[derive(Debug, Clone, PartialEq)]
pub struct FlowConfig {
    /// Congestion control.
    pub algorithm: Algorithm,
    /// Start time after the beginning of the run.
    pub start: Duration,
    /// Bytes to send; `None` = bulk (until the end of the run).
    pub size: Option<u64>,
    /// Extra round-trip delay for this flow only (RTT-fairness runs), split
    /// evenly between the data and the ACK path.
    pub extra_rtt: Duration,
}

impl FlowConfig {
    /// A bulk flow from time zero.
    pub fn bulk(algorithm: Algorithm) -> Self {
        FlowConfig {
            algorithm,
            start: Duration::ZERO,
            size: None,
            extra_rtt: Duration::ZERO,
        }
    }
}

/// A whole simulation run.
#[derive(Debug, Clone, PartialEq)]
pub struct SimConfig {
    /// The bottleneck path.
    pub path: PathConfig,
    /// The flows, in order (flow ids are indices).
    pub flows: Vec<FlowConfig>,
    /// Simulated time.
    pub duration: Duration,
    /// Seed for every random stream.
    pub seed: u64,
    /// Maximum segment size, bytes.
    pub mss: u32,
    /// Initial congestion window, packets (Linux: 10).
    pub init_cwnd: u32,
    /// Pace Reno/CUBIC at Linux's ratios (as with `fq`); BBR always paces.
    pub pace_loss_based: bool,
    /// Receive window in bytes; `None` = unlimited.
    pub rwnd: Option<u64>,
    /// Delayed-ACK timeout (Linux `TCP_DELACK_MIN`: 40 ms).
    pub delack: Duration,
    /// Time-series sampling interval; `None` = no time series.
    pub sample_interval: Option<Duration>,
    /// CE-mark packets that arrive while more than this waits in the
    /// bottleneck queue (a step-threshold AQM, DCTCP/L4S style); the flows
    /// then negotiate ECN on a low-threshold path (`tcp.ecn_enabled`,
    /// `tcp.ecn_low`). `None`: no ECN.
    pub ecn_threshold: Option<BufferSize>,
    /// Tail loss probes (Linux default on; see `bbrkit_cc::transport`).
    pub tlp: bool,
}

impl SimConfig {
    /// A run of `flows` over `path` for `duration` with Linux defaults.
    pub fn new(path: PathConfig, flows: Vec<FlowConfig>, duration: Duration, seed: u64) -> Self {
        SimConfig {
            path,
            flows,
            duration,
            seed,
            mss: DEFAULT_MSS,
            init_cwnd: bbrkit_cc::tcp::TCP_INIT_CWND,
            pace_loss_based: false,
            rwnd: None,
            delack: Duration::from_millis(40),
            sample_interval: None,
            ecn_threshold: None,
            tlp: true,
        }
    }

    /// The CE-marking threshold in bytes, if ECN is on.
    pub fn ecn_threshold_bytes(&self) -> Option<u64> {
        self.ecn_threshold
            .map(|t| self.path.size_bytes(t, self.mss))
    }

    /// Checks the configuration.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let p = &self.path;
        if p.rate_bps == 0 {
            return Err(ConfigError::ZeroRate);
        }
        if self.flows.is_empty() {
            return Err(ConfigError::NoFlows);
        }
        if self.duration.is_zero() {
            return Err(ConfigError::ZeroDuration);
        }
        if self.mss < 64 || self.mss > 65_000 {
            return Err(ConfigError::Mss(self.mss));
        }
        let loss = p.loss.mean_loss();
        if !(0.0..1.0).contains(&loss) {
            return Err(ConfigError::Loss(loss));
        }
        if !(0.0..1.0).contains(&p.ack_loss) {
            return Err(ConfigError::Loss(p.ack_loss));
        }
        if let BufferSize::Bdp(m) = p.buffer
            && (!m.is_finite() || m < 0.0)
        {
            return Err(ConfigError::Buffer);
        }
        if self.sample_interval.is_some_and(|i| i.is_zero()) {
            return Err(ConfigError::ZeroInterval);
        }
        Ok(())
    }
}

/// A configuration that cannot be simulated.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ConfigError {
    /// The link rate is zero (or, from [`PathConditions`], not given).
    #[error("link rate must be positive")]
    ZeroRate,
    /// Path conditions with jitter: the simulator's delays are exact.
    #[error("the simulator does not model jitter")]
    Jitter,
    /// No flow to simulate.
    #[error("at least one flow is needed")]
    NoFlows,
    /// The run has no length.
    #[error("duration must be positive")]
    ZeroDuration,
    /// The MSS is outside 64..=65000.
    #[error("MSS {0} is outside 64..=65000 bytes")]
    Mss(u32),
    /// A loss probability of 1 or more (nothing would ever arrive).
    #[error("loss probability {0} must be below 1 (100%)")]
    Loss(f64),
    /// A negative or non-finite buffer multiple.
    #[error("buffer size must be a non-negative number")]
    Buffer,
    /// A zero sampling interval.
    #[error("sampling interval must be positive")]
    ZeroInterval,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The simulator's path and the shared conditions describe the same
    /// path: converting there and back changes nothing.
    #[test]
    fn path_config_and_path_conditions_are_equal_where_they_overlap() {
        for (rate, rtt_ms, loss, buffer) in [
            (100_000_000, 10, 0.0, BufferSize::Bdp(1.0)),
            (1_000_000_000, 40, 0.02, BufferSize::Packets(100)),
            (20_000_000, 1, 0.5, BufferSize::Bytes(64_000)),
        ] {
            let c = PathConditions {
                rate_bps: Some(rate),
                buffer,
                ..PathConditions::new(Duration::from_millis(rtt_ms), loss)
            };
            let p = PathConfig::from_conditions(&c).unwrap();
            assert_eq!(
                p,
                PathConfig::bernoulli(rate, rtt_ms, buffer, loss),
                "{c:?}"
            );
            assert_eq!(p.conditions(), c);
        }
    }

    #[test]
    fn conditions_the_simulator_cannot_run_are_refused() {
        let no_rate = PathConditions::new(Duration::from_millis(10), 0.0);
        assert_eq!(
            PathConfig::from_conditions(&no_rate),
            Err(ConfigError::ZeroRate)
        );
        let jitter = PathConditions {
            rate_bps: Some(1_000_000),
            jitter: Duration::from_millis(1),
            ..no_rate
        };
        assert_eq!(
            PathConfig::from_conditions(&jitter),
            Err(ConfigError::Jitter)
        );
    }

    /// A bursty loss model is described by its mean.
    #[test]
    fn bursty_loss_is_described_by_its_mean() {
        let p = PathConfig {
            loss: LossModel::bursty(0.02, 4.0),
            ..PathConfig::bernoulli(10_000_000, 20, BufferSize::Bdp(1.0), 0.0)
        };
        assert!((p.conditions().loss - 0.02).abs() < 1e-9);
    }
}
