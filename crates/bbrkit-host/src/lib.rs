//! Reading and changing the host's congestion-control configuration.
//!
//! Owns /proc/sys, sysctl.d files and their boot precedence, kernel config,
//! /sys/module, interface qdiscs (rtnetlink), container detection and the
//! before-image that makes `rollback` exact. Must never be used by `bbrkit-cc`
//! or `bbrkit-sim`, and never writes outside its `--root` when given one.
//!
//! Path policy: every *on-disk* file (`etc/`, `run/`, `usr/`, `lib/`, `var/`,
//! `boot/`, `/.dockerenv`) is resolved under a [`Root`]; the pseudo-filesystems
//! `/proc` and `/sys` and netlink always describe the live kernel and the
//! network namespace of the calling thread (see `docs/host.md`).
//!
//! Entry points used by the CLI and by other crates:
//! - [`check::inspect`]: what this kernel offers (serde-serialisable report);
//! - [`enable::plan`] / [`enable::apply`]: decide every change without
//!   writing anything (the dry run), then record the before-image and make
//!   the changes ([`enable::run`] is both);
//! - [`verify::run`]: the four checks plus persistence, as a `Vec<Check>`;
//! - [`rollback::plan`] / [`rollback::apply`] ([`rollback::run`]): restore
//!   the before-image exactly;
//! - [`doctor::diagnose`]: findings with evidence and fix;
//! - [`qdisc::list`]: every interface's root qdisc through rtnetlink;
//! - [`facts::gather`]: the small set of host facts a metrics exporter wants.

#![forbid(unsafe_code)]

pub mod atomic;
pub mod boot;
pub mod bpfcc;
pub mod check;
pub mod doctor;
pub mod doctor_bpf;
pub mod enable;
pub mod env;
mod error;
pub mod facts;
pub mod kernel;
pub mod lock;
mod netlink;
pub mod netns;
pub mod precedence;
pub mod qdisc;
pub mod rollback;
pub mod rollback_bpf;
mod root;
pub mod routes;
pub mod state;
pub mod sysctl;
pub mod unit;
pub mod verify;
pub mod verify_bpf;

pub use error::HostError;
pub use root::Root;

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
/// `temp-written:<file name>`, `file-written`, `runtime-applied`,
/// `qdisc-recreated`), the process kills itself with
/// SIGKILL right here. The root tests use it to prove that an `enable`
/// interrupted at any step leaves either the old or the new file and that
/// `rollback` still restores the original. Unset in normal use.
pub(crate) fn crash_point(point: &str) {
    if std::env::var_os("BBRKIT_TEST_CRASH_AT").is_some_and(|v| v == point) {
        let _ = nix::sys::signal::raise(nix::sys::signal::Signal::SIGKILL);
    }
}
