//! The body of `bbrkit lab-exec` (hidden), the wrapper every command of
//! `lab --server-cmd/--client-cmd` runs under: it enters the namespace
//! passed on descriptor 3, joins the cgroup it is given, and runs the
//! command through `sh -c` as process 1 of a fresh PID namespace.
//!
//! ```text
//!  lab ──spawn, PDEATHSIG──► lab-exec ──fork, PDEATHSIG──► sh -c CMD (pid 1)
//!                               waits, exits with sh's status   └─ every process CMD starts
//! ```
//!
//! Why a PID namespace: when its process 1 dies the kernel kills every
//! other process in it, daemons and grandchildren included. The wrapper
//! dies with the lab (`PR_SET_PDEATHSIG`, also after SIGKILL), process 1
//! with the wrapper, so killing the wrapper ends all the command started
//! and a lab killed by any signal leaves none of it behind. Must be called
//! while the process has one thread; must never run the command outside
//! the namespace it was given.

use std::ffi::CString;
use std::os::fd::{AsFd, BorrowedFd, RawFd};
use std::path::PathBuf;

use nix::sched::{CloneFlags, setns, unshare};
use nix::sys::wait::{WaitStatus, waitpid};
use nix::unistd::{ForkResult, fork};

use crate::error::{LabError, Result};

/// What the wrapper needs to know.
#[derive(Debug, Clone)]
pub struct ExecArgs {
    /// Descriptor of the network namespace to enter (inherited).
    pub netns_fd: RawFd,
    /// The cgroup v2 directory to join first, if any.
    pub cgroup: Option<PathBuf>,
    /// The shell command.
    pub command: String,
}

/// The shell the commands run through.
const SHELL: &str = "/bin/sh";

/// Runs the command as described; returns the exit code to exit with:
/// the command's own, or 128 + the signal that ended it (as a shell says).
pub fn exec(args: &ExecArgs) -> Result<i32> {
    // SAFETY: the descriptor was inherited for this purpose and stays open
    // for the life of the process.
    let ns = unsafe { BorrowedFd::borrow_raw(args.netns_fd) };
    setns(ns, CloneFlags::CLONE_NEWNET)
        .map_err(|e| LabError::io("enter the lab namespace", e.into()))?;
    if let Some(cg) = &args.cgroup {
        crate::workload::cgroup::join(cg)?;
    }
    unshare(CloneFlags::CLONE_NEWPID)
        .map_err(|e| LabError::io("create a PID namespace", e.into()))?;
    let sh = CString::new(SHELL).expect("no NUL");
    let argv = [
        CString::new("sh").expect("no NUL"),
        CString::new("-c").expect("no NUL"),
        CString::new(args.command.as_bytes())
            .map_err(|_| LabError::Invalid("a command holds a NUL byte".into()))?,
    ];
    // Held open by the wrapper: the child sees the read end hang up if the
    // wrapper died before the child's PR_SET_PDEATHSIG took effect.
    let (alive_r, alive_w) = nix::unistd::pipe().map_err(|e| LabError::io("pipe", e.into()))?;
    // SAFETY: the process has one thread (the caller's contract), so the
    // child may do anything; it only calls prctl, poll, signal and execv.
    match unsafe { fork() }.map_err(|e| LabError::io("fork", e.into()))? {
        ForkResult::Child => {
            drop(alive_w);
            // SAFETY: prctl with plain integer arguments.
            if unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) } < 0
                || parent_gone(alive_r.as_fd())
            {
                std::process::exit(1);
            }
            drop(alive_r);
            // SAFETY: resetting a disposition; the command expects the
            // default (a Rust process ignores SIGPIPE).
            unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
            let e = nix::unistd::execv(&sh, &argv).unwrap_err();
            eprintln!("bbrkit: run {SHELL}: {e}");
            std::process::exit(127);
        }
        ForkResult::Parent { child } => {
            drop(alive_r);
            let code = loop {
                match waitpid(child, None) {
                    Ok(WaitStatus::Exited(_, code)) => break code,
                    Ok(WaitStatus::Signaled(_, sig, _)) => break 128 + sig as i32,
                    Ok(_) | Err(nix::errno::Errno::EINTR) => {}
                    Err(e) => return Err(LabError::io("wait for the command", e.into())),
                }
            };
            drop(alive_w);
            Ok(code)
        }
    }
}

/// Whether the write end of the pipe `r` is closed (its holder exited).
fn parent_gone(r: BorrowedFd<'_>) -> bool {
    use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
    let mut fds = [PollFd::new(r, PollFlags::POLLIN)];
    matches!(poll(&mut fds, PollTimeout::ZERO), Ok(n) if n > 0)
}
