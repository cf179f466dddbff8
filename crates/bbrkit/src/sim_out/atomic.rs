//! Output files that appear complete or not at all: data goes to a hidden
//! temporary file next to the target, which is renamed over it on
//! [`OutFile::commit`] and removed if dropped uncommitted. Creating the
//! temporary file up front proves the path is writable before any work.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};

/// A file being written atomically.
#[derive(Debug)]
pub struct OutFile {
    target: PathBuf,
    tmp: PathBuf,
    writer: Option<BufWriter<File>>,
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
        let tmp = temp_for(target);
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&tmp)
            .with_context(|| format!("{what}: cannot write '{}'", target.display()))?;
        Ok(OutFile {
            target: target.to_path_buf(),
            tmp,
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
        file.sync_all()
            .with_context(|| format!("writing '{}'", self.target.display()))?;
        std::fs::rename(&self.tmp, &self.target)
            .with_context(|| format!("renaming into '{}'", self.target.display()))?;
        Ok(())
    }
}

impl Drop for OutFile {
    fn drop(&mut self) {
        if self.writer.is_some() {
            let _ = std::fs::remove_file(&self.tmp);
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
