//! Per-connection congestion control, the pure half: what an operator's
//! policy says, what the cgroup `sock_ops` program of `bbrkit-bpf` needs to
//! apply it, and what that program reports back.
//!
//! Owns the shared vocabulary between the program and user space:
//! - [`record`]: [`ConnRecord`], one connection's outcome as the program
//!   emits it when the connection closes (or as a trial samples it while
//!   still open) — the input of `bbrkit-trial`'s statistics.
//!
//! Must never load BPF, touch the host or read a clock: `bbrkit-bpf` loads
//! the program and fills its maps from what this crate computes, and
//! `bbrkit-host` records the attachment as one kind of host change.

#![forbid(unsafe_code)]

pub mod record;

pub use record::{ConnRecord, Direction};
