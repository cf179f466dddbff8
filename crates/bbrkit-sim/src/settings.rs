//! A plan as an operator writes it: `bbrkit sim`'s settings as text in
//! bbrkit's units (`100mbit`, `10ms`, `2%`, `1bdp`, per-flow lists like
//! `0,5s`), laid over a base plan (the default or a preset) and checked,
//! giving the [`Plan`] the experiment runs.
//!
//! Owns the meaning of each setting and its errors, each naming the
//! setting it is about ([`SettingError`]); the units themselves are
//! bbrkit-vocab's one parser. Must never know a command line's syntax,
//! print or touch files.

use bbrkit_cc::{Algorithm, Duration};
use bbrkit_vocab::{UnitError, parse_duration, parse_list, parse_loss, parse_rate, parse_size};

use crate::config::{BufferSize, DEFAULT_MSS};
use crate::experiment::Plan;

/// A setting that is not valid: `"{setting}: {message}"`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{setting}: {message}")]
pub struct SettingError {
    /// The setting's name (`rate`, `start`, `ecn-threshold`).
    pub setting: &'static str,
    /// What is wrong with its value.
    pub message: String,
}

type Result<T> = std::result::Result<T, SettingError>;

fn err<T>(setting: &'static str, message: impl Into<String>) -> Result<T> {
    Err(SettingError {
        setting,
        message: message.into(),
    })
}

/// `r`, its unit error named after `setting`.
fn named<T>(setting: &'static str, r: std::result::Result<T, UnitError>) -> Result<T> {
    r.or_else(|e| err(setting, e.0))
}

/// The settings, as text; `None` keeps the base plan's value.
#[derive(Debug, Clone, Default)]
pub struct Settings<'a> {
    /// Algorithms, comma-separated (`cubic,bbr1`; a name may repeat).
    pub cc: Option<&'a str>,
    /// Bottleneck rate.
    pub rate: Option<&'a str>,
    /// Base round-trip time.
    pub rtt: Option<&'a str>,
    /// Data-path loss probabilities, one condition each.
    pub loss: Option<&'a str>,
    /// Mean loss burst length in packets (>= 1).
    pub loss_burst: f64,
    /// ACK-path loss probability (default 0).
    pub ack_loss: Option<&'a str>,
    /// Drop-tail buffer (BDP multiple, packets or bytes).
    pub buffer: Option<&'a str>,
    /// Simulated time per run.
    pub duration: Option<&'a str>,
    /// Seed of every random stream.
    pub seed: u64,
    /// All flows at once (else as the base plan says).
    pub compete: bool,
    /// Per-flow start times: one for all, or one per flow.
    pub start: Option<&'a str>,
    /// Per-flow sizes (`bulk`, bytes or packets): one for all, or one per flow.
    pub size: Option<&'a str>,
    /// Per-flow extra RTT: one for all, or one per flow.
    pub extra_rtt: Option<&'a str>,
    /// Pace Reno/CUBIC.
    pub pace: bool,
    /// CE-marking threshold of the bottleneck queue.
    pub ecn_threshold: Option<&'a str>,
    /// Tail loss probes off.
    pub no_tlp: bool,
    /// Receive window (bytes or packets).
    pub rwnd: Option<&'a str>,
}

impl Settings<'_> {
    /// The plan: `base` with every given setting applied, checked.
    pub fn plan(&self, base: Plan) -> Result<Plan> {
        let algorithms = match self.cc {
            None => base.algorithms.clone(),
            Some(cc) => algorithms(cc)?,
        };
        let mut path = base.path.clone();
        if let Some(r) = self.rate {
            path.rate_bps = named("rate", parse_rate(r))?;
        }
        if let Some(r) = self.rtt {
            path.rtt = named("rtt", parse_duration(r))?;
        }
        let losses = self.losses(&base)?;
        path.ack_loss = self.ack_loss()?;
        if let Some(b) = self.buffer {
            path.buffer = named("buffer", parse_size(b))?;
        }
        let duration = match self.duration {
            None => base.duration,
            Some(d) => named("duration", parse_duration(d))?,
        };
        if duration.is_zero() {
            return err("duration", "must be positive");
        }
        let n = algorithms.len();
        let starts = starts(self.start, n, duration)?;
        let sizes = sizes(self.size, n)?;
        let extra_rtt = per_flow_durations("extra-rtt", self.extra_rtt, n)?;
        let rwnd = self.rwnd.map(rwnd).transpose()?;
        let ecn_threshold = self.ecn_threshold;
        let ecn_threshold = ecn_threshold
            .map(|s| named("ecn-threshold", parse_size(s)))
            .transpose()?;
        Ok(Plan {
            algorithms,
            path,
            losses,
            loss_burst: self.loss_burst,
            duration,
            compete: self.compete || base.compete,
            starts,
            sizes,
            extra_rtt,
            rwnd,
            ecn_threshold,
            pace_loss_based: self.pace,
            tlp: !self.no_tlp,
            seed: self.seed,
        })
    }

    /// `loss` (or the base plan's), each below 100%, and a check of
    /// `loss_burst`.
    fn losses(&self, base: &Plan) -> Result<Vec<f64>> {
        let losses = match self.loss {
            None => base.losses.clone(),
            Some(l) => named("loss", parse_list(l, parse_loss))?,
        };
        if let Some(&l) = losses.iter().find(|&&l| l >= 1.0) {
            let pct = l * 100.0;
            return err(
                "loss",
                format!("{pct}% would drop every packet (use less than 100%)"),
            );
        }
        Ok(losses)
    }

    /// `ack_loss`, below 100% (and `loss_burst`, checked in this order).
    fn ack_loss(&self) -> Result<f64> {
        let ack_loss = named("ack-loss", parse_loss(self.ack_loss.unwrap_or("0")))?;
        if ack_loss >= 1.0 {
            return err("ack-loss", "100% would drop every ACK");
        }
        if !(self.loss_burst.is_finite() && self.loss_burst >= 1.0) {
            return err("loss-burst", "must be a number of packets >= 1");
        }
        Ok(ack_loss)
    }
}

/// Algorithm names, comma-separated.
fn algorithms(cc: &str) -> Result<Vec<Algorithm>> {
    cc.split(',')
        .map(|s| {
            if s.trim().is_empty() {
                return err("cc", format!("empty item in list '{cc}'"));
            }
            s.parse::<Algorithm>().or_else(|e| err("cc", e.to_string()))
        })
        .collect()
}

/// A receive window in bytes.
fn rwnd(s: &str) -> Result<u64> {
    match named("rwnd", parse_size(s))? {
        BufferSize::Bytes(b) if b > 0 => Ok(b),
        BufferSize::Packets(p) if p > 0 => Ok(p * u64::from(DEFAULT_MSS)),
        _ => err("rwnd", "give a positive byte or packet count"),
    }
}

/// Expands a per-flow list: one value for all, or exactly one per flow.
fn per_flow<T: Clone>(setting: &'static str, v: Vec<T>, n: usize, default: T) -> Result<Vec<T>> {
    match v.len() {
        0 => Ok(vec![default; n]),
        1 => Ok(vec![v[0].clone(); n]),
        k if k == n => Ok(v),
        k => err(
            setting,
            format!("{k} values for {n} flows (give one, or one per flow)"),
        ),
    }
}

/// A per-flow list of durations (zero where none is given).
fn per_flow_durations(setting: &'static str, s: Option<&str>, n: usize) -> Result<Vec<Duration>> {
    let v = match s {
        Some(s) => named(setting, parse_list(s, parse_duration))?,
        None => vec![],
    };
    per_flow(setting, v, n, Duration::ZERO)
}

/// Start times, each before the end of the run.
fn starts(s: Option<&str>, n: usize, duration: Duration) -> Result<Vec<Duration>> {
    let starts = per_flow_durations("start", s, n)?;
    if let Some((i, s)) = starts.iter().enumerate().find(|(_, s)| **s >= duration) {
        let (s, d) = (s.as_secs_f64(), duration.as_secs_f64());
        return err(
            "start",
            format!("flow {i} would start at {s} s, not before the end of the {d} s run"),
        );
    }
    Ok(starts)
}

/// Flow sizes in bytes (`None`: bulk).
fn sizes(s: Option<&str>, n: usize) -> Result<Vec<Option<u64>>> {
    let sizes = match s {
        Some(s) => s.split(',').map(size).collect::<Result<Vec<_>>>()?,
        None => vec![],
    };
    per_flow("size", sizes, n, None)
}

/// One flow size: `bulk`, bytes or packets.
fn size(item: &str) -> Result<Option<u64>> {
    match item.trim() {
        "bulk" | "inf" => Ok(None),
        t => match named("size", parse_size(t))? {
            BufferSize::Bytes(0) | BufferSize::Packets(0) => err("size", format!("'{t}' is empty")),
            BufferSize::Bytes(b) => Ok(Some(b)),
            BufferSize::Packets(p) => Ok(Some(p * u64::from(DEFAULT_MSS))),
            BufferSize::Bdp(_) => err("size", format!("give bytes or packets, not '{t}'")),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> Settings<'static> {
        Settings {
            loss_burst: 1.0,
            seed: 1,
            ..Settings::default()
        }
    }

    #[test]
    fn no_settings_keep_the_base_plan() {
        let plan = base().plan(Plan::default()).unwrap();
        assert_eq!(plan, Plan::default());
    }

    #[test]
    fn settings_override_the_base_and_per_flow_lists_expand() {
        let s = Settings {
            cc: Some("bbr3,cubic,cubic"),
            rate: Some("50mbit"),
            rtt: Some("40ms"),
            loss: Some("0,2%"),
            buffer: Some("2bdp"),
            start: Some("0,1s,2s"),
            size: Some("10pkt"),
            rwnd: Some("4mb"),
            ..base()
        };
        let p = s.plan(crate::Preset::Fairness.plan()).unwrap();
        assert_eq!(p.algorithms.len(), 3);
        assert!(p.compete, "the preset's");
        assert_eq!(p.path.rate_bps, 50_000_000);
        assert_eq!(p.path.rtt, Duration::from_millis(40));
        assert_eq!(p.path.buffer, BufferSize::Bdp(2.0));
        assert_eq!(p.losses, vec![0.0, 0.02]);
        assert_eq!(p.starts[2], Duration::from_secs(2));
        assert_eq!(p.sizes, vec![Some(10 * u64::from(DEFAULT_MSS)); 3]);
        assert_eq!(p.extra_rtt, vec![Duration::ZERO; 3]);
        assert_eq!(p.rwnd, Some(4_000_000));
    }

    #[test]
    fn each_error_names_its_setting() {
        for (s, want) in [
            (
                Settings {
                    cc: Some("cubic,,bbr1"),
                    ..base()
                },
                "cc: empty item in list 'cubic,,bbr1'",
            ),
            (
                Settings {
                    loss: Some("100%"),
                    ..base()
                },
                "loss: 100% would drop every packet (use less than 100%)",
            ),
            (
                Settings {
                    ack_loss: Some("100%"),
                    ..base()
                },
                "ack-loss: 100% would drop every ACK",
            ),
            (
                Settings {
                    loss_burst: 0.5,
                    ..base()
                },
                "loss-burst: must be a number of packets >= 1",
            ),
            (
                Settings {
                    duration: Some("0s"),
                    ..base()
                },
                "duration: must be positive",
            ),
            (
                Settings {
                    start: Some("0,1s,2s"),
                    ..base()
                },
                "start: 3 values for 2 flows (give one, or one per flow)",
            ),
            (
                Settings {
                    start: Some("10s"),
                    ..base()
                },
                "start: flow 0 would start at 10 s, not before the end of the 10 s run",
            ),
            (
                Settings {
                    size: Some("1bdp"),
                    ..base()
                },
                "size: give bytes or packets, not '1bdp'",
            ),
            (
                Settings {
                    size: Some("0pkt"),
                    ..base()
                },
                "size: '0pkt' is empty",
            ),
            (
                Settings {
                    rwnd: Some("1bdp"),
                    ..base()
                },
                "rwnd: give a positive byte or packet count",
            ),
        ] {
            assert_eq!(s.plan(Plan::default()).unwrap_err().to_string(), want);
        }
        let e = Settings {
            rate: Some("fast"),
            ..base()
        }
        .plan(Plan::default());
        assert_eq!(e.unwrap_err().setting, "rate");
    }
}
