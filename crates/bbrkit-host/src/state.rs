//! The before-image: what the host looked like before bbrkit's first change
//! (prior content or absence of every file it writes, runtime values,
//! interface qdiscs). Stored atomically as JSON in `var/lib/bbrkit/` under the
//! root, so `rollback` works after a crash or a reboot. Later `enable` runs
//! only *add* what the image does not know yet; they never overwrite the
//! original. Never stores anything bbrkit did not (plan to) change.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::{HostError, Root, atomic};

/// Prior state of one file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Prior {
    /// The file did not exist.
    Absent,
    /// A regular file: its bytes (hex) and permission bits.
    File {
        /// Content, hex-encoded.
        content_hex: String,
        /// Permission bits.
        mode: u32,
    },
    /// A symlink and its target.
    Symlink {
        /// Link target as stored.
        target: String,
    },
}

/// A file bbrkit writes, with its prior state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileImage {
    /// Root-relative path (`etc/sysctl.d/99-zz-bbrkit.conf`).
    pub path: String,
    /// What was there before.
    pub prior: Prior,
}

/// A runtime sysctl bbrkit writes, with its prior value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RuntimeImage {
    /// Dotted key.
    pub key: String,
    /// Value before bbrkit (None: key absent in this namespace).
    pub prior: Option<String>,
}

/// An interface whose root qdisc bbrkit re-creates.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InterfaceImage {
    /// Interface name.
    pub name: String,
    /// Root qdisc kind before.
    pub root: String,
    /// Leaf kinds before (mq).
    pub leaves: Vec<String>,
}

/// The whole before-image.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BeforeImage {
    /// Format version (1).
    pub version: u32,
    /// Directories bbrkit created (removed again by rollback when empty).
    pub created_dirs: Vec<String>,
    /// Files.
    pub files: Vec<FileImage>,
    /// Runtime values.
    pub runtime: Vec<RuntimeImage>,
    /// Interfaces whose root qdisc is re-created.
    pub interfaces: Vec<InterfaceImage>,
    /// BPF congestion controls bbrkit registered (they were not registered
    /// before); rollback removes their pins, which unregisters them.
    #[serde(default)]
    pub bpf: Vec<BpfImage>,
}

/// A BPF congestion control `enable` registered with a pinned link.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BpfImage {
    /// The algorithm (`bbr3`).
    pub cc: String,
    /// The pins under `/sys/fs/bpf/bbrkit` (by algorithm) that existed
    /// before: rollback removes every other pin there, which covers every
    /// struct_ops map the object registered (the pins are only known once
    /// registered, and the image is written before).
    pub pinned_before: Vec<String>,
}

/// Lower-case hex.
pub fn hex_encode(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Inverse of [`hex_encode`].
pub fn hex_decode(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

impl Prior {
    /// Captures the current state of `path` (does not follow a symlink).
    pub fn capture(path: &Path) -> Result<Prior, HostError> {
        match std::fs::symlink_metadata(path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Prior::Absent),
            Err(e) => Err(HostError::io(path, e)),
            Ok(m) if m.file_type().is_symlink() => Ok(Prior::Symlink {
                target: std::fs::read_link(path)
                    .map_err(|e| HostError::io(path, e))?
                    .display()
                    .to_string(),
            }),
            Ok(m) => Ok(Prior::File {
                content_hex: hex_encode(&std::fs::read(path).map_err(|e| HostError::io(path, e))?),
                mode: m.permissions().mode() & 0o7777,
            }),
        }
    }

    /// Puts `path` back into this state, atomically.
    pub fn restore(&self, path: &Path) -> Result<(), HostError> {
        let r = match self {
            Prior::Absent => atomic::remove_durable(path),
            Prior::File { content_hex, mode } => {
                let bytes = hex_decode(content_hex).ok_or_else(|| HostError::State {
                    path: path.into(),
                    reason: "corrupt hex content".into(),
                })?;
                atomic::write_atomic(path, &bytes, *mode)
            }
            Prior::Symlink { target } => atomic::symlink_atomic(path, Path::new(target)),
        };
        r.map_err(|e| HostError::io(path, e))?;
        atomic::remove_stale_temp(path).map_err(|e| HostError::io(path, e))
    }

    /// True when `path` is in this state now.
    pub fn matches(&self, path: &Path) -> bool {
        Prior::capture(path).is_ok_and(|now| match (&now, self) {
            (Prior::File { content_hex: a, .. }, Prior::File { content_hex: b, .. }) => a == b,
            _ => &now == self,
        })
    }
}

/// Loads the before-image, `Ok(None)` when there is none.
pub fn load(root: &Root) -> Result<Option<BeforeImage>, HostError> {
    let path = root.state_file();
    match std::fs::read(&path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(HostError::io(&path, e)),
        Ok(b) => serde_json::from_slice(&b)
            .map(Some)
            .map_err(|e| HostError::State {
                path,
                reason: e.to_string(),
            }),
    }
}

/// Saves the before-image atomically (creating `var/lib/bbrkit`).
pub fn save(root: &Root, image: &BeforeImage) -> Result<(), HostError> {
    let path = root.state_file();
    let dir = root.state_dir();
    std::fs::create_dir_all(&dir).map_err(|e| HostError::io(&dir, e))?;
    let text = serde_json::to_vec_pretty(image).map_err(|e| HostError::State {
        path: path.clone(),
        reason: e.to_string(),
    })?;
    atomic::write_atomic(&path, &text, 0o600).map_err(|e| HostError::io(&path, e))
}

/// Removes the before-image after a complete rollback.
pub fn discard(root: &Root) -> Result<(), HostError> {
    let path = root.state_file();
    atomic::remove_durable(&path).map_err(|e| HostError::io(&path, e))?;
    atomic::remove_stale_temp(&path).map_err(|e| HostError::io(&path, e))?;
    let _ = std::fs::remove_dir(root.state_dir()); // only when empty
    Ok(())
}

impl BeforeImage {
    /// Adds a file's prior state unless already recorded.
    pub fn record_file(&mut self, root: &Root, path: &Path) -> Result<(), HostError> {
        let rel = root.relative(path);
        if !self.files.iter().any(|f| f.path == rel) {
            self.files.push(FileImage {
                prior: Prior::capture(path)?,
                path: rel,
            });
        }
        Ok(())
    }

    /// Adds a runtime value unless already recorded.
    pub fn record_runtime(&mut self, key: &str, prior: Option<String>) {
        if !self.runtime.iter().any(|r| r.key == key) {
            self.runtime.push(RuntimeImage {
                key: key.into(),
                prior,
            });
        }
    }

    /// Adds a BPF registration unless already recorded (the first record
    /// wins: a later `enable` finds it registered by bbrkit already).
    pub fn record_bpf(&mut self, cc: &str, pinned_before: Vec<String>) {
        if !self.bpf.iter().any(|b| b.cc == cc) {
            self.bpf.push(BpfImage {
                cc: cc.into(),
                pinned_before,
            });
        }
    }

    /// Adds an interface unless already recorded.
    pub fn record_interface(&mut self, i: InterfaceImage) {
        if !self.interfaces.iter().any(|x| x.name == i.name) {
            self.interfaces.push(i);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trip() {
        let b: Vec<u8> = (0..=255).collect();
        assert_eq!(hex_decode(&hex_encode(&b)).unwrap(), b);
        assert_eq!(hex_decode("abc"), None);
        assert_eq!(hex_decode("zz"), None);
    }

    #[test]
    fn before_image_round_trips_files_symlinks_and_absence() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path()).unwrap();
        let d = root.path("etc/sysctl.d");
        std::fs::create_dir_all(&d).unwrap();
        let file = d.join("a.conf");
        std::fs::write(&file, b"x = 1\n\xff\x00binary").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o640)).unwrap();
        let link = d.join("99-sysctl.conf");
        std::os::unix::fs::symlink("../sysctl.conf", &link).unwrap();
        let absent = d.join("99-zz-bbrkit.conf");

        let mut img = BeforeImage {
            version: 1,
            ..Default::default()
        };
        for p in [&file, &link, &absent] {
            img.record_file(&root, p).unwrap();
        }
        img.record_runtime("k", Some("v".into()));
        img.record_runtime("k", Some("changed".into())); // first record wins
        save(&root, &img).unwrap();
        let loaded = load(&root).unwrap().unwrap();
        assert_eq!(loaded, img);
        assert_eq!(loaded.runtime[0].prior.as_deref(), Some("v"));

        // Change everything, then restore from the loaded image.
        std::fs::write(&file, "other").unwrap();
        std::fs::remove_file(&link).unwrap();
        std::fs::write(&link, "now a file").unwrap();
        std::fs::write(&absent, "new").unwrap();
        for f in &loaded.files {
            let p = root.path(&f.path);
            assert!(!f.prior.matches(&p));
            f.prior.restore(&p).unwrap();
            assert!(f.prior.matches(&p), "{}", f.path);
        }
        assert_eq!(std::fs::read(&file).unwrap(), b"x = 1\n\xff\x00binary");
        assert_eq!(
            std::fs::metadata(&file).unwrap().permissions().mode() & 0o777,
            0o640
        );
        assert_eq!(
            std::fs::read_link(&link).unwrap(),
            Path::new("../sysctl.conf")
        );
        assert!(!absent.exists());
        discard(&root).unwrap();
        assert!(load(&root).unwrap().is_none());
        assert!(!root.state_dir().exists());
    }

    #[test]
    fn corrupt_state_is_a_typed_error() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path()).unwrap();
        std::fs::create_dir_all(root.state_dir()).unwrap();
        std::fs::write(root.state_file(), "{not json").unwrap();
        assert!(matches!(load(&root), Err(HostError::State { .. })));
    }
}
