//! Deterministic discrete-event simulator of a bottleneck path.
//!
//! Owns virtual time ([`engine`]), the bottleneck link and its drop-tail
//! queue ([`link`]), loss models ([`loss`]), propagation delay ([`delay`]),
//! flows running `bbrkit-cc`'s one TCP transport ([`bbrkit_cc::transport`]:
//! the sender and receiver that drive the controllers the way Linux
//! `tcp_ack` does), run configuration
//! ([`config`]), the world and its event loop ([`sim`]), results
//! ([`report`]) and experiments: plans, presets, sweeps and parallel runs
//! ([`experiment`]) and the plan from an operator's settings in bbrkit's
//! units ([`settings`]), request/response workloads ([`workload`]). Must never touch the host: no wall clock, no files, no
//! sockets, no global randomness. Same inputs and seed give byte-identical
//! output.
//!
//! ```
//! use bbrkit_sim::{BufferSize, FlowConfig, LossModel, PathConfig, SimConfig};
//! use bbrkit_cc::{Algorithm, Duration};
//!
//! let path = PathConfig {
//!     rate_bps: 10_000_000,
//!     rtt: Duration::from_millis(20),
//!     buffer: BufferSize::Bdp(1.0),
//!     loss: LossModel::None,
//!     ack_loss: 0.0,
//! };
//! let cfg = SimConfig::new(path, vec![FlowConfig::bulk(Algorithm::Reno)], Duration::from_secs(2), 1);
//! let report = bbrkit_sim::run(&cfg, &mut |_| {}).unwrap();
//! assert!(report.flows[0].bits_per_second > 5e6);
//! ```

#![forbid(unsafe_code)]

pub mod config;
pub mod delay;
pub mod engine;
pub mod experiment;
pub mod histogram;
pub mod link;
pub mod loss;
pub mod report;
pub mod settings;
pub mod sim;
pub mod validation;
pub mod workload;

pub use config::{BufferSize, ConfigError, DEFAULT_MSS, FlowConfig, PathConfig, SimConfig};
pub use experiment::{Plan, Preset, RunError, run_parallel};
pub use loss::LossModel;
pub use report::{FlowReport, LinkReport, Percentiles, RunReport, TraceRow, jain_index};
pub use settings::{SettingError, Settings};
pub use sim::{Sender, Simulation, run};
pub use workload::{Workload, WorkloadResult, run_workload};
