//! The BPF side of bbrkit: congestion controls written in BPF C (bbr3) and
//! registered in the running kernel as `struct_ops` `tcp_congestion_ops`,
//! and the per-connection policy's cgroup `sock_ops` program ([`sockops`]):
//! it sets each new connection's algorithm from a compiled
//! `bbrkit_policy` policy and streams close records for a live trial.
//!
//! Owns the BPF sources and their committed objects (`bpf/`, built by its
//! Makefile with clang), loading an object with libbpf-rs (the verifier log
//! kept in the error when the kernel refuses a program), registration
//! through struct_ops links (a process that dies, even by SIGKILL, leaves
//! nothing registered; on Linux < 6.4, which has none, by map update) and
//! optional pins in bpffs for a registration that must outlive the process,
//! the telemetry maps the programs fill, and run-time detection of the
//! kernel features all this needs (which also picks the object: `bbr3.bpf.o`
//! for a 4-argument `cong_control`, `bbr3-cc2.bpf.o` for a 2-argument one).
//!
//! Must never decide policy (whether to register, which algorithm a host
//! uses, what a policy says: the host commands, the lab and bbrkit-policy
//! decide) and never touch any BPF object, pin or sysctl but its own
//! (`bbr3_*` and `bkpol_*` programs and maps, pins under `/sys/fs/bpf/bbrkit`
//! or the pin directory a caller names).

pub mod bbr3;
pub mod error;
pub mod features;
pub mod load;
mod log;
pub mod objects;
pub mod pin;
pub mod register;
pub mod share;
pub mod sock_models;
pub mod sockops;
pub mod status;
pub mod telemetry;

pub use error::{BpfError, Result};
pub use load::{Loaded, ObjectSource};
pub use register::Registration;
