//! `--until-confident`: looking at the interval after every batch of
//! connections and stopping at the first decision must not inflate false
//! positives. Simulated: trials with no difference between the arms,
//! checked at every look; a trial is a false positive when any look's
//! interval excludes 1. The anytime interval (confidence sequence) keeps
//! that at or below 5 %; the fixed-horizon interval, looked at as often,
//! does not — which is why it is not used for peeking.
//!
//! Seeded (`BBRKIT_TEST_SEED` replays one), printed.

mod common;

use bbrkit_cc::testing::test_seed;
use bbrkit_trial::{Look, Mode, Trial, Verdict};
use common::{Draw, conn, def, rate};

const REPS: usize = 300;
const LOOKS: u64 = 10;
const BATCH: u64 = 100;
const RESAMPLES: usize = 200;

/// Per trial: did any look's anytime / fixed interval exclude 1, and at
/// which look did the sequential verdict say `better` (only computed when
/// `decide`)?
fn run(seed: u64, ratio: f64, decide: bool) -> (bool, bool, Option<u64>) {
    let mut draw = Draw::new(seed);
    let mut t = Trial::new(def(RESAMPLES)).unwrap();
    let (mut anytime_fp, mut fixed_fp, mut decided_at) = (false, false, None);
    let mut cookie = 0;
    for look in 1..=LOOKS {
        for _ in 0..BATCH {
            for arm in 0..2u8 {
                cookie += 1;
                let median = if arm == 0 { 10e6 } else { 10e6 * ratio };
                t.add(&conn(
                    cookie,
                    arm,
                    "198.51.100.1",
                    3_000_000,
                    draw.lognormal(median, 1.2),
                ));
            }
        }
        let r = t.report(&Look::new(seed ^ look, Mode::FixedHorizon));
        let e = r.overall.effect.expect("enough connections at every look");
        anytime_fp |= e.anytime_low > 1.0 || e.anytime_high < 1.0;
        fixed_fp |= e.ci_low > 1.0 || e.ci_high < 1.0;
        if decide && decided_at.is_none() {
            let seq = t.report(&Look::new(seed ^ look, Mode::Sequential));
            if seq.overall.verdict == Verdict::Better {
                decided_at = Some(look * BATCH);
            }
        }
    }
    (anytime_fp, fixed_fp, decided_at)
}

#[test]
fn peeking_at_every_look_keeps_false_positives_at_or_below_five_percent() {
    let seed = test_seed(7_000_003);
    let (mut anytime, mut fixed) = (0, 0);
    for rep in 0..REPS {
        let (a, f, _) = run(seed.wrapping_add(rep as u64 * 7919), 1.0, false);
        anytime += usize::from(a);
        fixed += usize::from(f);
    }
    let (a, f) = (rate(anytime, REPS), rate(fixed, REPS));
    println!(
        "no difference, {LOOKS} looks of {BATCH} more connections per arm, {REPS} trials: \
         anytime interval excluded 1 at some look in {anytime} ({:.1} %), fixed-horizon interval in {fixed} ({:.1} %)",
        a * 100.0,
        f * 100.0
    );
    assert!(a <= 0.05, "anytime false-positive rate {a}");
    assert!(
        f > 0.08,
        "peeking at the fixed interval should inflate: {f}"
    );
}

#[test]
fn a_real_effect_is_still_found_by_the_anytime_interval() {
    let seed = test_seed(7_000_004);
    let reps = 20;
    let mut found = Vec::new();
    for rep in 0..reps {
        if let (_, _, Some(n)) = run(seed.wrapping_add(rep * 7919), 1.4, true) {
            found.push(n);
        }
    }
    println!(
        "ratio 1.4: decided better in {} of {reps} trials, at {found:?} connections per arm",
        found.len()
    );
    assert!(found.len() >= 18, "{found:?}");
}
