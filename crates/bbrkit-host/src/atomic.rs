//! Crash-safe file changes: write a temporary file in the same directory,
//! fsync it, rename it over the target, fsync the directory. A reader (or a
//! reboot) sees the old file or the new one, never a torn one. Never follows
//! a symlink at the target: a symlink is replaced, not written through.
//!
//! bbrkit's one atomic writer: the host commands' files and the before-image,
//! and the CLI's output files (`metrics --textfile`, `lab --out`, `sim
//! --timeseries`, which streams into [`temp_path`] and ends with [`commit`]).

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Suffix of bbrkit's temporary files. It does not end in `.conf`, so
/// neither systemd-sysctl nor procps ever reads a leftover one.
pub const TEMP_SUFFIX: &str = ".bbrkit-tmp";

/// The temporary sibling used while replacing `path`.
pub fn temp_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!(".{name}{TEMP_SUFFIX}"))
}

/// Fsyncs a directory so a rename or unlink inside it is durable.
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// The directory holding `path` (`.` for a bare file name).
fn parent(path: &Path) -> io::Result<&Path> {
    match path.parent() {
        Some(p) if p.as_os_str().is_empty() => Ok(Path::new(".")),
        Some(p) => Ok(p),
        None => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "path has no parent",
        )),
    }
}

/// Makes the fully written temporary file `tmp` (open as `file`) durable
/// and renames it over `path`, then fsyncs the directory so the rename is
/// durable too. Removes `tmp` when it fails.
pub fn commit(file: File, tmp: &Path, path: &Path) -> io::Result<()> {
    let result = file
        .sync_all()
        .and_then(|()| fs::rename(tmp, path))
        .and_then(|()| sync_dir(parent(path)?));
    if result.is_err() {
        let _ = fs::remove_file(tmp);
    }
    result
}

/// Atomically replaces `path` with `bytes` and permission bits `mode`.
pub fn write_atomic(path: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
    parent(path)?; // the directory the rename happens in
    let tmp = temp_path(path);
    let _ = fs::remove_file(&tmp);
    let mut f = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(&tmp)?;
    let result = f
        .write_all(bytes)
        .and_then(|()| f.set_permissions(fs::Permissions::from_mode(mode)))
        .and_then(|()| f.sync_all());
    if let Err(e) = result {
        let _ = fs::remove_file(&tmp);
        return Err(e);
    }
    crate::crash_point(&format!(
        "temp-written:{}",
        path.file_name()
            .map(|n| n.to_string_lossy())
            .unwrap_or_default()
    ));
    commit(f, &tmp, path)
}

/// Atomically replaces `path` with a symlink to `target`.
pub fn symlink_atomic(path: &Path, target: &Path) -> io::Result<()> {
    let dir = parent(path)?;
    let tmp = temp_path(path);
    let _ = fs::remove_file(&tmp);
    std::os::unix::fs::symlink(target, &tmp)?;
    fs::rename(&tmp, path)?;
    sync_dir(dir)
}

/// Removes `path` (absent is fine) and makes the removal durable.
pub fn remove_durable(path: &Path) -> io::Result<()> {
    match fs::remove_file(path) {
        Ok(()) => sync_dir(parent(path)?),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

/// Removes a leftover temporary file of `path` from an interrupted write.
pub fn remove_stale_temp(path: &Path) -> io::Result<()> {
    remove_durable(&temp_path(path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_content_and_mode_and_leaves_no_temp() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.conf");
        fs::write(&p, "old\n").unwrap();
        write_atomic(&p, b"new\n", 0o640).unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"new\n");
        assert_eq!(
            fs::metadata(&p).unwrap().permissions().mode() & 0o777,
            0o640
        );
        let names: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("a.conf")]);
    }

    #[test]
    fn replaces_a_symlink_instead_of_writing_through_it() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("sysctl.conf");
        fs::write(&target, "keep\n").unwrap();
        let link = dir.path().join("99-x.conf");
        std::os::unix::fs::symlink("sysctl.conf", &link).unwrap();
        write_atomic(&link, b"mine\n", 0o644).unwrap();
        assert_eq!(fs::read(&target).unwrap(), b"keep\n");
        assert!(
            !fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        symlink_atomic(&link, Path::new("sysctl.conf")).unwrap();
        assert_eq!(fs::read_link(&link).unwrap(), Path::new("sysctl.conf"));
    }

    #[test]
    fn stale_temp_is_not_a_conf_file_and_is_removed() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("99-zz-bbrkit.conf");
        let t = temp_path(&p);
        assert!(!t.to_string_lossy().ends_with(".conf"));
        fs::write(&t, "torn").unwrap();
        remove_stale_temp(&p).unwrap();
        assert!(!t.exists());
        remove_durable(&p).unwrap(); // absent is fine
    }
}
