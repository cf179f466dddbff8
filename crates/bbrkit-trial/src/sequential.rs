//! Intervals that stay valid under continuous monitoring: the two-sided
//! normal-mixture confidence sequence, as a multiplier of the standard
//! error that replaces z₁₋α/₂ (1.96) in `estimate ± z·SE`.
//!
//! ```text
//!   S_t = Σ_{i≤t} X_i (X_i centred, unit variance), ρ > 0 the mixture's spread
//!   M_t = ∫ exp(λS_t − λ²t/2) dN(0, ρ²)(λ)
//!       = (1 + tρ²)^(−1/2) · exp(ρ²S_t² / (2(1 + tρ²)))    a nonnegative martingale, M_0 = 1
//!   Ville: P(∃t: M_t ≥ 1/α) ≤ α, so for every t at once, with prob. ≥ 1 − α:
//!   |S_t / t| < sqrt( (1 + tρ²)/(t²ρ²) · (2 ln(1/α) + ln(1 + tρ²)) )
//!   in units of SE = 1/√t:
//!   m(t) = sqrt( (1 + tρ²)/(tρ²) · (2 ln(1/α) + ln(1 + tρ²)) )
//!   ρ² = (−2 ln α + ln(1 − 2 ln α)) / t*     (tightest around t = t* units)
//! ```
//!
//! Robbins (1970), "Statistical methods related to the law of the iterated
//! logarithm"; the ρ for a planned size from Howard, Ramdas, McAuliffe &
//! Sekhon (2021), "Time-uniform, nonparametric, nonasymptotic confidence
//! sequences", Ann. Statist., §3.5. For an estimator that is asymptotically
//! a mean of i.i.d. terms (the log median: Bahadur's representation) with a
//! consistently estimated SE, the same boundary is an *asymptotic*
//! confidence sequence: Waudby-Smith, Arnold, Wu, Chugg & Ramdas (2024),
//! "Time-uniform central limit theory and asymptotic confidence
//! sequences", Ann. Statist., Thm 2.2 — the form used by online
//! experimentation platforms for peeking-safe intervals. Its coverage here
//! is checked by simulation (`tests/sequential.rs`).
//!
//! `t` counts units of randomization (both arms): the effect's SE shrinks
//! as 1/√t in them, whatever the allocation.

/// The width multiplier `m(t)` at `t` units for level `alpha`, tuned for
/// `t_star` units. Infinite for `t = 0`.
pub fn multiplier(t: f64, t_star: f64, alpha: f64) -> f64 {
    let log_inv = -alpha.ln();
    let rho2 = (2.0 * log_inv + (1.0 + 2.0 * log_inv).ln()) / t_star;
    let v = t * rho2;
    ((1.0 + v) / v * (2.0 * log_inv + (1.0 + v).ln())).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_multiplier_exceeds_the_fixed_horizon_z_and_is_least_near_t_star() {
        let m = |t: f64| multiplier(t, 1000.0, 0.05);
        // At t*: sqrt((1 + c)/c · (2 ln 20 + ln(1 + c))), c = 2 ln 20 + ln(1 + 2 ln 20).
        let c = 2.0 * 20f64.ln() + (1.0 + 2.0 * 20f64.ln()).ln();
        let at = ((1.0 + c) / c * (2.0 * 20f64.ln() + (1.0 + c).ln())).sqrt();
        assert!((m(1000.0) - at).abs() < 1e-12);
        assert!((at - 3.04).abs() < 0.01, "{at}");
        for t in [10.0, 100.0, 1000.0, 1e4, 1e6] {
            assert!(m(t) > 1.96, "{t}: {}", m(t));
        }
        // m(t)·SE ∝ m(t)/√t: the width still shrinks with more data.
        assert!(m(4000.0) / 4000f64.sqrt() < m(1000.0) / 1000f64.sqrt());
        // Wider far from t*, on both sides (the ln(1 + tρ²) term grows slowly).
        assert!(m(10.0) > m(1000.0) && m(1e7) > m(1000.0));
        assert!(multiplier(0.0, 1000.0, 0.05).is_infinite());
    }

    #[test]
    fn a_stricter_level_widens() {
        assert!(multiplier(500.0, 1000.0, 0.01) > multiplier(500.0, 1000.0, 0.05));
    }
}
