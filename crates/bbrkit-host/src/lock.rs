//! The host lock: one state-changing host command (`enable`, `rollback`) at
//! a time per root, so a cron job, the boot unit and an operator cannot
//! interleave their writes of the before-image and bbrkit's file.
//!
//! The lock is `flock(2)` on the root directory itself: it always exists
//! and is never removed, so every bbrkit of that root locks the same inode
//! (a lock on a file that is removed and created again would let two
//! holders in). The holder writes `<pid> <command>` to `var/lib/bbrkit/lock`
//! and removes it (with the directories it created for it, when empty) on
//! release, so a completed rollback leaves no trace; only the holder ever
//! touches that file. A waiter retries for a while, then gives up with
//! [`HostError::Locked`] naming the holder. The kernel drops the lock when
//! the holder dies, also by SIGKILL. Never taken by read-only commands or
//! dry runs.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::{HostError, Root};

/// How long `enable` and `rollback` wait for another one to finish.
pub const WAIT: Duration = Duration::from_secs(10);

/// Pause between two attempts while waiting.
const RETRY: Duration = Duration::from_millis(20);

/// A held host lock; released (and its holder file removed) on drop.
#[derive(Debug)]
pub struct HostLock {
    dir: File,
    holder_file: PathBuf,
    /// Directories to remove on release when empty.
    dirs: Vec<PathBuf>,
    created: Vec<PathBuf>,
}

impl HostLock {
    /// Takes the lock of `root` for `command`, waiting up to `wait` for a
    /// holder to finish. Creates `var/lib/bbrkit` when missing.
    pub fn acquire(root: &Root, command: &str, wait: Duration) -> Result<HostLock, HostError> {
        let holder_file = root.state_dir().join("lock");
        let dir = File::open(root.base()).map_err(|e| HostError::io(root.base(), e))?;
        let deadline = Instant::now() + wait;
        loop {
            match dir.try_lock() {
                Ok(()) => break,
                Err(std::fs::TryLockError::WouldBlock) if Instant::now() < deadline => {
                    std::thread::sleep(RETRY);
                }
                Err(std::fs::TryLockError::WouldBlock) => {
                    return Err(HostError::Locked {
                        holder: holder(&holder_file),
                        path: holder_file,
                    });
                }
                Err(std::fs::TryLockError::Error(e)) => {
                    return Err(HostError::io(root.base(), e));
                }
            }
        }
        // From here on the lock is held: dropping `lock` releases it.
        let mut lock = HostLock {
            dir,
            holder_file,
            dirs: Vec::new(),
            created: Vec::new(),
        };
        for d in missing_dirs(&root.state_dir()) {
            std::fs::create_dir(&d).map_err(|e| permission(&d, e))?;
            lock.created.push(d.clone());
            lock.dirs.push(d);
        }
        let who = format!("{} {command}\n", std::process::id());
        std::fs::write(&lock.holder_file, who).map_err(|e| permission(&lock.holder_file, e))?;
        Ok(lock)
    }

    /// The directories this acquisition created, outermost first (the
    /// before-image records them so `rollback` removes them again).
    pub fn created_dirs(&self) -> &[PathBuf] {
        &self.created
    }

    /// Also removes `dirs` on release, when empty (a rollback hands over
    /// the directories `enable` created, which still hold the holder file).
    pub fn remove_on_release(&mut self, dirs: impl IntoIterator<Item = PathBuf>) {
        self.dirs.extend(dirs);
    }
}

impl Drop for HostLock {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.holder_file);
        self.dirs
            .sort_by_key(|d| std::cmp::Reverse(d.components().count()));
        for d in &self.dirs {
            let _ = std::fs::remove_dir(d); // only when empty
        }
        let _ = self.dir.unlock();
    }
}

/// What the holder file says (`pid 123 (enable)`).
fn holder(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    match text.trim().split_once(' ') {
        Some((pid, command)) => format!("pid {pid} ({command})"),
        None => "another bbrkit that has not said who it is yet".into(),
    }
}

fn missing_dirs(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = dir
        .ancestors()
        .take_while(|p| !p.exists())
        .map(Path::to_path_buf)
        .collect();
    out.reverse();
    out
}

fn permission(path: &Path, e: std::io::Error) -> HostError {
    if e.kind() == std::io::ErrorKind::PermissionDenied {
        let dir = path
            .ancestors()
            .skip(1)
            .find(|p| p.exists())
            .unwrap_or(path);
        HostError::Permission(format!("cannot write {}: Permission denied", dir.display()))
    } else {
        HostError::io(path, e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn second_holder_is_refused_naming_the_first_and_release_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path()).unwrap();
        let lock = HostLock::acquire(&root, "enable", WAIT).unwrap();
        assert_eq!(lock.created_dirs().len(), 3, "var, var/lib, var/lib/bbrkit");
        let t = Instant::now();
        let e = HostLock::acquire(&root, "rollback", Duration::from_millis(100)).unwrap_err();
        assert!(t.elapsed() >= Duration::from_millis(100));
        let want = format!("locked by pid {} (enable)", std::process::id());
        assert!(e.to_string().contains(&want), "{e}");
        drop(lock);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        // Free again, and the directories it finds are not its own.
        std::fs::create_dir_all(root.state_dir()).unwrap();
        let lock = HostLock::acquire(&root, "rollback", WAIT).unwrap();
        assert!(lock.created_dirs().is_empty());
        drop(lock);
        assert!(root.state_dir().exists() && !root.state_dir().join("lock").exists());
    }

    #[test]
    fn waiters_take_turns() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().to_path_buf();
        let inside = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let (base, inside) = (base.clone(), inside.clone());
                std::thread::spawn(move || {
                    let root = Root::new(&base).unwrap();
                    for _ in 0..20 {
                        let _l = HostLock::acquire(&root, "enable", WAIT).unwrap();
                        let n = inside.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                        assert_eq!(n, 0, "two holders at once");
                        std::thread::sleep(Duration::from_micros(200));
                        inside.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(std::fs::read_dir(&base).unwrap().count(), 0);
    }
}
