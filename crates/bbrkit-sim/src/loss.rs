//! Random loss models for the data and ACK paths: Bernoulli (independent
//! drops) and Gilbert–Elliott (a two-state Markov chain that drops in bursts).
//!
//! Owns the loss decision per packet. Must never use global randomness: each
//! model draws from the [`SeededRng`] stream it was built with.

use bbrkit_cc::{Random, SeededRng};
use serde::Serialize;

/// How packets are dropped at random.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "model", rename_all = "snake_case")]
pub enum LossModel {
    /// No random loss.
    None,
    /// Each packet is dropped independently with probability `p`.
    Bernoulli {
        /// Drop probability, 0..=1.
        p: f64,
    },
    /// Gilbert–Elliott: a Good and a Bad state with their own drop
    /// probabilities (see [`GilbertElliott`]).
    GilbertElliott(GilbertElliott),
}

/// The parameters of a Gilbert–Elliott chain: `p_gb` is the per-packet
/// chance of moving Good→Bad, `p_bg` of Bad→Good.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct GilbertElliott {
    /// P(Good → Bad) per packet.
    pub p_gb: f64,
    /// P(Bad → Good) per packet.
    pub p_bg: f64,
    /// Drop probability in the Good state.
    pub loss_good: f64,
    /// Drop probability in the Bad state.
    pub loss_bad: f64,
}

impl GilbertElliott {
    /// The chance of leaving the state (`bad` or Good) on one packet.
    fn p_leave(&self, bad: bool) -> f64 {
        if bad { self.p_bg } else { self.p_gb }
    }

    /// The drop probability in the state.
    fn p_loss(&self, bad: bool) -> f64 {
        if bad { self.loss_bad } else { self.loss_good }
    }

    /// The long-run fraction of packets dropped: the stationary P(Bad)
    /// `p_gb / (p_gb + p_bg)` weighs the two states' drop probabilities.
    fn mean_loss(&self) -> f64 {
        let sum = self.p_gb + self.p_bg;
        let bad = if sum > 0.0 { self.p_gb / sum } else { 0.0 };
        bad * self.loss_bad + (1.0 - bad) * self.loss_good
    }
}

impl LossModel {
    /// Bernoulli loss with probability `p` (`None` when `p` is zero).
    pub fn bernoulli(p: f64) -> Self {
        if p <= 0.0 {
            LossModel::None
        } else {
            LossModel::Bernoulli { p }
        }
    }

    /// Gilbert (simple Gilbert–Elliott) loss with long-run loss rate `p` and
    /// mean burst length `burst` packets: every packet in Bad is lost, none in
    /// Good. `burst <= 1` gives Bernoulli loss.
    pub fn bursty(p: f64, burst: f64) -> Self {
        if p <= 0.0 {
            return LossModel::None;
        }
        if burst <= 1.0 || p >= 1.0 {
            return LossModel::Bernoulli { p };
        }
        let p_bg = 1.0 / burst;
        // Stationary P(Bad) = p_gb / (p_gb + p_bg) = p.
        let p_gb = (p * p_bg / (1.0 - p)).min(1.0);
        LossModel::GilbertElliott(GilbertElliott {
            p_gb,
            p_bg,
            loss_good: 0.0,
            loss_bad: 1.0,
        })
    }

    /// The long-run fraction of packets this model drops.
    pub fn mean_loss(&self) -> f64 {
        match *self {
            LossModel::None => 0.0,
            LossModel::Bernoulli { p } => p,
            LossModel::GilbertElliott(ge) => ge.mean_loss(),
        }
    }
}

/// A loss model with its random stream and Markov state.
#[derive(Debug, Clone)]
pub struct Dropper {
    model: LossModel,
    rng: SeededRng,
    bad: bool,
}

/// A uniform draw in [0, 1) with 53 random bits.
pub fn uniform(rng: &mut SeededRng) -> f64 {
    let hi = u64::from(rng.next_u32()) << 21;
    let lo = u64::from(rng.next_u32() >> 11);
    ((hi | lo) as f64) * (1.0 / (1u64 << 53) as f64)
}

impl Dropper {
    /// A dropper for `model` drawing from `rng`.
    pub fn new(model: LossModel, rng: SeededRng) -> Self {
        Dropper {
            model,
            rng,
            bad: false,
        }
    }

    /// Whether the next packet is dropped.
    pub fn drop_next(&mut self) -> bool {
        match self.model {
            LossModel::None => false,
            LossModel::Bernoulli { p } => uniform(&mut self.rng) < p,
            LossModel::GilbertElliott(ge) => {
                if uniform(&mut self.rng) < ge.p_leave(self.bad) {
                    self.bad = !self.bad;
                }
                let p = ge.p_loss(self.bad);
                p > 0.0 && uniform(&mut self.rng) < p
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Drops in `n` packets are within 5 standard deviations of `n * p`.
    fn within_binomial(drops: u64, n: u64, p: f64) -> bool {
        let mean = n as f64 * p;
        let sd = (n as f64 * p * (1.0 - p)).sqrt();
        (drops as f64 - mean).abs() <= 5.0 * sd
    }

    #[test]
    fn bernoulli_rate_within_binomial_bounds() {
        let seeds = bbrkit_cc::testing::test_seeds([1u64, 2, 3]);
        for (&seed, p) in seeds.iter().cycle().zip([0.02, 0.05, 0.3]) {
            println!("seed {seed} p {p} (replay with BBRKIT_TEST_SEED={seed})");
            let mut d = Dropper::new(LossModel::bernoulli(p), SeededRng::new(seed, 7));
            let n = 200_000;
            let drops = (0..n).filter(|_| d.drop_next()).count() as u64;
            assert!(
                within_binomial(drops, n, p),
                "{drops} drops of {n} at p={p}"
            );
        }
    }

    #[test]
    fn gilbert_has_right_mean_and_bursts() {
        let model = LossModel::bursty(0.02, 4.0);
        assert!((model.mean_loss() - 0.02).abs() < 1e-12);
        let mut d = Dropper::new(model, SeededRng::new(9, 7));
        let n = 400_000;
        let mut drops = 0u64;
        let mut bursts = 0u64;
        let mut prev = false;
        for _ in 0..n {
            let x = d.drop_next();
            drops += u64::from(x);
            if x && !prev {
                bursts += 1;
            }
            prev = x;
        }
        let rate = drops as f64 / n as f64;
        assert!((rate - 0.02).abs() < 0.004, "rate {rate}");
        let mean_burst = drops as f64 / bursts as f64;
        assert!((3.0..5.0).contains(&mean_burst), "mean burst {mean_burst}");
    }

    #[test]
    fn zero_loss_never_drops() {
        let mut d = Dropper::new(LossModel::bernoulli(0.0), SeededRng::new(1, 1));
        assert!((0..10_000).all(|_| !d.drop_next()));
    }
}
