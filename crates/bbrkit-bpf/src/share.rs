//! Sharing one registration between concurrent users (labs, `enable`,
//! `rollback`, the boot unit).
//!
//! A struct_ops registration lives exactly as long as its link, and the
//! link is reference-counted by the kernel: every open file descriptor and
//! every bpffs pin is one reference, and only when the last one goes does
//! `bpf_link_put` free the link, whose dealloc unregisters the algorithm
//! (`bpf_struct_ops_map_link_dealloc` → `tcp_unregister_congestion_control`,
//! Linux 6.18 `kernel/bpf/bpf_struct_ops.c`; libbpf only closes its
//! descriptor when a struct_ops link is dropped, it never detaches). So a
//! user that finds the name registered through a link takes its own
//! reference ([`join`]: `BPF_LINK_GET_FD_BY_ID` on that link, or the pin
//! opened) and keeps it while it needs the name; whoever started the
//! registration can then end its own use without pulling it from under the
//! others. [`adopt`] pins such a link so it outlives every process (what
//! `enable` does with a lab's registration); removing the pin
//! (`crate::pin::unpin`) drops that one reference.
//!
//! ```text
//!   lab A registers ──link── fd(A) ─┐
//!   lab B joins        ───── fd(B) ─┼─ link ── struct_ops map "bbr3" (registered)
//!   enable adopts      ───── pin   ─┘   unregistered when all three are gone
//! ```
//!
//! A plain `.struct_ops` map (registered without a link: another
//! loader's, or bbrkit's own on Linux < 6.4, pinned or a lab's) or the
//! kernel's own algorithm has no reference to take: it is used as it is.
//! So on Linux < 6.4 a lab that registered a name unregisters it when it
//! ends even if another run uses it meanwhile, and `enable` cannot adopt a
//! lab's registration (it has no link to pin): it refuses while the lab
//! runs.

use std::os::fd::{AsFd, FromRawFd, OwnedFd};
use std::path::PathBuf;

use crate::error::{BpfError, Result};
use crate::register::Registration;
use crate::status::{self, Holder};
use crate::{bbr3, pin};

/// A reference this process holds to a registration someone else made.
/// Dropping it closes the descriptor: the registration ends when no other
/// reference is left.
#[derive(Debug)]
pub struct Joined {
    /// The algorithm.
    pub name: String,
    /// The link's id.
    pub link_id: u32,
    fd: OwnedFd,
}

impl AsFd for Joined {
    fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

/// `BPF_LINK_GET_FD_BY_ID`: a new reference to link `id`.
fn link_fd(name: &str, id: u32) -> Result<OwnedFd> {
    // SAFETY: a plain syscall wrapper with an integer argument; it returns
    // a new descriptor this process owns, or a negative errno.
    let fd = unsafe { libbpf_sys::bpf_link_get_fd_by_id(id) };
    if fd < 0 {
        return Err(BpfError::Join {
            name: name.to_string(),
            link_id: id,
            source: std::io::Error::from_raw_os_error(-fd),
        });
    }
    // SAFETY: `fd` was just returned to this process and nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// The link that registers `name`: bbrkit's pin or a process's link
/// (`Ok(None)`: registered without a link, by the kernel itself or a plain
/// map). Its id is read from the pin when it is bbrkit's. Not registered
/// (any more) is an error the caller may retry on.
fn link_of(name: &str) -> Result<Option<u32>> {
    let gone = || BpfError::Join {
        name: name.to_string(),
        link_id: 0,
        source: std::io::Error::from_raw_os_error(libc::ENOENT),
    };
    match status::ca_status(name).holder.ok_or_else(gone)? {
        Holder::Link { link_id, .. } => Ok(Some(link_id)),
        // Linux < 6.4: bbrkit's pinned map registers the name by itself
        Holder::BbrkitPin { path } if path == pin::map_path(name) => Ok(None),
        Holder::BbrkitPin { path } => {
            let link = libbpf_rs::Link::open(path).map_err(|_| gone())?;
            Ok(Some(link.info().map_err(|_| gone())?.id))
        }
        Holder::Map { .. } | Holder::Kernel => Ok(None),
    }
}

/// Takes a reference to the link that registers `name` (see the module
/// documentation). `Ok(None)` when no link registers it (nothing to hold);
/// an error when it is not registered (any more), e.g. the link went away
/// in between (the caller looks again).
pub fn join(name: &str) -> Result<Option<Joined>> {
    let Some(link_id) = link_of(name)? else {
        return Ok(None);
    };
    let fd = link_fd(name, link_id)?;
    Ok(Some(Joined {
        name: name.to_string(),
        link_id,
        fd,
    }))
}

/// Pins the link that registers `name` at [`pin::link_path`], so the
/// registration outlives every process until [`pin::unpin`]. Only for a
/// link of bbrkit's own programs (a lab's): another loader's registration
/// is never taken over. Returns the pin.
pub fn adopt(name: &str) -> Result<PathBuf> {
    let st = status::ca_status(name);
    let link_id = match st.holder {
        Some(Holder::Link {
            link_id,
            bbrkit: true,
            ..
        }) => link_id,
        _ => {
            return Err(BpfError::Missing {
                object: bbr3::OBJECT_NAME.to_string(),
                what: format!("link of bbrkit's registering {name}"),
            });
        }
    };
    let fd = link_fd(name, link_id)?;
    let dir = pin::dir(name);
    let path = pin::link_path(name);
    std::fs::create_dir_all(&dir).map_err(|e| BpfError::Pin {
        path: dir,
        source: libbpf_rs::Error::from(e),
    })?;
    crate::register::obj_pin(fd.as_fd(), &path)?;
    Ok(path)
}

/// What a run holds for the BPF algorithms it uses: its own registration
/// of those nobody had registered, and a reference to every other one
/// registered through a link. Dropping it lets go of all of them.
#[derive(Debug, Default)]
pub struct Held {
    /// The algorithms this run registered (with their links).
    pub registration: Option<Registration>,
    /// References to registrations others made.
    pub joined: Vec<Joined>,
    /// Algorithms that were registered without a link to join (the
    /// kernel's own, a plain map): used as they are.
    pub as_is: Vec<String>,
}

/// How many times [`hold`] looks again when another user registers or
/// unregisters a name between its look and its action.
const ATTEMPTS: usize = 5;

/// Registers each of `names` that nobody has registered (from the embedded
/// object) and joins every other one, retrying when another user changes
/// the registration in between (a second lab registering the same name at
/// the same moment gets EEXIST, then joins).
pub fn hold(names: &[&str]) -> Result<Held> {
    let mut last = None;
    for _ in 0..ATTEMPTS {
        match try_hold(names) {
            Ok(h) => return Ok(h),
            Err(e) if raced(&e) => last = Some(e),
            Err(e) => return Err(e),
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    Err(last.unwrap_or_else(|| BpfError::Missing {
        object: bbr3::OBJECT_NAME.to_string(),
        what: "registration to hold".into(),
    }))
}

/// An error that another user's registration or unregistration caused.
fn raced(e: &BpfError) -> bool {
    match e {
        BpfError::Join { source, .. } => source.raw_os_error() == Some(libc::ENOENT),
        BpfError::Register { source, .. } => source.kind() == libbpf_rs::ErrorKind::AlreadyExists,
        _ => false,
    }
}

fn try_hold(names: &[&str]) -> Result<Held> {
    let available = bbrkit_diag::algorithms::available().unwrap_or_default();
    let mut held = Held::default();
    let mut missing = Vec::new();
    for &name in names {
        if !available.iter().any(|a| a == name) {
            missing.push(name);
            continue;
        }
        match join(name)? {
            Some(j) => held.joined.push(j),
            None => held.as_is.push(name.to_string()),
        }
    }
    if !missing.is_empty() {
        held.registration = Some(bbr3::register(Some(&missing))?);
    }
    Ok(held)
}
