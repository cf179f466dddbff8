//! Which network namespace: the one reader of a namespace's identity, its
//! inode on the kernel's `nsfs` (`net:[4026531840]` in `/proc/PID/ns/net`).
//!
//! Owns how an inode is read — `stat(2)` through the magic link, a bind
//! mount (`/run/netns/NAME`) or an open namespace file descriptor, all of
//! which give the same number — and the spelling of the link text. Every
//! crate asks here (host environment and namespace scan, the BPF telemetry
//! join, the lab's namespaces, tests). Must never enter or change a
//! namespace.

use std::os::fd::BorrowedFd;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// A namespace file that could not be examined (`stat`).
#[derive(Debug, thiserror::Error)]
#[error("network namespace file {}", path.display())]
pub struct NamespaceError {
    /// The namespace file, link or descriptor (`/proc/self/fd/N`).
    pub path: PathBuf,
    /// The OS error.
    #[source]
    pub source: std::io::Error,
}

/// `PROC_NET_INIT_INO`: the fixed inode of the initial network namespace
/// (`include/linux/proc_ns.h`) on recent kernels; older ones (5.10, 6.1,
/// 6.12) give `init_net` a dynamic inode, so only
/// [`crate::initial_netns`] decides with it.
pub const INIT_NET_INODE: u64 = 0xEFFF_FFF9;

/// The calling thread's namespace file (namespaces are per thread).
pub const THREAD_SELF: &str = "/proc/thread-self/ns/net";
/// The process's namespace file, for kernels before 3.17 (no `thread-self`).
const SELF: &str = "/proc/self/ns/net";

/// The inode of the network namespace `path` refers to: a `/proc/PID/ns/net`
/// link (reading another process's needs ptrace access to it) or a bind
/// mount of one (`/run/netns/NAME`).
pub fn inode_of(path: &Path) -> Result<u64, NamespaceError> {
    std::fs::metadata(path)
        .map(|m| m.ino())
        .map_err(|source| NamespaceError {
            path: path.to_path_buf(),
            source,
        })
}

/// The inode of the calling thread's network namespace.
pub fn current() -> Result<u64, NamespaceError> {
    inode_of(Path::new(THREAD_SELF)).or_else(|e| inode_of(Path::new(SELF)).map_err(|_| e))
}

/// The inode of the namespace an open namespace file descriptor holds (from
/// `open("/proc/.../ns/net")`).
pub fn inode_of_fd(fd: BorrowedFd<'_>) -> Result<u64, NamespaceError> {
    let path = || {
        PathBuf::from(format!(
            "/proc/self/fd/{}",
            std::os::fd::AsRawFd::as_raw_fd(&fd)
        ))
    };
    let file = fd
        .try_clone_to_owned()
        .map(std::fs::File::from)
        .map_err(|source| NamespaceError {
            path: path(),
            source,
        })?;
    file.metadata()
        .map(|m| m.ino())
        .map_err(|source| NamespaceError {
            path: path(),
            source,
        })
}

/// The inode a namespace link's text names (`net:[4026531840]` → 4026531840),
/// `None` for any other link (a file, a socket, another namespace type).
pub fn parse_link(text: &str) -> Option<u64> {
    text.strip_prefix("net:[")?.strip_suffix(']')?.parse().ok()
}

/// The link text of inode `ino` (`net:[4026531840]`), as `ip netns` and
/// `/proc` show it.
pub fn link_text(ino: u64) -> String {
    format!("net:[{ino}]")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    /// stat of the link, fstat of an open fd and the link's text agree.
    #[test]
    fn every_way_gives_the_same_inode() {
        let by_stat = current().unwrap();
        let file = std::fs::File::open(THREAD_SELF).unwrap();
        assert_eq!(inode_of_fd(file.as_fd()).unwrap(), by_stat);
        let link = std::fs::read_link(THREAD_SELF).unwrap();
        assert_eq!(parse_link(&link.to_string_lossy()), Some(by_stat));
        assert_eq!(link_text(by_stat), link.to_string_lossy());
    }

    #[test]
    fn link_texts() {
        assert_eq!(parse_link("net:[4026531840]"), Some(4_026_531_840));
        assert_eq!(parse_link("mnt:[4026531840]"), None);
        assert_eq!(parse_link("socket:[12]"), None);
        assert_eq!(parse_link("net:[x]"), None);
    }

    #[test]
    fn a_missing_file_names_its_path() {
        let e = inode_of(Path::new("/proc/0/ns/net")).unwrap_err();
        assert_eq!(
            crate::error_chain(&e),
            "network namespace file /proc/0/ns/net: No such file or directory (os error 2)"
        );
    }
}
