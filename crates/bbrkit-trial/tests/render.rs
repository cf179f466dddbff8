//! The renderings of a fixed fixture: the table, the `--json` document, the
//! progress line and the Prometheus textfile (checked by `promtool check
//! metrics` too). Snapshots: `cargo insta review` after an intended change.

mod common;

use bbrkit_trial::render::{progress_line, table, textfile};
use bbrkit_trial::{Look, Mode, Report, Trial};
use common::{def, fixture};

fn fixture_report(mode: Mode) -> Report {
    let mut t = Trial::new(def(2000)).unwrap();
    t.extend(&fixture());
    t.report(&Look {
        duration_s: Some(600.0),
        ..Look::new(42, mode)
    })
}

/// The fixture with each record's arm swapped: B is the slow arm, and the
/// goodput guardrail (one-sided: it protects A from B) trips.
fn swapped_report(mode: Mode) -> Report {
    let mut t = Trial::new(def(2000)).unwrap();
    let swapped: Vec<_> = fixture()
        .into_iter()
        .map(|mut r| {
            r.arm ^= 1;
            r
        })
        .collect();
    t.extend(&swapped);
    t.report(&Look {
        duration_s: Some(600.0),
        ..Look::new(42, mode)
    })
}

#[test]
fn the_table() {
    insta::assert_snapshot!(table(&fixture_report(Mode::FixedHorizon), 10));
}

#[test]
fn the_json_document() {
    let r = fixture_report(Mode::FixedHorizon);
    let v = serde_json::to_value(&r).unwrap();
    // The keys the issue fixes, per group.
    for g in v["groups"].as_array().unwrap() {
        assert!(g["prefix"].is_string());
        for a in g["arms"].as_array().unwrap() {
            for k in [
                "cc",
                "connections",
                "bytes_acked",
                "goodput_bits_per_second",
                "retransmit_rate",
            ] {
                assert!(a.get(k).is_some(), "{k}");
            }
            for k in ["p10", "median", "p90"] {
                assert!(a["goodput_bits_per_second"][k].is_number(), "{k}");
            }
        }
        assert!(g["verdict"].is_string());
    }
    let lossy = &v["groups"][0];
    assert_eq!(lossy["prefix"], "198.51.100.0/24");
    for k in ["ratio", "ci_low", "ci_high"] {
        assert!(lossy["effect"][k].is_number(), "{k}");
    }
    insta::assert_json_snapshot!(r);
}

#[test]
fn the_progress_line() {
    let line = progress_line(&fixture_report(Mode::Sequential));
    insta::assert_snapshot!(line);
}

#[test]
fn the_textfile() {
    let text = textfile(&fixture_report(Mode::FixedHorizon), 10).unwrap();
    insta::assert_snapshot!(text);
}

#[test]
fn the_textfile_passes_promtool() {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let text = textfile(&fixture_report(Mode::FixedHorizon), 2).unwrap();
    let mut child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool (Debian package 'prometheus')");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let said =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && said.trim().is_empty(),
        "promtool: {said}\n{text}"
    );
    // At most 2 groups plus all.
    let groups: std::collections::BTreeSet<&str> = text
        .lines()
        .filter_map(|l| l.split("group=\"").nth(1)?.split('"').next())
        .collect();
    assert_eq!(groups.len(), 3, "{groups:?}");
}

#[test]
fn docs_show_the_real_table_and_progress_line() {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/trial.md"))
        .unwrap();
    let t = table(&fixture_report(Mode::FixedHorizon), 10);
    assert!(
        doc.contains(&t),
        "docs/trial.md's table is not the library's output:\n{t}"
    );
    let p = progress_line(&fixture_report(Mode::Sequential));
    assert!(
        doc.contains(&p),
        "docs/trial.md's progress line is not the library's output:\n{p}"
    );
}

/// Every `R.RRx [L, H]` printed after `marker` on the lines of `text`
/// that contain `line_has`.
fn intervals_after(text: &str, line_has: &str, marker: &str) -> Vec<String> {
    text.lines()
        .filter(|l| l.contains(line_has))
        .filter_map(|l| {
            let rest = &l[l.find(marker)? + marker.len()..];
            Some(rest[..=rest.find(']')?].to_string())
        })
        .collect()
}

/// Issue 32 item 6: the same report printed the goodput ratio's interval
/// as the effect's `[1.66, 8.03]`, the guardrail row's `[1.66, 13.8]` and
/// the decision's `[1.66, 13.76]`. One quantity, one interval, in the
/// table and in the JSON document, in either mode.
#[test]
fn a_tripped_guardrail_prints_the_effects_own_interval() {
    for mode in [Mode::FixedHorizon, Mode::Sequential] {
        let r = swapped_report(mode);
        assert!(
            !r.decisions.is_empty(),
            "the swapped fixture trips a guardrail"
        );
        let t = table(&r, 10);
        let all = t.split("\n\n").find(|s| s.starts_with("all:")).unwrap();
        let effect = intervals_after(all, "effect B/A:", "effect B/A: ");
        let row = intervals_after(all, "guardrails:", "goodput ");
        let decision = intervals_after(&t, "  all: send", "goodput B/A ");
        assert_eq!(effect.len(), 1, "{t}");
        assert_eq!(row, effect, "{mode:?}:\n{t}");
        assert_eq!(decision, effect, "{mode:?}:\n{t}");
        let j = serde_json::to_value(&r).unwrap();
        let e = &j["overall"]["effect"];
        let g = &j["overall"]["guardrails"][0];
        assert_eq!(g["metric"], "goodput");
        assert_eq!((&g["low"], &g["high"]), (&e["ci_low"], &e["ci_high"]));
        assert_eq!(g["interval"], e["interval"]);
        assert!(e.get("anytime_low").is_none(), "one interval per quantity");
        if mode == Mode::Sequential {
            let line = progress_line(&r);
            assert!(
                line.contains(&format!("B/A {} anytime", effect[0])),
                "{line}"
            );
        }
    }
}

/// Issue 32 item 2: a closed connection with no busy time has no goodput
/// (not one over its lifetime): counted per arm, left out of the goodput
/// comparison, said in the table and the JSON document.
#[test]
fn connections_with_no_busy_time_are_counted_not_remeasured() {
    let recs = fixture();
    let mut with = Trial::new(def(200)).unwrap();
    let mut zeroed = 0;
    for (i, r) in recs.iter().enumerate() {
        let mut r = r.clone();
        if r.arm == 0 && !r.open && i % 10 == 0 {
            r.busy_us = 0;
            zeroed += 1;
        }
        with.add(&r);
    }
    assert!(zeroed > 5);
    let r = with.report(&Look::new(42, Mode::FixedHorizon));
    assert_eq!(r.records.no_busy_time, [zeroed, 0]);
    let connections = |r: &Report| -> u64 {
        let e = r.overall.effect.as_ref().unwrap();
        e.classes.iter().map(|c| c.connections[0]).sum()
    };
    let base = fixture_report(Mode::FixedHorizon);
    assert_eq!(
        connections(&r),
        connections(&base) - zeroed,
        "left out of the goodput comparison"
    );
    assert_eq!(
        r.records.closed, base.records.closed,
        "still closed records"
    );
    let t = table(&r, 10);
    let head = t.split("\n\n").next().unwrap();
    if std::env::var_os("BBRKIT_PRINT_HEAD").is_some() {
        eprintln!("{head}");
    }
    assert!(
        head.contains(&format!(
            "  no busy time: A {zeroed} / B 0 closed connections"
        )),
        "{t}"
    );
    assert!(!table(&base, 10).contains("no busy time"));
    let j = serde_json::to_value(&r).unwrap();
    assert_eq!(j["records"]["no_busy_time"], serde_json::json!([zeroed, 0]));
}

/// The series a fleet pools (issue 35): the name on every series, the log
/// ratio and its SE from the printed interval, units per arm, the
/// definition's weights and, live, the draws and the look's time; at most
/// 33 series per group and 11 per trial.
#[test]
fn the_textfile_exports_what_a_fleet_pools() {
    use bbrkit_trial::render::{Export, LiveStatus, log_se, textfile_export};
    let r = fixture_report(Mode::FixedHorizon);
    let live = LiveStatus {
        shares: [0.5, 0.5],
        running: false,
        ended_unix_s: Some(1_800_000_010.0),
    };
    let export = Export {
        name: "edge-tokyo",
        max_groups: 10,
        live: Some(&live),
        drawn: Some([391, 389]),
        look_unix_s: Some(1_800_000_000.0),
    };
    let text = textfile_export(&r, &export).unwrap();
    let samples: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
    assert!(
        samples
            .iter()
            .all(|l| l.starts_with("bbrkit_trial_") && l.contains("{trial=\"edge-tokyo\"")),
        "{text}"
    );
    let value = |series: &str| -> f64 {
        let l = samples
            .iter()
            .find(|l| l.starts_with(series))
            .unwrap_or_else(|| panic!("{series} missing:\n{text}"));
        l.rsplit(' ').next().unwrap().parse().unwrap()
    };
    let e = r.overall.effect.as_ref().unwrap();
    let g = "{trial=\"edge-tokyo\",group=\"all\"}";
    assert!((value(&format!("bbrkit_trial_effect_log_ratio{g}")) - e.ratio.ln()).abs() < 1e-8);
    let se = value(&format!("bbrkit_trial_effect_log_se{g}"));
    // 95 %: the interval is ln r ± 1.959964 SE wide on the log scale.
    let width = e.ci_high.ln() - e.ci_low.ln();
    assert!(
        (se * 2.0 * 1.959_963_984_540_054 - width).abs() < 1e-8,
        "{se}"
    );
    let direct = log_se(e.ci_low, e.ci_high, 0.95).unwrap();
    assert!(
        (direct - width / 3.919_927_969_080_108).abs() < 1e-12,
        "{direct}"
    );
    let arm = |a: &str, cc: &str| format!("{{trial=\"edge-tokyo\",arm=\"{a}\",cc=\"{cc}\"}}");
    assert_eq!(
        value(&format!("bbrkit_trial_drawn_total{}", arm("A", "cubic"))),
        391.0
    );
    assert_eq!(
        value(&format!("bbrkit_trial_split_weight{}", arm("B", "bbr"))),
        50.0
    );
    let units = "bbrkit_trial_units{trial=\"edge-tokyo\",group=\"all\",arm=\"A\",cc=\"cubic\",unit=\"connection\"}";
    assert_eq!(value(units), r.overall.arms[0].units as f64);
    assert_eq!(
        value("bbrkit_trial_look_timestamp_seconds{trial=\"edge-tokyo\"}"),
        1_800_000_000.0
    );
    // The stated cardinality: 33 per group (all and each group), 11 per trial.
    let per_trial = samples.iter().filter(|l| !l.contains("group=")).count();
    assert_eq!(per_trial, 11, "{text}");
    for group in std::iter::once(&r.overall).chain(&r.groups) {
        let needle = format!("group=\"{}\"", group.group);
        let n = samples.iter().filter(|l| l.contains(&needle)).count();
        assert!(n <= 33, "{} has {n} series", group.group);
    }
    assert_eq!(
        samples
            .iter()
            .filter(|l| l.contains("group=\"all\""))
            .count(),
        33,
        "{text}"
    );
}
