//! Registering the struct_ops maps of a loaded object through links, and
//! pinning them when the registration must outlive the process.
//!
//! A struct_ops map in `.struct_ops.link` is registered by creating a BPF
//! link; the registration lives exactly as long as the link (its file
//! descriptor, or a pin in bpffs), so a process that dies by any means
//! leaves nothing registered. Dropping a [`Registration`] unregisters,
//! unless [`Registration::pin`] pinned it (then [`crate::pin::unpin`] does).

use std::ffi::CString;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use libbpf_rs::{Link, MapCore, MapType};

use crate::error::{BpfError, Result};
use crate::load::Loaded;
use crate::pin;

/// Links of every struct_ops map of one object; declared before `loaded`
/// so the links drop (unregister) before the object closes.
#[derive(Debug)]
pub struct Registration {
    links: Vec<(String, Link)>,
    loaded: Loaded,
}

impl Registration {
    /// Registers every struct_ops map `loaded` created (the struct_ops map
    /// is named after its congestion control). On error the links made so
    /// far drop, so nothing stays registered.
    pub fn register(mut loaded: Loaded) -> Result<Registration> {
        let mut links = Vec::new();
        for mut map in loaded.object_mut().maps_mut() {
            if map.map_type() != MapType::StructOps || !map.autocreate() {
                continue;
            }
            let name = map.name().to_string_lossy().into_owned();
            let link = map
                .attach_struct_ops()
                .map_err(|source| BpfError::Register {
                    map: name.clone(),
                    source,
                })?;
            links.push((name, link));
        }
        if links.is_empty() {
            return Err(BpfError::Missing {
                object: loaded.name().to_string(),
                what: "struct_ops map".into(),
            });
        }
        Ok(Registration { links, loaded })
    }

    /// Names of the registered congestion controls (struct_ops maps).
    pub fn algorithms(&self) -> impl Iterator<Item = &str> {
        self.links.iter().map(|(n, _)| n.as_str())
    }

    /// The ids of its links (one per registered congestion control).
    pub fn link_ids(&self) -> Vec<u32> {
        self.links
            .iter()
            .filter_map(|(_, l)| l.info().ok().map(|i| i.id))
            .collect()
    }

    /// The loaded object (for its maps, e.g. the sockets' storage).
    pub fn loaded(&self) -> &Loaded {
        &self.loaded
    }

    /// Pins each link at [`pin::link_path`], so the registration outlives
    /// this process until [`pin::unpin`]. On error the pins made so far are
    /// removed. (The sockets' telemetry needs no pin: it is in their
    /// sk_storage, read through sock_diag.)
    pub fn pin(&mut self) -> Result<Vec<PathBuf>> {
        let mut done = Vec::new();
        let r = self.pin_all(&mut done);
        if r.is_err() {
            for ca in &done {
                let _ = pin::unpin(ca);
            }
        }
        r.map(|()| done.iter().map(|ca| pin::link_path(ca)).collect())
    }

    fn pin_all(&mut self, done: &mut Vec<String>) -> Result<()> {
        for (ca, link) in &mut self.links {
            let dir = pin::dir(ca);
            std::fs::create_dir_all(&dir).map_err(|e| BpfError::Pin {
                path: dir.clone(),
                source: libbpf_rs::Error::from(e),
            })?;
            done.push(ca.clone());
            let path = pin::link_path(ca);
            link.pin(&path)
                .map_err(|source| BpfError::Pin { path, source })?;
        }
        Ok(())
    }
}

/// `BPF_OBJ_PIN` of `fd` at `path` (a second pin of the same map is allowed,
/// which libbpf's `bpf_map__pin` would refuse; a link fd of any process's
/// link may be pinned too).
pub(crate) fn obj_pin(fd: std::os::fd::BorrowedFd<'_>, path: &Path) -> Result<()> {
    let err = |e: std::io::Error| BpfError::Pin {
        path: path.to_path_buf(),
        source: libbpf_rs::Error::from(e),
    };
    let c = CString::new(path.as_os_str().as_bytes()).map_err(|e| err(e.into()))?;
    // SAFETY: `fd` is borrowed, so open for the call; `c` is a valid
    // NUL-terminated path.
    let rc = unsafe { libbpf_sys::bpf_obj_pin(fd.as_raw_fd(), c.as_ptr()) };
    if rc == 0 {
        Ok(())
    } else {
        Err(err(std::io::Error::from_raw_os_error(-rc)))
    }
}
