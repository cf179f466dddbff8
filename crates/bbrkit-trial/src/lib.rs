//! The statistics of a live A/B trial of congestion control: per-connection
//! records in ([`bbrkit_policy::ConnRecord`], one per closed connection),
//! a trustworthy answer out — per group and arm what the connections did,
//! the effect of B against A with an interval that holds for heavy-tailed
//! data, a verdict, the sample-ratio check, guardrail decisions — and its
//! renderings (table, progress line, Prometheus textfile; the `--json`
//! document is [`Report`]'s `Serialize` form).
//!
//! ```text
//!   ConnRecord ──Trial::add──► Obs (arm, group, unit, size class, goodput, counters)
//!                                │          open at the end: OpenObs, apart
//!   Look {seed, mode} ──Trial::report──► Report
//!       per group and "all": describe ─ effect (bootstrap, confidence sequence)
//!                            ─ verdict ─ srm ─ guardrails
//!   Report ──render──► table, progress line, textfile; serde ──► --json
//! ```
//!
//! | module | owns |
//! |---|---|
//! | [`definition`] | arms, split, unit, grouping, settings, guardrail bounds |
//! | [`observe`] | reading records once: [`Trial`], [`RecordCounts`] |
//! | [`describe`] | per-arm description: quantiles, FCT by size class, pooled rates |
//! | `bootstrap` | the stratified, cluster-aware bootstrap of the log ratio of medians |
//! | [`sequential`] | the confidence-sequence multiplier (peeking-safe intervals) |
//! | [`effect`] | the effect, its interval and anytime interval |
//! | [`verdict`] | verdicts and the size still needed |
//! | [`srm`] | the sample-ratio check |
//! | [`guardrail`] | guardrail checks and decisions |
//! | [`report`] | assembling it all: [`Report`] |
//! | [`render`] | table, progress line, Prometheus textfile |
//! | [`words`] | size classes and human units (bbrkit-vocab's words, until it has them) |
//! | `testing` | records for tests (feature `testing`) |
//!
//! Pure: must never load BPF, touch the host, read a clock or use global
//! randomness — the seed and the time are passed in ([`Look`]). The live
//! command (attaching the program, reading the ring buffer, rewriting the
//! split when a guardrail decides) lives elsewhere and calls this.

#![forbid(unsafe_code)]

mod bootstrap;
pub mod definition;
pub mod describe;
pub mod effect;
pub mod gates;
pub mod guardrail;
pub mod observe;
pub mod render;
pub mod report;
pub mod sequential;
pub mod srm;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
pub mod verdict;
pub mod words;

pub use definition::{
    Arm, Grouping, GuardrailBounds, PrefixLengths, Settings, TrialDef, Unit, unit_meaning,
};
pub use effect::{Effect, Estimand, EstimandSource, Mode};
pub use guardrail::Decision;
pub use observe::{RecordCounts, Trial};
pub use report::{Cohort, GroupReport, Look, Report};
pub use verdict::Verdict;

/// A trial definition that cannot be run, or a rendering that failed.
#[derive(Debug, thiserror::Error)]
pub enum TrialError {
    /// An arm without an algorithm.
    #[error("arm {arm} has no algorithm name")]
    EmptyAlgorithm {
        /// `A` or `B`.
        arm: &'static str,
    },
    /// An arm that would receive nothing.
    #[error("arm {arm} has weight 0: a split needs both arms")]
    ZeroWeight {
        /// `A` or `B`.
        arm: &'static str,
    },
    /// Prefix lengths longer than the addresses.
    #[error("prefix lengths /{v4} and /{v6}: IPv4 allows up to /32 and IPv6 up to /128")]
    PrefixLength {
        /// IPv4 bits asked for.
        v4: u8,
        /// IPv6 bits asked for.
        v6: u8,
    },
    /// A fraction outside its range.
    #[error("{what} must be above {low} and below 1, got {value}")]
    OutOfRange {
        /// The setting.
        what: &'static str,
        /// Its value.
        value: f64,
        /// The exclusive lower end.
        low: f64,
    },
    /// A count below its minimum.
    #[error("{what} must be at least {min}, got {value}")]
    TooSmall {
        /// The setting.
        what: &'static str,
        /// Its value.
        value: u64,
        /// The minimum.
        min: u64,
    },
    /// The Prometheus writer refused a family or sample.
    #[error("writing the trial's Prometheus exposition")]
    Exposition(#[source] bbrkit_diag::DiagError),
}
