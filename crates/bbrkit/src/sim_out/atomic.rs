//! Output files that appear complete or not at all: data goes to a hidden
//! temporary file next to the target, which is renamed over it on
//! [`OutFile::commit`] and removed if dropped uncommitted. Creating the
//! temporary file up front proves the path is writable before any work.
//! While a temporary file exists, SIGINT/SIGTERM/SIGHUP remove it before
//! the process exits (128 + signal), so Ctrl-C leaves nothing behind:
//! bbrkit's one signal design (`bbrkit_signals`, installed here in
//! `ExitAtOnce` mode unless a run already waits on cancellation) runs the
//! removal on its thread, no code runs in signal context. The rename and the
//! directory fsync are bbrkit's one atomic writer's ([`atomic::commit`]).
//! A target that exists and is not a regular file (`/dev/stdout`, a FIFO,
//! `/dev/null`) is written directly: renaming over it would replace the
//! device or pipe with a regular file. A symbolic link to a regular file
//! is followed, so the file it points to is replaced, not the link.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use bbrkit_host::atomic;
use bbrkit_signals::{Cleanup, Mode};

/// A file being written atomically.
#[derive(Debug)]
pub struct OutFile {
    target: PathBuf,
    /// The temporary file renamed over `target` and its removal on a
    /// signal; `None` when writing straight into a device or pipe.
    tmp: Option<(PathBuf, Cleanup)>,
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
        // Before the simulation's workers start, so they inherit the mask.
        bbrkit_signals::install(Mode::ExitAtOnce)?;
        let on_signal = bbrkit_signals::remove_on_exit(&tmp);
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&tmp)
            .with_context(|| format!("{what}: cannot write '{}'", target.display()))?;
        Ok(OutFile {
            target: target.to_path_buf(),
            tmp: Some((tmp, on_signal)),
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
        let Some((tmp, _on_signal)) = self.tmp.take() else {
            // Written straight into a device or pipe: flushed above.
            return Ok(());
        };
        // `_on_signal` is dropped after the rename or the failed commit's
        // removal of the temporary file.
        atomic::commit(file, &tmp, &self.target)
            .with_context(|| format!("writing '{}'", self.target.display()))
    }
}

impl Drop for OutFile {
    fn drop(&mut self) {
        // Still set: not committed (dropped, or the final write failed).
        if let Some((tmp, _on_signal)) = self.tmp.take() {
            let _ = std::fs::remove_file(&tmp);
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
