//! Output files that appear complete or not at all: data goes to a hidden
//! temporary file next to the target, which is renamed over it on
//! [`OutFile::commit`] and removed if dropped uncommitted. Creating the
//! temporary file up front proves the path is writable before any work.
//! While a temporary file exists, SIGINT/SIGTERM remove it before the
//! process exits (128 + signal), so Ctrl-C leaves nothing behind.
//! A target that exists and is not a regular file (`/dev/stdout`, a FIFO,
//! `/dev/null`) is written directly: renaming over it would replace the
//! device or pipe with a regular file. A symbolic link to a regular file
//! is followed, so the file it points to is replaced, not the link.

use std::ffi::CString;
use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Once;
use std::sync::atomic::{AtomicPtr, Ordering};

use anyhow::{Context, bail};

/// Temporary files to remove if a signal ends the process.
static PENDING: [AtomicPtr<libc::c_char>; 8] = [const { AtomicPtr::new(std::ptr::null_mut()) }; 8];
static HANDLER: Once = Once::new();

extern "C" fn remove_pending_and_exit(sig: libc::c_int) {
    for slot in &PENDING {
        let p = slot.load(Ordering::SeqCst);
        if !p.is_null() {
            // SAFETY: unlink and _exit are async-signal-safe; `p` is a
            // NUL-terminated string leaked by `track` until `untrack`.
            unsafe { libc::unlink(p) };
        }
    }
    // SAFETY: async-signal-safe; ends the process without unwinding.
    unsafe { libc::_exit(128 + sig) };
}

/// Registers `path` for removal on SIGINT/SIGTERM; returns its slot.
fn track(path: &Path) -> Option<usize> {
    HANDLER.call_once(|| {
        for sig in [libc::SIGINT, libc::SIGTERM] {
            // SAFETY: installs a handler that only calls async-signal-safe functions.
            unsafe {
                libc::signal(
                    sig,
                    remove_pending_and_exit as *const () as libc::sighandler_t,
                )
            };
        }
    });
    let c = CString::new(path.as_os_str().as_bytes()).ok()?.into_raw();
    for (i, slot) in PENDING.iter().enumerate() {
        if slot
            .compare_exchange(std::ptr::null_mut(), c, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
        {
            return Some(i);
        }
    }
    // SAFETY: `c` came from `into_raw` above and was not stored.
    drop(unsafe { CString::from_raw(c) });
    None
}

fn untrack(slot: Option<usize>) {
    if let Some(i) = slot {
        let p = PENDING[i].swap(std::ptr::null_mut(), Ordering::SeqCst);
        if !p.is_null() {
            // SAFETY: `p` came from `CString::into_raw` in `track`.
            drop(unsafe { CString::from_raw(p) });
        }
    }
}

/// A file being written atomically.
#[derive(Debug)]
pub struct OutFile {
    target: PathBuf,
    /// The temporary file renamed over `target`; `None` when writing
    /// straight into a device or pipe.
    tmp: Option<PathBuf>,
    writer: Option<BufWriter<File>>,
    slot: Option<usize>,
}

fn temp_for(target: &Path) -> PathBuf {
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    target.with_file_name(format!(".{name}.bbrkit-tmp"))
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
                slot: None,
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
        let tmp = temp_for(target);
        let slot = track(&tmp);
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&tmp)
            .with_context(|| format!("{what}: cannot write '{}'", target.display()));
        let file = match file {
            Ok(f) => f,
            Err(e) => {
                untrack(slot);
                return Err(e);
            }
        };
        Ok(OutFile {
            target: target.to_path_buf(),
            tmp: Some(tmp),
            writer: Some(BufWriter::new(file)),
            slot,
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
        file.sync_all()
            .with_context(|| format!("writing '{}'", self.target.display()))?;
        let renamed = std::fs::rename(&tmp, &self.target)
            .with_context(|| format!("renaming into '{}'", self.target.display()));
        if renamed.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        untrack(self.slot.take());
        renamed
    }
}

impl Drop for OutFile {
    fn drop(&mut self) {
        if self.writer.is_some()
            && let Some(tmp) = &self.tmp
        {
            let _ = std::fs::remove_file(tmp);
        }
        untrack(self.slot.take());
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
