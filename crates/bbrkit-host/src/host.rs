//! The host as bbrkit sees it. [`Host`] reads it: the live kernel of the
//! calling thread's network namespace (`/proc`, `/sys`, rtnetlink,
//! sock_diag, bpf) and the files under the [`Root`]. [`HostMut`] changes
//! it. [`Snapshot`](crate::Snapshot) is what one command reads, read once; every decision
//! (`check`, `verify`, `doctor`, the plans of `enable`, `rollback` and
//! `boot`) is a pure function of a snapshot.
//!
//! Two implementations: [`LinuxHost`] (the real one) and [`MemoryHost`]
//! (the live state as plain data, changed in memory), so every decision is
//! tested on fixtures by a normal user, with no access to the live host.
//! Files are always files under the root (a temporary directory in tests),
//! written by [`crate::atomic`] through the change kinds.
//!
//! Only this module and [`crate::bpf`] (behind [`LinuxHost`]) touch the
//! live kernel; nothing else in the crate reads `/proc` or `/sys`.

use std::path::{Path, PathBuf};

use bbrkit_policy::Compiled;

use serde::Serialize;

use crate::algorithm::{RegisterFailure, Registration};
use crate::env::Environment;
use crate::live::{Around, PolicyPin};
use crate::netns::Namespace;
use crate::qdisc::InterfaceQdisc;
use crate::routes::CcRoute;
use crate::sysctl::WriteError;
use crate::{HostError, Root};

mod linux;
mod memory;

pub use linux::LinuxHost;
#[cfg(test)]
pub(crate) use linux::loopback_bytes;
pub use memory::{Live, MemoryHost, interface};

/// Whether this process may write a runtime sysctl.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum KeyAccess {
    /// The key does not exist in this network namespace.
    Missing,
    /// The key exists but is read-only here (no write bit: the host's).
    ReadOnly,
    /// Writable, but not by this process (not root).
    Denied,
    /// This process may write it.
    Writable,
}

/// `/sys/module/<name>` of a kernel module or built-in part.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SysModule {
    /// A loaded module (`initstate` exists); else built in.
    pub loaded: bool,
    /// Its `version` file, if any.
    pub version: Option<String>,
}

/// One established TCP socket, as the checks need it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Established {
    /// Local address and port.
    pub local: String,
    /// Remote address and port.
    pub remote: String,
    /// Its congestion control (`INET_DIAG_CONG`), if the kernel sent it.
    pub cc: Option<String>,
    /// The kernel's socket cookie (a policy's per-connection draw).
    #[serde(skip)]
    pub cookie: u64,
}

impl Established {
    /// The socket's fields when it is established, else None: lets a
    /// caller that already walks every socket (`bbrkit metrics`) collect
    /// what `verify` needs without a second dump.
    pub fn from_socket(s: &bbrkit_diag::Socket) -> Option<Self> {
        (s.state == bbrkit_diag::TcpState::Established).then(|| Self {
            local: s.local.to_string(),
            remote: s.remote.to_string(),
            cc: s.cc.clone(),
            cookie: s.cookie,
        })
    }
}

/// At most this many connections are listed as a finding's evidence.
pub const CONNECTIONS_SHOWN: usize = 10;

/// The established connections `keep` selects, as evidence lines
/// `local -> remote uses cc` plus `note` (the first [`CONNECTIONS_SHOWN`]),
/// and how many there are.
pub fn connection_lines(
    socks: &[Established],
    keep: impl Fn(&Established) -> bool,
    note: &str,
) -> (usize, Vec<String>) {
    let picked: Vec<&Established> = socks.iter().filter(|s| keep(s)).collect();
    let lines = picked
        .iter()
        .take(CONNECTIONS_SHOWN)
        .map(|s| {
            format!(
                "{} -> {} uses {}{note}",
                s.local,
                s.remote,
                s.cc.as_deref().unwrap_or("?")
            )
        })
        .collect();
    (picked.len(), lines)
}

/// The direction of this namespace's traffic: IP and TCP counters, and
/// the loopback bytes to subtract.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Traffic {
    /// `IpExtInOctets`.
    pub in_octets: u64,
    /// `IpExtOutOctets`.
    pub out_octets: u64,
    /// `lo` received and sent bytes (`/proc/net/dev`), if read.
    pub loopback: Option<(u64, u64)>,
    /// `TcpInSegs`, `TcpOutSegs`, if the kernel has them.
    pub tcp_segs: Option<(u64, u64)>,
}

/// A named namespace a lab killed by SIGKILL left behind
/// (`/run/netns/bbrk<pid>-<role>` whose process is gone).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LabLeftover {
    /// The bind mount.
    pub path: String,
    /// The lab's process id, no longer running.
    pub pid: u32,
}

/// Reads the host. Every method answers for the calling thread's network
/// namespace; failures to read become "absent" or an error value the
/// reports show (never a panic).
pub trait Host {
    /// The filesystem root every on-disk file is read from and written to.
    fn root(&self) -> &Root;
    /// A runtime sysctl (`None`: absent here, or unreadable).
    fn sysctl(&self, key: &str) -> Option<String>;
    /// Whether this process may write `key`, and whether it exists.
    fn sysctl_access(&self, key: &str) -> KeyAccess;
    /// The registered congestion controls, in the kernel's order.
    fn available_cc(&self) -> Vec<String>;
    /// Those unprivileged sockets and non-initial namespaces may choose.
    fn allowed_cc(&self) -> Vec<String>;
    /// `/proc/config.gz`, decompressed, when the kernel exposes it.
    fn proc_config(&self) -> Option<String>;
    /// `/sys/module/<name>`, when it exists.
    fn sys_module(&self, name: &str) -> Option<SysModule>;
    /// The BBR version as the kernel reports it on a live BBR socket, else
    /// on a fresh unconnected BBR socket: `(version, evidence)`.
    fn bbr_version(&self) -> Option<(String, String)>;
    /// Every interface's root qdisc.
    fn interfaces(&self) -> Result<Vec<InterfaceQdisc>, HostError>;
    /// The established TCP sockets.
    fn sockets(&self) -> Result<Vec<Established>, HostError>;
    /// Routes that carry their own congestion control (`congctl`).
    fn routes(&self) -> Result<Vec<CcRoute>, HostError>;
    /// Other network namespaces and their defaults (at most `limit`).
    fn namespaces(&self, limit: usize) -> Vec<Namespace>;
    /// Container, virtualisation and namespace facts.
    fn environment(&self) -> Environment;
    /// IP and TCP counters of this namespace.
    fn traffic(&self) -> Option<Traffic>;
    /// This boot's id.
    fn boot_id(&self) -> Option<String>;
    /// The cgroup v2 mount point, if cgroup2 is mounted.
    fn cgroup2(&self) -> Option<PathBuf>;
    /// Named namespaces of labs that are gone.
    fn lab_leftovers(&self) -> Vec<LabLeftover>;
    /// What a BPF congestion control needs, each requirement with evidence.
    fn bpf_features(&self) -> crate::bpf::Features;
    /// The registration of BPF algorithm `cc` now.
    fn bpf_registration(&self, cc: &str) -> Registration;
    /// Algorithms with a bbrkit pin now.
    fn bpf_pinned(&self) -> Vec<String>;
    /// The processes holding a link that registers `cc` (`pid N (comm)`).
    fn bpf_link_holders(&self, cc: &str) -> Vec<String>;
    /// The id of cgroup v2 directory `path` (an error when it is not one).
    fn cgroup_id(&self, path: &Path) -> Result<u64, HostError>;
    /// Every policy pin directory and what its link holds.
    fn policy_pins(&self) -> Vec<PolicyPin>;
    /// The sock_ops programs attached to cgroup `path`, to its ancestors
    /// and to its descendants, by cgroup (those with any).
    fn sock_ops_around(&self, path: &Path) -> Result<Around, String>;
    /// The cgroup (`path` or an ancestor) whose exclusive, legacy sock_ops
    /// attachment makes the kernel refuse a policy's link on `path`.
    fn sock_ops_exclusive(&self, path: &Path) -> Result<Option<PathBuf>, String>;
}

/// Changes the host. Files are written through [`crate::atomic`] under
/// [`Host::root`]; these are the live kernel's changes.
pub trait HostMut: Host {
    /// Writes a runtime sysctl and reads it back.
    fn write_sysctl(&mut self, key: &str, value: &str) -> Result<(), WriteError>;
    /// Re-creates an interface's root qdisc so the kernel attaches the
    /// current default.
    fn recreate_root_qdisc(&mut self, ifindex: u32) -> Result<(), HostError>;
    /// Loads the kernel module of congestion control `cc` (`tcp_<cc>`) the
    /// way the kernel autoloads it (`request_module` when a CAP_NET_ADMIN
    /// caller chooses the name), unless it is registered already.
    fn load_cc_module(&mut self, cc: &str) -> Result<(), HostError>;
    /// Loads `cc` and frees it again: the verifier's answer, nothing registered.
    fn trial_load_bpf(&mut self, cc: &str) -> Result<(), RegisterFailure>;
    /// Registers `cc` with a pinned link; the pins made.
    fn register_bpf(&mut self, cc: &str) -> Result<Vec<PathBuf>, RegisterFailure>;
    /// Pins the live link of a bbrkit lab that registers `cc`.
    fn adopt_bpf(&mut self, cc: &str) -> Result<PathBuf, RegisterFailure>;
    /// Removes bbrkit's pins of `cc` (whether a link pin existed).
    fn unregister_bpf(&mut self, cc: &str) -> Result<bool, HostError>;
    /// Attaches `compiled` to cgroup `cgroup` and pins it in `dir`.
    fn attach_policy(
        &mut self,
        compiled: &Compiled,
        cgroup: &Path,
        dir: &Path,
    ) -> Result<(), HostError>;
    /// Detaches the policy pinned in `dir` and removes its pins (whether a
    /// link was pinned; a missing `dir` is not an error).
    fn detach_policy(&mut self, dir: &Path) -> Result<bool, HostError>;
    /// The test-only crash hook (`BBRKIT_TEST_CRASH_AT`, the root tests' SIGKILL injection).
    fn crash_point(&self, point: &str) {
        crate::crash_point(point);
    }
}
