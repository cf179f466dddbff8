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
//!   stall                per arm: drawn − closed − lost          > Little's-law bound AND
//!                        (connections drawn, not yet closed)     more than the other arm's share
//! ```
//!
//! **The stall gate.** An arm whose connections stop closing (the
//! algorithm wedges, the kernel stops acking its sockets) produces no
//! records, so nothing in the comparison sees it: its connections are
//! simply missing, and a guardrail computed from closed connections never
//! trips. The gate weighs the arm's connections drawn but not closed
//! against what closed durations explain. By Little's law a stable arm
//! drawing `λ_a` connections a second that last `W` on average has
//! `λ_a W` of them open; the gate uses
//!
//! ```text
//!   open_a   = drawn_a − closed_a − lost       (every lost record counted against each arm:
//!                                               a lost record is never taken for a stall)
//!   W        = the larger arm's mean closed duration (an arm that is merely slower is explained)
//!   bound_a  = STALL_FACTOR · (drawn_a / drawing_s) · W + STALL_SLACK
//!   z_a      = two-proportion z of open_a / drawn_a against the other arm's open share
//!   stalled  when open_a > bound_a and z_a > STALL_Z
//! ```
//!
//! The second condition keeps long-lived connections (keep-alive, streams)
//! that both arms hold open from looking like a stall. A stall of B is a
//! guardrail event: [`apply`] adds the decision to send B's new
//! connections back to A (the decision's reason names the gate). A stall
//! of A makes the report untrusted and moves nothing (the guardrails
//! protect the baseline, they never hand it to the candidate).
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
use crate::guardrail::back_to_a;

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

/// The stall gate's slack on Little's law: the mean closed duration `W`
/// at a look is biased short (the longest connections have not closed
/// yet), and by less than 3× once the trial has run a few times the
/// longest duration; the simulation (`tests/pipeline.rs`) measures the
/// false alarms this leaves.
pub const STALL_FACTOR: f64 = 3.0;

/// The stall gate's slack in connections: with Poisson arrivals the open
/// count is Poisson(`λ W`), and 20 above 3× its mean is beyond its 0.1 %
/// tail for every mean (for a mean of 5, P(N > 35) < 1e-12).
pub const STALL_SLACK: f64 = 20.0;

/// The stall gate's z: one-sided 0.1 % of the standard normal (the
/// sample-ratio test's α): an arm's open share must exceed the other's by
/// more than chance does at that level.
pub const STALL_Z: f64 = 3.09;

/// One gate's outcome.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Gate {
    /// `connections`, `draws_ratio`, `assignment_failures`, `kept_other`,
    /// `lost_records`, `stall`.
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
    /// Closed connections of each arm read so far (of those drawn under
    /// the split) and their mean duration, seconds
    /// ([`crate::Trial::closed_durations`]).
    pub closed: [(u64, Option<f64>); 2],
    /// Seconds the split drew connections: the trial's age, or its age at
    /// a guardrail's cut (`drawn` is counted at the cut).
    pub drawing_s: f64,
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
    out.extend(stall(g));
    out
}

/// The stall gate of each arm (none before any connection closed: there
/// is no duration to weigh the open ones against).
fn stall(g: &GateInput) -> Vec<Gate> {
    let Some(w) = g.closed.iter().filter_map(|c| c.1).reduce(f64::max) else {
        return Vec::new();
    };
    let open = [0, 1].map(|i| g.drawn[i].saturating_sub(g.closed[i].0 + g.lost));
    (0..2)
        .map(|i| {
            let rate = g.drawn[i] as f64 / g.drawing_s.max(1.0);
            let expected = rate * w;
            let bound = STALL_FACTOR * expected + STALL_SLACK;
            let z = two_proportion_z([open[i], g.drawn[i]], [open[1 - i], g.drawn[1 - i]]);
            let ok = open[i] as f64 <= bound || z <= STALL_Z;
            Gate {
                name: "stall",
                ok,
                arm: Some(ARM_NAMES[i]),
                value: open[i] as f64,
                bound,
                detail: format!(
                    "arm {} {}: {} of {} drawn not closed, where its rate ({:.1}/s) and the \
                     closed durations (mean {:.2} s) explain {:.1} (bound {:.0}); open share \
                     {} against the other arm's {} (z = {:.1}){}",
                    ARM_NAMES[i],
                    g.cc[i],
                    open[i],
                    g.drawn[i],
                    rate,
                    w,
                    expected,
                    bound,
                    pct(ratio(open[i], g.drawn[i])),
                    pct(ratio(open[1 - i], g.drawn[1 - i])),
                    z,
                    if ok {
                        ""
                    } else {
                        ": its connections stopped closing"
                    }
                ),
            }
        })
        .collect()
}

/// z of the share `a.0 / a.1` above `b.0 / b.1` (pooled variance; 0 when
/// either has no draws or the pooled share is 0 or 1).
fn two_proportion_z(a: [u64; 2], b: [u64; 2]) -> f64 {
    if a[1] == 0 || b[1] == 0 {
        return 0.0;
    }
    let (na, nb) = (a[1] as f64, b[1] as f64);
    let p = (a[0] + b[0]) as f64 / (na + nb);
    let var = p * (1.0 - p) * (1.0 / na + 1.0 / nb);
    if var <= 0.0 {
        return 0.0;
    }
    (a[0] as f64 / na - b[0] as f64 / nb) / var.sqrt()
}

/// Makes `report` untrusted for every failed gate, naming it: the trial,
/// its overall comparison and every group. A stalled B is also a guardrail
/// event: unless a guardrail already decided, B's new connections go back
/// to A (`decisions`).
pub fn apply(report: &mut Report, gates: &[Gate]) {
    for g in gates.iter().filter(|g| !g.ok) {
        report
            .untrusted_because
            .push(format!("gate {}: {}", g.name, g.detail));
        report.trusted = false;
    }
    let b_stalled = gates
        .iter()
        .find(|g| g.name == "stall" && !g.ok && g.arm == Some(ARM_NAMES[1]));
    if let Some(g) = b_stalled
        && report.decisions.is_empty()
    {
        let because = vec![format!("gate stall: {}", g.detail)];
        report
            .decisions
            .push(back_to_a(&report.split[0].cc, "all", because));
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

    /// `drawn` over 40 s, `closed` of them closed after a mean of 1 s.
    fn flowing(drawn: [u64; 2], closed: [u64; 2]) -> GateInput {
        GateInput {
            closed: [0, 1].map(|i| (closed[i], Some(1.0))),
            drawing_s: 40.0,
            ..input(drawn, [0, 0])
        }
    }

    #[test]
    fn a_stalled_arm_fails_its_gate_and_a_slow_or_kept_open_one_does_not() {
        // B stopped closing: 280 of its 300 open where 7.5 are explained.
        let gates = check(&flowing([300, 300], [292, 20]));
        let bad: Vec<_> = gates.iter().filter(|g| !g.ok).collect();
        assert_eq!(bad.len(), 1, "{gates:#?}");
        assert_eq!((bad[0].name, bad[0].arm), ("stall", Some("B")));
        assert!(bad[0].detail.contains("280 of 300"), "{}", bad[0].detail);
        // A slower arm: 14 of 73 open against 2 of 63 (issue 32's numbers).
        assert!(check(&flowing([73, 63], [59, 61])).iter().all(|g| g.ok));
        // Both arms keep connections open (keep-alive): no stall.
        assert!(check(&flowing([300, 300], [100, 110])).iter().all(|g| g.ok));
        // Lost records are never taken for a stall.
        let mut lost = flowing([300, 300], [292, 20]);
        lost.lost = 280;
        lost.written = 312;
        let g = check(&lost);
        assert!(g.iter().all(|g| g.name != "stall" || g.ok), "{g:#?}");
        // Nothing closed yet: no duration, no stall gate.
        let g = check(&input([300, 300], [0, 0]));
        assert!(g.iter().all(|g| g.name != "stall"));
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
