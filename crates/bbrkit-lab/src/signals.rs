//! SIGINT/SIGTERM (and SIGHUP, a closed terminal) turned into a cancel flag, so a lab run stops between two
//! system calls and tears its namespaces down before the process exits.
//!
//! Owns blocking the two signals (call [`install`] before any other thread is
//! spawned, so every thread inherits the mask) and a thread that waits for
//! them. A second signal, or a teardown that takes longer than
//! `grace`, ends the process at once with 128 + signal: the lab's namespaces
//! are held only by file descriptors, so they vanish with the process anyway,
//! and the `--netns-names` names of this process are removed first.
//! Must never install a handler that runs code in signal context.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::time::Duration;

use nix::sys::signal::{SigSet, SigmaskHow, Signal, pthread_sigmask};

use crate::error::{LabError, Result};

/// Shared state of the signal thread.
#[derive(Debug, Clone)]
pub struct SignalGuard {
    /// Set when SIGINT, SIGTERM or SIGHUP arrived.
    pub cancel: Arc<AtomicBool>,
    signal: Arc<AtomicI32>,
}

impl SignalGuard {
    /// The signal that arrived, if any.
    pub fn signal(&self) -> Option<i32> {
        match self.signal.load(Ordering::SeqCst) {
            0 => None,
            s => Some(s),
        }
    }

    /// The conventional exit status for the signal (130 for SIGINT, 143 for
    /// SIGTERM, 129 for SIGHUP).
    pub fn exit_code(&self) -> Option<i32> {
        self.signal().map(|s| 128 + s)
    }
}

/// Blocks SIGINT, SIGTERM and SIGHUP in the calling thread and starts the thread
/// that waits for them.
pub fn install(grace: Duration) -> Result<SignalGuard> {
    let mut set = SigSet::empty();
    set.add(Signal::SIGINT);
    set.add(Signal::SIGTERM);
    if !ignored(Signal::SIGHUP) {
        set.add(Signal::SIGHUP); // but `nohup bbrkit lab` keeps running
    }
    pthread_sigmask(SigmaskHow::SIG_BLOCK, Some(&set), None)
        .map_err(|e| LabError::io("block SIGINT/SIGTERM/SIGHUP", e.into()))?;
    let guard = SignalGuard {
        cancel: Arc::new(AtomicBool::new(false)),
        signal: Arc::new(AtomicI32::new(0)),
    };
    let g = guard.clone();
    std::thread::Builder::new()
        .name("bbrkit-signals".into())
        .spawn(move || {
            loop {
                let Ok(sig) = set.wait() else { continue };
                let code = 128 + sig as i32;
                if g.cancel.swap(true, Ordering::SeqCst) {
                    crate::cleanup::remove_own();
                    std::process::exit(code); // second signal: leave now
                }
                g.signal.store(sig as i32, Ordering::SeqCst);
                std::thread::spawn(move || {
                    std::thread::sleep(grace);
                    crate::cleanup::remove_own();
                    eprintln!(
                        "bbrkit: interrupted by signal {}; teardown took over {grace:?}, exiting (the kernel removes the lab)",
                        code - 128
                    );
                    std::process::exit(code);
                });
            }
        })
        .map_err(|e| LabError::io("spawn signal thread", e))?;
    Ok(guard)
}

/// True when `sig` is ignored (`SIG_IGN`), e.g. SIGHUP under `nohup`.
fn ignored(sig: Signal) -> bool {
    // SAFETY: a query only (no new action); `old` is written by the kernel.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        libc::sigaction(sig as libc::c_int, std::ptr::null(), &mut old) == 0
            && old.sa_sigaction == libc::SIG_IGN
    }
}
