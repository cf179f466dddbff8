//! Prometheus text exposition format 0.0.4: a small writer that checks what
//! it writes (metric and label names, one HELP/TYPE per family, samples that
//! belong to the open family, label-value escaping) and a fixed-bucket
//! [`Histogram`].
//!
//! Owns the syntax only; which metrics exist is decided by `exposition` and
//! the `bbrkit metrics` command. Must never emit timestamps (the textfile
//! collector rejects them).

use std::collections::BTreeSet;
use std::fmt::Write as _;

use crate::DiagError;

/// The `# TYPE` of a metric family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricType {
    /// A value that goes up and down.
    Gauge,
    /// A monotonically increasing count; the family name ends in `_total`.
    Counter,
    /// Buckets, sum and count.
    Histogram,
}

impl MetricType {
    /// The name used on the `# TYPE` line.
    pub fn as_str(self) -> &'static str {
        match self {
            MetricType::Gauge => "gauge",
            MetricType::Counter => "counter",
            MetricType::Histogram => "histogram",
        }
    }
}

/// An exposition being written.
#[derive(Debug, Default)]
pub struct Exposition {
    out: String,
    families: BTreeSet<String>,
    open: Option<(String, MetricType)>,
    records: Vec<FamilyRecord>,
}

/// One family as written, for renderings other than the text format (JSON).
#[derive(Debug, Clone, PartialEq)]
pub struct FamilyRecord {
    /// Family name.
    pub name: String,
    /// Its type.
    pub kind: MetricType,
    /// Its help text.
    pub help: String,
    /// Every series line: (series name, labels, value).
    pub samples: Vec<SampleRecord>,
}

/// One series line of a family.
#[derive(Debug, Clone, PartialEq)]
pub struct SampleRecord {
    /// Series name (the family name, or `_bucket`/`_sum`/`_count` of a histogram).
    pub name: String,
    /// Label pairs, including `le` for buckets.
    pub labels: Vec<(String, String)>,
    /// Value.
    pub value: f64,
}

fn valid_name(name: &str, colon_ok: bool) -> bool {
    let mut chars = name.chars();
    let first_ok = |c: char| c.is_ascii_alphabetic() || c == '_' || (colon_ok && c == ':');
    chars.next().is_some_and(first_ok)
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || (colon_ok && c == ':'))
}

fn escape_help(s: &str) -> String {
    s.replace('\\', "\\\\").replace('\n', "\\n")
}

fn escape_label(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// Formats a sample value: integers without a fraction, `+Inf`, `-Inf`,
/// `NaN`; fractions with at most 9 decimals (nanoseconds for `_seconds`), so
/// float summation noise such as `0.00009400000000000001` prints as `0.000094`.
pub fn format_value(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 {
            "+Inf".into()
        } else {
            "-Inf".into()
        }
    } else if v.fract() == 0.0 || v.abs() < 1e-6 {
        format!("{v}")
    } else {
        let s = format!("{v:.9}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

impl Exposition {
    /// An empty exposition.
    pub fn new() -> Exposition {
        Exposition::default()
    }

    /// Opens family `name` with its `# HELP` and `# TYPE` lines.
    pub fn family(&mut self, name: &str, kind: MetricType, help: &str) -> Result<(), DiagError> {
        if !valid_name(name, true) {
            return Err(DiagError::Invalid(format!("invalid metric name '{name}'")));
        }
        if kind == MetricType::Counter && !name.ends_with("_total") {
            return Err(DiagError::Invalid(format!(
                "counter '{name}' must end in _total"
            )));
        }
        if !self.families.insert(name.to_string()) {
            return Err(DiagError::Invalid(format!(
                "metric family '{name}' written twice"
            )));
        }
        let _ = writeln!(self.out, "# HELP {name} {}", escape_help(help));
        let _ = writeln!(self.out, "# TYPE {name} {}", kind.as_str());
        self.open = Some((name.to_string(), kind));
        self.records.push(FamilyRecord {
            name: name.into(),
            kind,
            help: help.into(),
            samples: Vec::new(),
        });
        Ok(())
    }

    /// Writes one sample of the open gauge or counter family.
    pub fn sample(&mut self, labels: &[(&str, &str)], value: f64) -> Result<(), DiagError> {
        let name = match &self.open {
            Some((n, MetricType::Gauge | MetricType::Counter)) => n.clone(),
            Some((n, MetricType::Histogram)) => {
                return Err(DiagError::Invalid(format!(
                    "'{n}' is a histogram: use histogram()"
                )));
            }
            None => {
                return Err(DiagError::Invalid(
                    "sample written before any family".into(),
                ));
            }
        };
        self.line(&name, labels, None, value)
    }

    /// Writes the `_bucket`, `_sum` and `_count` series of `h` with `labels`
    /// for the open histogram family.
    pub fn histogram(&mut self, labels: &[(&str, &str)], h: &Histogram) -> Result<(), DiagError> {
        let name = match &self.open {
            Some((n, MetricType::Histogram)) => n.clone(),
            _ => {
                return Err(DiagError::Invalid(
                    "histogram() needs an open histogram family".into(),
                ));
            }
        };
        let mut cumulative = 0;
        for (bound, count) in h.bounds.iter().zip(&h.counts) {
            cumulative += count;
            self.line(
                &format!("{name}_bucket"),
                labels,
                Some(&format_value(*bound)),
                cumulative as f64,
            )?;
        }
        self.line(
            &format!("{name}_bucket"),
            labels,
            Some("+Inf"),
            h.count as f64,
        )?;
        self.line(&format!("{name}_sum"), labels, None, h.sum)?;
        self.line(&format!("{name}_count"), labels, None, h.count as f64)
    }

    fn line(
        &mut self,
        name: &str,
        labels: &[(&str, &str)],
        le: Option<&str>,
        value: f64,
    ) -> Result<(), DiagError> {
        let mut parts = Vec::with_capacity(labels.len() + 1);
        for (k, v) in labels {
            if !valid_name(k, false) || k.starts_with("__") || *k == "le" {
                return Err(DiagError::Invalid(format!(
                    "invalid label name '{k}' on {name}"
                )));
            }
            parts.push(format!("{k}=\"{}\"", escape_label(v)));
        }
        if let Some(le) = le {
            parts.push(format!("le=\"{le}\""));
        }
        if let Some(rec) = self.records.last_mut() {
            let mut l: Vec<(String, String)> = labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            l.extend(le.map(|le| ("le".to_string(), le.to_string())));
            rec.samples.push(SampleRecord {
                name: name.into(),
                labels: l,
                value,
            });
        }
        if parts.is_empty() {
            let _ = writeln!(self.out, "{name} {}", format_value(value));
        } else {
            let _ = writeln!(
                self.out,
                "{name}{{{}}} {}",
                parts.join(","),
                format_value(value)
            );
        }
        Ok(())
    }

    /// The families written so far.
    pub fn records(&self) -> &[FamilyRecord] {
        &self.records
    }

    /// The text written so far.
    pub fn text(&self) -> &str {
        &self.out
    }

    /// The finished text.
    pub fn finish(self) -> String {
        self.out
    }
}

/// A histogram with fixed upper bounds (the `+Inf` bucket is implicit).
#[derive(Debug, Clone, PartialEq)]
pub struct Histogram {
    bounds: Vec<f64>,
    counts: Vec<u64>,
    sum: f64,
    count: u64,
}

impl Histogram {
    /// An empty histogram; `bounds` must be strictly increasing and finite.
    pub fn new(bounds: &[f64]) -> Histogram {
        debug_assert!(bounds.windows(2).all(|w| w[0] < w[1]));
        Histogram {
            bounds: bounds.to_vec(),
            counts: vec![0; bounds.len()],
            sum: 0.0,
            count: 0,
        }
    }

    /// Counts one observation.
    pub fn observe(&mut self, v: f64) {
        if let Some(i) = self.bounds.iter().position(|&b| v <= b) {
            self.counts[i] += 1;
        }
        self.sum += v;
        self.count += 1;
    }

    /// Number of observations.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Sum of observations.
    pub fn sum(&self) -> f64 {
        self.sum
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_families_samples_and_escapes() {
        let mut e = Exposition::new();
        e.family(
            "bbrkit_info",
            MetricType::Gauge,
            "Host facts.\nSecond line \\ x",
        )
        .unwrap();
        e.sample(&[("kernel", "6.18 \"x\"\\y\nz")], 1.0).unwrap();
        e.family("bbrkit_x_total", MetricType::Counter, "X.")
            .unwrap();
        e.sample(&[], 12345678901.0).unwrap();
        let t = e.finish();
        assert_eq!(
            t,
            "# HELP bbrkit_info Host facts.\\nSecond line \\\\ x\n# TYPE bbrkit_info gauge\n\
             bbrkit_info{kernel=\"6.18 \\\"x\\\"\\\\y\\nz\"} 1\n\
             # HELP bbrkit_x_total X.\n# TYPE bbrkit_x_total counter\nbbrkit_x_total 12345678901\n"
        );
    }

    #[test]
    fn histogram_is_cumulative_with_inf_sum_and_count() {
        let mut h = Histogram::new(&[0.001, 0.01, 0.1]);
        for v in [0.0005, 0.001, 0.05, 3.0] {
            h.observe(v);
        }
        let mut e = Exposition::new();
        e.family("bbrkit_rtt_seconds", MetricType::Histogram, "RTT.")
            .unwrap();
        e.histogram(&[("cc", "bbr")], &h).unwrap();
        let t = e.finish();
        assert!(
            t.contains("bbrkit_rtt_seconds_bucket{cc=\"bbr\",le=\"0.001\"} 2\n"),
            "{t}"
        );
        assert!(
            t.contains("bbrkit_rtt_seconds_bucket{cc=\"bbr\",le=\"0.01\"} 2\n"),
            "{t}"
        );
        assert!(
            t.contains("bbrkit_rtt_seconds_bucket{cc=\"bbr\",le=\"0.1\"} 3\n"),
            "{t}"
        );
        assert!(
            t.contains("bbrkit_rtt_seconds_bucket{cc=\"bbr\",le=\"+Inf\"} 4\n"),
            "{t}"
        );
        assert!(
            t.contains("bbrkit_rtt_seconds_sum{cc=\"bbr\"} 3.0515\n"),
            "{t}"
        );
        assert!(
            t.contains("bbrkit_rtt_seconds_count{cc=\"bbr\"} 4\n"),
            "{t}"
        );
    }

    #[test]
    fn rejects_what_prometheus_would_reject() {
        let mut e = Exposition::new();
        assert!(e.sample(&[], 1.0).is_err());
        assert!(e.family("9bad", MetricType::Gauge, "").is_err());
        assert!(e.family("bbrkit_c", MetricType::Counter, "").is_err());
        e.family("bbrkit_g", MetricType::Gauge, "").unwrap();
        assert!(e.family("bbrkit_g", MetricType::Gauge, "").is_err());
        assert!(e.sample(&[("le", "1")], 1.0).is_err());
        assert!(e.sample(&[("bad-name", "1")], 1.0).is_err());
        assert!(e.histogram(&[], &Histogram::new(&[1.0])).is_err());
        assert_eq!(format_value(f64::INFINITY), "+Inf");
        assert_eq!(format_value(0.25), "0.25");
        assert_eq!(format_value(0.000094 + 1e-20), "0.000094");
        assert_eq!(format_value(0.1 + 0.2), "0.3");
        assert_eq!(format_value(24474776189.0), "24474776189");
        assert_eq!(format_value(1e-7), "0.0000001");
    }
}
