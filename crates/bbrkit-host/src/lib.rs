//! Reading and changing the host's congestion-control configuration.
//!
//! Owns /proc/sys, sysctl.d files and their boot precedence, kernel config,
//! /sys/module, interface qdiscs (rtnetlink), BPF registrations and their
//! pins, the boot unit, container detection, and the before-image that
//! makes `rollback` exact. Must never be used by `bbrkit-cc` or
//! `bbrkit-sim`, and never writes outside its `--root` when given one.
//!
//! The design, in three words: [`Host`] (read) / [`HostMut`] (change),
//! [`Snapshot`] (everything a command reads, read once), and the change
//! model ([`change`]: every change bbrkit makes is a typed value that
//! `enable` plans, applies and records in the before-image, `verify`
//! checks, `doctor` reasons about and `rollback` undoes). The commands are
//! pure judgements of a snapshot plus effects through the host; see
//! `docs/architecture.md`'s host section.
//!
//! Path policy: every *on-disk* file (`etc/`, `run/`, `usr/`, `lib/`, `var/`,
//! `boot/`, `/.dockerenv`) is resolved under a [`Root`]; the pseudo-filesystems
//! `/proc` and `/sys`, netlink and bpf always describe the live kernel and
//! the network namespace of the calling thread (see `docs/host.md`).
//!
//! Entry points used by the CLI and by other crates:
//! - [`check::inspect`]: what this kernel offers (serde-serialisable report);
//! - [`enable::plan`] / [`enable::apply`]: decide every change without
//!   writing anything (the dry run), then record the before-image and make
//!   the changes ([`enable::run`] is both);
//! - [`verify::run`]: the checks, as a `Vec<Check>`;
//! - [`rollback::plan`] / [`rollback::apply`] ([`rollback::run`]): undo the
//!   before-image exactly;
//! - [`doctor::diagnose`]: findings with evidence and fix;
//! - [`boot::run`]: what the boot unit of a BPF algorithm runs;
//! - [`metrics::gather`]: what `bbrkit metrics` publishes, read once.

#![forbid(unsafe_code)]

pub mod algorithm;
pub mod atomic;
pub mod boot;
#[cfg_attr(not(feature = "bpf"), path = "bpf_none.rs")]
pub mod bpf;
pub mod change;
pub mod check;
pub mod doctor;
pub mod enable;
pub mod env;
mod error;
pub mod host;
pub mod image;
pub mod kernel;
pub mod live;
pub mod lock;
pub mod metrics;
mod netlink;
pub mod netns;
pub mod outcome;
pub mod precedence;
pub mod qdisc;
pub mod rollback;
mod root;
pub mod routes;
pub mod snapshot;
pub mod sysctl;
#[cfg(test)]
mod testing;
pub mod tuning;
pub mod unit;
pub mod verify;

pub use algorithm::Provider;
pub use error::HostError;
pub use host::{Host, HostMut, LinuxHost, MemoryHost};
pub use root::Root;
pub use snapshot::Snapshot;

/// The file bbrkit owns under `etc/sysctl.d/`. `99-` sorts after systemd's
/// `50-default.conf` and vendor files; `zz` sorts after `99-sysctl.conf`,
/// `99-protect-links.conf`, `99-cloudimg-*.conf` (see `docs/host.md`).
pub const SYSCTL_FILE_NAME: &str = "99-zz-bbrkit.conf";

/// Sysctl key of the default congestion control (per network namespace).
pub const KEY_CC: &str = "net.ipv4.tcp_congestion_control";
/// Sysctl key of the default qdisc (initial network namespace only).
pub const KEY_QDISC: &str = "net.core.default_qdisc";

/// Test-only crash hook: when the environment variable
/// `BBRKIT_TEST_CRASH_AT` equals `point` (`state-written`,
/// `temp-written:<file name>`, `bpf-registered`, `bpf-pinned`,
/// `file-written`, `runtime-applied`, `qdisc-recreated`), the process kills
/// itself with SIGKILL right here. The root tests use it to prove that an
/// `enable` interrupted at any step leaves either the old or the new file
/// and that `rollback` still restores the original. Unset in normal use.
pub(crate) fn crash_point(point: &str) {
    if std::env::var_os("BBRKIT_TEST_CRASH_AT").is_some_and(|v| v == point) {
        let _ = nix::sys::signal::raise(nix::sys::signal::Signal::SIGKILL);
    }
}
