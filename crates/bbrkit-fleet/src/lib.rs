//! A trial across a fleet: each host runs its own `bbrkit trial` and
//! exports, per group, its effect on the log scale with a standard error
//! (`bbrkit_trial_effect_log_ratio`, `bbrkit_trial_effect_log_se`) and
//! per arm its counts; this crate pools them. It owns the fleet
//! meta-analysis and never does I/O: the caller fetches the Prometheus
//! answers and hands their text in, and the time is passed in too.
//!
//! ```text
//!   Prometheus answers ──prom::parse──► samples ──prom::assemble──► Fleet (hosts × groups)
//!   Fleet ──report::analyse──► per group and overall:
//!       hosts fresh and trusted ─ meta::pool (DerSimonian–Laird τ², Hartung–Knapp
//!       interval, Q, I², prediction interval) ─ meta::leave_one_out (hosts that
//!       disagree) ─ srm::check (pooled counts against the split) ─ verdict
//! ```
//!
//! | module | owns |
//! |---|---|
//! | [`meta`] | random-effects meta-analysis of (y, v) pairs |
//! | [`srm`] | the fleet-wide sample-ratio check |
//! | [`prom`] | the PromQL queries and their answers as a [`Fleet`] |
//! | [`report`] | assembling it all: [`FleetReport`] (its `Serialize` form is `--json`) |

#![forbid(unsafe_code)]

pub mod meta;
pub mod prom;
pub mod report;
pub mod srm;

pub use meta::{Pool, Tau2, pool};
pub use prom::{Family, Fleet, Host, HostGroup};
pub use report::{FleetReport, GroupReport, Settings, Verdict, analyse};

/// Input the analysis cannot use.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum FleetError {
    /// No study to pool.
    #[error("nothing to pool: no host has an effect")]
    Empty,
    /// An effect or variance that is not a finite number (a variance must
    /// also be above 0: a host with no spread would take all the weight).
    #[error("host {index}: effect {y} with variance {v} cannot be pooled")]
    BadStudy {
        /// Its position.
        index: usize,
        /// Its effect.
        y: f64,
        /// Its variance.
        v: f64,
    },
    /// A Prometheus answer that is not what the HTTP API documents.
    #[error("the Prometheus answer {0}")]
    Answer(String),
}
