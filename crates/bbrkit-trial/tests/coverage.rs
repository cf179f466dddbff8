//! Coverage of the effect's 95 % interval, by simulation: draw trials from
//! known distributions many times and count how often the interval holds
//! the true ratio of medians. With R repetitions the count's standard
//! error is sqrt(0.95·0.05/R) (1.1 points at R = 400): the bounds below
//! are about three of them around 95 %, a little more above (a percentile
//! interval of a median from 50 values leans conservative: its bootstrap
//! distribution is lumpy).
//!
//! Seeded (`BBRKIT_TEST_SEED` replays one), printed.

mod common;

use bbrkit_cc::testing::test_seed;
use bbrkit_policy::ConnRecord;
use bbrkit_trial::{Mode, TrialDef, Unit};
use common::{Draw, conn, def, rate, report};

const REPS: usize = 400;
const RESAMPLES: usize = 400;

/// Runs `REPS` trials made by `make` from `default_seed` (or
/// `BBRKIT_TEST_SEED`) and returns the fraction whose overall interval
/// holds `truth`.
fn coverage(
    name: &str,
    default_seed: u64,
    d: &TrialDef,
    truth: f64,
    make: impl Fn(&mut Draw) -> Vec<ConnRecord>,
) -> f64 {
    let seed = test_seed(default_seed);
    let mut draw = Draw::new(seed);
    let mut covered = 0;
    for rep in 0..REPS {
        let records = make(&mut draw);
        let r = report(d, &records, seed ^ rep as u64, Mode::FixedHorizon);
        let e = r
            .overall
            .effect
            .as_ref()
            .unwrap_or_else(|| panic!("{name}: no effect: {}", r.overall.reason));
        if e.ci_low <= truth && truth <= e.ci_high {
            covered += 1;
        }
    }
    let c = rate(covered, REPS);
    println!(
        "{name}: interval covers the true ratio {truth:.3} in {covered} of {REPS} trials ({:.1} %)",
        c * 100.0
    );
    c
}

/// `n` connections per arm of 2 MB (one size class), goodput from `a`/`b`.
fn one_class(
    draw: &mut Draw,
    n: u64,
    a: impl Fn(&mut Draw) -> f64,
    b: impl Fn(&mut Draw) -> f64,
) -> Vec<ConnRecord> {
    let mut out = Vec::new();
    for i in 0..n {
        out.push(conn(2 * i, 0, "198.51.100.1", 2_000_000, a(draw)));
        out.push(conn(2 * i + 1, 1, "198.51.100.2", 2_000_000, b(draw)));
    }
    out
}

#[test]
fn heavy_tailed_goodput_with_a_real_effect_is_covered() {
    // Log-normal, sigma 1.2: p90/p10 = 22, as per-connection goodput is.
    let c = coverage("lognormal 1.5x", 20240923, &def(RESAMPLES), 1.5, |d| {
        one_class(
            d,
            200,
            |d| d.lognormal(10e6, 1.2),
            |d| d.lognormal(15e6, 1.2),
        )
    });
    assert!((0.915..=0.99).contains(&c), "{c}");
}

#[test]
fn no_difference_is_covered() {
    let c = coverage(
        "lognormal no difference",
        20240924,
        &def(RESAMPLES),
        1.0,
        |d| {
            one_class(
                d,
                200,
                |d| d.lognormal(10e6, 1.2),
                |d| d.lognormal(10e6, 1.2),
            )
        },
    );
    assert!((0.915..=0.99).contains(&c), "{c}");
}

#[test]
fn different_shapes_are_covered_at_their_ratio_of_medians() {
    // A log-normal, B Pareto with tail index 1.5 (infinite variance):
    // not a scale shift, so only the ratio of medians is the truth.
    let (xm, alpha) = (8e6, 1.5);
    let truth = xm * 2f64.powf(1.0 / alpha) / 8e6;
    let c = coverage(
        "lognormal vs pareto",
        20240925,
        &def(RESAMPLES),
        truth,
        |d| one_class(d, 200, |d| d.lognormal(8e6, 1.0), |d| d.pareto(xm, alpha)),
    );
    assert!((0.915..=0.99).contains(&c), "{c}");
}

#[test]
fn the_stratified_combination_is_covered() {
    // 150 short (50 kB) and 50 long (20 MB) transfers per arm: short ones
    // see no difference, long ones 2x. The combination weighs by bytes:
    // 50·20 MB against 150·50 kB, so w_long = 1000/1007.5.
    let w_long = 1000.0 / 1007.5;
    let truth = (w_long * 2f64.ln()).exp();
    let c = coverage("stratified", 20240926, &def(RESAMPLES), truth, |d| {
        let mut out = Vec::new();
        for i in 0..200u64 {
            let long = i < 50;
            let bytes = if long { 20_000_000 } else { 50_000 };
            let (ma, mb) = if long { (20e6, 40e6) } else { (2e6, 2e6) };
            out.push(conn(2 * i, 0, "198.51.100.1", bytes, d.lognormal(ma, 1.0)));
            out.push(conn(
                2 * i + 1,
                1,
                "198.51.100.2",
                bytes,
                d.lognormal(mb, 1.0),
            ));
        }
        out
    });
    assert!((0.915..=0.99).contains(&c), "{c}");
}

/// Clients with a random effect each: 60 clients per arm, 1 to 15
/// connections each, log goodput = log median + client (sd 0.8) +
/// connection (sd 0.6). The marginal median of a connection's goodput is
/// the arm's median (client effects are independent of their sizes).
fn clustered(d: &mut Draw, ratio: f64) -> Vec<ConnRecord> {
    let mut out = Vec::new();
    let mut cookie = 0;
    for client in 0..120u64 {
        let arm = (client % 2) as u8;
        let median = if arm == 0 { 10e6 } else { 10e6 * ratio };
        let shift = (0.8 * d.normal()).exp();
        let remote = format!("10.{}.{}.1", client / 256, client % 256);
        for _ in 0..d.int(1, 15) {
            cookie += 1;
            let g = median * shift * (0.6 * d.normal()).exp();
            out.push(conn(cookie, arm, &remote, 2_000_000, g));
        }
    }
    out
}

#[test]
fn per_client_units_are_covered_only_when_the_interval_is_over_clients() {
    let mut by_client = def(RESAMPLES);
    by_client.unit = Unit::Client;
    let c = coverage("clustered, over clients", 20240927, &by_client, 1.3, |d| {
        clustered(d, 1.3)
    });
    assert!((0.9..=0.985).contains(&c), "{c}");
    // The same data with the interval over connections ignores that a
    // client's connections move together: it is too narrow.
    let naive = coverage(
        "clustered, over connections",
        20240928,
        &def(RESAMPLES),
        1.3,
        |d| clustered(d, 1.3),
    );
    assert!(naive < 0.85, "{naive}");
}
