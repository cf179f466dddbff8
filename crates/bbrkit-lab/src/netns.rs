//! Network namespaces held by file descriptors.
//!
//! Owns creating a namespace (a short-lived thread calls `unshare`), running
//! code inside it (a scoped thread calls `setns`; namespaces are per thread)
//! and writing the namespace's own `/proc/sys/net` values. A namespace here is
//! never bind-mounted, so it disappears with its last file descriptor: a
//! process killed with SIGKILL leaves nothing behind. Must never write a sysctl
//! unless the calling thread is verifiably inside this namespace.

use std::fs::File;
use std::io::Write;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};

use nix::sched::{CloneFlags, setns, unshare};

use crate::error::{LabError, Result};

/// A network namespace, alive as long as this value (or a thread inside it).
#[derive(Debug)]
pub struct Netns {
    fd: OwnedFd,
    inode: u64,
    label: String,
    bound: Option<std::path::PathBuf>,
}

impl Netns {
    /// Creates a fresh, empty network namespace (only `lo`, down).
    pub fn create(label: &str) -> Result<Netns> {
        let fd = std::thread::scope(|s| {
            s.spawn(|| -> std::io::Result<OwnedFd> {
                unshare(CloneFlags::CLONE_NEWNET).map_err(std::io::Error::from)?;
                Ok(File::open("/proc/thread-self/ns/net")?.into())
            })
            .join()
            .expect("namespace thread panicked")
        })
        .map_err(LabError::NoNamespaces)?;
        let inode = bbrkit_diag::netns::inode_of_fd(fd.as_fd()).map_err(namespace_error)?;
        Ok(Netns {
            fd,
            inode,
            label: label.to_string(),
            bound: None,
        })
    }

    /// Also names the namespace like `ip netns add` does: a bind mount at
    /// `/run/netns/<label>`, so `ip netns exec <label> ...` works during the
    /// run. Removed on drop; a SIGKILLed run leaves it for `lab --cleanup`.
    pub fn bind_name(&mut self) -> Result<()> {
        let dir = std::path::Path::new(NETNS_DIR);
        std::fs::create_dir_all(dir).map_err(|e| LabError::io("create /run/netns", e))?;
        let path = dir.join(&self.label);
        File::options()
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(|e| LabError::io(format!("create {}", path.display()), e))?;
        let src = format!("/proc/self/fd/{}", self.fd.as_raw_fd());
        if let Err(e) = nix::mount::mount(
            Some(src.as_str()),
            &path,
            None::<&str>,
            nix::mount::MsFlags::MS_BIND,
            None::<&str>,
        ) {
            let _ = std::fs::remove_file(&path);
            return Err(LabError::io(
                format!("bind-mount {}", path.display()),
                e.into(),
            ));
        }
        self.bound = Some(path);
        Ok(())
    }

    /// Its `/run/netns` name, if [`Netns::bind_name`] gave it one.
    pub fn bound_name(&self) -> Option<&std::path::Path> {
        self.bound.as_deref()
    }

    /// A human label (`client`, `router`, `server`).
    pub fn label(&self) -> &str {
        &self.label
    }

    /// Moves the *calling thread* into this namespace. Only for threads the
    /// lab itself spawned and that live entirely inside the lab.
    pub fn enter(&self) -> Result<()> {
        setns(self.fd.as_fd(), CloneFlags::CLONE_NEWNET)
            .map_err(|e| LabError::io(format!("setns into {}", self.label), e.into()))?;
        if current_inode()? != self.inode {
            return Err(LabError::Invalid(format!(
                "setns into {} did not take effect",
                self.label
            )));
        }
        Ok(())
    }

    /// Runs `f` on a scoped thread inside this namespace and returns its value.
    /// Sockets created by `f` stay in this namespace wherever they are used.
    pub fn run<T: Send>(&self, f: impl FnOnce() -> Result<T> + Send) -> Result<T> {
        std::thread::scope(|s| {
            s.spawn(|| {
                self.enter()?;
                f()
            })
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p))
        })
    }

    /// A second handle to this namespace (a duplicated descriptor). It keeps
    /// the namespace alive like the first, but does not own its
    /// `/run/netns` name: only the original removes that.
    pub fn try_clone(&self) -> Result<Netns> {
        Ok(Netns {
            fd: self
                .fd
                .try_clone()
                .map_err(|e| LabError::io(format!("duplicate {}", self.label), e))?,
            inode: self.inode,
            label: self.label.clone(),
            bound: None,
        })
    }

    /// Writes values to `/sys/<rel>` as this namespace sees it (e.g.
    /// `class/net/veth-s/queues/rx-0/rps_cpus`). sysfs shows the links of the
    /// namespace that mounts it, so a throwaway thread enters the namespace,
    /// unshares its mount namespace, makes every mount private (nothing
    /// propagates back to the host) and mounts a fresh sysfs over `/sys`
    /// there; the mount dies with the thread. The host's `/sys` is never
    /// written.
    ///
    /// Each `(rel, value)` of `writes` is written in turn, under one mount.
    pub fn write_sys(&self, writes: &[(String, String)]) -> Result<()> {
        use nix::mount::{MsFlags, mount};
        self.run(|| {
            let io = |what: &str, e: nix::Error| LabError::io(what.to_string(), e.into());
            nix::sched::unshare(CloneFlags::CLONE_NEWNS | CloneFlags::CLONE_FS)
                .map_err(|e| io("unshare the mount namespace", e))?;
            make_mounts_private().map_err(|e| io("make mounts private", e))?;
            mount(
                Some("sysfs"),
                "/sys",
                Some("sysfs"),
                MsFlags::empty(),
                None::<&str>,
            )
            .map_err(|e| io("mount sysfs", e))?;
            for (rel, value) in writes {
                let path = format!("/sys/{rel}");
                std::fs::write(&path, value)
                    .map_err(|e| LabError::io(format!("write {path}"), e))?;
            }
            Ok(())
        })
    }

    /// Writes `value` to `/proc/sys/<key>` of this namespace (`key` like
    /// `net/ipv4/ip_forward`). Must be called from a thread inside it.
    pub fn write_sysctl(&self, key: &str, value: &str) -> Result<()> {
        if current_inode()? != self.inode {
            return Err(LabError::Invalid(format!(
                "refusing to write {key}: thread is not inside the lab namespace {}",
                self.label
            )));
        }
        if !key.starts_with("net/") {
            return Err(LabError::Invalid(format!(
                "refusing to write non-namespaced sysctl {key}"
            )));
        }
        let path = format!("/proc/sys/{key}");
        let mut f = File::options()
            .write(true)
            .open(&path)
            .map_err(|e| LabError::io(format!("open {path}"), e))?;
        f.write_all(value.as_bytes())
            .map_err(|e| LabError::io(format!("write {path}"), e))
    }

    /// The namespace's file descriptor (for moving links into it).
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// The namespace's inode number (its identity, as in `/proc/*/ns/net`).
    pub fn inode(&self) -> u64 {
        self.inode
    }

    /// Raw descriptor, for netlink attributes that carry an fd.
    pub fn raw_fd(&self) -> i32 {
        self.fd.as_raw_fd()
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        if let Some(path) = self.bound.take() {
            unbind(&path);
        }
    }
}

/// Where named namespaces live (as with `ip netns`).
pub const NETNS_DIR: &str = "/run/netns";

/// Unmounts and removes a named namespace file; errors are ignored (it may
/// already be gone).
pub fn unbind(path: &std::path::Path) {
    let _ = nix::mount::umount2(path, nix::mount::MntFlags::MNT_DETACH);
    let _ = std::fs::remove_file(path);
}

/// Makes every mount of the calling thread's mount namespace private
/// (`mount --make-rprivate /`), so nothing mounted afterwards propagates
/// back to the host. Call it right after unsharing the mount namespace.
pub fn make_mounts_private() -> nix::Result<()> {
    use nix::mount::{MsFlags, mount};
    mount(
        None::<&str>,
        "/",
        None::<&str>,
        MsFlags::MS_REC | MsFlags::MS_PRIVATE,
        None::<&str>,
    )
}

/// The inode of the calling thread's network namespace.
pub fn current_inode() -> Result<u64> {
    bbrkit_diag::netns::current().map_err(namespace_error)
}

/// A namespace file that could not be examined, as a lab error.
fn namespace_error(e: bbrkit_diag::netns::NamespaceError) -> LabError {
    LabError::io(format!("stat {}", e.path.display()), e.source)
}
