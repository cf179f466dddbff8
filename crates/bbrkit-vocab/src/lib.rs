//! bbrkit's shared vocabulary: one type for each word more than one crate
//! uses — a rate, a size, a buffer size, the conditions of a path (rate,
//! RTT, loss, jitter, buffer), a request/response workload and its size
//! classes, an algorithm's name, a BBR state — with the one parser of their
//! human spelling (`100mbit`, `10ms`, `2%`, `1bdp`, `4mb`) and the one
//! formatter of their human forms.
//!
//! Sim, lab, advise, trial, diag and the CLI all speak these types; none of
//! them defines its own. Must never do I/O, read a clock or depend on
//! another bbrkit crate: everything else depends on it.
//!
//! | module | owns |
//! |---|---|
//! | [`bpf_features`] | what a BPF congestion control needs ([`bpf_features::Features`]), the reason a build without BPF gives |
//! | [`cc`] | [`CcName`], a kernel algorithm name |
//! | [`units`] | parsing rates, durations, loss probabilities, lists |
//! | [`size`] | [`BufferSize`] and byte counts |
//! | [`mod@format`] | human rates, percentages, bytes, numbers |
//! | [`path`] | [`PathConditions`] |
//! | [`stats`] | [`Percentiles`] (p50/p95/p99), [`FctQuantiles`] (p50/p90/p99), Jain's index |
//! | [`workload`] | [`WorkloadSpec`], [`SizeClass`], per-class FCT summary |

#![forbid(unsafe_code)]

pub mod bbr_state;
pub mod bpf_features;
pub mod cc;
pub mod format;
pub mod path;
pub mod size;
pub mod stats;
pub mod units;
pub mod workload;

pub use cc::CcName;
pub use path::PathConditions;
pub use size::{BufferSize, parse_bytes, parse_size};
pub use stats::{FctQuantiles, Percentiles, jain_index};
pub use units::{UnitError, parse_duration, parse_list, parse_loss, parse_rate};
pub use workload::{ClassFct, SizeClass, WorkloadSpec, fct_by_class};
