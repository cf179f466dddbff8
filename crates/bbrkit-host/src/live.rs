//! The live state of bbrkit's per-connection policies as a [`Snapshot`]
//! holds it: the pins read back from bpffs ([`PolicyPin`], [`PolicyLive`]),
//! the policies the before-image records ([`PolicyRecord`], [`recorded`]),
//! where their copies and pin directories are ([`copy_path`],
//! [`pin_dirs`]). Types and pure functions only, at the bottom of the
//! crate's imports: [`crate::host`], [`crate::bpf`] and [`crate::snapshot`]
//! read into these, [`crate::change::policy`] judges and changes them.
//!
//! [`Snapshot`]: crate::Snapshot

use std::path::{Path, PathBuf};

use bbrkit_policy::Compiled;
use bbrkit_policy::attached::{self, Counters, SockOpsProgram};

use crate::Root;
use crate::image::{BeforeImage, Recorded};

/// Where the copies of the policy files live under the root.
pub const COPY_DIR: &str = "var/lib/bbrkit/policy";

/// A pinned attachment read back from the kernel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyLive {
    /// The link's id.
    pub link_id: u32,
    /// The program's id.
    pub prog_id: u32,
    /// The cgroup the link attaches to.
    pub cgroup_id: u64,
    /// The maps read back.
    pub maps: Result<Compiled, String>,
    /// The program's counters.
    pub counters: Result<Counters, String>,
}

/// A directory under [`attached::PIN_ROOT`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyPin {
    /// The pin directory.
    pub dir: PathBuf,
    /// What its link pin holds (`Err`: no link pin, or unreadable).
    pub live: Result<PolicyLive, String>,
}

/// A policy the before-image records, with its copy as it is now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyRecord {
    /// The cgroup directory.
    pub cgroup: PathBuf,
    /// Its id when enabled (names the pin directories).
    pub cgroup_id: u64,
    /// Its directory's id now (`None`: the directory does not exist). A
    /// child cgroup is a new directory after a reboot: a new id.
    pub now_id: Option<u64>,
    /// The copy under the root.
    pub copy: PathBuf,
    /// The copy's bytes (None: missing).
    pub text: Option<Vec<u8>>,
}

/// The policy part of a snapshot.
#[derive(Debug, Clone, Default)]
pub struct PolicyView {
    /// The policies the before-image records.
    pub records: Vec<PolicyRecord>,
    /// Every directory under [`attached::PIN_ROOT`].
    pub pins: Vec<PolicyPin>,
    /// The sock_ops programs each recorded cgroup runs (effective), `doctor` only.
    pub programs: Vec<(PathBuf, Result<Vec<SockOpsProgram>, String>)>,
    /// The policies' boot unit (`bbrkit-policy.service`) as systemd would find it.
    pub unit: crate::unit::UnitState,
}

impl PolicyRecord {
    /// The id its policy is attached by: the directory's now, else the
    /// recorded one.
    pub fn id(&self) -> u64 {
        self.now_id.unwrap_or(self.cgroup_id)
    }

    /// Every pin directory its policy may have: those of the id now and of
    /// the recorded id (a directory removed and made again, or a reboot).
    pub fn pin_dirs(&self) -> Vec<PathBuf> {
        let mut dirs = pin_dirs(self.id()).to_vec();
        if self.id() != self.cgroup_id {
            dirs.extend(pin_dirs(self.cgroup_id));
        }
        dirs
    }
}

/// The two pin directories of cgroup `id`: `<id>` and `<id>-b` (bpffs
/// refuses names with a dot: they are its own, like `maps.debug`).
pub fn pin_dirs(id: u64) -> [PathBuf; 2] {
    let a = attached::default_pin_dir(id);
    let b = PathBuf::from(format!("{}-b", a.display()));
    [a, b]
}

/// The copy of the policy of `cgroup` (`root.toml` for the cgroup2 root).
pub fn copy_path(root: &Root, mount: Option<&Path>, cgroup: &Path) -> PathBuf {
    let rel = mount.and_then(|m| cgroup.strip_prefix(m).ok());
    let slug = match rel {
        Some(r) if r.as_os_str().is_empty() => "root".to_string(),
        Some(r) => r.display().to_string().replace('/', "-"),
        None => cgroup
            .display()
            .to_string()
            .trim_matches('/')
            .replace('/', "-"),
    };
    root.path(COPY_DIR).join(format!("{slug}.toml"))
}

/// `(cgroup, cgroup_id)` of every policy the image records.
pub fn recorded(image: Option<&BeforeImage>) -> Vec<(String, u64)> {
    image
        .into_iter()
        .flat_map(|i| &i.changes)
        .filter_map(|c| match c {
            Recorded::Policy { cgroup, cgroup_id } => Some((cgroup.clone(), *cgroup_id)),
            _ => None,
        })
        .collect()
}
