//! The cgroup janitor: a small process (`bbrkit lab-exec --janitor PATH`)
//! that removes the cgroup the lab created for `--server-cmd`/`--hold`
//! once the lab is gone, however it went — SIGKILL included, when no
//! destructor of the lab runs. The lab holds the write end of the
//! janitor's standard input; the kernel closes it when the lab exits, the
//! janitor reads end-of-file, empties the cgroup (`cgroup.kill`; the
//! commands are normally dead already, through their PID namespaces) and
//! removes it. After a normal teardown the lab has removed it first and the
//! janitor finds nothing to do.
//!
//! The janitor runs in its own process group (a Ctrl-C at the terminal is
//! the lab's to handle) and outside the cgroup. Must never remove a cgroup
//! the lab did not create.

use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::error::{LabError, Result};
use crate::workload::server::ServerLauncher;

/// How long the janitor tries (killed processes flush their sockets and
/// files before they leave the cgroup; a few ms normally).
const TRY_FOR: Duration = Duration::from_secs(5);

/// A running janitor; told to finish (and reaped) on drop.
pub struct Janitor {
    child: Child,
}

impl Janitor {
    /// Starts the janitor of `cgroup` (a cgroup the lab created).
    pub fn start(launcher: &ServerLauncher, cgroup: &Path) -> Result<Janitor> {
        let mut cmd = Command::new(&launcher.program);
        cmd.args(&launcher.args)
            .arg("--janitor")
            .arg(cgroup)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        let child = cmd
            .spawn()
            .map_err(|e| LabError::io(format!("start {}", launcher.program.display()), e))?;
        Ok(Janitor { child })
    }
}

impl Drop for Janitor {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.wait();
    }
}

/// The janitor's body: waits for end-of-file on standard input, then
/// empties and removes `cgroup` if it still exists.
pub fn watch(cgroup: &Path) {
    let _ = std::io::copy(&mut std::io::stdin().lock().by_ref(), &mut std::io::sink());
    let until = Instant::now() + TRY_FOR;
    while cgroup.exists() && Instant::now() < until {
        let _ = std::fs::write(cgroup.join("cgroup.kill"), "1");
        if std::fs::remove_dir(cgroup).is_ok() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
