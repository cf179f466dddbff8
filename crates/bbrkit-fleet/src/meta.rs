//! Random-effects meta-analysis of k studies (here hosts), each an effect
//! `y_i` (a log ratio) with its variance `v_i` (its SE squared).
//!
//! ```text
//!   fixed effect   w_i = 1/v_i, ȳ = Σ w y / Σ w, Q = Σ w (y − ȳ)², df = k − 1
//!   DerSimonian–Laird   τ² = max(0, (Q − df) / (Σ w − Σ w² / Σ w))
//!   or REML        Fisher scoring from DL: τ² += (Σ w*² (y − μ)² − tr P) / tr P²,
//!                  tr P = Σ w* − Σ w*² / Σ w*, tr P² = Σ w*² − 2 Σ w*³ / Σ w* + (Σ w*² / Σ w*)²,
//!                  truncated at 0 (Viechtbauer 2005; metafor's default)
//!   random effects w*_i = 1/(v_i + τ²), μ = Σ w* y / Σ w*, SE_z = √(1 / Σ w*)
//!   Hartung–Knapp  SE_hk = √(Σ w* (y − μ)² / ((k − 1) Σ w*)),
//!                  interval μ ± t(k − 1) SE_hk
//!   I² = max(0, (Q − df) / Q)
//!   prediction     μ ± t(k − 2) √(τ² + SE_hk²)   (a new host's effect)
//! ```
//!
//! DerSimonian & Laird, "Meta-analysis in clinical trials" (Controlled
//! Clinical Trials 1986); Hartung & Knapp, "On tests of the overall
//! treatment effect in meta-analysis with normally distributed responses"
//! (Statistics in Medicine 2001) and Sidik & Jonkman (2002): the t
//! interval with the rescaled variance keeps its coverage with few hosts,
//! where the normal one (`ci_z`, kept for comparison) is too narrow;
//! Higgins, Thompson & Spiegelhalter, "A re-evaluation of random-effects
//! meta-analysis" (JRSS A 2009) for the prediction interval, with the
//! Hartung–Knapp SE as R's `meta` (4.11, `hakn = TRUE`) computes it;
//! Higgins & Thompson (2002) for I². The rescaling is not truncated at 1
//! (as in `meta` and metafor's `test = "knha"`). Checked against R
//! metafor's and R meta's published numbers (`tests/reference.rs`).
//!
//! Hosts that disagree: [`leave_one_out`], the externally standardized
//! residual of each host against the pool of the others (Viechtbauer &
//! Cheung, "Outlier and influence diagnostics for meta-analysis",
//! Research Synthesis Methods 2010; metafor's `rstudent`).

use serde::Serialize;
use statrs::distribution::{ContinuousCDF, Normal, StudentsT};

use crate::FleetError;

/// How τ² is estimated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Tau2 {
    /// DerSimonian–Laird, the method of moments: closed form, the
    /// reference's first choice and what `bbrkit fleet report` uses.
    DerSimonianLaird,
    /// Restricted maximum likelihood: less biased with few hosts
    /// (Viechtbauer, "Bias and efficiency of meta-analytic variance
    /// estimators in the random-effects model", J. Educ. Behav. Stat. 2005).
    Reml,
}

/// REML's Fisher scoring stops when a step is below this (metafor's
/// `threshold`, 1e-5, made stricter: the tests compare to 1e-6) ...
const REML_TOLERANCE: f64 = 1e-10;
/// ... or after this many steps (metafor's `maxiter`).
const REML_MAX_STEPS: usize = 100;

/// The pooled analysis of k studies.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Pool {
    /// Studies pooled.
    pub k: usize,
    /// Fixed-effect (inverse-variance) mean.
    pub fixed: f64,
    /// Cochran's Q.
    pub q: f64,
    /// Its degrees of freedom, k − 1.
    pub df: usize,
    /// P(χ²(k − 1) ≥ Q): whether the studies differ more than their own
    /// errors say (`None` for one study).
    pub q_p_value: Option<f64>,
    /// Between-study variance, DerSimonian–Laird.
    pub tau2: f64,
    /// Share of the variation that is between studies (0..1).
    pub i2: f64,
    /// Random-effects mean.
    pub mu: f64,
    /// Its standard error, normal theory.
    pub se_z: f64,
    /// Its standard error, Hartung–Knapp (`None` for one study).
    pub se_hk: Option<f64>,
    /// Interval of `mu` at the level asked: Hartung–Knapp t with k − 1
    /// degrees of freedom (one study: its own normal interval).
    pub ci: (f64, f64),
    /// The normal-theory interval `mu ± z SE_z`.
    pub ci_z: (f64, f64),
    /// Where a new study's effect is expected (`None` below 3 studies:
    /// t with k − 2 degrees of freedom).
    pub prediction: Option<(f64, f64)>,
}

/// Checks the studies: finite effects, finite variances above 0.
fn check(y: &[f64], v: &[f64]) -> Result<(), FleetError> {
    if y.is_empty() || y.len() != v.len() {
        return Err(FleetError::Empty);
    }
    for (index, (&y, &v)) in y.iter().zip(v).enumerate() {
        if !(y.is_finite() && v.is_finite() && v > 0.0) {
            return Err(FleetError::BadStudy { index, y, v });
        }
    }
    Ok(())
}

/// The two-sided quantile of Student's t with `df` degrees of freedom at
/// `level` (0.95: 0.975's quantile).
fn t_quantile(df: usize, level: f64) -> f64 {
    // df ≥ 1 by construction: location 0, scale 1 are valid.
    StudentsT::new(0.0, 1.0, df as f64).map_or(f64::NAN, |t| t.inverse_cdf(0.5 + level / 2.0))
}

/// The two-sided standard-normal quantile at `level` (1.959964 at 0.95).
pub fn z_quantile(level: f64) -> f64 {
    Normal::standard().inverse_cdf(0.5 + level / 2.0)
}

/// Fixed-effect mean, Q and the DerSimonian–Laird τ².
fn dersimonian_laird(y: &[f64], v: &[f64]) -> (f64, f64, f64) {
    let w: Vec<f64> = v.iter().map(|v| 1.0 / v).collect();
    let sw: f64 = w.iter().sum();
    let fixed = w.iter().zip(y).map(|(w, y)| w * y).sum::<f64>() / sw;
    let q: f64 = w.iter().zip(y).map(|(w, y)| w * (y - fixed).powi(2)).sum();
    let df = (y.len() - 1) as f64;
    let c = sw - w.iter().map(|w| w * w).sum::<f64>() / sw;
    let tau2 = if c > 0.0 {
        ((q - df) / c).max(0.0)
    } else {
        0.0
    };
    (fixed, q, tau2)
}

/// The REML τ² by Fisher scoring from `start` (metafor's algorithm for
/// an intercept-only model).
fn reml(y: &[f64], v: &[f64], start: f64) -> f64 {
    let mut tau2 = start;
    for _ in 0..REML_MAX_STEPS {
        let (mu, _, w) = random_mean(y, v, tau2);
        let s1: f64 = w.iter().sum();
        let s2: f64 = w.iter().map(|w| w * w).sum();
        let s3: f64 = w.iter().map(|w| w * w * w).sum();
        let tr_p = s1 - s2 / s1;
        let tr_pp = s2 - 2.0 * s3 / s1 + (s2 / s1).powi(2);
        let ypy: f64 = w.iter().zip(y).map(|(w, y)| w * w * (y - mu).powi(2)).sum();
        if tr_pp <= 0.0 {
            break;
        }
        let next = (tau2 + (ypy - tr_p) / tr_pp).max(0.0);
        let step = (next - tau2).abs();
        tau2 = next;
        if step < REML_TOLERANCE {
            break;
        }
    }
    tau2
}

/// τ² by `method`, with the fixed-effect mean and Q.
fn estimate(y: &[f64], v: &[f64], method: Tau2) -> (f64, f64, f64) {
    let (fixed, q, dl) = dersimonian_laird(y, v);
    let tau2 = match method {
        Tau2::DerSimonianLaird => dl,
        Tau2::Reml if y.len() > 1 => reml(y, v, dl),
        Tau2::Reml => 0.0,
    };
    (fixed, q, tau2)
}

/// Random-effects mean and its normal-theory SE for a given τ².
fn random_mean(y: &[f64], v: &[f64], tau2: f64) -> (f64, f64, Vec<f64>) {
    let w: Vec<f64> = v.iter().map(|v| 1.0 / (v + tau2)).collect();
    let sw: f64 = w.iter().sum();
    let mu = w.iter().zip(y).map(|(w, y)| w * y).sum::<f64>() / sw;
    (mu, (1.0 / sw).sqrt(), w)
}

/// Pools `y` (effects) with variances `v` at interval level `level`
/// (0.95), τ² by DerSimonian–Laird.
pub fn pool(y: &[f64], v: &[f64], level: f64) -> Result<Pool, FleetError> {
    pool_with(y, v, level, Tau2::DerSimonianLaird)
}

/// [`pool`] with τ² by `method`.
pub fn pool_with(y: &[f64], v: &[f64], level: f64, method: Tau2) -> Result<Pool, FleetError> {
    check(y, v)?;
    let k = y.len();
    let (fixed, q, tau2) = estimate(y, v, method);
    let (mu, se_z, w) = random_mean(y, v, tau2);
    let z = z_quantile(level);
    let ci_z = (mu - z * se_z, mu + z * se_z);
    let df = k - 1;
    let se_hk = (k > 1).then(|| {
        let sw: f64 = w.iter().sum();
        let scale = w
            .iter()
            .zip(y)
            .map(|(w, y)| w * (y - mu).powi(2))
            .sum::<f64>()
            / df as f64;
        (scale / sw).sqrt()
    });
    let ci = match se_hk {
        Some(se) => {
            let t = t_quantile(df, level);
            (mu - t * se, mu + t * se)
        }
        None => ci_z,
    };
    let prediction = se_hk.filter(|_| k > 2).map(|se| {
        let half = t_quantile(k - 2, level) * (tau2 + se * se).sqrt();
        (mu - half, mu + half)
    });
    let i2 = if q > 0.0 {
        ((q - df as f64) / q).max(0.0)
    } else {
        0.0
    };
    let q_p_value = (df > 0)
        .then(|| statrs::distribution::ChiSquared::new(df as f64).map_or(f64::NAN, |c| c.sf(q)));
    Ok(Pool {
        k,
        fixed,
        q,
        df,
        q_p_value,
        tau2,
        i2,
        mu,
        se_z,
        se_hk,
        ci,
        ci_z,
        prediction,
    })
}

/// Each study's externally standardized residual: its effect against the
/// random-effects pool of the others,
/// `(y_i − μ₋ᵢ) / √(v_i + τ²₋ᵢ + SE_z,₋ᵢ²)`, standard normal when the
/// study belongs with them. `None` for each when there are fewer than 2.
/// τ² by DerSimonian–Laird.
pub fn leave_one_out(y: &[f64], v: &[f64]) -> Result<Vec<Option<f64>>, FleetError> {
    leave_one_out_with(y, v, Tau2::DerSimonianLaird)
}

/// [`leave_one_out`] with τ² re-estimated by `method` without each study.
pub fn leave_one_out_with(
    y: &[f64],
    v: &[f64],
    method: Tau2,
) -> Result<Vec<Option<f64>>, FleetError> {
    check(y, v)?;
    let k = y.len();
    Ok((0..k)
        .map(|i| {
            (k > 1).then(|| {
                let (ys, vs): (Vec<f64>, Vec<f64>) =
                    (0..k).filter(|&j| j != i).map(|j| (y[j], v[j])).unzip();
                let (_, _, tau2) = estimate(&ys, &vs, method);
                let (mu, se, _) = random_mean(&ys, &vs, tau2);
                (y[i] - mu) / (v[i] + tau2 + se * se).sqrt()
            })
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_study_is_its_own_pool() {
        let p = pool(&[0.5], &[0.04], 0.95).unwrap();
        assert_eq!((p.k, p.tau2, p.q, p.i2, p.mu), (1, 0.0, 0.0, 0.0, 0.5));
        assert!((p.ci.0 - (0.5 - 1.959_963_984_540_054 * 0.2)).abs() < 1e-12);
        assert_eq!((p.se_hk, p.prediction, p.q_p_value), (None, None, None));
    }

    #[test]
    fn identical_studies_have_no_heterogeneity() {
        let p = pool(&[0.3; 5], &[0.01, 0.02, 0.03, 0.04, 0.05], 0.95).unwrap();
        assert_eq!((p.tau2, p.i2), (0.0, 0.0));
        assert!((p.mu - 0.3).abs() < 1e-12 && p.q.abs() < 1e-20);
        // Hartung–Knapp: no spread around the mean, a zero-width interval.
        assert!(p.se_hk.unwrap() < 1e-12);
    }

    #[test]
    fn bad_studies_are_refused() {
        assert_eq!(pool(&[], &[], 0.95), Err(FleetError::Empty));
        assert!(matches!(
            pool(&[0.1, 0.2], &[0.01, 0.0], 0.95),
            Err(FleetError::BadStudy { index: 1, .. })
        ));
        assert!(pool(&[f64::NAN], &[0.1], 0.95).is_err());
    }

    #[test]
    fn a_planted_outlier_disagrees_and_the_others_do_not() {
        let y = [0.10, 0.12, 0.08, 0.11, 0.09, 0.95];
        let v = [0.002; 6];
        let z = leave_one_out(&y, &v).unwrap();
        assert!(z[5].unwrap() > 5.0, "{z:?}");
        assert!(z[..5].iter().all(|z| z.unwrap().abs() < 1.96), "{z:?}");
    }
}
