//! Helpers shared by the CLI's test files (`mod common;`).

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::Command;

/// A copy of the bbrkit binary that user `nobody` (uid/gid 65534) can run
/// wherever the checkout is: root may build in a directory nobody cannot
/// enter (`/root/...`, a `mktemp -d` folder), and then exec'ing the binary
/// there as nobody fails with EACCES before bbrkit even starts. The copy
/// lives in a world-readable temporary directory removed on drop.
pub struct NobodyBin {
    _dir: tempfile::TempDir,
    path: PathBuf,
}

impl NobodyBin {
    /// Copies `CARGO_BIN_EXE_bbrkit`.
    pub fn new() -> Self {
        let dir = tempfile::Builder::new()
            .prefix("bbrkit-nobody-")
            .tempdir_in("/tmp")
            .unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let path = dir.path().join("bbrkit");
        std::fs::copy(env!("CARGO_BIN_EXE_bbrkit"), &path).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        NobodyBin { _dir: dir, path }
    }

    /// A command running the copy as uid/gid 65534 (the test must run as root).
    pub fn command(&self) -> Command {
        let mut c = Command::new(&self.path);
        // SAFETY: the closure runs in the forked child before exec and only
        // calls setgid/setuid, which are async-signal-safe.
        unsafe {
            c.pre_exec(|| {
                if libc::setgid(65534) != 0 || libc::setuid(65534) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        c
    }
}
