//! Registering the struct_ops maps of a loaded object through links, and
//! pinning them when the registration must outlive the process.
//!
//! A struct_ops map in `.struct_ops.link` is registered by creating a BPF
//! link; the registration lives exactly as long as the link (its file
//! descriptor, or a pin in bpffs), so a process that dies by any means
//! leaves nothing registered. Dropping a [`Registration`] unregisters,
//! unless [`Registration::pin`] pinned it (then [`crate::pin::unpin`] does).
//!
//! Linux < 6.4 has no struct_ops links: the map is created without
//! `BPF_F_LINK` ([`crate::load`]) and registered by updating its one
//! element; dropping a [`Registration`] deletes the element (unregisters),
//! [`Registration::pin`] pins the map instead of a link and lets go of
//! the element, and [`crate::pin::unpin`] deletes it, then removes the
//! pin. What such a kernel cannot give: the registration is not tied to a
//! descriptor, so a process killed while it holds one (a lab, or `enable`
//! between the update and the pin) leaves the name registered by a plain
//! map until `bbrkit rollback` or a reboot (docs/bpf.md, "Kernel floor").

use std::ffi::CString;
use std::os::fd::{AsFd, AsRawFd};
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
    links: Vec<Registered>,
    loaded: Loaded,
}

/// One registered congestion control.
#[derive(Debug)]
struct Registered {
    /// Its name (the struct_ops map's).
    name: String,
    /// The link, or on Linux < 6.4 libbpf's stand-in whose descriptor is
    /// the map's and whose detach deletes the map's element.
    link: Link,
    /// Registered through a real link (the map has `BPF_F_LINK`).
    linked: bool,
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
            // as the kernel created it (crate::load clears BPF_F_LINK on
            // Linux < 6.4)
            let linked = map
                .info()
                .map(|i| i.info.map_flags & crate::load::BPF_F_LINK != 0)
                .map_err(|source| BpfError::Register {
                    map: name.clone(),
                    source,
                })?;
            let link = map
                .attach_struct_ops()
                .map_err(|source| BpfError::Register {
                    map: name.clone(),
                    source,
                })?;
            links.push(Registered { name, link, linked });
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
        self.links.iter().map(|r| r.name.as_str())
    }

    /// The ids of its links (one per congestion control registered
    /// through a link; none on Linux < 6.4).
    pub fn link_ids(&self) -> Vec<u32> {
        self.links
            .iter()
            .filter(|r| r.linked)
            .filter_map(|r| r.link.info().ok().map(|i| i.id))
            .collect()
    }

    /// Whether every congestion control is registered through a link
    /// (false on Linux < 6.4: by map update).
    pub fn linked(&self) -> bool {
        self.links.iter().all(|r| r.linked)
    }

    /// The loaded object (for its maps, e.g. the sockets' storage).
    pub fn loaded(&self) -> &Loaded {
        &self.loaded
    }

    /// Pins each link at [`pin::link_path`] (on Linux < 6.4 the struct_ops
    /// map at [`pin::map_path`]), so the registration outlives this process
    /// until [`pin::unpin`]. On error the pins made so far are removed.
    /// (The sockets' telemetry needs no pin: it is in their sk_storage,
    /// read through sock_diag.)
    pub fn pin(&mut self) -> Result<Vec<PathBuf>> {
        let mut done = Vec::new();
        let r = self.pin_all(&mut done);
        if r.is_err() {
            for ca in &done {
                let _ = pin::unpin(ca);
            }
        }
        r.map(|()| done.iter().map(|ca| pin::path(ca)).collect())
    }

    fn pin_all(&mut self, done: &mut Vec<String>) -> Result<()> {
        for r in &mut self.links {
            let ca = &r.name;
            let dir = pin::dir(ca);
            std::fs::create_dir_all(&dir).map_err(|e| BpfError::Pin {
                path: dir.clone(),
                source: libbpf_rs::Error::from(e),
            })?;
            done.push(ca.clone());
            if r.linked {
                let path = pin::link_path(ca);
                r.link
                    .pin(&path)
                    .map_err(|source| BpfError::Pin { path, source })?;
            } else {
                // The stand-in's descriptor is the map's: pin the map.
                let path = pin::map_path(ca);
                obj_pin(r.link.as_fd(), &path)?;
            }
        }
        // Every pin is made: a map registration now belongs to its pin, so
        // dropping this value must not delete the element (unregister).
        for r in &mut self.links {
            if !r.linked {
                r.link.disconnect();
            }
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
