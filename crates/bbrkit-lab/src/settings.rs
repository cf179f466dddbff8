//! A lab experiment as an operator writes it: `bbrkit lab`'s settings as
//! text in bbrkit's units (`10ms`, `0,1%,2%`, `100mbit`, `1bdp`) and the
//! choices already made (mode, emulator, seed), checked and turned into the
//! [`Experiment`] that [`crate::experiment::run`] runs.
//!
//! Owns the meaning of each setting: the sweep they describe, `--cc host`
//! leaving the algorithm to the host, the mode. The units are
//! bbrkit-vocab's one parser. Must never know a command line's syntax, read
//! the clock, print or touch the system.

use bbrkit_vocab::{
    CcName, UnitError, parse_duration, parse_list, parse_loss, parse_rate, parse_size,
};

use crate::commands::Commands;
use crate::emulator::EmulatorKind;
use crate::error::{LabError, Result};
use crate::experiment::{Experiment, Mode, check};
use crate::plan::{HOST_CC, Plan, Sweep};
use crate::tester::CcOn;
use crate::workload::Workload;

/// The settings of a lab experiment; `None` where the operator gave none.
#[derive(Debug, Clone)]
pub struct Settings<'a> {
    /// Algorithms, comma-separated, in table order (`host`: none set).
    pub cc: &'a str,
    /// One-way delays of the data direction.
    pub delay: Option<&'a str>,
    /// Loss probabilities of the data direction.
    pub loss: Option<&'a str>,
    /// Delay jitter of every condition.
    pub jitter: Option<&'a str>,
    /// Bottleneck rates.
    pub rate: Option<&'a str>,
    /// Drop-tail buffer of every condition.
    pub buffer: &'a str,
    /// CE-mark threshold of every condition's bottleneck queue.
    pub ecn_threshold: Option<&'a str>,
    /// Runs per condition and algorithm.
    pub runs: usize,
    /// Sending time per run.
    pub duration: &'a str,
    /// Parallel flows per run (per algorithm when competing).
    pub parallel: usize,
    /// All algorithms' flows at once.
    pub compete: bool,
    /// When competing: each algorithm's start offset (one for all, or one each).
    pub start: Option<&'a str>,
    /// Request/response traffic instead of bulk flows.
    pub workload: Option<Workload>,
    /// The operator's own commands (or `--hold`) instead of bbrkit's traffic.
    pub commands: Option<Commands>,
    /// Where the algorithm is set (the sender or the receiver; `host` in
    /// `cc` overrides it).
    pub cc_on: CcOn,
    /// The emulator asked for.
    pub emulator: EmulatorKind,
    /// Base seed of the loss process.
    pub seed: u64,
    /// Link MTU.
    pub mtu: u32,
    /// How often a spoiled run is repeated.
    pub retries: usize,
    /// Name the namespaces under `/run/netns`.
    pub netns_names: bool,
}

/// A unit error as the lab reports it.
fn invalid(e: UnitError) -> LabError {
    LabError::Invalid(e.0)
}

/// An optional list in bbrkit's units.
fn list<T>(
    text: Option<&str>,
    item: impl Fn(&str) -> std::result::Result<T, UnitError>,
) -> Result<Option<Vec<T>>> {
    text.map(|t| parse_list(t, item))
        .transpose()
        .map_err(invalid)
}

impl Settings<'_> {
    /// The experiment, checked as far as it can be without the system.
    pub fn experiment(self) -> Result<Experiment> {
        let algorithms = parse_list(self.cc, |s| s.parse::<CcName>()).map_err(invalid)?;
        let algorithms: Vec<String> = algorithms.into_iter().map(|c| c.to_string()).collect();
        let host = algorithms.iter().any(|a| a == HOST_CC);
        let sweep = Sweep {
            rates: list(self.rate, parse_rate)?,
            delays: list(self.delay, parse_duration)?,
            losses: list(self.loss, parse_loss)?,
            jitter: self
                .jitter
                .map(parse_duration)
                .transpose()
                .map_err(invalid)?
                .unwrap_or_default(),
            buffer: Some(parse_size(self.buffer).map_err(invalid)?),
        };
        let plan = Plan {
            conditions: sweep.conditions()?,
            algorithms,
            runs: self.runs,
            duration: parse_duration(self.duration).map_err(invalid)?,
            flows: self.parallel,
            cc_on: if host { CcOn::Host } else { self.cc_on },
            emulator: self.emulator,
            seed: self.seed,
            mtu: self.mtu,
            retries: self.retries,
            ecn_threshold: self
                .ecn_threshold
                .map(parse_size)
                .transpose()
                .map_err(|e| LabError::Invalid(format!("--ecn-threshold: {}", e.0)))?,
        };
        let mode = match (self.workload, self.commands) {
            (Some(_), Some(_)) => {
                return Err(LabError::Invalid(
                    "--workload runs bbrkit's own server and clients: leave out the commands"
                        .into(),
                ));
            }
            (Some(w), None) => Mode::Workload(w),
            (None, Some(c)) => Mode::Commands(c),
            (None, None) if self.compete => Mode::Compete {
                starts: list(self.start, parse_duration)?.unwrap_or_default(),
            },
            (None, None) => Mode::Alone,
        };
        let exp = Experiment {
            plan,
            mode,
            netns_names: self.netns_names,
        };
        check(&exp)?;
        Ok(exp)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn settings() -> Settings<'static> {
        Settings {
            cc: "cubic,bbr",
            delay: None,
            loss: None,
            jitter: None,
            rate: None,
            buffer: "1bdp",
            ecn_threshold: None,
            runs: 3,
            duration: "6s",
            parallel: 1,
            compete: false,
            start: None,
            workload: None,
            commands: None,
            cc_on: CcOn::Sender,
            emulator: EmulatorKind::Auto,
            seed: 1,
            mtu: 1500,
            retries: 1,
            netns_names: false,
        }
    }

    #[test]
    fn no_conditions_run_the_seed_experiment_alone() {
        let exp = settings().experiment().unwrap();
        assert!(matches!(exp.mode, Mode::Alone));
        assert_eq!(exp.plan.conditions, crate::plan::seed_conditions());
        assert_eq!(exp.plan.algorithms, ["cubic", "bbr"]);
        assert_eq!(exp.plan.duration, Duration::from_secs(6));
    }

    #[test]
    fn a_sweep_competes_and_host_leaves_the_algorithm_to_the_host() {
        let exp = Settings {
            cc: "bbr,cubic",
            rate: Some("50mbit"),
            delay: Some("20ms,80ms"),
            buffer: "2bdp",
            compete: true,
            start: Some("0,5s"),
            ..settings()
        }
        .experiment()
        .unwrap();
        assert_eq!(exp.plan.conditions.len(), 2);
        assert_eq!(exp.plan.conditions[1].rate_bps, Some(50_000_000));
        let Mode::Compete { starts } = exp.mode else {
            panic!("{:?}", exp.mode)
        };
        assert_eq!(starts, [Duration::ZERO, Duration::from_secs(5)]);
        let host = Settings {
            cc: "host",
            ..settings()
        };
        assert_eq!(host.experiment().unwrap().plan.cc_on, CcOn::Host);
    }

    #[test]
    fn a_bad_unit_is_the_unit_parser_s_message() {
        let e = Settings {
            rate: Some("fast"),
            ..settings()
        };
        let want = parse_rate("fast").unwrap_err().0;
        assert_eq!(e.experiment().unwrap_err().to_string(), want);
        let e = Settings {
            compete: true,
            start: Some("0,1s,2s"),
            ..settings()
        };
        assert!(e.experiment().is_err(), "three starts for two algorithms");
    }
}
