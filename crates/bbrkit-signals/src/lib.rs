//! bbrkit's one signal design: SIGINT, SIGTERM and SIGHUP (a closed
//! terminal) received by one thread per process, which either cancels a
//! long run or ends the process at once, after the registered cleanup
//! actions.
//!
//! Owns blocking the three signals ([`install`] blocks them in the calling
//! thread, so call it before any other thread is spawned: every thread
//! inherits the mask) and the thread that waits for them with sigwait(2).
//! SIGHUP is left alone when it is ignored, so `nohup bbrkit ...` keeps
//! running. What a signal does depends on the [`Mode`]:
//!
//! ```text
//!                signal                          second signal, or teardown
//!  ExitAtOnce ──────────► cleanups, exit 128+sig  longer than grace
//!  Cancel     ──────────► cancel flag set ─────────────► cleanups, exit 128+sig
//!                          │ the run stops, tears down
//!                          └► caller exits with Signals::exit_code()
//! ```
//!
//! Exit codes are 128 + signal: 130 (SIGINT), 143 (SIGTERM), 129 (SIGHUP).
//! [`install`] is idempotent: the first call starts the thread, later calls
//! return the same state, and `Cancel` wins over `ExitAtOnce` (once anyone
//! waits on the cancel flag, a signal must not end the process under it).
//! The cleanup list ([`on_exit`], [`remove_on_exit`]) holds what destructors
//! would have done: the pending temporary files of output being written,
//! the lab's `--netns-names` names.
//!
//! Must never run code in signal context: no handler is installed, signals
//! stay blocked and are taken synchronously by the thread. Must never
//! depend on another bbrkit crate.

mod registry;

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nix::sys::signal::{SigSet, SigmaskHow, Signal, pthread_sigmask};

pub use registry::{Cleanup, on_exit, remove_on_exit};

/// What a signal does to the process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// No one waits on cancellation (e.g. `bbrkit sim`): run the cleanup
    /// actions and exit with 128 + signal at once.
    ExitAtOnce,
    /// A long run polls [`Signals::cancel`] (e.g. `bbrkit lab`): the first
    /// signal sets it; a second one, or `grace` passing before the caller
    /// has exited, runs the cleanup actions and exits at once, printing
    /// `bbrkit: interrupted by signal N; teardown took over GRACE, exiting
    /// (NOTE)` when the grace ran out.
    Cancel {
        /// How long the teardown may take after the first signal.
        grace: Duration,
        /// What the late-exit message says in parentheses.
        note: &'static str,
    },
}

/// Why the signal design could not be installed.
#[derive(Debug, thiserror::Error)]
pub enum SignalError {
    /// pthread_sigmask(2) refused to block the signals.
    #[error("block SIGINT/SIGTERM/SIGHUP")]
    Block(#[source] nix::Error),
    /// The signal thread could not be started (the signals are unblocked
    /// again, so their default action still ends the process).
    #[error("spawn signal thread")]
    Spawn(#[source] std::io::Error),
}

/// The process's signal state, shared with the signal thread.
#[derive(Debug, Clone)]
pub struct Signals {
    /// Set when SIGINT, SIGTERM or SIGHUP arrived (in [`Mode::Cancel`]).
    pub cancel: Arc<AtomicBool>,
    signal: Arc<AtomicI32>,
    mode: Arc<Mutex<Mode>>,
}

impl Signals {
    /// The signal that arrived, if any.
    pub fn signal(&self) -> Option<i32> {
        match self.signal.load(Ordering::SeqCst) {
            0 => None,
            s => Some(s),
        }
    }

    /// The conventional exit status for the signal that arrived, if any
    /// (130 for SIGINT, 143 for SIGTERM, 129 for SIGHUP).
    pub fn exit_code(&self) -> Option<i32> {
        self.signal().map(exit_code)
    }

    fn mode(&self) -> Mode {
        *self.mode.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The process's one [`Signals`], once installed.
static INSTALLED: Mutex<Option<Signals>> = Mutex::new(None);

/// Installs the signal design for this process (see the crate
/// documentation) or, if it is installed already, switches it to `mode`
/// when that is [`Mode::Cancel`]. Returns the process's signal state.
pub fn install(mode: Mode) -> Result<Signals, SignalError> {
    let mut installed = INSTALLED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(s) = installed.as_ref() {
        let mut current = s.mode.lock().unwrap_or_else(|e| e.into_inner());
        *current = merge(*current, mode);
        return Ok(s.clone());
    }
    let set = signal_set(ignored(Signal::SIGHUP));
    pthread_sigmask(SigmaskHow::SIG_BLOCK, Some(&set), None).map_err(SignalError::Block)?;
    let signals = Signals {
        cancel: Arc::new(AtomicBool::new(false)),
        signal: Arc::new(AtomicI32::new(0)),
        mode: Arc::new(Mutex::new(mode)),
    };
    let s = signals.clone();
    let spawned = std::thread::Builder::new()
        .name("bbrkit-signals".into())
        .spawn(move || wait_loop(set, &s));
    if let Err(e) = spawned {
        let _ = pthread_sigmask(SigmaskHow::SIG_UNBLOCK, Some(&set), None);
        return Err(SignalError::Spawn(e));
    }
    *installed = Some(signals.clone());
    Ok(signals)
}

/// The mode after a second [`install`]: `Cancel` wins (its grace is the
/// latest asked for), `ExitAtOnce` changes nothing.
fn merge(current: Mode, asked: Mode) -> Mode {
    match asked {
        Mode::ExitAtOnce => current,
        cancel => cancel,
    }
}

/// SIGINT, SIGTERM and, unless it is ignored, SIGHUP.
fn signal_set(sighup_ignored: bool) -> SigSet {
    let mut set = SigSet::empty();
    set.add(Signal::SIGINT);
    set.add(Signal::SIGTERM);
    if !sighup_ignored {
        set.add(Signal::SIGHUP); // but `nohup bbrkit ...` keeps running
    }
    set
}

/// 128 + signal, the shell's convention for "ended by a signal".
pub fn exit_code(signal: i32) -> i32 {
    128 + signal
}

/// What the signal thread does with one signal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Action {
    /// Set the cancel flag and start the grace timer.
    Cancel,
    /// Run the cleanup actions and exit.
    Exit,
}

/// The decision: exit at once unless a run waits on cancellation and this
/// is its first signal.
fn decide(mode: Mode, already_cancelled: bool) -> Action {
    match mode {
        Mode::Cancel { .. } if !already_cancelled => Action::Cancel,
        _ => Action::Exit,
    }
}

fn wait_loop(set: SigSet, s: &Signals) {
    loop {
        let Ok(sig) = set.wait() else { continue };
        let sig = sig as i32;
        let mode = s.mode();
        // The flag is set even in ExitAtOnce: it costs nothing and says so.
        let already = s.cancel.swap(true, Ordering::SeqCst);
        match decide(mode, already) {
            Action::Exit => {
                if let Some(line) = exit_message(mode, already, sig) {
                    eprintln!("{line}");
                }
                exit_now(sig)
            }
            Action::Cancel => {
                s.signal.store(sig, Ordering::SeqCst);
                if let Mode::Cancel { grace, note } = mode {
                    std::thread::spawn(move || {
                        std::thread::sleep(grace);
                        registry::run_cleanups();
                        eprintln!(
                            "bbrkit: interrupted by signal {sig}; teardown took over {grace:?}, exiting ({note})"
                        );
                        std::process::exit(exit_code(sig));
                    });
                }
            }
        }
    }
}

/// What the process says when a signal ends it at once: nothing when no
/// run was waiting (a plain Ctrl-C), but a second signal during a
/// cancelled run's teardown says why the teardown did not finish.
fn exit_message(mode: Mode, already_cancelled: bool, sig: i32) -> Option<String> {
    match mode {
        Mode::Cancel { note, .. } if already_cancelled => Some(format!(
            "bbrkit: second signal ({sig}) during teardown; exiting at once ({note})"
        )),
        _ => None,
    }
}

fn exit_now(sig: i32) -> ! {
    registry::run_cleanups();
    std::process::exit(exit_code(sig));
}

/// True when `sig` is ignored (`SIG_IGN`), e.g. SIGHUP under `nohup`.
fn ignored(sig: Signal) -> bool {
    // SAFETY: a query only (a null new action changes nothing); `old` is a
    // plain C struct that all-zero bytes make valid and the kernel fills in.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        libc::sigaction(sig as libc::c_int, std::ptr::null(), &mut old) == 0
            && old.sa_sigaction == libc::SIG_IGN
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CANCEL: Mode = Mode::Cancel {
        grace: Duration::from_secs(5),
        note: "test",
    };

    #[test]
    fn exit_codes_are_128_plus_the_signal() {
        assert_eq!(exit_code(libc::SIGINT), 130);
        assert_eq!(exit_code(libc::SIGTERM), 143);
        assert_eq!(exit_code(libc::SIGHUP), 129);
    }

    #[test]
    fn cancel_mode_cancels_first_and_exits_on_the_second_signal() {
        assert_eq!(decide(CANCEL, false), Action::Cancel);
        assert_eq!(decide(CANCEL, true), Action::Exit);
    }

    #[test]
    fn a_second_signal_says_what_happened() {
        let line = exit_message(CANCEL, true, libc::SIGINT).unwrap();
        assert!(
            line.contains("second signal (2)") && line.contains("(test)"),
            "{line}"
        );
        assert_eq!(exit_message(Mode::ExitAtOnce, true, libc::SIGINT), None);
        assert_eq!(exit_message(Mode::ExitAtOnce, false, libc::SIGINT), None);
    }

    #[test]
    fn exit_mode_exits_at_once() {
        assert_eq!(decide(Mode::ExitAtOnce, false), Action::Exit);
        assert_eq!(decide(Mode::ExitAtOnce, true), Action::Exit);
    }

    #[test]
    fn cancel_wins_over_exit_at_once() {
        assert_eq!(merge(Mode::ExitAtOnce, CANCEL), CANCEL);
        assert_eq!(merge(CANCEL, Mode::ExitAtOnce), CANCEL);
        assert_eq!(merge(Mode::ExitAtOnce, Mode::ExitAtOnce), Mode::ExitAtOnce);
        let longer = Mode::Cancel {
            grace: Duration::from_secs(9),
            note: "later",
        };
        assert_eq!(merge(CANCEL, longer), longer);
    }

    #[test]
    fn sighup_is_waited_for_unless_ignored() {
        assert!(signal_set(false).contains(Signal::SIGHUP));
        assert!(!signal_set(true).contains(Signal::SIGHUP));
        for ignored in [false, true] {
            let set = signal_set(ignored);
            assert!(set.contains(Signal::SIGINT) && set.contains(Signal::SIGTERM));
        }
    }

    #[test]
    fn an_ignored_signal_is_seen_as_ignored() {
        use nix::sys::signal::{SigHandler, signal};
        // SIGUSR2: nothing in this test process uses it.
        // SAFETY: SIG_IGN and SIG_DFL are not handlers; no code runs in
        // signal context.
        let before = unsafe { signal(Signal::SIGUSR2, SigHandler::SigIgn) }.unwrap();
        assert!(ignored(Signal::SIGUSR2));
        // SAFETY: as above.
        unsafe { signal(Signal::SIGUSR2, SigHandler::SigDfl) }.unwrap();
        assert!(!ignored(Signal::SIGUSR2));
        // SAFETY: restores what was there (SIG_DFL or SIG_IGN, never a handler
        // in this process).
        unsafe { signal(Signal::SIGUSR2, before) }.unwrap();
    }
}
