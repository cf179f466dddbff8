//! The cgroup v2 directory the workload's server side runs in, so that a
//! trial or a sock_ops policy attached to it sees exactly the lab's
//! connections (a socket belongs to the cgroup of the task that creates
//! it; an accepted socket to its listener's).
//!
//! Owns finding the cgroup2 mount (`/proc/self/mountinfo`), creating the
//! lab's own child cgroup (`bbrkit-lab-<pid>`) or checking a named one,
//! and removing what it created. Must never use or remove the root cgroup
//! or a cgroup it did not create.

use std::path::{Path, PathBuf};

use crate::error::{LabError, Result};
use crate::served::ServedCgroup;

/// The prefix of the cgroups the lab creates (`bbrkit-lab-<pid>`).
pub const PREFIX: &str = "bbrkit-lab-";

/// Where cgroup v2 is mounted (the first `cgroup2` entry of
/// `/proc/self/mountinfo`).
pub fn cgroup2_mount() -> Result<PathBuf> {
    let info = std::fs::read_to_string("/proc/self/mountinfo")
        .map_err(|e| LabError::io("read /proc/self/mountinfo", e))?;
    mount_of(&info).ok_or_else(|| {
        LabError::Invalid("cgroup v2 is not mounted (no cgroup2 in /proc/self/mountinfo)".into())
    })
}

/// The mount point of the first cgroup2 file system in `mountinfo` text.
fn mount_of(mountinfo: &str) -> Option<PathBuf> {
    mountinfo.lines().find_map(|line| {
        // "... mount_point options - fstype source super_options"
        let (left, right) = line.split_once(" - ")?;
        let point = left.split(' ').nth(4)?;
        (right.split(' ').next()? == "cgroup2").then(|| PathBuf::from(point))
    })
}

/// The server side's cgroup; removed on drop if the lab created it.
#[derive(Debug)]
pub struct ServerCgroup {
    /// Its directory.
    pub path: PathBuf,
    /// Whether the lab created it (and so removes it).
    pub created: bool,
}

impl From<&ServerCgroup> for ServedCgroup {
    fn from(cg: &ServerCgroup) -> Self {
        ServedCgroup {
            cgroup: cg.path.clone(),
            cgroup_created: cg.created,
        }
    }
}

impl ServerCgroup {
    /// `server side runs in cgroup PATH[ (created for this run)]`: the
    /// note `--workload` and `--server-cmd` send when they open it.
    pub fn note(&self) -> String {
        format!(
            "server side runs in cgroup {}{}",
            self.path.display(),
            if self.created {
                " (created for this run)"
            } else {
                ""
            }
        )
    }
}

impl ServerCgroup {
    /// `path` (created if missing), or the lab's own
    /// `<mount>/bbrkit-lab-<pid>`. A path outside a cgroup2 mount, or the
    /// root cgroup itself, is refused.
    pub fn open(path: Option<&Path>) -> Result<ServerCgroup> {
        let mount = cgroup2_mount()?;
        let path = match path {
            Some(p) => p.to_path_buf(),
            None => mount.join(format!("{PREFIX}{}", std::process::id())),
        };
        let created = !path.exists();
        if created {
            std::fs::create_dir(&path)
                .map_err(|e| LabError::io(format!("create cgroup {}", path.display()), e))?;
        }
        let cg = ServerCgroup { path, created };
        let real = cg
            .path
            .canonicalize()
            .map_err(|e| LabError::io(format!("resolve {}", cg.path.display()), e))?;
        if !is_cgroup2(&real) {
            return Err(LabError::Invalid(format!(
                "--cgroup {}: not a cgroup v2 directory (cgroup2 is mounted at {})",
                cg.path.display(),
                mount.display()
            )));
        }
        if real == mount.canonicalize().unwrap_or(mount) {
            return Err(LabError::Invalid(
                "--cgroup: the lab never runs in the root cgroup; name a child cgroup".into(),
            ));
        }
        Ok(cg)
    }
}

impl ServerCgroup {
    /// Ends every process in the cgroup (`cgroup.kill`, Linux 5.14+; else
    /// SIGKILL to each pid of `cgroup.procs`) and waits until it is empty.
    pub fn kill_all(&self) -> Result<()> {
        let procs = self.path.join("cgroup.procs");
        let kill = self.path.join("cgroup.kill");
        let until = std::time::Instant::now() + KILL_WAIT;
        loop {
            let text = std::fs::read_to_string(&procs)
                .map_err(|e| LabError::io(format!("read {}", procs.display()), e))?;
            let pids: Vec<i32> = text.lines().filter_map(|l| l.trim().parse().ok()).collect();
            if pids.is_empty() {
                return Ok(());
            }
            if std::time::Instant::now() >= until {
                return Err(LabError::Invalid(format!(
                    "processes {pids:?} in {} outlived SIGKILL for {} s",
                    self.path.display(),
                    KILL_WAIT.as_secs()
                )));
            }
            if std::fs::write(&kill, "1").is_err() {
                for pid in pids {
                    let _ = nix::sys::signal::kill(
                        nix::unistd::Pid::from_raw(pid),
                        nix::sys::signal::Signal::SIGKILL,
                    );
                }
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }
}

/// How long killed processes may take to leave their cgroup (an exiting
/// process flushes its sockets and files first; a few ms normally).
const KILL_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// Whether `dir` is on a cgroup2 file system.
fn is_cgroup2(dir: &Path) -> bool {
    nix::sys::statfs::statfs(dir)
        .map(|s| s.filesystem_type() == nix::sys::statfs::CGROUP2_SUPER_MAGIC)
        .unwrap_or(false)
}

/// Moves the calling process (every thread of it) into `cgroup`.
pub fn join(cgroup: &Path) -> Result<()> {
    let procs = cgroup.join("cgroup.procs");
    std::fs::write(&procs, "0\n").map_err(|e| LabError::io(format!("join {}", procs.display()), e))
}

impl Drop for ServerCgroup {
    fn drop(&mut self) {
        if !self.created {
            return;
        }
        // Nothing the lab started may keep it (the server commands of
        // `--server-cmd`, shells entered by hand with `--hold`).
        let _ = self.kill_all();
        // The server processes are gone (reaped) before this runs; the
        // kernel may take a moment to notice.
        for _ in 0..50 {
            match std::fs::remove_dir(&self.path) {
                Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                _ => return,
            }
        }
    }
}

/// Cgroups `bbrkit-lab-<pid>` under the cgroup2 mount whose process no
/// longer runs (left by a lab killed with SIGKILL); removes them and
/// returns their paths.
pub fn remove_leftovers() -> Vec<PathBuf> {
    let Ok(mount) = cgroup2_mount() else {
        return Vec::new();
    };
    let Ok(dir) = std::fs::read_dir(&mount) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in dir.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix(PREFIX)
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if !Path::new(&format!("/proc/{pid}")).exists() && std::fs::remove_dir(e.path()).is_ok() {
            out.push(e.path());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_cgroup2_mount() {
        let info = "25 1 0:23 / /sys/fs/cgroup rw shared:9 - tmpfs tmpfs rw\n\
                    26 25 0:24 / /sys/fs/cgroup/unified rw shared:10 - cgroup2 cgroup2 rw\n";
        assert_eq!(
            mount_of(info),
            Some(PathBuf::from("/sys/fs/cgroup/unified"))
        );
        assert_eq!(mount_of("25 1 0:23 / /sys rw - sysfs sysfs rw\n"), None);
    }
}
