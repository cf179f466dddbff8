//! What the fleet report asks Prometheus, and its answers as a [`Fleet`]:
//! one instant query (`/api/v1/query`, `time=` the report's time) per
//! family the hosts export (bbrkit-trial's textfile, docs/trial.md), each
//! selecting the trial by its `trial` label. Hosts are told apart by the
//! `instance` label Prometheus gives each scrape target.
//!
//! Freshness needs two more: `timestamp()` of a per-trial series (when
//! each host was last scraped) and `last_over_time(...[lookback])` (hosts
//! scraped within the lookback but absent from the instant query, whose
//! own lookback is 5 minutes: missing). Pure: the caller sends the
//! queries and passes the answers' text to [`parse`].

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::FleetError;

/// One family the report reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Family {
    /// `bbrkit_trial_effect_log_ratio` per group.
    LogRatio,
    /// `bbrkit_trial_effect_log_se` per group.
    LogSe,
    /// `bbrkit_trial_effect_ratio` per group (the host's printed ratio).
    Ratio,
    /// `bbrkit_trial_effect_ratio_ci_low` per group.
    CiLow,
    /// `bbrkit_trial_effect_ratio_ci_high` per group.
    CiHigh,
    /// `bbrkit_trial_trusted` per group.
    Trusted,
    /// `bbrkit_trial_connections_total` per group and arm.
    Connections,
    /// `bbrkit_trial_units` per group and arm (label `unit`).
    Units,
    /// `bbrkit_trial_split_weight` per arm.
    Weight,
    /// `bbrkit_trial_drawn_total` per arm.
    Drawn,
    /// `bbrkit_trial_running`.
    Running,
    /// `bbrkit_trial_look_timestamp_seconds`.
    Look,
    /// When each host was last scraped: `timestamp()` of its weights.
    Scraped,
    /// Hosts scraped within the lookback.
    Seen,
}

impl Family {
    /// Every family, in the order the report asks.
    pub const ALL: [Family; 14] = [
        Family::LogRatio,
        Family::LogSe,
        Family::Ratio,
        Family::CiLow,
        Family::CiHigh,
        Family::Trusted,
        Family::Connections,
        Family::Units,
        Family::Weight,
        Family::Drawn,
        Family::Running,
        Family::Look,
        Family::Scraped,
        Family::Seen,
    ];

    fn metric(self) -> &'static str {
        match self {
            Family::LogRatio => "bbrkit_trial_effect_log_ratio",
            Family::LogSe => "bbrkit_trial_effect_log_se",
            Family::Ratio => "bbrkit_trial_effect_ratio",
            Family::CiLow => "bbrkit_trial_effect_ratio_ci_low",
            Family::CiHigh => "bbrkit_trial_effect_ratio_ci_high",
            Family::Trusted => "bbrkit_trial_trusted",
            Family::Connections => "bbrkit_trial_connections_total",
            Family::Units => "bbrkit_trial_units",
            Family::Weight | Family::Scraped | Family::Seen => "bbrkit_trial_split_weight",
            Family::Drawn => "bbrkit_trial_drawn_total",
            Family::Running => "bbrkit_trial_running",
            Family::Look => "bbrkit_trial_look_timestamp_seconds",
        }
    }

    /// The PromQL expression for trial `trial`, `lookback_s` the window
    /// of [`Family::Seen`].
    pub fn query(self, trial: &str, lookback_s: u64) -> String {
        let escaped = trial.replace('\\', "\\\\").replace('"', "\\\"");
        let selector = format!("{}{{trial=\"{escaped}\"}}", self.metric());
        match self {
            Family::Scraped => format!("max by (instance) (timestamp({selector}))"),
            Family::Seen => {
                format!("max by (instance) (last_over_time({selector}[{lookback_s}s]))")
            }
            _ => selector,
        }
    }
}

/// One sample of an instant-query answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// Its labels.
    pub labels: BTreeMap<String, String>,
    /// Its value.
    pub value: f64,
}

#[derive(Deserialize)]
struct Answer {
    status: String,
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    data: Option<Data>,
}

#[derive(Deserialize)]
struct Data {
    #[serde(rename = "resultType")]
    result_type: String,
    result: serde_json::Value,
}

#[derive(Deserialize)]
struct VectorSample {
    metric: BTreeMap<String, String>,
    value: (f64, String),
}

/// The samples of an instant-query answer (the HTTP API's JSON), or what
/// is wrong with it.
pub fn parse(text: &str) -> Result<Vec<Sample>, FleetError> {
    let a: Answer = serde_json::from_str(text)
        .map_err(|e| FleetError::Answer(format!("is not the HTTP API's JSON: {e}")))?;
    if a.status != "success" {
        return Err(FleetError::Answer(format!(
            "is an error: {}",
            a.error.unwrap_or(a.status)
        )));
    }
    let data = a
        .data
        .ok_or_else(|| FleetError::Answer("has no data".into()))?;
    if data.result_type != "vector" {
        return Err(FleetError::Answer(format!(
            "is a {}, not an instant vector",
            data.result_type
        )));
    }
    let result: Vec<VectorSample> = serde_json::from_value(data.result)
        .map_err(|e| FleetError::Answer(format!("has a malformed vector: {e}")))?;
    result
        .into_iter()
        .map(|s| {
            let value = match s.value.1.as_str() {
                "NaN" => f64::NAN,
                "+Inf" => f64::INFINITY,
                "-Inf" => f64::NEG_INFINITY,
                v => v
                    .parse()
                    .map_err(|_| FleetError::Answer(format!("has the value '{v}'")))?,
            };
            Ok(Sample {
                labels: s.metric,
                value,
            })
        })
        .collect()
}

/// One host's numbers for one group.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HostGroup {
    /// ln of the effect ratio.
    pub log_ratio: Option<f64>,
    /// Its standard error.
    pub log_se: Option<f64>,
    /// The host's ratio and interval as it printed them.
    pub ratio: Option<f64>,
    /// Low end.
    pub ci_low: Option<f64>,
    /// High end.
    pub ci_high: Option<f64>,
    /// The host trusts this group's comparison.
    pub trusted: Option<bool>,
    /// Closed connections, A and B.
    pub connections: [u64; 2],
    /// Units of randomization, A and B.
    pub units: [u64; 2],
}

/// One host of the trial.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Host {
    /// Its `instance` label.
    pub instance: String,
    /// Scraped within the lookback, but absent now.
    pub missing: bool,
    /// When Prometheus last scraped its trial series, Unix seconds.
    pub scraped_s: Option<f64>,
    /// Its trial runs (`None`: not a live trial's textfile).
    pub running: Option<bool>,
    /// When its numbers were computed, Unix seconds.
    pub look_s: Option<f64>,
    /// The split's weights, A and B.
    pub weights: Option<[f64; 2]>,
    /// The program's draws, A and B.
    pub drawn: Option<[u64; 2]>,
    /// The unit of randomization (`connection`, `client`, `prefix`).
    pub unit: Option<String>,
    /// Its arms' algorithms, A and B, from the `arm` and `cc` labels of
    /// its per-arm series (`None` until both arms are seen).
    pub arms: Option<[String; 2]>,
    /// Per group (`all` included).
    pub groups: BTreeMap<String, HostGroup>,
}

/// A trial's hosts as Prometheus holds them at one time.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Fleet {
    /// The trial's name.
    pub trial: String,
    /// The time of the queries, Unix seconds.
    pub at_s: f64,
    /// Every host, by instance.
    pub hosts: Vec<Host>,
}

fn arm(labels: &BTreeMap<String, String>) -> Option<usize> {
    match labels.get("arm")?.as_str() {
        "A" => Some(0),
        "B" => Some(1),
        _ => None,
    }
}

/// The [`Fleet`] of trial `trial` at `at_s` from each family's samples.
pub fn assemble(trial: &str, at_s: f64, answers: &[(Family, Vec<Sample>)]) -> Fleet {
    let mut hosts: BTreeMap<String, Host> = BTreeMap::new();
    let mut arms = BTreeMap::new();
    for (family, samples) in answers {
        for s in samples {
            let instance = s
                .labels
                .get("instance")
                .cloned()
                .unwrap_or_else(|| "(no instance label)".into());
            let h = hosts.entry(instance.clone()).or_insert_with(|| Host {
                instance,
                missing: true,
                ..Host::default()
            });
            take(h, *family, s);
            name_arm(h, &mut arms, s);
        }
    }
    Fleet {
        trial: trial.to_string(),
        at_s,
        hosts: hosts.into_values().collect(),
    }
}

/// Counts are exported as floats: whole numbers up to 2⁵³ are exact.
fn count(v: f64) -> u64 {
    if v.is_finite() && v >= 0.0 {
        v.round() as u64
    } else {
        0
    }
}

/// Host `h`'s entry for the sample's group, if it has a `group` label.
fn group_of<'a>(h: &'a mut Host, s: &Sample) -> Option<&'a mut HostGroup> {
    let name = s.labels.get("group")?;
    Some(h.groups.entry(name.clone()).or_default())
}

/// Host `h`'s arm `i` runs `cc`: both arms seen make its `arms`.
fn name_arm(h: &mut Host, seen: &mut BTreeMap<String, [Option<String>; 2]>, s: &Sample) {
    let (Some(i), Some(cc)) = (arm(&s.labels), s.labels.get("cc")) else {
        return;
    };
    let a = seen.entry(h.instance.clone()).or_default();
    a[i] = Some(cc.clone());
    if let [Some(x), Some(y)] = a {
        h.arms = Some([x.clone(), y.clone()]);
    }
}

fn take(h: &mut Host, family: Family, s: &Sample) {
    let v = s.value;
    if family != Family::Seen {
        // Present in an instant query: not missing.
        h.missing = false;
    }
    match family {
        Family::Running => h.running = Some(v == 1.0),
        Family::Look => h.look_s = Some(v),
        Family::Scraped => h.scraped_s = Some(v),
        Family::Seen => {}
        Family::Weight => {
            if let Some(i) = arm(&s.labels) {
                h.weights.get_or_insert([0.0; 2])[i] = v;
            }
        }
        Family::Drawn => {
            if let Some(i) = arm(&s.labels) {
                h.drawn.get_or_insert([0; 2])[i] = count(v);
            }
        }
        Family::Units => {
            if let Some(unit) = s.labels.get("unit") {
                h.unit = Some(unit.clone());
            }
            if let (Some(i), Some(g)) = (arm(&s.labels), group_of(h, s)) {
                g.units[i] = count(v);
            }
        }
        Family::Connections => {
            if let (Some(i), Some(g)) = (arm(&s.labels), group_of(h, s)) {
                g.connections[i] = count(v);
            }
        }
        _ => {
            let Some(g) = group_of(h, s) else { return };
            match family {
                Family::LogRatio => g.log_ratio = Some(v),
                Family::LogSe => g.log_se = Some(v),
                Family::Ratio => g.ratio = Some(v),
                Family::CiLow => g.ci_low = Some(v),
                Family::CiHigh => g.ci_high = Some(v),
                _ => g.trusted = Some(v == 1.0),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_select_the_trial() {
        assert_eq!(
            Family::LogRatio.query("edge", 3600),
            "bbrkit_trial_effect_log_ratio{trial=\"edge\"}"
        );
        assert_eq!(
            Family::Seen.query("a\"b", 3600),
            "max by (instance) (last_over_time(bbrkit_trial_split_weight{trial=\"a\\\"b\"}[3600s]))"
        );
    }

    #[test]
    fn answers_become_hosts() {
        let ratio = r#"{"status":"success","data":{"resultType":"vector","result":[
            {"metric":{"__name__":"bbrkit_trial_effect_log_ratio","instance":"h1:9100","trial":"t","group":"all"},"value":[1800000000,"0.5"]}]}}"#;
        let units = r#"{"status":"success","data":{"resultType":"vector","result":[
            {"metric":{"instance":"h1:9100","trial":"t","group":"all","arm":"B","cc":"bbr","unit":"client"},"value":[1800000000,"120"]}]}}"#;
        let seen = r#"{"status":"success","data":{"resultType":"vector","result":[
            {"metric":{"instance":"h1:9100"},"value":[1800000000,"50"]},
            {"metric":{"instance":"h2:9100"},"value":[1800000000,"50"]}]}}"#;
        let f = assemble(
            "t",
            1.8e9,
            &[
                (Family::LogRatio, parse(ratio).unwrap()),
                (Family::Units, parse(units).unwrap()),
                (Family::Seen, parse(seen).unwrap()),
            ],
        );
        assert_eq!(f.hosts.len(), 2);
        let h1 = &f.hosts[0];
        assert!(!h1.missing && h1.unit.as_deref() == Some("client"));
        assert_eq!(h1.groups["all"].log_ratio, Some(0.5));
        assert_eq!(h1.groups["all"].units, [0, 120]);
        assert_eq!(h1.arms, None, "arm A not seen yet");
        assert!(f.hosts[1].missing && f.hosts[1].groups.is_empty());
    }

    #[test]
    fn arms_come_from_the_arm_and_cc_labels() {
        let weights = r#"{"status":"success","data":{"resultType":"vector","result":[
            {"metric":{"instance":"h1:9100","trial":"t","arm":"B","cc":"bbr"},"value":[1800000000,"50"]},
            {"metric":{"instance":"h1:9100","trial":"t","arm":"A","cc":"cubic"},"value":[1800000000,"50"]},
            {"metric":{"instance":"h2:9100","trial":"t","arm":"A","cc":"bbr"},"value":[1800000000,"50"]},
            {"metric":{"instance":"h2:9100","trial":"t","arm":"B","cc":"cubic"},"value":[1800000000,"50"]}]}}"#;
        let f = assemble("t", 1.8e9, &[(Family::Weight, parse(weights).unwrap())]);
        assert_eq!(
            f.hosts[0].arms,
            Some(["cubic".to_string(), "bbr".to_string()])
        );
        assert_eq!(
            f.hosts[1].arms,
            Some(["bbr".to_string(), "cubic".to_string()])
        );
    }

    #[test]
    fn errors_are_said() {
        let e =
            parse(r#"{"status":"error","errorType":"bad_data","error":"parse error at char 3"}"#);
        assert_eq!(
            e.unwrap_err().to_string(),
            "the Prometheus answer is an error: parse error at char 3"
        );
        assert!(parse("<html>").is_err());
        let m = r#"{"status":"success","data":{"resultType":"matrix","result":[]}}"#;
        assert!(parse(m).unwrap_err().to_string().contains("matrix"));
    }
}
