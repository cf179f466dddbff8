//! Every file the CLI writes — `lab --out/--timeseries/--plot`, `sim
//! --timeseries/--plot`, `metrics --textfile` — goes through here: bbrkit's
//! one output-file scheme. Files are opened before any work ([`open_all`]:
//! an unwritable path, or two flags naming one file, fails in the first
//! moment, before a namespace or a simulation exists) and appear complete
//! or not at all: data goes to a hidden
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
use std::os::unix::fs::OpenOptionsExt;
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
            .mode(0o644)
            .open(&tmp)
            .with_context(|| {
                format!(
                    "{what}: cannot write '{}' (no file can be created in {})",
                    target.display(),
                    parent(target).display()
                )
            })?;
        Ok(OutFile {
            target: target.to_path_buf(),
            tmp: Some((tmp, on_signal)),
            writer: Some(BufWriter::new(file)),
        })
    }

    /// Writes `bytes` and commits the file.
    pub fn write_and_commit(mut self, bytes: &[u8]) -> anyhow::Result<()> {
        let target = self.target.clone();
        self.write_all(bytes)
            .with_context(|| format!("writing '{}'", target.display()))?;
        self.commit()
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

/// The directory holding `path` (`.` for a bare file name).
fn parent(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// Opens every output a command was given, as `(flag, path)`, before any
/// work: fails on the first path that cannot be written or when two flags
/// name the same file. Returns one entry per input, `None` where no path
/// was given.
pub fn open_all(files: &[(&str, Option<&Path>)]) -> anyhow::Result<Vec<Option<OutFile>>> {
    let given: Vec<(&str, &Path)> = files
        .iter()
        .filter_map(|(flag, p)| p.map(|p| (*flag, p)))
        .collect();
    for (i, (flag_a, a)) in given.iter().enumerate() {
        for (flag_b, b) in &given[i + 1..] {
            if same_target(a, b) {
                bail!("{flag_a} and {flag_b} name the same file '{}'", b.display());
            }
        }
    }
    files
        .iter()
        .map(|(flag, p)| p.map(|p| OutFile::create(p, flag)).transpose())
        .collect()
}

/// Whether two output paths name the same file (so writing both would
/// clobber one with the other): compared after resolving the directory.
pub fn same_target(a: &Path, b: &Path) -> bool {
    let resolve = |p: &Path| {
        let dir = parent(p).to_path_buf();
        let dir = dir.canonicalize().unwrap_or(dir);
        match p.file_name() {
            Some(name) => dir.join(name),
            None => p.to_path_buf(),
        }
    };
    let (ra, rb) = (resolve(a), resolve(b));
    if ra == rb {
        return true;
    }
    // Hard links or symlinks to one file.
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(&ra), std::fs::metadata(&rb)) {
        (Ok(ma), Ok(mb)) => ma.dev() == mb.dev() && ma.ino() == mb.ino(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unwritable_paths_fail_before_any_work() {
        let e = format!(
            "{:#}",
            OutFile::create(Path::new("/proc/version"), "--out").unwrap_err()
        );
        assert!(e.contains("no file can be created in /proc"), "{e}");
        let dir = tempfile::tempdir().unwrap();
        let e = OutFile::create(dir.path(), "--plot")
            .unwrap_err()
            .to_string();
        assert!(e.contains("is a directory"), "{e}");
        let missing = dir.path().join("no/such/dir/x.json");
        assert!(OutFile::create(&missing, "--out").is_err());
    }

    #[test]
    fn two_flags_naming_one_file_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.csv");
        let same = dir.path().join(".").join("a.csv");
        let e = open_all(&[("--timeseries", Some(&a)), ("--plot", Some(&same))])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("--timeseries and --plot name the same file"),
            "{e}"
        );
        let files = open_all(&[("--out", Some(&a)), ("--plot", None)]).unwrap();
        assert!(files[0].is_some() && files[1].is_none());
    }

    #[test]
    fn nothing_appears_until_commit_and_nothing_stays_on_drop() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("out.json");
        let f = OutFile::create(&target, "--out").unwrap();
        assert!(!target.exists());
        drop(f);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        let f = OutFile::create(&target, "--out").unwrap();
        f.write_and_commit(b"{}\n").unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"{}\n");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
