//! Per-connection congestion control, the pure half: what an operator's
//! policy says, what the cgroup `sock_ops` program of `bbrkit-bpf` needs to
//! apply it, and what that program reports back.
//!
//! Owns the shared vocabulary between the program and user space:
//! - [`file`](mod@file): the TOML policy file → a validated [`Policy`] ([`rule`]),
//!   every error naming the rule, the key and the value.
//! - [`compile`]: a policy → [`Compiled`], the contents of the program's
//!   maps as plain values (tries of prefixes and ports, the rule table),
//!   and [`Compiled::decide`], what the program does with a connection.
//! - [`draw`]: how a split draws an arm, the same arithmetic as the program.
//! - [`render`]: the compiled rules as text for `--dry-run`.
//! - [`salt`](mod@salt): the salt of the draws, explicit or from the
//!   split-relevant content, so an edit that keeps the split keeps every draw.
//! - [`shadow`]: rules an earlier rule covers, which can never match.
//! - [`attached`]: where an attached program is pinned, a cgroup's
//!   sock_ops programs and the program's counters, as plain values.
//! - [`record`]: [`ConnRecord`], one connection's outcome as the program
//!   emits it when the connection closes (or as a trial samples it while
//!   still open) — the input of `bbrkit-trial`'s statistics.
//!
//! Must never load BPF, touch the host or read a clock: `bbrkit-bpf` loads
//! the program and fills its maps from what this crate computes, and
//! `bbrkit-host` records the attachment as one kind of host change. Whether
//! an algorithm is registered is the caller's check
//! ([`Policy::algorithms`]).

#![forbid(unsafe_code)]

pub mod attached;
pub mod compile;
pub mod draw;
pub mod error;
pub mod file;
pub mod record;
pub mod render;
pub mod rule;
pub mod salt;
pub mod shadow;

pub use compile::{Compiled, Decision, RuleEntry, TrieEntry};
pub use error::{At, PolicyError, Problem};
pub use file::{parse, parse_port_range, parse_prefix};
pub use record::{ConnRecord, Direction};
pub use rule::{Action, Arm, Policy, PortRange, Rule, Unit};
pub use salt::salt;
pub use shadow::Shadowed;
