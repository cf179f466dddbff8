//! [`Root`]: maps every on-disk path bbrkit reads or writes under an
//! alternate filesystem root (`--root DIR`). Never maps `/proc` or `/sys`:
//! those describe the live kernel, not files on a disk.

use std::path::{Path, PathBuf};

use crate::HostError;

/// An alternate filesystem root (`/` on a live system).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Root {
    base: PathBuf,
}

/// sysctl.d directories in masking order (first holds the winning basename),
/// as systemd-sysctl reads them (`man sysctl.d`).
pub const SYSTEMD_DIRS: [&str; 4] = [
    "etc/sysctl.d",
    "run/sysctl.d",
    "usr/local/lib/sysctl.d",
    "usr/lib/sysctl.d",
];

/// sysctl.d directories in masking order as procps `sysctl --system` reads
/// them (`src/sysctl.c` `PreloadSystem`), followed by `etc/sysctl.conf`.
pub const PROCPS_DIRS: [&str; 5] = [
    "etc/sysctl.d",
    "run/sysctl.d",
    "usr/local/lib/sysctl.d",
    "usr/lib/sysctl.d",
    "lib/sysctl.d",
];

impl Root {
    /// The live system's root, `/`.
    pub fn system() -> Root {
        Root {
            base: PathBuf::from("/"),
        }
    }

    /// An alternate root; it must be an existing directory.
    pub fn new(dir: impl AsRef<Path>) -> Result<Root, HostError> {
        let dir = dir.as_ref();
        let bad = |reason: &str| HostError::BadRoot {
            path: dir.to_path_buf(),
            reason: reason.to_string(),
        };
        match std::fs::metadata(dir) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => return Err(bad("not a directory")),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(bad("does not exist"));
            }
            Err(e) => return Err(bad(&e.to_string())),
        }
        let base = std::fs::canonicalize(dir).map_err(|e| bad(&e.to_string()))?;
        Ok(Root { base })
    }

    /// `Root::new(dir)` when given, else the live system.
    pub fn from_option(dir: Option<&Path>) -> Result<Root, HostError> {
        match dir {
            Some(d) => Root::new(d),
            None => Ok(Root::system()),
        }
    }

    /// True for the live system root `/`.
    pub fn is_system(&self) -> bool {
        self.base == Path::new("/")
    }

    /// The directory this root maps `/` to.
    pub fn base(&self) -> &Path {
        &self.base
    }

    /// Maps an absolute or root-relative path (`/etc/x` or `etc/x`) under
    /// this root.
    pub fn path(&self, rel: impl AsRef<Path>) -> PathBuf {
        let rel = rel.as_ref();
        let rel = rel.strip_prefix("/").unwrap_or(rel);
        self.base.join(rel)
    }

    /// bbrkit's own sysctl.d file.
    pub fn bbrkit_file(&self) -> PathBuf {
        self.path(format!("etc/sysctl.d/{}", crate::SYSCTL_FILE_NAME))
    }

    /// The directory holding the before-image.
    pub fn state_dir(&self) -> PathBuf {
        self.path("var/lib/bbrkit")
    }

    /// The before-image file.
    pub fn state_file(&self) -> PathBuf {
        self.path("var/lib/bbrkit/before-image.json")
    }

    /// A path inside this root shown the way the operator should read it:
    /// absolute on the live system, else prefixed with the root.
    pub fn show(&self, p: &Path) -> String {
        p.display().to_string()
    }

    /// The root-relative form (`etc/sysctl.d/x.conf`) of a path inside it.
    pub fn relative(&self, p: &Path) -> String {
        p.strip_prefix(&self.base)
            .unwrap_or(p)
            .display()
            .to_string()
    }
}

/// The directories on the way to `dir` that do not exist yet, outermost
/// first (what creating `dir` creates).
pub(crate) fn missing_dirs(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = dir
        .ancestors()
        .take_while(|p| !p.exists())
        .map(Path::to_path_buf)
        .collect();
    out.reverse();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_absolute_and_relative_paths_under_base() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path()).unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        assert_eq!(root.path("/etc/sysctl.conf"), base.join("etc/sysctl.conf"));
        assert_eq!(root.path("etc/sysctl.conf"), base.join("etc/sysctl.conf"));
        assert_eq!(
            root.bbrkit_file(),
            base.join("etc/sysctl.d/99-zz-bbrkit.conf")
        );
        assert_eq!(
            root.relative(&root.state_file()),
            "var/lib/bbrkit/before-image.json"
        );
        assert!(!root.is_system());
        assert!(Root::system().is_system());
    }

    #[test]
    fn rejects_file_and_missing_root() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        std::fs::write(&file, "x").unwrap();
        let e = Root::new(&file).unwrap_err().to_string();
        assert!(e.contains("not a directory"), "{e}");
        let e = Root::new(dir.path().join("nope")).unwrap_err().to_string();
        assert!(e.contains("does not exist"), "{e}");
    }
}
