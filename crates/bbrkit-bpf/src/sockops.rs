//! The per-connection policy's cgroup `sock_ops` program (`bpf/sockops.bpf.c`):
//! loading it with a compiled policy in its maps, attaching it to a cgroup v2
//! with a BPF link, pinning link and maps so the policy outlives the
//! process, re-opening a pinned attachment, reading its maps back and its
//! counters, rewriting a rule's weights, streaming its close records, and
//! detaching it leaving nothing.
//!
//! ```text
//!  bbrkit_policy::Compiled ──Attachment::attach(cgroup)──▶ link (dies with the process)
//!                                     │ .pin(dir)
//!                                     ▼
//!  dir/bkpol_v4 … dir/bkpol_ring      maps pinned first
//!  dir/link                           the link pinned last: the commit point
//!                                     │ Attachment::open(dir)
//!                                     ▼
//!  read_back() == Compiled?  counters()  set_weights()  Records::new()
//!                                     │ detach(dir)
//!                                     ▼
//!  link detached, every pin removed, dir removed: nothing left
//! ```
//!
//! A kill before the link pin leaves nothing attached (the unpinned link
//! closes with the process; stray map pins are removed by [`detach`]). For
//! the host: plan = `bbrkit_policy::parse` + `Compiled::new` + checking
//! `Policy::algorithms` against the registered ones; apply =
//! [`Attachment::attach`] + [`Attachment::pin`]; read back =
//! [`Attachment::open`] + [`Maps::read_back`]; undo = [`detach`]; describe =
//! [`Attachment::describe`] and [`cgroup::sock_ops_programs`].
//!
//! Every program and map of the object is named `bkpol*` ([`PREFIX`]).

pub mod cgroup;
pub mod layout;
mod maps;
pub mod records;

use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use bbrkit_policy::Compiled;
use libbpf_rs::Link;
use libbpf_rs::query::LinkTypeInfo;

use crate::error::{BpfError, Result};
use crate::load::{Aligned8, Loaded, ObjectSource};
pub use bbrkit_policy::attached::{
    ArmCounters, Counters, LAYOUT, LAYOUT_PIN, LINK_PIN, PIN_ROOT, Stats, default_pin_dir,
};
pub use maps::Maps;

/// libbpf's name for the object (its `.kconfig` map is `bkpol.kconfig`).
pub const OBJECT_NAME: &str = "bkpol";
/// Prefix of every program and map name of the object.
pub const PREFIX: &str = "bkpol";
/// The program.
pub const PROGRAM: &str = "bkpol_sockops";

static OBJECT: &Aligned8<[u8]> = &Aligned8(*include_bytes!("../bpf/sockops.bpf.o"));

/// The embedded object's bytes.
pub fn object_bytes() -> &'static [u8] {
    &OBJECT.0
}

/// The embedded object as a load source.
pub fn source() -> ObjectSource<'static> {
    ObjectSource::Memory {
        name: OBJECT_NAME,
        bytes: object_bytes(),
    }
}

/// What `doctor` and `verify` say about an attachment.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Description {
    /// The BPF link's id.
    pub link_id: u32,
    /// The program's id.
    pub prog_id: u32,
    /// The cgroup the link attaches to (its inode number on cgroup2).
    pub cgroup_id: u64,
    /// Where it is pinned (`None`: held by this process only).
    pub pin_dir: Option<PathBuf>,
    /// The pins' layout ([`LAYOUT`] for an attachment of this code).
    pub layout: u32,
}

/// The program attached to a cgroup, with its maps.
#[derive(Debug)]
pub struct Attachment {
    link: Link,
    maps: Maps,
    pin_dir: Option<PathBuf>,
    layout: u32,
}

impl Attachment {
    /// Loads the program, fills its maps with `compiled` and attaches it to
    /// the cgroup v2 directory `cgroup`. Until [`Attachment::pin`], the
    /// attachment lives as long as this value (or this process).
    pub fn attach(compiled: &Compiled, cgroup: &Path) -> Result<Attachment> {
        Attachment::attach_with_ring(compiled, cgroup, None)
    }

    /// [`Attachment::attach`] with a ring of `ring_bytes` for the close
    /// records (a power of two, at least a page; `None`: 256 KiB, about
    /// 1 700 records between two reads) for a trial that reads rarely or
    /// records many connections.
    pub fn attach_with_ring(
        compiled: &Compiled,
        cgroup: &Path,
        ring_bytes: Option<u32>,
    ) -> Result<Attachment> {
        Attachment::attach_source(source(), compiled, cgroup, ring_bytes)
    }

    /// [`Attachment::attach_with_ring`] from another build of the object
    /// (its maps and program named as this one's): an earlier layout's, as
    /// the upgrade test pins one, or a rebuilt one.
    pub fn attach_source(
        object: ObjectSource<'_>,
        compiled: &Compiled,
        cgroup: &Path,
        ring_bytes: Option<u32>,
    ) -> Result<Attachment> {
        let dir = std::fs::File::open(cgroup).map_err(|source| BpfError::Cgroup {
            path: cgroup.to_path_buf(),
            source,
        })?;
        cgroup::check_cgroup2(cgroup)?;
        let loaded = Loaded::load_prepared(object, |open, name| match ring_bytes {
            None => Ok(()),
            Some(bytes) => set_ring_size(open, name, bytes),
        })?;
        let maps = Maps::of_object(&loaded)?;
        maps.fill(compiled)?;
        let prog = loaded
            .object()
            .progs_mut()
            .find(|p| p.name().to_str() == Some(PROGRAM))
            .ok_or_else(|| BpfError::Missing {
                object: OBJECT_NAME.into(),
                what: format!("program {PROGRAM}"),
            })?;
        let link = prog
            .attach_cgroup(dir.as_raw_fd())
            .map_err(|source| BpfError::Attach {
                program: PROGRAM.into(),
                cgroup: cgroup.to_path_buf(),
                source,
            })?;
        Ok(Attachment {
            link,
            maps,
            pin_dir: None,
            layout: LAYOUT,
        })
    }

    /// Pins every map, then the link, in `dir` (created; it must not hold
    /// an attachment already). On error the pins made are removed.
    pub fn pin(&mut self, dir: &Path) -> Result<()> {
        let bad = |problem: String| BpfError::PinDir {
            dir: dir.to_path_buf(),
            problem,
        };
        if dir.join(LINK_PIN).exists() {
            return Err(bad("already holds an attachment (detach it first)".into()));
        }
        std::fs::create_dir_all(dir).map_err(|e| bad(format!("create: {e}")))?;
        match crate::features::statfs_type(dir) {
            Ok(t) if t == crate::features::BPF_FS_MAGIC => {}
            Ok(_) => return Err(bad("not on a bpffs (mount -t bpf bpf /sys/fs/bpf)".into())),
            Err(e) => return Err(bad(format!("statfs: {e}"))),
        }
        let pinned = self
            .maps
            .pin(dir)
            .and_then(|()| Maps::pin_layout(dir))
            .and_then(|()| {
                let path = dir.join(LINK_PIN);
                self.link
                    .pin(&path)
                    .map_err(|source| BpfError::Pin { path, source })
            });
        if let Err(e) = pinned {
            let _ = remove_pins(dir);
            return Err(e);
        }
        self.pin_dir = Some(dir.to_path_buf());
        Ok(())
    }

    /// Re-opens the attachment pinned in `dir`.
    pub fn open(dir: &Path) -> Result<Attachment> {
        crate::log::install();
        let path = dir.join(LINK_PIN);
        if !path.exists() {
            let problem = if dir.exists() {
                "no link pin: not attached (left by an interrupted apply; detach removes it)"
            } else {
                "no such pin directory: not attached"
            };
            return Err(BpfError::PinDir {
                dir: dir.to_path_buf(),
                problem: problem.into(),
            });
        }
        let link = Link::open(&path).map_err(|source| BpfError::Pin { path, source })?;
        Ok(Attachment {
            link,
            maps: Maps::of_pins(dir)?,
            pin_dir: Some(dir.to_path_buf()),
            layout: Maps::layout_of(dir)?,
        })
    }

    /// Detaches the program from its cgroup now, keeping the maps readable
    /// while this value lives: a trial reads the records written before
    /// the detach after it, so a connection closing at the end is either
    /// recorded or still open, never neither. Pins (if any) stay; dropping
    /// the value closes the link and maps as usual.
    pub fn detach_link(&self) -> Result<()> {
        self.link.detach().map_err(|source| BpfError::Detach {
            program: PROGRAM.into(),
            source,
        })
    }

    /// The maps (read back, counters, weights, records).
    pub fn maps(&self) -> &Maps {
        &self.maps
    }

    /// Link, program and cgroup ids, and the pin directory.
    pub fn describe(&self) -> Result<Description> {
        let info = self.link.info().map_err(|source| BpfError::Pin {
            path: self.pin_dir.clone().unwrap_or_default(),
            source,
        })?;
        let cgroup_id = match info.info {
            LinkTypeInfo::Cgroup(c) => c.cgroup_id,
            _ => 0,
        };
        Ok(Description {
            link_id: info.id,
            prog_id: info.prog_id,
            cgroup_id,
            pin_dir: self.pin_dir.clone(),
            layout: self.layout,
        })
    }
}

/// Sizes the ring map of an opened object.
fn set_ring_size(open: &mut libbpf_rs::OpenObject, object: &str, bytes: u32) -> Result<()> {
    if !bytes.is_power_of_two() || bytes < 4096 {
        return Err(BpfError::RingSize { bytes });
    }
    let mut ring = open
        .maps_mut()
        .find(|m| m.name().to_str() == Some("bkpol_ring"))
        .ok_or_else(|| BpfError::Missing {
            object: object.into(),
            what: "map bkpol_ring".into(),
        })?;
    ring.set_max_entries(bytes)
        .map_err(|source| BpfError::Open {
            object: object.into(),
            source,
        })
}

/// Detaches the attachment pinned in `dir` (even if another process still
/// holds its link) and removes every pin bbrkit made there, then `dir`.
/// Returns whether a link was attached. A missing `dir` is not an error.
pub fn detach(dir: &Path) -> Result<bool> {
    crate::log::install();
    let path = dir.join(LINK_PIN);
    let had = path.exists();
    if had {
        let link = Link::open(&path).map_err(|source| BpfError::Pin {
            path: path.clone(),
            source,
        })?;
        link.detach()
            .map_err(|source| BpfError::Pin { path, source })?;
    }
    remove_pins(dir)?;
    Ok(had)
}

/// Removes the link pin and every map pin of ours from `dir`, then `dir`
/// if it is empty; foreign files stay (and are named).
fn remove_pins(dir: &Path) -> Result<()> {
    let bad = |problem: String| BpfError::PinDir {
        dir: dir.to_path_buf(),
        problem,
    };
    for name in [LINK_PIN, LAYOUT_PIN].into_iter().chain(maps::NAMES) {
        match std::fs::remove_file(dir.join(name)) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(bad(format!("remove {name}: {e}"))),
        }
    }
    match std::fs::remove_dir(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::DirectoryNotEmpty => {
            let left: Vec<String> = std::fs::read_dir(dir)
                .map(|rd| {
                    rd.flatten()
                        .map(|e| e.file_name().to_string_lossy().into_owned())
                        .collect()
                })
                .unwrap_or_default();
            Err(bad(format!(
                "holds files bbrkit did not pin: {}",
                left.join(", ")
            )))
        }
        Err(e) => Err(bad(format!("remove: {e}"))),
    }
}

#[cfg(test)]
mod tests {
    use libbpf_rs::MapType;

    use super::*;

    /// Leak checks find the object's programs and maps by this prefix.
    #[test]
    fn every_program_and_map_name_has_the_prefix() {
        let open = source().open().expect("open");
        for p in open.progs() {
            let n = p.name().to_string_lossy();
            assert!(n.starts_with(PREFIX), "program {n}");
        }
        let mut names: Vec<String> = Vec::new();
        for m in open.maps() {
            let n = m.name().to_string_lossy().into_owned();
            assert!(n.starts_with(PREFIX), "map {n}");
            if m.map_type() != MapType::Array || !n.contains('.') {
                names.push(n);
            }
        }
        names.sort();
        let mut want: Vec<String> = maps::NAMES.iter().map(|s| s.to_string()).collect();
        want.sort();
        assert_eq!(names, want, "every map but .kconfig is pinned by name");
    }

    #[test]
    fn default_pin_dir_is_under_bbrkit() {
        assert_eq!(
            default_pin_dir(4242),
            Path::new("/sys/fs/bpf/bbrkit/policy/4242")
        );
    }
}
