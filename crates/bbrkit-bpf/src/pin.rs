//! bbrkit's pins in bpffs: where a registration that must outlive the
//! process lives, and removing them (which unregisters).
//!
//! ```text
//! /sys/fs/bpf/bbrkit/<ca>/link            the struct_ops link: holds the registration
//! /sys/fs/bpf/bbrkit/<ca>/map             Linux < 6.4 (no links): the struct_ops map,
//!                                         registered by map update; unpin deletes its
//!                                         element (unregisters), then the pin
//! /sys/fs/bpf/bbrkit/<ca>/bbr3_telemetry  an earlier build's telemetry map (removed by unpin)
//! ```
//!
//! A pin is a reference like a file descriptor: the link stays, and with it
//! the registration, until the pin is removed and no process holds the link.
//! Must never remove anything outside [`PIN_ROOT`].

use std::io;
use std::path::{Path, PathBuf};

/// Root of bbrkit's pins.
pub const PIN_ROOT: &str = "/sys/fs/bpf/bbrkit";
/// File name of a link pin.
pub const LINK: &str = "link";
/// File name of a struct_ops map pin (Linux < 6.4, registration by map
/// update).
pub const MAP: &str = "map";
/// File name of the telemetry map pin of earlier versions (the map is gone:
/// telemetry is in each socket's storage); [`unpin`] still removes it.
pub const TELEMETRY: &str = "bbr3_telemetry";

/// The pin directory of congestion control `ca`.
pub fn dir(ca: &str) -> PathBuf {
    Path::new(PIN_ROOT).join(ca)
}

/// The link pin of `ca`.
pub fn link_path(ca: &str) -> PathBuf {
    dir(ca).join(LINK)
}

/// The struct_ops map pin of `ca` (Linux < 6.4).
pub fn map_path(ca: &str) -> PathBuf {
    dir(ca).join(MAP)
}

/// The pin that holds (or would hold) `ca`'s registration: the map pin or
/// the link pin, whichever exists; when neither does, the one this kernel
/// takes (the map pin without struct_ops links, Linux < 6.4).
pub fn path(ca: &str) -> PathBuf {
    let (map, link) = (map_path(ca), link_path(ca));
    let exists = |p: &Path| std::fs::symlink_metadata(p).is_ok();
    if exists(&map) || (!exists(&link) && !crate::features::registering().links) {
        map
    } else {
        link
    }
}

/// The telemetry map pin of `ca` (earlier versions).
pub fn telemetry_path(ca: &str) -> PathBuf {
    dir(ca).join(TELEMETRY)
}

/// Congestion controls bbrkit has pinned (directories under [`PIN_ROOT`]
/// holding a link or map pin).
pub fn pinned() -> Vec<String> {
    let Ok(rd) = std::fs::read_dir(PIN_ROOT) else {
        return Vec::new();
    };
    let mut v: Vec<String> = rd
        .flatten()
        .filter(|e| e.path().join(LINK).exists() || e.path().join(MAP).exists())
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    v.sort();
    v
}

/// Removes the pins of `ca` (link first, so the registration ends when no
/// process holds the link any more; a map pin's element is deleted first,
/// which unregisters it), then its directory and [`PIN_ROOT`] if empty.
/// Returns whether a link or map pin existed.
pub fn unpin(ca: &str) -> io::Result<bool> {
    let map = map_path(ca);
    let had_map = std::fs::symlink_metadata(&map).is_ok();
    if had_map {
        unregister_map(&map)?;
        remove(&map)?;
    }
    let link = link_path(ca);
    let had = remove(&link)? || had_map;
    remove(&telemetry_path(ca))?;
    remove_empty_dir(&dir(ca))?;
    remove_empty_dir(Path::new(PIN_ROOT))?;
    Ok(had)
}

/// Deletes the one element of the struct_ops map pinned at `path`: the
/// kernel unregisters the congestion control (connections using it keep
/// it until they close). Not registered (any more) is no error.
fn unregister_map(path: &Path) -> io::Result<()> {
    let ctx = |e: io::Error| io::Error::new(e.kind(), format!("{}: {e}", path.display()));
    let map = libbpf_rs::MapHandle::from_pinned_path(path)
        .map_err(|e| ctx(io::Error::other(e.to_string())))?;
    let zero = 0u32.to_ne_bytes();
    // SAFETY: `map` is an open map descriptor for the call; the key is a
    // 4-byte buffer that outlives it, as a struct_ops map's key is.
    let rc = unsafe {
        libbpf_sys::bpf_map_delete_elem(
            std::os::fd::AsRawFd::as_raw_fd(&std::os::fd::AsFd::as_fd(&map)),
            zero.as_ptr().cast(),
        )
    };
    // ENOENT: not registered; EINPROGRESS: already unregistered, waiting
    // for its last connection (kernel/bpf/bpf_struct_ops.c)
    match -rc {
        0 | libc::ENOENT | libc::EINPROGRESS => Ok(()),
        e => Err(ctx(io::Error::from_raw_os_error(e))),
    }
}

fn remove(path: &Path) -> io::Result<bool> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(io::Error::new(
            e.kind(),
            format!("remove {}: {e}", path.display()),
        )),
    }
}

fn remove_empty_dir(path: &Path) -> io::Result<()> {
    match std::fs::remove_dir(path) {
        Ok(()) => Ok(()),
        Err(e)
            if matches!(
                e.kind(),
                io::ErrorKind::NotFound | io::ErrorKind::DirectoryNotEmpty
            ) =>
        {
            Ok(())
        }
        Err(e) => Err(io::Error::new(
            e.kind(),
            format!("remove {}: {e}", path.display()),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths() {
        assert_eq!(link_path("bbr3"), Path::new("/sys/fs/bpf/bbrkit/bbr3/link"));
        assert_eq!(map_path("bbr2"), Path::new("/sys/fs/bpf/bbrkit/bbr2/map"));
        assert_eq!(
            telemetry_path("bbr2"),
            Path::new("/sys/fs/bpf/bbrkit/bbr2/bbr3_telemetry")
        );
    }
}
