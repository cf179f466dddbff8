//! `bbrkit advise`: will BBR help this server's own traffic, and by how much?
//!
//! Owns, in this order of the data:
//! * [`sampler`]: one sock_diag census per interval for a duration, on a
//!   clock and a census source that are passed in;
//! * [`track`]: de-duplication across samples (a connection is keyed by its
//!   socket cookie and counted once; the latest cumulative
//!   `tcp_info` counters are kept, with a baseline for connections that
//!   existed before sampling began);
//! * [`group`]: remote prefixes (/24, /48) and per-group aggregates;
//! * [`estimate`]: loss from retransmitted / sent segments with its binomial
//!   (Wilson) interval, time fractions limited by the receive window, the
//!   send buffer and the application;
//! * [`predict`]: CUBIC, BBR (v1) and bbr3 throughput on the estimated path,
//!   run in `bbrkit-sim` at the loss estimate and its two bounds;
//! * [`verdict`]: one verdict per group with a one-line reason and the one
//!   command that acts on it;
//! * [`report`]: the whole analysis as plain serialisable data.
//!
//! Must never change anything on the host (it only reads sock_diag), never
//! read a clock or sleep on its own (the [`sampler::Clock`] is passed in), and
//! never print: the CLI renders the [`report::Report`].

#![forbid(unsafe_code)]

mod error;
pub mod estimate;
pub mod group;
pub mod predict;
pub mod report;
pub mod sampler;
pub mod track;
pub mod verdict;

pub use error::AdviseError;
pub use report::{Options, Report, analyze};
pub use sampler::{Clock, SamplePlan, SamplingStats, SystemClock, sample};
pub use track::Tracker;
pub use verdict::Verdict;
