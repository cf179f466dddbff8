//! The fleet report: per group (and `overall`, the hosts' group `all`) the
//! hosts' effects pooled, how much they differ, which disagree with the
//! others, the pooled sample-ratio check and a verdict. Its `Serialize`
//! form is `bbrkit fleet report --json`.
//!
//! ```text
//!   host fresh?    scraped within stale_after, and, when its trial runs, looked within it
//!   arms           the algorithms of arms A and B (labels `arm`, `cc`) most hosts
//!                  export; a host whose arms differ is listed, not pooled
//!   host pooled?   fresh, the fleet's arms, trusted by the host, an effect with an SE above 0
//!   pool           meta::pool over the pooled hosts' (ln ratio, SE²), τ² by DL (or REML)
//!   disagrees      |leave-one-out residual| > z(1 − 0.05 / 2k): Bonferroni over the
//!                  k pooled hosts (2.50 at k = 4, 4.42 at 10 000), else 5 % of a
//!                  fleet's hosts would disagree by chance
//!   trusted        hosts agree on the split, pooled counts fit it (srm, α = 0.001 / groups)
//!   verdict        the host's rule on the pooled interval [lo, hi], margin ±5 %:
//!                  no_difference inside [1/1.05, 1.05]; better lo > 1; worse hi < 1;
//!                  else insufficient_data (and with no host to pool)
//! ```
//!
//! A stale host's numbers are not pooled: a trial that stopped writing (its
//! process died, its node_exporter is gone) would count as if it were
//! current. It stays listed, with its numbers.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::meta::{self, Tau2, z_quantile};
use crate::prom::{Fleet, Host, HostGroup};
use crate::srm::{self, SampleRatio};

/// What the analysis is asked for.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Settings {
    /// Interval coverage (0.95, each host's own).
    pub confidence: f64,
    /// Equivalence margin (0.05: ±5 %, each host's own default).
    pub equivalence_margin: f64,
    /// A host whose last scrape, or a running trial's last look, is older
    /// than this is stale (120 s: two missed scrapes at a 60 s interval,
    /// twelve missed looks at the trial's default 10 s).
    pub stale_after_s: f64,
    /// Sample-ratio level over all groups (0.001, each host's own:
    /// checked at every report; split among the groups).
    pub srm_alpha: f64,
    /// How τ² is estimated (DerSimonian–Laird; REML on request).
    pub tau2: Tau2,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            confidence: 0.95,
            equivalence_margin: 0.05,
            stale_after_s: 120.0,
            srm_alpha: 0.001,
            tau2: Tau2::DerSimonianLaird,
        }
    }
}

/// What the pooled comparison concludes (the host's words).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// B's effect is above 1 across the fleet, with confidence.
    Better,
    /// Below 1.
    Worse,
    /// Inside the equivalence margin.
    NoDifference,
    /// Undecided, or nothing to pool.
    InsufficientData,
}

impl Verdict {
    /// The JSON and table spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Better => "better",
            Verdict::Worse => "worse",
            Verdict::NoDifference => "no_difference",
            Verdict::InsufficientData => "insufficient_data",
        }
    }
}

/// The pooled effect, as ratios.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Effect {
    /// exp(μ).
    pub ratio: f64,
    /// Interval (Hartung–Knapp), low end.
    pub ci_low: f64,
    /// High end.
    pub ci_high: f64,
    /// Where a new host's ratio is expected (3 hosts or more), low end.
    pub prediction_low: Option<f64>,
    /// High end.
    pub prediction_high: Option<f64>,
}

/// Between-host heterogeneity.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Heterogeneity {
    /// τ², on the log scale (DerSimonian–Laird).
    pub tau2: f64,
    /// I² (0..1).
    pub i2: f64,
    /// Cochran's Q.
    pub q: f64,
    /// Its degrees of freedom.
    pub df: usize,
    /// P(χ²(df) ≥ Q).
    pub p_value: Option<f64>,
}

/// One host in one group.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HostRow {
    /// Its `instance` label.
    pub instance: String,
    /// Its effect ratio, as it printed it.
    pub ratio: Option<f64>,
    /// Its interval, low end.
    pub ci_low: Option<f64>,
    /// High end.
    pub ci_high: Option<f64>,
    /// Closed connections of both arms.
    pub connections: u64,
    /// Not scraped, or not looked, within `stale_after_s` (or missing).
    pub stale: bool,
    /// In the pool.
    pub pooled: bool,
    /// Its leave-one-out residual, when pooled with another host.
    pub residual: Option<f64>,
    /// Its effect disagrees with the others'.
    pub disagrees: bool,
    /// Why it is not pooled.
    pub note: Option<String>,
}

/// One group's (or the overall) pooled result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GroupReport {
    /// `all` for the overall, else the hosts' group label.
    pub group: String,
    /// The verdict.
    pub verdict: Verdict,
    /// False when the hosts' split or pooled counts say the assignment is broken.
    pub trusted: bool,
    /// The numbers behind the verdict, in a sentence.
    pub reason: String,
    /// Hosts pooled.
    pub k: usize,
    /// The pooled effect.
    pub effect: Option<Effect>,
    /// How much hosts differ.
    pub heterogeneity: Option<Heterogeneity>,
    /// Pooled counts against the split.
    pub sample_ratio: Option<SampleRatio>,
    /// Hosts whose effect disagrees with the others'.
    pub disagreeing: Vec<String>,
    /// Every host that exports the group.
    pub hosts: Vec<HostRow>,
}

/// The trial's arms: which algorithm is A (the baseline) and which is B.
/// Its JSON is `{"A": "cubic", "B": "bbr"}`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Arms {
    /// Arm A's algorithm (the baseline: `worse` gives A).
    #[serde(rename = "A")]
    pub a: String,
    /// Arm B's (`better` gives B).
    #[serde(rename = "B")]
    pub b: String,
}

/// The fleet's answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FleetReport {
    /// The trial.
    pub trial: String,
    /// Its arms, as most hosts export them (`None`: no host names both).
    pub arms: Option<Arms>,
    /// Time of the numbers, Unix seconds.
    pub at_s: f64,
    /// What was asked.
    pub settings: Settings,
    /// Hosts that export the trial now.
    pub hosts: usize,
    /// Stale hosts (missing ones included).
    pub stale: Vec<String>,
    /// Hosts scraped within the lookback but not now.
    pub missing: Vec<String>,
    /// Every host's `all`.
    pub overall: GroupReport,
    /// Per group, most connections first.
    pub groups: Vec<GroupReport>,
}

fn is_stale(h: &Host, at_s: f64, after_s: f64) -> bool {
    h.missing
        || h.scraped_s.is_some_and(|t| at_s - t > after_s)
        || (h.running == Some(true) && h.look_s.is_some_and(|t| at_s - t > after_s))
}

fn arms_of(h: &Host) -> Option<Arms> {
    h.arms.as_ref().map(|[a, b]| Arms {
        a: a.clone(),
        b: b.clone(),
    })
}

/// The arms most present hosts export; on a tie, the first in name order
/// (a fleet split half and half between swapped definitions has no
/// majority: the other half is then excluded, and says so).
fn fleet_arms(fleet: &Fleet) -> Option<Arms> {
    let mut count: BTreeMap<Arms, usize> = BTreeMap::new();
    for h in fleet.hosts.iter().filter(|h| !h.missing) {
        if let Some(a) = arms_of(h) {
            *count.entry(a).or_default() += 1;
        }
    }
    let most = *count.values().max()?;
    count.into_iter().find(|(_, n)| *n == most).map(|(a, _)| a)
}

/// The report of `fleet` as `settings` says.
pub fn analyse(fleet: &Fleet, settings: &Settings) -> FleetReport {
    let arms = fleet_arms(fleet);
    let stale: Vec<bool> = fleet
        .hosts
        .iter()
        .map(|h| is_stale(h, fleet.at_s, settings.stale_after_s))
        .collect();
    let mut totals: BTreeMap<&str, u64> = BTreeMap::new();
    for h in &fleet.hosts {
        for (name, g) in &h.groups {
            *totals.entry(name).or_default() += g.connections[0] + g.connections[1];
        }
    }
    totals.remove("all");
    let mut names: Vec<(&str, u64)> = totals.into_iter().collect();
    names.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let alpha = settings.srm_alpha / names.len().max(1) as f64;
    let overall = group(
        fleet,
        &stale,
        arms.as_ref(),
        settings,
        "all",
        settings.srm_alpha,
    );
    let groups = names
        .iter()
        .map(|(n, _)| group(fleet, &stale, arms.as_ref(), settings, n, alpha))
        .collect();
    FleetReport {
        trial: fleet.trial.clone(),
        arms,
        at_s: fleet.at_s,
        settings: settings.clone(),
        hosts: fleet.hosts.iter().filter(|h| !h.missing).count(),
        stale: fleet
            .hosts
            .iter()
            .zip(&stale)
            .filter(|(_, s)| **s)
            .map(|(h, _)| h.instance.clone())
            .collect(),
        missing: fleet
            .hosts
            .iter()
            .filter(|h| h.missing)
            .map(|h| h.instance.clone())
            .collect(),
        overall,
        groups,
    }
}

/// Why host `h`'s group `g` is not pooled, if it is not.
fn exclusion(h: &Host, g: Option<&HostGroup>, stale: bool, arms: Option<&Arms>) -> Option<String> {
    if h.missing {
        return Some("missing: not scraped now".into());
    }
    if stale {
        return Some("stale: its numbers are old".into());
    }
    if let (Some(own), Some(fleet)) = (arms_of(h), arms)
        && own != *fleet
    {
        return Some(format!(
            "its arms differ: A {}, B {} (the fleet's: A {}, B {})",
            own.a, own.b, fleet.a, fleet.b
        ));
    }
    let g = g?;
    if g.trusted == Some(false) {
        return Some("not trusted by the host (sample ratio or recording)".into());
    }
    match (g.log_ratio, g.log_se) {
        (Some(y), Some(se)) if y.is_finite() && se.is_finite() && se > 0.0 => None,
        (Some(_), Some(_)) => Some("its interval has no width: cannot be weighed".into()),
        _ => Some("no effect yet (too few connections)".into()),
    }
}

fn group(
    fleet: &Fleet,
    stale: &[bool],
    arms: Option<&Arms>,
    settings: &Settings,
    name: &str,
    alpha: f64,
) -> GroupReport {
    let z = z_quantile(settings.confidence);
    let mut rows = Vec::new();
    let mut pooled: Vec<(usize, &Host, &HostGroup)> = Vec::new();
    for (h, &st) in fleet.hosts.iter().zip(stale) {
        let g = h.groups.get(name);
        if g.is_none() && !(name == "all" && h.missing) {
            continue;
        }
        let note = exclusion(h, g, st, arms);
        let empty = HostGroup::default();
        let hg = g.unwrap_or(&empty);
        let symmetric = |sign: f64| {
            hg.log_ratio
                .zip(hg.log_se)
                .map(|(y, se)| (y + sign * z * se).exp())
        };
        rows.push(HostRow {
            instance: h.instance.clone(),
            ratio: hg.ratio.or(hg.log_ratio.map(f64::exp)),
            ci_low: hg.ci_low.or(symmetric(-1.0)),
            ci_high: hg.ci_high.or(symmetric(1.0)),
            connections: hg.connections[0] + hg.connections[1],
            stale: st,
            pooled: note.is_none(),
            residual: None,
            disagrees: false,
            note: note.clone(),
        });
        if let (None, Some(g)) = (note, g) {
            pooled.push((rows.len() - 1, h, g));
        }
    }
    let y: Vec<f64> = pooled.iter().filter_map(|p| p.2.log_ratio).collect();
    let v: Vec<f64> = pooled
        .iter()
        .filter_map(|p| p.2.log_se.map(|s| s * s))
        .collect();
    let pool = meta::pool_with(&y, &v, settings.confidence, settings.tau2).ok();
    let mut disagreeing = Vec::new();
    let bound = z_quantile(1.0 - (1.0 - settings.confidence) / y.len().max(1) as f64);
    if let Ok(res) = meta::leave_one_out_with(&y, &v, settings.tau2) {
        for ((row, _, _), r) in pooled.iter().zip(res) {
            rows[*row].residual = r;
            if r.is_some_and(|r| r.abs() > bound) {
                rows[*row].disagrees = true;
                disagreeing.push(rows[*row].instance.clone());
            }
        }
    }
    let hosts: Vec<&Host> = pooled.iter().map(|p| p.1).collect();
    let (split_ok, sample_ratio) = pooled_srm(&hosts, &pooled, name, alpha);
    let trusted = split_ok && !sample_ratio.as_ref().is_some_and(|s| s.test.mismatch);
    let effect = pool.as_ref().map(|p| Effect {
        ratio: p.mu.exp(),
        ci_low: p.ci.0.exp(),
        ci_high: p.ci.1.exp(),
        prediction_low: p.prediction.map(|x| x.0.exp()),
        prediction_high: p.prediction.map(|x| x.1.exp()),
    });
    let (verdict, reason) = judge(effect.as_ref(), pool.as_ref(), settings, split_ok);
    GroupReport {
        group: name.to_string(),
        verdict,
        trusted,
        reason,
        k: y.len(),
        effect,
        heterogeneity: pool.map(|p| Heterogeneity {
            tau2: p.tau2,
            i2: p.i2,
            q: p.q,
            df: p.df,
            p_value: p.q_p_value,
        }),
        sample_ratio,
        disagreeing,
        hosts: rows,
    }
}

/// Whether the pooled hosts share one split, and their pooled counts
/// against it: the draws for the overall when every host has them and the
/// unit is the connection, else the units.
fn pooled_srm(
    hosts: &[&Host],
    pooled: &[(usize, &Host, &HostGroup)],
    name: &str,
    alpha: f64,
) -> (bool, Option<SampleRatio>) {
    let Some(weights) = hosts.first().and_then(|h| h.weights) else {
        return (true, None);
    };
    let share = |w: [f64; 2]| w[0] / (w[0] + w[1]);
    let split_ok = hosts.iter().all(|h| {
        h.weights
            .is_some_and(|w| (share(w) - share(weights)).abs() < 1e-9)
    });
    if !split_ok {
        return (false, None);
    }
    let unit = hosts[0].unit.clone().unwrap_or_else(|| "connection".into());
    let all_drawn = hosts.iter().all(|h| h.drawn.is_some());
    let (counted, observed) = if name == "all" && unit == "connection" && all_drawn {
        let sum = hosts.iter().fold([0, 0], |acc, h| {
            let d = h.drawn.unwrap_or_default();
            [acc[0] + d[0], acc[1] + d[1]]
        });
        ("connections drawn".to_string(), sum)
    } else {
        let sum = pooled.iter().fold([0, 0], |acc, p| {
            [acc[0] + p.2.units[0], acc[1] + p.2.units[1]]
        });
        (plural(&unit), sum)
    };
    let check = srm::check(counted, observed, weights, alpha, hosts.len());
    (true, check)
}

fn plural(unit: &str) -> String {
    match unit {
        "prefix" => "prefixes".into(),
        u => format!("{u}s"),
    }
}

fn judge(
    effect: Option<&Effect>,
    pool: Option<&meta::Pool>,
    settings: &Settings,
    split_ok: bool,
) -> (Verdict, String) {
    let (Some(e), Some(p)) = (effect, pool) else {
        return (
            Verdict::InsufficientData,
            "no fresh, trusted host has an effect for this group".into(),
        );
    };
    let m = settings.equivalence_margin;
    let verdict = if e.ci_low >= 1.0 / (1.0 + m) && e.ci_high <= 1.0 + m {
        Verdict::NoDifference
    } else if e.ci_low > 1.0 {
        Verdict::Better
    } else if e.ci_high < 1.0 {
        Verdict::Worse
    } else {
        Verdict::InsufficientData
    };
    let mut reason = format!(
        "B/A {:.3}x over {} host{}, {:.0}% interval [{:.3}, {:.3}]",
        e.ratio,
        p.k,
        if p.k == 1 { "" } else { "s" },
        settings.confidence * 100.0,
        e.ci_low,
        e.ci_high
    );
    reason += match verdict {
        Verdict::Better => " is above 1",
        Verdict::Worse => " is below 1",
        Verdict::NoDifference => " is inside the equivalence margin",
        Verdict::InsufficientData => " holds 1 and effects beyond the margin",
    };
    if let (Some(lo), Some(hi)) = (e.prediction_low, e.prediction_high) {
        reason += &format!("; a new host: [{lo:.3}, {hi:.3}]");
        if matches!(verdict, Verdict::Better | Verdict::Worse) && lo < 1.0 && hi > 1.0 {
            reason += ", which holds 1: hosts differ, some may see the opposite";
        }
    }
    reason += &format!("; I² {:.0}%", p.i2 * 100.0);
    if !split_ok {
        reason += "; the hosts' splits differ: not trusted";
    }
    (verdict, reason)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(name: &str, y: f64, se: f64) -> Host {
        let g = HostGroup {
            log_ratio: Some(y),
            log_se: Some(se),
            trusted: Some(true),
            connections: [100, 100],
            units: [100, 100],
            ..HostGroup::default()
        };
        Host {
            instance: name.into(),
            scraped_s: Some(1000.0),
            running: Some(true),
            look_s: Some(995.0),
            weights: Some([50.0, 50.0]),
            drawn: Some([500, 500]),
            unit: Some("connection".into()),
            arms: Some(["cubic".into(), "bbr".into()]),
            groups: [("all".to_string(), g.clone()), ("lossy".to_string(), g)].into(),
            ..Host::default()
        }
    }

    fn fleet(hosts: Vec<Host>) -> Fleet {
        Fleet {
            trial: "t".into(),
            at_s: 1000.0,
            hosts,
        }
    }

    #[test]
    fn alike_hosts_pool_to_better_and_stale_ones_stay_out() {
        let mut hosts: Vec<Host> = (0..4)
            .map(|i| host(&format!("h{i}"), 0.4 + 0.01 * i as f64, 0.05))
            .collect();
        let mut old = host("old", -2.0, 0.05);
        old.look_s = Some(500.0);
        hosts.push(old);
        let r = analyse(&fleet(hosts), &Settings::default());
        assert_eq!(r.stale, ["old"]);
        assert_eq!((r.overall.k, r.overall.verdict), (4, Verdict::Better));
        assert!(r.overall.trusted && r.overall.disagreeing.is_empty());
        assert_eq!(r.overall.heterogeneity.as_ref().unwrap().tau2, 0.0);
        assert_eq!(r.groups.len(), 1);
        let sr = r.overall.sample_ratio.as_ref().unwrap();
        assert_eq!(
            (sr.test.counted.as_ref(), sr.test.observed),
            ("connections drawn", [2000, 2000])
        );
        let old = r
            .overall
            .hosts
            .iter()
            .find(|h| h.instance == "old")
            .unwrap();
        assert!(old.stale && !old.pooled && old.note.as_deref().unwrap().starts_with("stale"));
    }

    #[test]
    fn differing_hosts_are_heterogeneous_and_the_odd_one_disagrees() {
        let mut hosts: Vec<Host> = (0..5)
            .map(|i| host(&format!("h{i}"), 0.02 * i as f64, 0.03))
            .collect();
        hosts.push(host("lossy", 1.5, 0.05));
        let r = analyse(&fleet(hosts), &Settings::default());
        let het = r.overall.heterogeneity.as_ref().unwrap();
        assert!(het.i2 > 0.9 && het.tau2 > 0.1, "{het:?}");
        assert_eq!(r.overall.disagreeing, ["lossy"]);
    }

    #[test]
    fn a_split_mismatch_across_the_fleet_is_not_trusted() {
        let hosts = (0..10)
            .map(|i| {
                let mut h = host(&format!("h{i}"), 0.3, 0.05);
                h.drawn = Some([5300, 4700]);
                h
            })
            .collect();
        let r = analyse(&fleet(hosts), &Settings::default());
        assert!(!r.overall.trusted && r.overall.sample_ratio.as_ref().unwrap().test.mismatch);
        let mut hosts: Vec<Host> = (0..3).map(|i| host(&format!("h{i}"), 0.3, 0.05)).collect();
        hosts[2].weights = Some([90.0, 10.0]);
        let r = analyse(&fleet(hosts), &Settings::default());
        assert!(!r.overall.trusted && r.overall.reason.contains("splits differ"));
    }

    #[test]
    fn the_report_names_the_arms_and_a_swapped_host_stays_out() {
        let mut hosts: Vec<Host> = (0..3).map(|i| host(&format!("h{i}"), 0.4, 0.05)).collect();
        let mut swapped = host("swapped", -0.4, 0.05);
        swapped.arms = Some(["bbr".into(), "cubic".into()]);
        hosts.push(swapped);
        let r = analyse(&fleet(hosts), &Settings::default());
        let arms = r.arms.as_ref().unwrap();
        assert_eq!((arms.a.as_str(), arms.b.as_str()), ("cubic", "bbr"));
        assert_eq!(
            serde_json::to_value(arms).unwrap(),
            serde_json::json!({"A": "cubic", "B": "bbr"})
        );
        assert_eq!((r.overall.k, r.overall.verdict), (3, Verdict::Better));
        let row = r.overall.hosts.iter().find(|h| h.instance == "swapped");
        let row = row.unwrap();
        assert!(!row.pooled && !row.stale);
        assert_eq!(
            row.note.as_deref(),
            Some("its arms differ: A bbr, B cubic (the fleet's: A cubic, B bbr)")
        );
        assert!(r.overall.disagreeing.is_empty());
    }

    #[test]
    fn nothing_to_pool_is_insufficient() {
        let mut h = host("h", 0.3, 0.05);
        h.groups.get_mut("all").unwrap().log_ratio = None;
        let r = analyse(&fleet(vec![h]), &Settings::default());
        assert_eq!(
            (r.overall.verdict, r.overall.k),
            (Verdict::InsufficientData, 0)
        );
        assert!(r.overall.effect.is_none());
    }
}
