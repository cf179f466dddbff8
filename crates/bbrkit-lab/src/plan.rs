//! What a lab run is asked to do: the path conditions (the rate × delay ×
//! loss sweep, or the seed experiment's three), the algorithms, runs,
//! duration, flows and where the algorithm is set; and the checks of a plan
//! against the kernel before anything is built.
//!
//! Owns the sweep (one [`PathConditions`] per combination, nested rate →
//! delay → loss) and the mapping of a condition onto the emulator's
//! [`LinkParams`]. Must never build a namespace or start traffic.

use std::time::Duration;

pub use bbrkit_vocab::{BufferSize, PathConditions};

use crate::emulator::EmulatorKind;
use crate::emulator::model::LinkParams;
use crate::error::{LabError, Result};
use crate::tester::CcOn;

/// The whole experiment.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Path conditions, in order.
    pub conditions: Vec<PathConditions>,
    /// Algorithms, in order (ratios are against the first; a name may
    /// repeat when competing).
    pub algorithms: Vec<String>,
    /// Runs per condition × algorithm.
    pub runs: usize,
    /// Sending time per run.
    pub duration: Duration,
    /// Parallel flows per run (per algorithm when competing).
    pub flows: usize,
    /// Where the algorithm is set.
    pub cc_on: CcOn,
    /// Requested emulator.
    pub emulator: EmulatorKind,
    /// Base seed of the loss process (run seeds derive from it).
    pub seed: u64,
    /// Link MTU.
    pub mtu: u32,
    /// How often a spoiled run is repeated.
    pub retries: usize,
    /// CE-mark data frames arriving while more than this waits at the
    /// bottleneck (`--ecn-threshold`; the namespaces then negotiate ECN).
    pub ecn_threshold: Option<BufferSize>,
}

/// The algorithm name of `--cc host`: no `TCP_CONGESTION` on any socket.
pub const HOST_CC: &str = "host";

/// The conditions of a sweep: every combination of the given rates, delays
/// and losses, or the seed experiment's when none is given.
#[derive(Debug, Clone, Default)]
pub struct Sweep {
    /// Bottleneck rates (`None`: no rate limit).
    pub rates: Option<Vec<u64>>,
    /// One-way delays of the data direction (default 10 ms).
    pub delays: Option<Vec<Duration>>,
    /// Loss probabilities (default 0).
    pub losses: Option<Vec<f64>>,
    /// Jitter of every condition.
    pub jitter: Duration,
    /// Bottleneck buffer of every condition (default one BDP).
    pub buffer: Option<BufferSize>,
}

/// Most conditions one run may have.
pub const MAX_CONDITIONS: usize = 64;

impl Sweep {
    /// The conditions, nested rate → delay → loss.
    pub fn conditions(&self) -> Result<Vec<PathConditions>> {
        let buffer = self.buffer.unwrap_or(BufferSize::Bdp(1.0));
        let with = |c: PathConditions| PathConditions {
            jitter: self.jitter,
            buffer,
            ..c
        };
        if self.rates.is_none() && self.delays.is_none() && self.losses.is_none() {
            return Ok(seed_conditions().into_iter().map(with).collect());
        }
        let rates: Vec<Option<u64>> = match &self.rates {
            Some(r) => r.iter().copied().map(Some).collect(),
            None => vec![None],
        };
        let delays = self
            .delays
            .clone()
            .unwrap_or_else(|| vec![Duration::from_millis(10)]);
        let losses = self.losses.clone().unwrap_or_else(|| vec![0.0]);
        let mut v = Vec::new();
        for &rate_bps in &rates {
            for &rtt in &delays {
                for &loss in &losses {
                    v.push(with(PathConditions {
                        rate_bps,
                        ..PathConditions::new(rtt, loss)
                    }));
                }
            }
        }
        if v.len() > MAX_CONDITIONS {
            return Err(LabError::Invalid(format!(
                "{} conditions is too many (at most {MAX_CONDITIONS})",
                v.len()
            )));
        }
        Ok(v)
    }
}

/// The seed experiment: no impairment, 10 ms + 2 % loss, 10 ms + 5 % loss.
pub fn seed_conditions() -> Vec<PathConditions> {
    let c = |ms, loss| PathConditions::new(Duration::from_millis(ms), loss);
    vec![c(0, 0.0), c(10, 0.02), c(10, 0.05)]
}

/// The emulator parameters of `cond` for links of `mtu` bytes and an ECN
/// threshold `ecn`: its RTT is the data direction's one-way delay, a buffer
/// smaller than 10 frames is raised to 10 frames, and the threshold (like
/// the buffer, in frames of `mtu` + 14 bytes or of the BDP) exists only
/// with a rate.
pub fn link_params(cond: &PathConditions, mtu: u32, ecn: Option<BufferSize>) -> LinkParams {
    let frame = u64::from(mtu) + 14;
    let bdp = cond.bdp_bytes();
    LinkParams {
        delay: cond.rtt,
        jitter: cond.jitter,
        loss: cond.loss,
        rate_bps: cond.rate_bps,
        buffer_bytes: bdp.map(|bdp| cond.buffer.bytes(bdp, frame).max(10 * frame)),
        ecn_threshold_bytes: bdp.zip(ecn).map(|(bdp, k)| k.bytes(bdp, frame)),
    }
}

impl Plan {
    /// The emulator parameters of `cond` in this plan ([`link_params`]).
    pub fn link(&self, cond: &PathConditions) -> LinkParams {
        link_params(cond, self.mtu, self.ecn_threshold)
    }
}

/// Checks `--ecn-threshold` against the plan: the mark is taken at the
/// bottleneck queue, so every condition needs a rate, and only the
/// userspace emulator marks (netem has no threshold marking; the split
/// emulator's tbf has none either).
pub fn check_ecn(plan: &Plan) -> Result<()> {
    if plan.ecn_threshold.is_none() {
        return Ok(());
    }
    if let Some(c) = plan.conditions.iter().find(|c| c.rate_bps.is_none()) {
        return Err(LabError::Invalid(format!(
            "--ecn-threshold marks at the bottleneck queue: condition '{}' has no --rate",
            c.label()
        )));
    }
    match plan.emulator {
        EmulatorKind::Auto | EmulatorKind::Userspace => Ok(()),
        other => Err(LabError::Invalid(format!(
            "--ecn-threshold: the {} emulator cannot CE-mark (use --emulator userspace or auto)",
            serde_plain(other)
        ))),
    }
}

/// The emulator's name as `--emulator` spells it.
fn serde_plain(kind: EmulatorKind) -> &'static str {
    match kind {
        EmulatorKind::Auto => "auto",
        EmulatorKind::Netem => "netem",
        EmulatorKind::Split => "split",
        EmulatorKind::Userspace => "userspace",
    }
}

/// The emulator `auto` means for this plan before the kernel is asked:
/// ECN needs the userspace one, whatever the kernel offers.
pub fn requested_emulator(plan: &Plan) -> EmulatorKind {
    match (plan.emulator, plan.ecn_threshold) {
        (EmulatorKind::Auto, Some(_)) => EmulatorKind::Userspace,
        (kind, _) => kind,
    }
}

/// Checks the plan against the kernel before anything is built.
pub fn validate(plan: &Plan) -> Result<()> {
    let available = crate::tcpinfo::available_algorithms()
        .map_err(|e| LabError::io("read tcp_available_congestion_control", e))?;
    for cc in &plan.algorithms {
        if plan.cc_on == CcOn::Host {
            if cc != HOST_CC {
                return Err(LabError::Invalid(format!(
                    "--cc host leaves the algorithm to the host: it cannot be combined with '{cc}'"
                )));
            }
            continue;
        }
        // Registered, or a module the kernel loads on demand (loaded now).
        let usable = available.iter().any(|a| a == cc)
            || bbrkit_diag::algorithms::usable(cc).unwrap_or(false);
        if !usable {
            return Err(LabError::UnknownAlgorithm {
                wanted: cc.clone(),
                available: available.join(" "),
            });
        }
    }
    if plan.algorithms.is_empty() || plan.conditions.is_empty() || plan.runs == 0 {
        return Err(LabError::Invalid("nothing to run".into()));
    }
    if plan.flows == 0 || plan.flows > 64 {
        return Err(LabError::Invalid("parallel flows must be 1..=64".into()));
    }
    if plan.duration < Duration::from_millis(500) {
        return Err(LabError::Invalid("duration must be at least 500ms".into()));
    }
    if !(576..=9000).contains(&plan.mtu) {
        return Err(LabError::Invalid("mtu must be 576..=9000".into()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_follow_the_seed_table() {
        let s = seed_conditions();
        assert_eq!(s[0].label(), "no impairment");
        assert_eq!(s[1].label(), "10 ms + 2% loss");
        assert_eq!(s[2].label(), "10 ms + 5% loss");
    }

    #[test]
    fn ecn_threshold_resolves_like_the_buffer_and_needs_a_rate() {
        let mut c = seed_conditions()[1];
        c.rate_bps = Some(100_000_000);
        let k = |c: &PathConditions, t| link_params(c, 1500, Some(t)).ecn_threshold_bytes;
        assert_eq!(k(&c, BufferSize::Packets(20)), Some(20 * 1514));
        assert_eq!(k(&c, BufferSize::Bdp(0.2)), Some(25_000));
        assert_eq!(k(&c, BufferSize::Bytes(30_000)), Some(30_000));
        assert_eq!(link_params(&c, 1500, None).ecn_threshold_bytes, None);
        c.rate_bps = None;
        assert_eq!(k(&c, BufferSize::Packets(20)), None);
    }

    #[test]
    fn buffer_resolves_to_bytes() {
        let mut c = seed_conditions()[1];
        c.rate_bps = Some(100_000_000);
        c.buffer = BufferSize::Bdp(1.0);
        // 100 Mbit/s × 10 ms = 125 000 bytes.
        assert_eq!(link_params(&c, 1500, None).buffer_bytes, Some(125_000));
        c.buffer = BufferSize::Packets(100);
        assert_eq!(link_params(&c, 1500, None).buffer_bytes, Some(151_400));
        c.buffer = BufferSize::Bytes(1);
        assert_eq!(
            link_params(&c, 1500, None).buffer_bytes,
            Some(15_140),
            "at least 10 frames"
        );
        c.rate_bps = None;
        assert_eq!(link_params(&c, 1500, None).buffer_bytes, None);
        assert_eq!(link_params(&c, 1500, None).delay, Duration::from_millis(10));
    }

    #[test]
    fn a_sweep_nests_rate_delay_loss() {
        let ms = Duration::from_millis;
        let sweep = Sweep {
            rates: Some(vec![10_000_000, 20_000_000]),
            delays: Some(vec![ms(10), ms(50)]),
            losses: Some(vec![0.0, 0.01]),
            jitter: ms(1),
            buffer: Some(BufferSize::Packets(50)),
        };
        let c = sweep.conditions().unwrap();
        assert_eq!(c.len(), 8);
        assert_eq!(
            (c[0].rate_bps, c[0].rtt, c[0].loss),
            (Some(10_000_000), ms(10), 0.0)
        );
        assert_eq!((c[1].rtt, c[1].loss), (ms(10), 0.01));
        assert_eq!((c[2].rtt, c[2].loss), (ms(50), 0.0));
        assert_eq!(c[4].rate_bps, Some(20_000_000));
        assert!(
            c.iter()
                .all(|c| c.jitter == ms(1) && c.buffer == BufferSize::Packets(50))
        );
        let only_loss = Sweep {
            losses: Some(vec![0.02]),
            ..Sweep::default()
        };
        let c = only_loss.conditions().unwrap();
        assert_eq!((c.len(), c[0].rtt, c[0].rate_bps), (1, ms(10), None));
        let seed = Sweep::default().conditions().unwrap();
        assert_eq!(seed, seed_conditions());
        let too_many = Sweep {
            losses: Some(vec![0.0; 65]),
            ..Sweep::default()
        };
        assert!(too_many.conditions().is_err());
    }
}
