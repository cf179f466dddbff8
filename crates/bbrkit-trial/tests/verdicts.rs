//! Each verdict, the sample-ratio check, guardrails, receiver-side groups,
//! open connections and stratification, on constructed trials whose answer
//! is known. Seeded (`BBRKIT_TEST_SEED` replays one), printed.

mod common;

use bbrkit_cc::testing::test_seed;
use bbrkit_policy::ConnRecord;
use bbrkit_trial::{Grouping, Mode, Report, TrialDef, Unit, Verdict};
use common::{Draw, conn, def, report};

/// `n` connections per arm of `bytes` from `remote`, log-normal goodput
/// (sigma 1) with medians `ma` and `mb`.
fn arms(
    draw: &mut Draw,
    first: u64,
    n: u64,
    remote: &str,
    bytes: u64,
    ma: f64,
    mb: f64,
) -> Vec<ConnRecord> {
    (0..n)
        .flat_map(|i| {
            let a = conn(first + 2 * i, 0, remote, bytes, draw.lognormal(ma, 1.0));
            let b = conn(first + 2 * i + 1, 1, remote, bytes, draw.lognormal(mb, 1.0));
            [a, b]
        })
        .collect()
}

fn run(records: &[ConnRecord]) -> Report {
    report(&def(1000), records, 11, Mode::FixedHorizon)
}

#[test]
fn a_large_effect_is_better_and_its_inverse_worse() {
    let mut d = Draw::new(test_seed(1));
    let r = run(&arms(&mut d, 0, 300, "198.51.100.1", 5_000_000, 10e6, 30e6));
    let e = r.overall.effect.as_ref().unwrap();
    assert_eq!(r.overall.verdict, Verdict::Better, "{}", r.overall.reason);
    assert!(e.ci_low > 2.0 && e.ci_high < 4.5, "{e:?}");
    let reason = format!(
        "B/A {:.3}x, 95% interval [{:.3}, {:.3}] is above 1",
        e.ratio, e.ci_low, e.ci_high
    );
    assert_eq!(r.overall.reason, reason);
    assert_eq!(r.overall.needed, None);
    // A, the baseline, is more than 20 % slower with confidence: no
    // guardrail acts (they are one-sided: they protect A from B, never
    // hand A's traffic to the candidate; issue 32).
    assert!(r.decisions.is_empty(), "{:?}", r.decisions);
    let r = run(&arms(&mut d, 0, 300, "198.51.100.1", 5_000_000, 30e6, 10e6));
    assert_eq!(r.overall.verdict, Verdict::Worse, "{}", r.overall.reason);
    // B more than 20 % slower: its new connections go back to A.
    let dec = &r.decisions[0];
    assert_eq!((dec.stop, dec.send_to), ("B", "A"));
}

#[test]
fn no_difference_when_the_interval_fits_the_margin() {
    // Tight goodput (sigma 0.05) and the same median in both arms.
    let mut d = Draw::new(test_seed(2));
    let recs: Vec<ConnRecord> = (0..400u64)
        .flat_map(|i| {
            [0, 1].map(|arm| {
                conn(
                    2 * i + arm,
                    arm as u8,
                    "198.51.100.1",
                    5_000_000,
                    d.lognormal(10e6, 0.05),
                )
            })
        })
        .collect();
    let r = run(&recs);
    let e = r.overall.effect.as_ref().unwrap();
    assert_eq!(
        r.overall.verdict,
        Verdict::NoDifference,
        "{}",
        r.overall.reason
    );
    assert!(e.ci_low >= 1.0 / 1.05 && e.ci_high <= 1.05, "{e:?}");
    assert!(
        r.overall
            .reason
            .contains("inside the equivalence margin ±5%")
    );
}

#[test]
fn too_few_connections_are_insufficient_with_the_number_needed() {
    let mut d = Draw::new(test_seed(3));
    let r = run(&arms(&mut d, 0, 20, "198.51.100.1", 5_000_000, 10e6, 30e6));
    assert_eq!(r.overall.verdict, Verdict::InsufficientData);
    assert_eq!(r.overall.effect, None);
    let n = r.overall.needed.as_ref().unwrap();
    assert_eq!(
        (n.per_arm, n.of.as_str()),
        (30, "connections in one size class")
    );
    assert_eq!(
        r.overall.reason,
        "no size class has 30 connections with goodput in each arm (most: 1-10 MB with 20 / 20)"
    );
}

#[test]
fn a_wide_interval_holding_one_is_insufficient_with_an_estimate() {
    // Noisy (sigma 1) and a small true effect (1.1x): 60 per arm cannot tell.
    let mut d = Draw::new(test_seed(4));
    let r = run(&arms(&mut d, 0, 60, "198.51.100.1", 5_000_000, 10e6, 11e6));
    let e = r.overall.effect.as_ref().unwrap();
    assert_eq!(r.overall.verdict, Verdict::InsufficientData, "{e:?}");
    let n = r.overall.needed.as_ref().unwrap();
    assert!(n.per_arm > 60, "{n:?}");
    assert!(r.overall.reason.contains(&format!(
        "about {} connections per arm would decide",
        n.per_arm
    )));
}

#[test]
fn the_sample_ratio_check_passes_a_fair_split_and_flags_a_broken_one() {
    let mut d = Draw::new(test_seed(5));
    let fair = arms(&mut d, 0, 1000, "198.51.100.1", 5_000_000, 10e6, 30e6);
    let r = run(&fair);
    let s = r.sample_ratio.as_ref().unwrap();
    assert_eq!((s.observed, s.mismatch), ([1000, 1000], false));
    assert!(r.trusted && r.overall.trusted && r.untrusted_because.is_empty());
    // 15 % of B's records lost on the way: 1000 against 850.
    let broken: Vec<ConnRecord> = fair
        .into_iter()
        .filter(|c| c.arm == 0 || c.cookie % 40 > 5)
        .collect();
    let r = run(&broken);
    let s = r.sample_ratio.as_ref().unwrap();
    assert_eq!(s.observed, [1000, 850]);
    assert!(s.mismatch && s.p_value < 0.001, "{s:?}");
    assert!(!r.trusted && !r.overall.trusted && !r.groups[0].trusted);
    assert!(
        r.untrusted_because[0]
            .starts_with("sample ratio mismatch: connections 1000 / 850 for a 50/50 split")
    );
    // Still computed, never hidden: the numbers, marked untrusted.
    assert_eq!(r.overall.verdict, Verdict::Better);
    assert!(!r.confident(), "an untrusted trial is never confident");
}

#[test]
fn an_uneven_split_is_checked_against_its_weights() {
    let mut d = Draw::new(test_seed(6));
    let mut recs = arms(&mut d, 0, 100, "198.51.100.1", 5_000_000, 10e6, 10e6);
    recs.retain(|c| c.arm == 1 || c.cookie % 10 < 2); // A 20 %, B 100 of 100
    let mut def = def(200);
    def.arms[0].weight = 1;
    def.arms[1].weight = 5;
    let r = report(&def, &recs, 1, Mode::FixedHorizon);
    let s = r.sample_ratio.as_ref().unwrap();
    assert_eq!(s.observed, [20, 100]);
    assert!(!s.mismatch, "{s:?}");
}

#[test]
fn a_goodput_guardrail_trips_and_one_that_must_not_does_not() {
    let mut d = Draw::new(test_seed(7));
    // B at a third of A's goodput: beyond the 20 % bound with confidence.
    let r = run(&arms(&mut d, 0, 300, "198.51.100.1", 5_000_000, 30e6, 10e6));
    let g = &r.overall.guardrails[0];
    assert_eq!((g.tripped, g.bound), (Some("B"), 0.8), "{g:?}");
    assert_eq!(r.decisions.len(), 1, "all connections, not also the group");
    let dec = &r.decisions[0];
    assert_eq!(
        (dec.scope.as_str(), dec.stop, dec.send_to, dec.cc.as_str()),
        ("all", "B", "A", "cubic")
    );
    assert!(
        dec.because[0].starts_with("goodput B/A 0.2"),
        "{:?}",
        dec.because
    );
    // B 10 % slower, which is inside the bound: worse, but no guardrail.
    let r = run(&arms(&mut d, 0, 3000, "198.51.100.1", 5_000_000, 10e6, 9e6));
    assert_eq!(r.overall.verdict, Verdict::Worse, "{}", r.overall.reason);
    assert!(
        r.overall.guardrails.iter().all(|g| g.tripped.is_none()),
        "{:?}",
        r.overall.guardrails
    );
    assert!(r.decisions.is_empty());
}

#[test]
fn a_retransmit_guardrail_trips_in_its_group_only() {
    let mut d = Draw::new(test_seed(8));
    let mut recs = arms(&mut d, 0, 2000, "198.51.100.1", 5_000_000, 10e6, 10e6);
    // In 203.0.113.0/24, B causes loss: 12.5 % of its segments
    // retransmitted against A's 1 %.
    let mut lossy = arms(&mut d, 10_000, 200, "203.0.113.9", 5_000_000, 10e6, 10e6);
    for c in &mut lossy {
        c.total_retrans = c.segs_out / if c.arm == 1 { 8 } else { 100 };
    }
    recs.append(&mut lossy);
    let r = run(&recs);
    let group = r
        .groups
        .iter()
        .find(|g| g.group == "203.0.113.0/24")
        .unwrap();
    let rt = group
        .guardrails
        .iter()
        .find(|g| g.tripped.is_some())
        .unwrap();
    assert_eq!(
        (rt.metric.as_str(), rt.tripped),
        ("retransmit_rate", Some("B"))
    );
    assert!((rt.value - 0.115).abs() < 0.002, "{rt:?}");
    // Over all connections the excess is diluted to about a point: below
    // the bound, so only that group's connections move.
    let all = r
        .overall
        .guardrails
        .iter()
        .find(|g| g.metric.as_str() == "retransmit_rate")
        .unwrap();
    assert!(all.value < 0.015 && all.tripped.is_none(), "{all:?}");
    assert_eq!(r.decisions.len(), 1);
    let dec = &r.decisions[0];
    assert_eq!(
        (dec.scope.as_str(), dec.stop, dec.send_to),
        ("203.0.113.0/24", "B", "A")
    );
    // Without the lossy group nothing trips.
    let clean: Vec<ConnRecord> = recs.iter().filter(|c| c.cookie < 10_000).cloned().collect();
    assert!(run(&clean).decisions.is_empty());
}

#[test]
fn a_group_that_mostly_receives_is_receiver_side() {
    let mut d = Draw::new(test_seed(9));
    let mut recs = arms(&mut d, 0, 100, "192.0.2.1", 5_000_000, 10e6, 30e6);
    let mut uploads = arms(&mut d, 1000, 100, "203.0.113.5", 20_000, 1e6, 1e6);
    for c in uploads.iter_mut().take(150) {
        c.bytes_received = 50_000_000;
    }
    recs.append(&mut uploads);
    let r = run(&recs);
    let up = r
        .groups
        .iter()
        .find(|g| g.group == "203.0.113.0/24")
        .unwrap();
    assert_eq!(up.verdict, Verdict::ReceiverSide);
    assert!((up.mostly_received - 0.75).abs() < 1e-12);
    assert!(
        up.reason
            .starts_with("75% of its connections received more than they sent")
    );
    assert!(
        up.guardrails.is_empty(),
        "no guardrail on what CC does not drive"
    );
    let down = r.groups.iter().find(|g| g.group == "192.0.2.0/24").unwrap();
    assert_eq!(down.verdict, Verdict::Better);
}

#[test]
fn open_connections_are_reported_apart() {
    let mut d = Draw::new(test_seed(10));
    let recs = arms(&mut d, 0, 100, "198.51.100.1", 5_000_000, 10e6, 30e6);
    let before = run(&recs);
    let mut with_open = recs.clone();
    // Long-lived connections still open: huge, slow so far. Were they
    // mixed in, A's bytes and medians would move.
    for i in 0..40u64 {
        let mut c = conn(50_000 + i, (i % 2) as u8, "198.51.100.1", 900_000_000, 1e5);
        c.open = true;
        with_open.push(c);
    }
    let after = run(&with_open);
    assert_eq!(after.records.open, 40);
    assert_eq!(
        after.overall.arms, before.overall.arms,
        "closed statistics untouched"
    );
    assert_eq!(after.overall.effect, before.overall.effect);
    let o = &after.overall.open;
    assert_eq!((o[0].connections, o[1].connections), (20, 20));
    assert_eq!(o[0].bytes_acked, 20 * 900_000_000);
    assert!((o[1].goodput_bits_per_second.unwrap().median - 1e5).abs() < 1.0);
}

#[test]
fn stratification_corrects_what_pooling_all_sizes_would_say() {
    // Most connections are short and show no difference; long ones, which
    // carry the bytes, run 3x faster on B. Pooled, the median is a short
    // connection's: "no difference". Stratified by size, weighed by bytes:
    // better, close to 3x.
    let mut d = Draw::new(test_seed(12));
    let mut recs = arms(&mut d, 0, 900, "198.51.100.1", 20_000, 2e6, 2e6);
    recs.append(&mut arms(
        &mut d,
        10_000,
        100,
        "198.51.100.1",
        30_000_000,
        20e6,
        60e6,
    ));
    let r = run(&recs);
    let e = r.overall.effect.as_ref().unwrap();
    assert!(
        (0.9..1.1).contains(&e.pooled_ratio),
        "pooled {}",
        e.pooled_ratio
    );
    assert_eq!(r.overall.verdict, Verdict::Better, "{}", r.overall.reason);
    assert!(e.ratio > 2.5 && e.ratio < 3.5, "{e:?}");
    let short = &e.classes[0];
    assert!(
        short.ci_low.unwrap() < 1.0 && short.ci_high.unwrap() > 1.0,
        "{short:?}"
    );
    assert!(short.weight < 0.01 && e.classes[3].weight > 0.99);
    // A different size mix between the arms (Simpson's paradox): within
    // each class B equals A, but B got most of the short, slow transfers.
    let mut mix = arms(&mut d, 0, 100, "198.51.100.1", 20_000, 2e6, 2e6);
    mix.retain(|c| c.arm == 1 || c.cookie % 4 == 0); // A: 25 short, B: 100
    let mut long = arms(&mut d, 10_000, 100, "198.51.100.1", 30_000_000, 20e6, 20e6);
    long.retain(|c| c.arm == 0 || c.cookie % 4 == 0); // A: 100 long, B: 25
    mix.append(&mut long);
    let r = run(&mix);
    let e = r.overall.effect.as_ref().unwrap();
    assert!(
        e.pooled_ratio < 0.2,
        "pooled says B is 5x slower: {}",
        e.pooled_ratio
    );
    assert!(
        e.ci_low < 1.0 && e.ci_high > 1.0,
        "stratified does not: {e:?}"
    );
    assert_ne!(r.overall.verdict, Verdict::Worse);
}

#[test]
fn per_prefix_units_compare_over_all_prefixes_not_within_one() {
    let mut d = Draw::new(test_seed(13));
    let mut recs = Vec::new();
    for p in 0..60u64 {
        let arm = (p % 2) as u8;
        let remote = format!("10.0.{p}.1");
        for i in 0..5 {
            let g = d.lognormal(if arm == 0 { 10e6 } else { 30e6 }, 0.5);
            recs.push(conn(p * 100 + i, arm, &remote, 5_000_000, g));
        }
    }
    let mut def = def(500);
    def.unit = Unit::Prefix;
    let r = report(&def, &recs, 1, Mode::FixedHorizon);
    assert_eq!(r.overall.verdict, Verdict::Better, "{}", r.overall.reason);
    assert_eq!(r.overall.effect.as_ref().unwrap().units, [30, 30]);
    assert_eq!(r.sample_ratio.as_ref().unwrap().counted, "prefixes");
    assert_eq!(r.groups.len(), 60);
    assert_eq!(r.groups[0].verdict, Verdict::InsufficientData);
    assert!(
        r.groups[0]
            .reason
            .starts_with("each prefix is one unit of randomization")
    );
    assert!(r.unit_meaning.contains("intervals are over prefixes"));
}

#[test]
fn rule_groups_and_records_outside_the_trial() {
    let mut d = Draw::new(test_seed(14));
    let mut recs = arms(&mut d, 0, 100, "198.51.100.1", 5_000_000, 10e6, 30e6);
    for c in recs.iter_mut().filter(|c| c.cookie % 3 == 0) {
        c.rule = Some(1);
    }
    recs.push(ConnRecord {
        rule: None,
        ..conn(99_999, 0, "192.0.2.1", 1, 1.0)
    });
    let mut def = TrialDef::new("cubic", "bbr");
    def.grouping = Grouping::Rule;
    def.settings.resamples = 200;
    let r = report(&def, &recs, 1, Mode::FixedHorizon);
    let labels: Vec<(&str, Option<u16>)> = r
        .groups
        .iter()
        .map(|g| (g.group.as_str(), g.rule))
        .collect();
    assert_eq!(labels, [("rule 0", Some(0)), ("rule 1", Some(1))]);
    assert_eq!(r.groups[0].prefix, None);
    assert_eq!(r.records.outside, 1);
}

#[test]
fn the_sequential_mode_is_wider_and_says_so() {
    let mut d = Draw::new(test_seed(15));
    let recs = arms(&mut d, 0, 300, "198.51.100.1", 5_000_000, 10e6, 30e6);
    let fixed = report(&def(1000), &recs, 3, Mode::FixedHorizon);
    let seq = report(&def(1000), &recs, 3, Mode::Sequential);
    let (f, s) = (fixed.overall.effect.unwrap(), seq.overall.effect.unwrap());
    assert_eq!(f.ratio, s.ratio);
    assert!(s.ci_low < f.ci_low && s.ci_high > f.ci_high, "{f:?} {s:?}");
    assert_eq!((s.ci_low, s.ci_high), (s.anytime_low, s.anytime_high));
    assert!(seq.overall.reason.contains("95% anytime interval"));
}

/// Goodputs of 10 kB over a busy time counted in 4 ms jiffies (HZ=250):
/// 28 ms, or 32 ms for 48.2 % of the connections of each arm (what a lab's
/// 10 kB workload over 30 ms gives). Each arm's median is the 28 ms level,
/// but in about 5 % of the bootstrap draws it is the 32 ms one: most draws
/// give exactly 1 (IQR 0), the tails 7/8 and 8/7.
fn tied(n: u64) -> Vec<ConnRecord> {
    (0..2 * n)
        .map(|i| {
            let busy_ms = if i / 2 % 1000 < 482 { 32.0 } else { 28.0 };
            conn(
                i,
                (i % 2) as u8,
                "198.51.100.1",
                10_000,
                80_000.0 / (busy_ms / 1e3),
            )
        })
        .collect()
}

#[test]
fn the_anytime_interval_holds_the_fixed_one_when_goodputs_tie() {
    let seed = test_seed(16);
    let recs = tied(2000);
    let fixed = report(&def(1000), &recs, seed, Mode::FixedHorizon);
    let seq = report(&def(1000), &recs, seed, Mode::Sequential);
    let (f, s) = (fixed.overall.effect.unwrap(), seq.overall.effect.unwrap());
    assert!(
        f.ci_high - f.ci_low > 0.05,
        "the draws' tails are apart: {f:?}"
    );
    assert!(
        s.ci_low <= f.ci_low && s.ci_high >= f.ci_high,
        "an anytime interval is never narrower: {f:?} {s:?}"
    );
    // Undecided at a look, as at the end (it was `no_difference` with
    // [1.00, 1.00] at every look of a real trial, `insufficient_data` at
    // its end).
    assert_eq!(
        seq.overall.verdict,
        Verdict::InsufficientData,
        "{}",
        seq.overall.reason
    );
    assert_eq!(
        fixed.overall.verdict,
        Verdict::InsufficientData,
        "{}",
        fixed.overall.reason
    );
}

#[test]
fn an_empty_trial_reports_and_renders() {
    let r = run(&[]);
    assert_eq!(r.overall.verdict, Verdict::InsufficientData);
    assert_eq!(
        (r.records.closed, r.groups.len(), r.sample_ratio.as_ref()),
        (0, 0, None)
    );
    assert!(r.trusted && !r.confident());
    let line = bbrkit_trial::render::progress_line(&r);
    assert!(
        line.starts_with("0 closed (A 0 / B 0), 0 open, 0 groups | B/A -: no size class"),
        "{line}"
    );
    let table = bbrkit_trial::render::table(&r, 10);
    assert!(
        table.contains("all: insufficient_data (0 connections)"),
        "{table}"
    );
    let text = bbrkit_trial::render::textfile(&r, 10).unwrap();
    assert!(text.contains(
        "bbrkit_trial_verdict{trial=\"cubic-vs-bbr\",group=\"all\",verdict=\"insufficient_data\"} 1"
    ));
}
