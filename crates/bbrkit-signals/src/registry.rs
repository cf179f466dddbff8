//! The cleanup actions the signal thread runs before it ends the process:
//! what destructors would have done had the process not exited at once
//! (remove a pending temporary file, unbind the lab's `--netns-names`).
//!
//! Owns the process-wide list and the [`Cleanup`] token that takes an
//! action off it again. An action runs on the signal thread, never in
//! signal context; it must be quick, must not register or drop another
//! [`Cleanup`] (the list is locked while it runs) and its errors are its
//! own to ignore. A panicking action does not keep the others from running.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

type Action = Box<dyn Fn() + Send>;

/// An ordered list of actions, each under the id [`Registry::add`] gave it.
#[derive(Default)]
pub(crate) struct Registry {
    next: u64,
    actions: Vec<(u64, Action)>,
}

impl Registry {
    const fn new() -> Self {
        Registry {
            next: 0,
            actions: Vec::new(),
        }
    }

    /// Appends `action`; returns its id.
    pub(crate) fn add(&mut self, action: Action) -> u64 {
        self.next += 1;
        self.actions.push((self.next, action));
        self.next
    }

    /// Takes the action `id` off the list; false if it was not on it.
    pub(crate) fn remove(&mut self, id: u64) -> bool {
        let before = self.actions.len();
        self.actions.retain(|(i, _)| *i != id);
        self.actions.len() != before
    }

    /// Runs every action in the order they were added; returns how many
    /// returned normally (a panicking one is counted out and skipped).
    pub(crate) fn run_all(&self) -> usize {
        self.actions
            .iter()
            .filter(|(_, a)| std::panic::catch_unwind(std::panic::AssertUnwindSafe(a)).is_ok())
            .count()
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.actions.len()
    }
}

static REGISTRY: Mutex<Registry> = Mutex::new(Registry::new());

pub(crate) fn registry() -> MutexGuard<'static, Registry> {
    REGISTRY.lock().unwrap_or_else(|e| e.into_inner())
}

/// An action on the process's cleanup list, taken off when this is dropped
/// (the work it guards is done, e.g. the temporary file was renamed into
/// place) or kept for the life of the process with [`Cleanup::keep`].
#[derive(Debug)]
#[must_use = "dropping a Cleanup takes its action off the list at once"]
pub struct Cleanup {
    id: u64,
}

impl Cleanup {
    /// Leaves the action on the list until the process ends.
    pub fn keep(self) {
        std::mem::forget(self);
    }
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        registry().remove(self.id);
    }
}

/// Registers `action` to run on the signal thread before a signal ends the
/// process at once (see the crate documentation for when that is). Not run
/// on a normal exit: destructors do that work.
pub fn on_exit(action: impl Fn() + Send + 'static) -> Cleanup {
    Cleanup {
        id: registry().add(Box::new(action)),
    }
}

/// Registers the removal of `path` (a temporary file being written) before
/// a signal ends the process.
pub fn remove_on_exit(path: &Path) -> Cleanup {
    let path: PathBuf = path.to_path_buf();
    on_exit(move || {
        let _ = std::fs::remove_file(&path);
    })
}

/// Runs the process's cleanup actions (the signal thread, just before it
/// exits).
pub(crate) fn run_cleanups() {
    registry().run_all();
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn counting(hits: &Arc<AtomicUsize>, weight: usize) -> Action {
        let hits = hits.clone();
        Box::new(move || {
            hits.fetch_add(weight, Ordering::SeqCst);
        })
    }

    #[test]
    fn runs_what_is_registered_and_not_what_was_removed() {
        let hits = Arc::new(AtomicUsize::new(0));
        let mut r = Registry::new();
        let a = r.add(counting(&hits, 1));
        let b = r.add(counting(&hits, 10));
        let c = r.add(counting(&hits, 100));
        assert_ne!(a, b);
        assert!(r.remove(b));
        assert!(!r.remove(b), "removed once only");
        assert!(!r.remove(999), "an unknown id");
        assert_eq!(r.run_all(), 2);
        assert_eq!(hits.load(Ordering::SeqCst), 101);
        assert!(r.remove(a) && r.remove(c));
        assert_eq!(r.len(), 0);
        assert_eq!(r.run_all(), 0);
    }

    #[test]
    fn runs_in_registration_order() {
        let order = Arc::new(Mutex::new(Vec::new()));
        let mut r = Registry::new();
        for i in 0..4 {
            let order = order.clone();
            r.add(Box::new(move || order.lock().unwrap().push(i)));
        }
        r.run_all();
        assert_eq!(*order.lock().unwrap(), vec![0, 1, 2, 3]);
    }

    #[test]
    fn a_panicking_action_does_not_stop_the_others() {
        let hits = Arc::new(AtomicUsize::new(0));
        let mut r = Registry::new();
        r.add(counting(&hits, 1));
        r.add(Box::new(|| panic!("cleanup failed")));
        r.add(counting(&hits, 1));
        assert_eq!(r.run_all(), 2);
        assert_eq!(hits.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn the_token_takes_its_action_off_the_process_list() {
        let dir = tempfile::tempdir().unwrap();
        let (kept, dropped) = (dir.path().join("kept"), dir.path().join("dropped"));
        std::fs::write(&kept, "x").unwrap();
        std::fs::write(&dropped, "x").unwrap();
        let before = registry().len();
        remove_on_exit(&kept).keep();
        drop(remove_on_exit(&dropped));
        assert_eq!(registry().len(), before + 1);
        run_cleanups();
        assert!(!kept.exists(), "a kept action runs");
        assert!(dropped.exists(), "a dropped token's action does not");
    }
}
