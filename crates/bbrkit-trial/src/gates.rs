//! The trust gates: the conditions under which a trial's comparison may be
//! acted on, decided from the assignment's and the recording's counters
//! (plain numbers, read once by the live side), each named, with its
//! numbers and its bound. A report is `trusted` only when every gate
//! passes ([`apply`]); `--until-confident` stops only on a trusted report.
//!
//! ```text
//!   gate                 input                                   fails when
//!   connections          draws of the rule                       none at all (wrong cgroup or rule)
//!   draws_ratio          draws per arm (per-connection units)    sequential SRM: BF ≥ 1/α
//!   assignment_failures  per arm: refused by the kernel / drawn  > MAX_SHARE
//!   kept_other           per arm: kept app's/route's cc / drawn  > MAX_SHARE
//!   lost_records         ring full + no storage + no tcp_sock    > MAX_SHARE of records
//!                        + malformed (global: the program counts
//!                        them per program, not per arm)
//! ```
//!
//! **The sequential sample-ratio test** is Lindon & Malek's
//! Dirichlet–multinomial test ("Anytime-valid inference for multinomial
//! count data", NeurIPS 2022) with two categories: under the null the
//! draws are Bernoulli with the split's share `p`; the alternative mixes
//! over `θ ~ Beta(k p, k (1 − p))`. The Bayes factor
//!
//! ```text
//!   BF_n = B(k p + n_A, k q + n_B) / B(k p, k q) / (p^n_A q^n_B),   q = 1 − p
//! ```
//!
//! is a nonnegative martingale under the null, so by Ville's inequality
//! `P(∃n: BF_n ≥ 1/α) ≤ α`: the check may be made at every look, at every
//! draw, for ever, and its false-alarm rate stays below α (simulated in
//! `tests/gates.rs`, 2000 null runs of 20 000 draws checked every 100:
//! 1 alarm (0.05 %) at α = 0.001, 2.55 % at 0.05; against a 5 %
//! mis-assignment, P(A) = 0.525, an alarm in 200 of 200 runs, after a
//! median of 6300 draws; seeds 32000001 and 32000002).
//! The anytime-valid p-value is `min(1, 1/BF_n)`.
//!
//! **The shares' bound** ([`MAX_SHARE`], 1 %): connections drawn into an arm
//! but not run with its algorithm (the kernel refused the name, the
//! application or a route kept its own) are counted in the arm
//! (intention-to-treat), and records never read are missing from it. Even
//! if every such connection were the arm's slowest or fastest, a share `f`
//! of them moves the arm's median at most to its `50 ± f/2` percentile: at
//! 1 % the 50.5th, a shift far inside what the 5 % equivalence margin
//! allows for any spread seen in the lab. Beyond it, the arm is not the
//! algorithm it names (issue 32: bbr3 unregistered mid-trial, 717 of 948
//! of arm B refused, and the trial said `better`).

use serde::Serialize;
use statrs::function::beta::ln_beta;

use crate::Report;
use crate::definition::ARM_NAMES;

/// The largest share of an arm's draws (or of all records, for lost
/// records) that may not be what the comparison assumes. Reasoning above.
pub const MAX_SHARE: f64 = 0.01;

/// The sequential sample-ratio test's level: the chance, over the whole
/// trial however often it is checked, that a working assignment is called
/// broken. The same as the fixed check's (`Settings::srm_alpha`, 0.001).
pub const SRM_ALPHA: f64 = 0.001;

/// The Beta mixture's concentration `k`: the alternative's spread of arm
/// shares around the split has standard deviation `sqrt(p q / (k + 1))`,
/// 0.025 at 50/50 with k = 400, so the test is most powerful against
/// mis-assignments of a few percent (the ones that matter and are hard to
/// see), and still detects gross ones at once.
pub const SRM_CONCENTRATION: f64 = 400.0;

/// One gate's outcome.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Gate {
    /// `connections`, `draws_ratio`, `assignment_failures`, `kept_other`,
    /// `lost_records`.
    pub name: &'static str,
    /// The gate passes.
    pub ok: bool,
    /// The arm the numbers are about (`A`, `B`), or null for the trial.
    pub arm: Option<&'static str>,
    /// The measured value: a share (0–1), or for `draws_ratio` the
    /// anytime-valid p-value, for `connections` the draws.
    pub value: f64,
    /// The bound `value` is held to (`draws_ratio`: α; a pass is
    /// `value > bound` there and for `connections`, `value <= bound`
    /// elsewhere).
    pub bound: f64,
    /// The numbers in a sentence.
    pub detail: String,
}

/// The counters the gates judge, read once.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GateInput {
    /// The arms' algorithms, A then B.
    pub cc: [String; 2],
    /// The split's shares, A then B (sum 1).
    pub shares: [f64; 2],
    /// Connections the program drew into each arm (before a guardrail's
    /// cut: the draws under the split).
    pub drawn: [u64; 2],
    /// The draws are independent per connection (unit `connection`): the
    /// sample-ratio test applies.
    pub per_connection: bool,
    /// Per arm: the kernel refused the algorithm.
    pub failed: [u64; 2],
    /// Per arm: the application's or a locked route's algorithm was kept.
    pub kept: [u64; 2],
    /// Records written by the program.
    pub written: u64,
    /// Records lost: ring full, no storage, no `tcp_sock`, malformed.
    pub lost: u64,
    /// Where to look when there are no connections (the cgroup and the
    /// rule, in words).
    pub scope: String,
}

/// The sequential sample-ratio test on the draws: the Bayes factor of the
/// Beta mixture against the split's share `p` of arm A.
pub fn srm_bayes_factor(drawn: [u64; 2], p: f64) -> f64 {
    let (a, b) = (drawn[0] as f64, drawn[1] as f64);
    let (ka, kb) = (SRM_CONCENTRATION * p, SRM_CONCENTRATION * (1.0 - p));
    let ln = ln_beta(ka + a, kb + b) - ln_beta(ka, kb) - a * p.ln() - b * (1.0 - p).ln();
    ln.exp()
}

/// The anytime-valid p-value of the draws against the split.
pub fn srm_p_value(drawn: [u64; 2], p: f64) -> f64 {
    (1.0 / srm_bayes_factor(drawn, p)).min(1.0)
}

/// Every gate, in the table's order.
pub fn check(g: &GateInput) -> Vec<Gate> {
    let total = g.drawn[0] + g.drawn[1];
    let mut out = vec![Gate {
        name: "connections",
        ok: total > 0,
        arm: None,
        value: total as f64,
        bound: 0.0,
        detail: if total > 0 {
            format!("{total} connections drawn")
        } else {
            format!(
                "no connection of the trial's rule was seen: check that the service's sockets are in {}",
                g.scope
            )
        },
    }];
    if g.per_connection {
        let p = srm_p_value(g.drawn, g.shares[0]);
        out.push(Gate {
            name: "draws_ratio",
            ok: p > SRM_ALPHA,
            arm: None,
            value: p,
            bound: SRM_ALPHA,
            detail: format!(
                "draws A {} / B {} against a {:.0}/{:.0} split: sequential p = {} ({}: anytime-valid)",
                g.drawn[0],
                g.drawn[1],
                g.shares[0] * 100.0,
                g.shares[1] * 100.0,
                fmt_p(p),
                if p > SRM_ALPHA {
                    "ok"
                } else {
                    "the assignment is broken"
                }
            ),
        });
    }
    for (name, counts, what) in [
        ("assignment_failures", g.failed, "refused by the kernel"),
        (
            "kept_other",
            g.kept,
            "kept the application's or a route's algorithm",
        ),
    ] {
        for i in 0..2 {
            let share = ratio(counts[i], g.drawn[i]);
            out.push(Gate {
                name,
                ok: share <= MAX_SHARE,
                arm: Some(ARM_NAMES[i]),
                value: share,
                bound: MAX_SHARE,
                detail: format!(
                    "arm {} {}: {} of {} drawn {what} ({}, bound {})",
                    ARM_NAMES[i],
                    g.cc[i],
                    counts[i],
                    g.drawn[i],
                    pct(share),
                    pct(MAX_SHARE)
                ),
            });
        }
    }
    let share = ratio(g.lost, g.written + g.lost);
    out.push(Gate {
        name: "lost_records",
        ok: share <= MAX_SHARE,
        arm: None,
        value: share,
        bound: MAX_SHARE,
        detail: format!(
            "{} of {} records lost, both arms together (the program counts them globally) ({}, bound {})",
            g.lost,
            g.written + g.lost,
            pct(share),
            pct(MAX_SHARE)
        ),
    });
    out
}

/// Makes `report` untrusted for every failed gate, naming it: the trial,
/// its overall comparison and every group.
pub fn apply(report: &mut Report, gates: &[Gate]) {
    for g in gates.iter().filter(|g| !g.ok) {
        report
            .untrusted_because
            .push(format!("gate {}: {}", g.name, g.detail));
        report.trusted = false;
    }
    if !report.trusted {
        report.overall.trusted = false;
        for group in &mut report.groups {
            group.trusted = false;
        }
    }
}

fn ratio(n: u64, of: u64) -> f64 {
    if of == 0 { 0.0 } else { n as f64 / of as f64 }
}

fn pct(x: f64) -> String {
    format!("{:.1}%", x * 100.0)
}

fn fmt_p(p: f64) -> String {
    if p >= 0.001 {
        format!("{p:.3}")
    } else {
        format!("{p:.1e}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(drawn: [u64; 2], failed: [u64; 2]) -> GateInput {
        GateInput {
            cc: ["cubic".into(), "bbr3".into()],
            shares: [0.5, 0.5],
            drawn,
            per_connection: true,
            failed,
            written: drawn[0] + drawn[1],
            scope: "cgroup /x and that they match rule 1".into(),
            ..GateInput::default()
        }
    }

    #[test]
    fn the_issue_s_refused_arm_fails_its_gate() {
        // Issue 32: arm B 231 assigned + 717 refused.
        let gates = check(&input([940, 948], [0, 717]));
        let failed: Vec<_> = gates.iter().filter(|g| !g.ok).collect();
        assert_eq!(failed.len(), 1, "{gates:#?}");
        assert_eq!(
            (failed[0].name, failed[0].arm),
            ("assignment_failures", Some("B"))
        );
        assert!(
            failed[0].detail.contains("717 of 948"),
            "{}",
            failed[0].detail
        );
    }

    #[test]
    fn no_connections_fail_and_say_where_to_look() {
        let gates = check(&input([0, 0], [0, 0]));
        let g = gates.iter().find(|g| !g.ok).unwrap();
        assert_eq!(g.name, "connections");
        assert!(
            g.detail.contains("cgroup /x and that they match rule 1"),
            "{}",
            g.detail
        );
        assert_eq!(gates.iter().filter(|g| !g.ok).count(), 1);
    }

    #[test]
    fn lost_records_and_kept_connections_have_bounds() {
        let mut i = input([500, 500], [0, 0]);
        i.lost = 10; // 10 of 1010: 0.99 %
        assert!(check(&i).iter().all(|g| g.ok));
        i.lost = 11;
        assert!(check(&i).iter().any(|g| g.name == "lost_records" && !g.ok));
        i.lost = 0;
        i.kept = [6, 0];
        let g = check(&i);
        let bad: Vec<_> = g.iter().filter(|g| !g.ok).collect();
        assert_eq!(
            (bad.len(), bad[0].name, bad[0].arm),
            (1, "kept_other", Some("A"))
        );
    }

    #[test]
    fn the_bayes_factor_is_one_at_no_data_and_grows_with_a_mismatch() {
        assert!((srm_bayes_factor([0, 0], 0.5) - 1.0).abs() < 1e-12);
        assert!(srm_p_value([500, 500], 0.5) > 0.5);
        assert!(srm_p_value([600, 400], 0.5) < SRM_ALPHA);
        // An uneven split is judged against its own shares.
        assert!(srm_p_value([900, 100], 0.9) > 0.5);
    }
}
