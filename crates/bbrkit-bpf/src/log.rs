//! libbpf's messages, captured instead of printed.
//!
//! libbpf reports why it could not load an object (a missing kernel type, a
//! struct_ops member the kernel does not support, ...) through one global
//! print callback. This module owns that callback: while a [`Capture`] is
//! alive its warnings are collected for the error message; at other times
//! they are dropped, so a library user never sees stray `libbpf:` lines on
//! stderr. Captures are serialised (one load at a time per process), which
//! also keeps the collected text to one load.

use std::sync::{Mutex, MutexGuard, Once};

use libbpf_rs::PrintLevel;

/// Text collected while a capture is active; `None` when none is.
static CAPTURED: Mutex<Option<String>> = Mutex::new(None);
/// Serialises captures.
static LOAD: Mutex<()> = Mutex::new(());
static INSTALL: Once = Once::new();

/// Collects libbpf's warnings until [`Capture::finish`] or drop.
pub(crate) struct Capture {
    _serial: MutexGuard<'static, ()>,
}

impl Capture {
    /// Starts collecting (waits for another capture to end first).
    pub(crate) fn start() -> Capture {
        install();
        let serial = LOAD.lock().unwrap_or_else(|p| p.into_inner());
        *CAPTURED.lock().unwrap_or_else(|p| p.into_inner()) = Some(String::new());
        Capture { _serial: serial }
    }

    /// Stops collecting and returns libbpf's warnings, one per line.
    pub(crate) fn finish(self) -> String {
        take()
    }
}

impl Drop for Capture {
    fn drop(&mut self) {
        take();
    }
}

/// Routes libbpf's messages to this module (once per process); every
/// entry point that calls into libbpf calls it first.
pub(crate) fn install() {
    INSTALL.call_once(|| {
        libbpf_rs::set_print(Some((PrintLevel::Warn, collect)));
    });
}

fn take() -> String {
    CAPTURED
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .take()
        .unwrap_or_default()
}

/// The print callback: keeps warnings while a capture is active.
fn collect(level: PrintLevel, msg: String) {
    if level != PrintLevel::Warn {
        return;
    }
    if let Some(text) = CAPTURED.lock().unwrap_or_else(|p| p.into_inner()).as_mut() {
        text.push_str(&msg);
    }
}
