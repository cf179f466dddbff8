//! A command of `lab --server-cmd/--client-cmd` as a running process: the
//! `lab-exec` wrapper (see [`super::exec`]) started in a lab namespace,
//! optionally in the lab's cgroup, with the path's addresses in its
//! environment; the tail of its standard output and error kept as it
//! runs; waited for with a deadline; ended (with everything it started)
//! on [`CommandProcess::stop`] or drop.
//!
//! Must never leave the wrapper running or unreaped.

use std::io::Read;
use std::os::fd::BorrowedFd;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::error::{LabError, Result};
use crate::topology::Topology;
use crate::workload::server::{NETNS_FD, ServerLauncher, with_namespace_fd};

/// How much of a client's standard output a run keeps (the last bytes).
pub const STDOUT_TAIL: usize = 64 * 1024;
/// How much of a command's standard error is kept, for error messages.
pub const STDERR_TAIL: usize = 4 * 1024;

/// What to start.
#[derive(Debug, Clone, Copy)]
pub struct Spawn<'a> {
    /// The wrapper program (`bbrkit lab-exec`).
    pub launcher: &'a ServerLauncher,
    /// The namespace it runs in.
    pub netns: BorrowedFd<'a>,
    /// The cgroup it joins, if any.
    pub cgroup: Option<&'a Path>,
    /// The shell command.
    pub command: &'a str,
    /// Environment variables added for it.
    pub env: &'a [(&'static str, String)],
    /// Keep its standard output (else it goes to /dev/null).
    pub keep_stdout: bool,
}

impl<'a> Spawn<'a> {
    /// The server command: in `topo`'s server namespace and `cgroup`, its
    /// output discarded (the same for a run and a held path).
    pub fn server(
        launcher: &'a ServerLauncher,
        topo: &'a Topology,
        cgroup: &'a Path,
        command: &'a str,
        env: &'a [(&'static str, String)],
    ) -> Spawn<'a> {
        Spawn {
            launcher,
            netns: topo.server.fd(),
            cgroup: Some(cgroup),
            command,
            env,
            keep_stdout: false,
        }
    }

    /// The client command: in `topo`'s client namespace, in no cgroup of
    /// the lab's, its output kept.
    pub fn client(
        launcher: &'a ServerLauncher,
        topo: &'a Topology,
        command: &'a str,
        env: &'a [(&'static str, String)],
    ) -> Spawn<'a> {
        Spawn {
            launcher,
            netns: topo.client.fd(),
            cgroup: None,
            command,
            env,
            keep_stdout: true,
        }
    }
}

/// The last bytes of a stream, and how many it carried in all.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Tail {
    /// The last bytes (at most the limit).
    pub bytes: Vec<u8>,
    /// Bytes the stream carried.
    pub total: u64,
}

impl Tail {
    /// The tail as text (invalid UTF-8 replaced; a cut character at the
    /// start dropped by the replacement).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.bytes).into_owned()
    }
}

/// Reads `r` to its end, keeping the last `limit` bytes.
pub fn read_tail(mut r: impl Read, limit: usize) -> Tail {
    let mut tail = Tail::default();
    let mut buf = [0u8; 16 * 1024];
    loop {
        match r.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                tail.total += n as u64;
                tail.bytes.extend_from_slice(&buf[..n]);
                if tail.bytes.len() > 2 * limit {
                    let cut = tail.bytes.len() - limit;
                    tail.bytes.drain(..cut);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    if tail.bytes.len() > limit {
        let cut = tail.bytes.len() - limit;
        tail.bytes.drain(..cut);
    }
    tail
}

/// How a command ended.
#[derive(Debug, Clone, PartialEq)]
pub struct Ended {
    /// Its exit code (128 + signal when a signal ended it), `None` when the
    /// lab stopped it.
    pub exit_code: Option<i32>,
    /// Its standard output's tail (empty unless kept).
    pub stdout: Tail,
    /// Its standard error's tail.
    pub stderr: Tail,
}

/// A running command; stopped and reaped on drop.
pub struct CommandProcess {
    child: Child,
    stdout: Option<JoinHandle<Tail>>,
    stderr: Option<JoinHandle<Tail>>,
}

impl CommandProcess {
    /// Starts `spec`. Call it from a thread that outlives the process (it
    /// dies with that thread).
    pub fn start(spec: &Spawn<'_>) -> Result<CommandProcess> {
        let mut cmd = Command::new(&spec.launcher.program);
        cmd.args(&spec.launcher.args)
            .arg("--netns-fd")
            .arg(NETNS_FD.to_string());
        if let Some(cg) = spec.cgroup {
            cmd.arg("--cgroup").arg(cg);
        }
        cmd.arg("--").arg(spec.command);
        cmd.envs(spec.env.iter().map(|(k, v)| (*k, v)))
            .stdin(Stdio::null())
            .stdout(if spec.keep_stdout {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stderr(Stdio::piped());
        // A group of its own: Ctrl-C at the terminal reaches the lab, which
        // ends the commands in order, not the commands directly.
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        with_namespace_fd(&mut cmd, spec.netns);
        let mut child = cmd
            .spawn()
            .map_err(|e| LabError::io(format!("start {}", spec.launcher.program.display()), e))?;
        let stdout = child
            .stdout
            .take()
            .map(|o| std::thread::spawn(move || read_tail(o, STDOUT_TAIL)));
        let stderr = child
            .stderr
            .take()
            .map(|e| std::thread::spawn(move || read_tail(e, STDERR_TAIL)));
        Ok(CommandProcess {
            child,
            stdout,
            stderr,
        })
    }

    /// Whether it has exited (without reaping it for good: the status is
    /// kept by the `Child`).
    pub fn exited(&mut self) -> Result<Option<ExitStatus>> {
        self.child
            .try_wait()
            .map_err(|e| LabError::io("wait for a command", e))
    }

    /// Waits until it exits, `until` passes or `cancel` is set; returns
    /// whether it exited.
    pub fn wait_until(&mut self, until: Instant, cancel: &AtomicBool) -> Result<bool> {
        loop {
            if self.exited()?.is_some() {
                return Ok(true);
            }
            if Instant::now() >= until || cancel.load(Ordering::Relaxed) {
                return Ok(false);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Ends it (SIGKILL to the wrapper, whose death ends the command's PID
    /// namespace) unless it has exited, and returns how it ended.
    pub fn stop(mut self) -> Result<Ended> {
        let exit_code = match self.exited()? {
            Some(s) => Some(code_of(s)),
            None => {
                self.kill();
                None
            }
        };
        // The readers end when the last holder of the pipes is gone: the
        // wrapper, and (after the kernel ended them) the command's processes.
        let join = |h: Option<JoinHandle<Tail>>| {
            h.map(|h| h.join().unwrap_or_default()).unwrap_or_default()
        };
        Ok(Ended {
            exit_code,
            stdout: join(self.stdout.take()),
            stderr: join(self.stderr.take()),
        })
    }

    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for CommandProcess {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            self.kill();
        }
    }
}

/// An exit status as a shell reports it: the code, or 128 + the signal.
fn code_of(s: ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    s.code()
        .or_else(|| s.signal().map(|n| 128 + n))
        .unwrap_or(-1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tail_keeps_the_last_bytes_and_counts_all() {
        let data: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        let t = read_tail(&data[..], 1000);
        assert_eq!(t.total, 100_000);
        assert_eq!(t.bytes, data[99_000..]);
        let short = read_tail(&b"abc"[..], 1000);
        assert_eq!((short.bytes.as_slice(), short.total), (&b"abc"[..], 3));
    }
}
