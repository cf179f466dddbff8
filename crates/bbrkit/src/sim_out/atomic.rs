//! Output files that appear complete or not at all: data goes to a hidden
//! temporary file next to the target, which is renamed over it on
//! [`OutFile::commit`] and removed if dropped uncommitted. Creating the
//! temporary file up front proves the path is writable before any work.
//! While a temporary file exists, SIGINT/SIGTERM remove it before the
//! process exits (128 + signal), so Ctrl-C leaves nothing behind: a signal
//! thread does it, no code runs in signal context. The rename and the
//! directory fsync are bbrkit's one atomic writer's ([`atomic::commit`]).
//! A target that exists and is not a regular file (`/dev/stdout`, a FIFO,
//! `/dev/null`) is written directly: renaming over it would replace the
//! device or pipe with a regular file. A symbolic link to a regular file
//! is followed, so the file it points to is replaced, not the link.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, Once};

use anyhow::{Context, bail};
use bbrkit_host::atomic;
use nix::sys::signal::{SigSet, SigmaskHow, Signal, pthread_sigmask};

/// Temporary files to remove if a signal ends the process.
static PENDING: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());
static SIGNALS: Once = Once::new();

/// The lab's signal design (`bbrkit_lab::signals`): SIGINT and SIGTERM are
/// blocked (in this thread and every thread started after it, so call this
/// before the simulation's workers start) and a thread waits for them,
/// removes the pending temporary files and exits with 128 + signal. No code
/// runs in signal context.
fn guard_signals() {
    SIGNALS.call_once(|| {
        let mut set = SigSet::empty();
        set.add(Signal::SIGINT);
        set.add(Signal::SIGTERM);
        if pthread_sigmask(SigmaskHow::SIG_BLOCK, Some(&set), None).is_err() {
            return;
        }
        let _ = std::thread::Builder::new()
            .name("bbrkit-signals".into())
            .spawn(move || {
                loop {
                    let Ok(sig) = set.wait() else { continue };
                    for p in pending().iter() {
                        let _ = std::fs::remove_file(p);
                    }
                    std::process::exit(128 + sig as i32);
                }
            });
    });
}

fn pending() -> std::sync::MutexGuard<'static, Vec<PathBuf>> {
    PENDING.lock().unwrap_or_else(|e| e.into_inner())
}

/// Registers `path` for removal on SIGINT/SIGTERM.
fn track(path: &Path) {
    guard_signals();
    pending().push(path.to_path_buf());
}

fn untrack(path: &Path) {
    pending().retain(|p| p != path);
}

/// A file being written atomically.
#[derive(Debug)]
pub struct OutFile {
    target: PathBuf,
    /// The temporary file renamed over `target`; `None` when writing
    /// straight into a device or pipe.
    tmp: Option<PathBuf>,
    writer: Option<BufWriter<File>>,
}

impl OutFile {
    /// Opens a temporary file for `target`; fails if `target` cannot be
    /// written (missing or read-only directory, a directory at `target`).
    pub fn create(target: &Path, what: &str) -> anyhow::Result<Self> {
        if target.as_os_str().is_empty() {
            bail!("{what}: empty path");
        }
        if target.is_dir() {
            bail!("{what}: '{}' is a directory", target.display());
        }
        if target.file_name().is_none() {
            bail!("{what}: '{}' is not a file path", target.display());
        }
        if let Ok(meta) = std::fs::metadata(target)
            && !meta.is_file()
        {
            // A device, FIFO or socket: stream into it as it is.
            let file = OpenOptions::new()
                .write(true)
                .open(target)
                .with_context(|| format!("{what}: cannot write '{}'", target.display()))?;
            return Ok(OutFile {
                target: target.to_path_buf(),
                tmp: None,
                writer: Some(BufWriter::new(file)),
            });
        }
        let resolved;
        let target = match std::fs::symlink_metadata(target) {
            Ok(m) if m.file_type().is_symlink() => {
                resolved = std::fs::canonicalize(target)
                    .with_context(|| format!("{what}: cannot resolve '{}'", target.display()))?;
                resolved.as_path()
            }
            _ => target,
        };
        let tmp = atomic::temp_path(target);
        track(&tmp);
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&tmp)
            .with_context(|| format!("{what}: cannot write '{}'", target.display()));
        let file = match file {
            Ok(f) => f,
            Err(e) => {
                untrack(&tmp);
                return Err(e);
            }
        };
        Ok(OutFile {
            target: target.to_path_buf(),
            tmp: Some(tmp),
            writer: Some(BufWriter::new(file)),
        })
    }

    /// The buffered writer.
    pub fn writer(&mut self) -> &mut BufWriter<File> {
        self.writer.as_mut().expect("not committed")
    }

    /// Flushes, syncs and renames the file into place.
    pub fn commit(mut self) -> anyhow::Result<()> {
        let w = self.writer.take().expect("commit once");
        let file = w
            .into_inner()
            .map_err(|e| e.into_error())
            .with_context(|| format!("writing '{}'", self.target.display()))?;
        let Some(tmp) = self.tmp.take() else {
            // Written straight into a device or pipe: flushed above.
            return Ok(());
        };
        let done = atomic::commit(file, &tmp, &self.target)
            .with_context(|| format!("writing '{}'", self.target.display()));
        untrack(&tmp);
        done
    }
}

impl Drop for OutFile {
    fn drop(&mut self) {
        // Still set: not committed (dropped, or the final write failed).
        if let Some(tmp) = self.tmp.take() {
            let _ = std::fs::remove_file(&tmp);
            untrack(&tmp);
        }
    }
}

impl Write for OutFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.writer().write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.writer().flush()
    }
}
