//! bbrkit's pins in bpffs: where a registration that must outlive the
//! process lives, and removing them (which unregisters).
//!
//! ```text
//! /sys/fs/bpf/bbrkit/<ca>/link            the struct_ops link: holds the registration
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

/// The telemetry map pin of `ca` (earlier versions).
pub fn telemetry_path(ca: &str) -> PathBuf {
    dir(ca).join(TELEMETRY)
}

/// Congestion controls bbrkit has pinned (directories under [`PIN_ROOT`]
/// holding a link pin).
pub fn pinned() -> Vec<String> {
    let Ok(rd) = std::fs::read_dir(PIN_ROOT) else {
        return Vec::new();
    };
    let mut v: Vec<String> = rd
        .flatten()
        .filter(|e| e.path().join(LINK).exists())
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    v.sort();
    v
}

/// Removes the pins of `ca` (link first, so the registration ends when no
/// process holds the link any more), then its directory and [`PIN_ROOT`]
/// if empty. Returns whether a link pin existed.
pub fn unpin(ca: &str) -> io::Result<bool> {
    let link = link_path(ca);
    let had = remove(&link)?;
    remove(&telemetry_path(ca))?;
    remove_empty_dir(&dir(ca))?;
    remove_empty_dir(Path::new(PIN_ROOT))?;
    Ok(had)
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
        assert_eq!(
            telemetry_path("bbr2"),
            Path::new("/sys/fs/bpf/bbrkit/bbr2/bbr3_telemetry")
        );
    }
}
