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

/// The sock_ops programs attached around a cgroup: each cgroup (its
/// ancestors, itself, its descendants) that has any, with its programs in
/// run order (`bbrkit_bpf::sockops::cgroup::sock_ops_around`).
pub type Around = Vec<(PathBuf, Vec<SockOpsProgram>)>;

/// Where another sock_ops program is attached, seen from a policy's cgroup,
/// and so when it runs for the policy's sockets. The kernel runs a socket's
/// programs from its own cgroup up to the root, each cgroup's in attach
/// order (`compute_effective_progs`, kernel/bpf/cgroup.c); bpf_setsockopt
/// sets `icsk_ca_setsockopt`, which the policy keeps (`kept_app`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Place {
    /// On an ancestor: runs after the policy; its `setsockopt` replaces the
    /// policy's algorithm.
    Ancestor,
    /// On the policy's cgroup, attached before it: runs first; the policy
    /// keeps its choice (`kept_app`).
    Before,
    /// On the policy's cgroup, attached after it: runs after; replaces.
    After,
    /// On a descendant: runs first for that cgroup's sockets; the policy
    /// keeps its choice there (`kept_app`).
    Descendant,
}

/// A sock_ops program around a recorded policy's cgroup that is not a
/// policy bbrkit pinned: it can set the algorithm of the policy's sockets.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Foreign {
    /// The cgroup it is attached to.
    pub cgroup: PathBuf,
    /// Program id.
    pub id: u32,
    /// Program name.
    pub name: String,
    /// bbrkit's program held by a process (a trial, `policy_peer`).
    pub ours: bool,
    /// Where, and so when it runs.
    pub place: Place,
}

impl Foreign {
    /// One line of evidence: id, name, cgroup and what it does to the policy.
    pub fn evidence(&self) -> String {
        let what = match self.place {
            Place::Ancestor => {
                "an ancestor: runs after the policy, its setsockopt replaces the policy's algorithm"
            }
            Place::Before => {
                "the policy's cgroup, attached before it: runs first, the policy keeps its choice (kept_app)"
            }
            Place::After => {
                "the policy's cgroup, attached after it: runs after the policy, its setsockopt replaces the policy's algorithm"
            }
            Place::Descendant => {
                "a descendant: runs first for its sockets, the policy keeps its choice there (kept_app)"
            }
        };
        let held = if self.ours {
            " (bbrkit's program held by a process: a trial)"
        } else {
            ""
        };
        format!(
            "program {} ({}){held} on {}, {what}",
            self.id,
            self.name,
            self.cgroup.display()
        )
    }
}

/// The programs of `around` (the programs around a policy's `cgroup`)
/// that are not attached through one of bbrkit's pinned policy links
/// `pinned`: every other program that can set the algorithm of its sockets.
pub fn foreign(around: &Around, cgroup: &Path, pinned: &[u32]) -> Vec<Foreign> {
    let is_pinned = |p: &SockOpsProgram| p.link_id.is_some_and(|l| pinned.contains(&l));
    let mut out = Vec::new();
    for (cg, progs) in around {
        let ours_at = progs.iter().position(is_pinned);
        for (i, p) in progs.iter().enumerate().filter(|(_, p)| !is_pinned(p)) {
            let place = if cg == cgroup {
                match ours_at {
                    Some(o) if i < o => Place::Before,
                    _ => Place::After,
                }
            } else if cgroup.starts_with(cg) {
                Place::Ancestor
            } else {
                Place::Descendant
            };
            out.push(Foreign {
                cgroup: cg.clone(),
                id: p.id,
                name: p.name.clone(),
                ours: p.ours,
                place,
            });
        }
    }
    out
}

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
    /// The pins' layout (`bbrkit_policy::attached::LAYOUT` when this
    /// bbrkit pinned it; an older one is replaced by `enable`).
    pub layout: u32,
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
    /// The sock_ops programs around each recorded cgroup (its ancestors,
    /// itself, its descendants: [`Around`]).
    pub programs: Vec<(PathBuf, Result<Around, String>)>,
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
