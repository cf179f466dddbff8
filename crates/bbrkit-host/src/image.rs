//! The before-image: every change bbrkit made, each with what was there
//! before (a file's bytes, mode or symlink target, or its absence; a
//! runtime value; an interface's root qdisc; the pins that existed) and,
//! for a file, what bbrkit put there (so an operator's later edit is told
//! from bbrkit's own content). Stored atomically as JSON in
//! `var/lib/bbrkit/before-image.json` under the root, so `rollback` works
//! after a crash or a reboot. Later `enable` runs only *add* what the image
//! does not know yet and never overwrite a prior state; what bbrkit wrote
//! is appended on every write. Never stores anything bbrkit did not (plan
//! to) change.
//!
//! ```text
//! version 2: { version, created_dirs, changes: [Recorded] }   (written)
//! version 1: { version, created_dirs, files, runtime, interfaces, bpf }
//!            (written by bbrkit before the change model; read and
//!             converted, every file with nothing known of what bbrkit wrote)
//! ```

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::{HostError, Root, atomic};

/// The format written now.
pub const VERSION: u32 = 2;

/// Text content up to this size is kept as the last thing bbrkit wrote,
/// so an operator's edit can be shown line by line.
const TEXT_KEPT: usize = 64 * 1024;

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

/// One recorded change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Recorded {
    /// A file or symlink bbrkit writes.
    File {
        /// Root-relative path (`etc/sysctl.d/99-zz-bbrkit.conf`).
        path: String,
        /// What was there before.
        prior: Prior,
        /// What bbrkit put there, each write's [`digest`] (oldest first).
        #[serde(default)]
        wrote: Vec<String>,
        /// The text of bbrkit's last write, when it is small text.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        wrote_text: Option<String>,
    },
    /// A runtime sysctl bbrkit writes.
    Sysctl {
        /// Dotted key.
        key: String,
        /// Value before bbrkit (None: key absent in this namespace).
        prior: Option<String>,
    },
    /// An interface whose root qdisc bbrkit re-creates.
    Interface {
        /// Interface name.
        name: String,
        /// Root qdisc kind before.
        root: String,
        /// Leaf kinds before (mq).
        leaves: Vec<String>,
    },
    /// A BPF congestion control bbrkit registered (or adopted) with a pin.
    BpfRegistration {
        /// The algorithm (`bbr3`).
        cc: String,
        /// The pins under `/sys/fs/bpf/bbrkit` (by algorithm) that existed
        /// before: rollback removes every other pin there.
        pinned_before: Vec<String>,
    },
    /// A per-connection policy bbrkit attached to a cgroup (its copy is a
    /// file change of its own).
    Policy {
        /// The cgroup v2 directory.
        cgroup: String,
        /// Its id then: the pin directories are named by it.
        cgroup_id: u64,
    },
}

/// The whole before-image.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BeforeImage {
    /// Format version ([`VERSION`]).
    pub version: u32,
    /// Directories bbrkit created (removed again by rollback when empty).
    pub created_dirs: Vec<String>,
    /// The changes, in the order they were first recorded.
    pub changes: Vec<Recorded>,
}

impl Default for BeforeImage {
    fn default() -> BeforeImage {
        BeforeImage {
            version: VERSION,
            created_dirs: Vec::new(),
            changes: Vec::new(),
        }
    }
}

/// Version 1, as bbrkit wrote it before the change model.
#[derive(Deserialize)]
struct V1 {
    created_dirs: Vec<String>,
    files: Vec<V1File>,
    runtime: Vec<V1Runtime>,
    interfaces: Vec<V1Interface>,
    #[serde(default)]
    bpf: Vec<V1Bpf>,
}

#[derive(Deserialize)]
struct V1File {
    path: String,
    prior: Prior,
}

#[derive(Deserialize)]
struct V1Runtime {
    key: String,
    prior: Option<String>,
}

#[derive(Deserialize)]
struct V1Interface {
    name: String,
    root: String,
    leaves: Vec<String>,
}

#[derive(Deserialize)]
struct V1Bpf {
    cc: String,
    pinned_before: Vec<String>,
}

impl From<V1> for BeforeImage {
    fn from(v: V1) -> BeforeImage {
        let files = v.files.into_iter().map(|f| Recorded::File {
            path: f.path,
            prior: f.prior,
            wrote: Vec::new(),
            wrote_text: None,
        });
        let runtime = v.runtime.into_iter().map(|r| Recorded::Sysctl {
            key: r.key,
            prior: r.prior,
        });
        let ifaces = v.interfaces.into_iter().map(|i| Recorded::Interface {
            name: i.name,
            root: i.root,
            leaves: i.leaves,
        });
        let bpf = v.bpf.into_iter().map(|b| Recorded::BpfRegistration {
            cc: b.cc,
            pinned_before: b.pinned_before,
        });
        BeforeImage {
            version: VERSION,
            created_dirs: v.created_dirs,
            changes: files.chain(runtime).chain(ifaces).chain(bpf).collect(),
        }
    }
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

/// What is at a path now: a file's bytes and mode, a symlink's target, or
/// nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Present {
    /// Nothing there.
    Absent,
    /// A regular file.
    File {
        /// Its bytes.
        bytes: Vec<u8>,
        /// Its permission bits.
        mode: u32,
    },
    /// A symlink.
    Symlink {
        /// Its target.
        target: String,
    },
}

impl Present {
    /// Reads `path` (does not follow a symlink).
    pub fn read(path: &Path) -> Result<Present, HostError> {
        match std::fs::symlink_metadata(path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Present::Absent),
            Err(e) => Err(HostError::io(path, e)),
            Ok(m) if m.file_type().is_symlink() => Ok(Present::Symlink {
                target: std::fs::read_link(path)
                    .map_err(|e| HostError::io(path, e))?
                    .display()
                    .to_string(),
            }),
            Ok(m) => Ok(Present::File {
                bytes: std::fs::read(path).map_err(|e| HostError::io(path, e))?,
                mode: m.permissions().mode() & 0o7777,
            }),
        }
    }

    /// As a prior state.
    pub fn prior(&self) -> Prior {
        match self {
            Present::Absent => Prior::Absent,
            Present::File { bytes, mode } => Prior::File {
                content_hex: hex_encode(bytes),
                mode: *mode,
            },
            Present::Symlink { target } => Prior::Symlink {
                target: target.clone(),
            },
        }
    }

    /// Its [`digest`] (None when absent).
    pub fn digest(&self) -> Option<String> {
        match self {
            Present::Absent => None,
            Present::File { bytes, .. } => Some(digest(bytes)),
            Present::Symlink { target } => Some(symlink_digest(target)),
        }
    }

    /// Its text, when it is a small text file.
    pub fn text(&self) -> Option<String> {
        match self {
            Present::File { bytes, .. } if bytes.len() <= TEXT_KEPT => {
                String::from_utf8(bytes.clone()).ok()
            }
            _ => None,
        }
    }
}

/// What the image records of content bbrkit wrote: `sha256:<hex>`.
pub fn digest(bytes: &[u8]) -> String {
    format!("sha256:{}", hex_encode(&Sha256::digest(bytes)))
}

/// What the image records of a symlink bbrkit made: `symlink:<target>`.
pub fn symlink_digest(target: &str) -> String {
    format!("symlink:{target}")
}

impl Prior {
    /// Captures the current state of `path` (does not follow a symlink).
    pub fn capture(path: &Path) -> Result<Prior, HostError> {
        Ok(Present::read(path)?.prior())
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

    /// True when `now` is this state (a file's mode aside). Compares bytes,
    /// never hex-encodes what is there now (it may be a large binary).
    pub fn matches(&self, now: &Present) -> bool {
        match (self, now) {
            (Prior::Absent, Present::Absent) => true,
            (Prior::File { content_hex, .. }, Present::File { bytes, .. }) => {
                content_hex.len() == 2 * bytes.len()
                    && hex_decode(content_hex).is_some_and(|b| b == *bytes)
            }
            (Prior::Symlink { target }, Present::Symlink { target: now }) => target == now,
            _ => false,
        }
    }
}

/// Loads the before-image (either version), `Ok(None)` when there is none.
pub fn load(root: &Root) -> Result<Option<BeforeImage>, HostError> {
    let path = root.state_file();
    let bytes = match std::fs::read(&path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(HostError::io(&path, e)),
        Ok(b) => b,
    };
    let bad = |reason: String| HostError::State {
        path: path.clone(),
        reason,
    };
    let value: serde_json::Value =
        serde_json::from_slice(&bytes).map_err(|e| bad(e.to_string()))?;
    match value.get("version").and_then(serde_json::Value::as_u64) {
        Some(1) => serde_json::from_value::<V1>(value)
            .map(|v| Some(v.into()))
            .map_err(|e| bad(e.to_string())),
        Some(2) => serde_json::from_value(value).map_err(|e| bad(e.to_string())),
        v => Err(bad(format!(
            "version {} is not one this bbrkit reads (1, 2)",
            v.map_or("missing".to_string(), |v| v.to_string())
        ))),
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
    /// The record of the file at root-relative `path`, if any.
    pub fn file(&self, path: &str) -> Option<&Recorded> {
        self.changes
            .iter()
            .find(|c| matches!(c, Recorded::File { path: p, .. } if p == path))
    }

    /// Adds `entry` unless a change of the same thing is recorded (the
    /// first record keeps the prior state).
    pub fn record(&mut self, entry: Recorded) {
        let same = |c: &Recorded| match (c, &entry) {
            (Recorded::File { path: a, .. }, Recorded::File { path: b, .. }) => a == b,
            (Recorded::Sysctl { key: a, .. }, Recorded::Sysctl { key: b, .. }) => a == b,
            (Recorded::Interface { name: a, .. }, Recorded::Interface { name: b, .. }) => a == b,
            (Recorded::BpfRegistration { cc: a, .. }, Recorded::BpfRegistration { cc: b, .. }) => {
                a == b
            }
            (
                Recorded::Policy {
                    cgroup: a,
                    cgroup_id: i,
                },
                Recorded::Policy {
                    cgroup: b,
                    cgroup_id: j,
                },
            ) => a == b || i == j,
            _ => false,
        };
        if !self.changes.iter().any(same) {
            self.changes.push(entry);
        }
    }

    /// Notes that bbrkit writes `written` to the file at `path` (recorded
    /// already): appended to what it wrote there.
    pub fn wrote(&mut self, path: &str, written: &Present) {
        for c in &mut self.changes {
            if let Recorded::File {
                path: p,
                wrote,
                wrote_text,
                ..
            } = c
                && p == path
            {
                if let Some(d) = written.digest() {
                    wrote.retain(|w| *w != d);
                    wrote.push(d);
                }
                *wrote_text = written.text();
            }
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

        let mut img = BeforeImage::default();
        for p in [&file, &link, &absent] {
            img.record(Recorded::File {
                path: root.relative(p),
                prior: Prior::capture(p).unwrap(),
                wrote: Vec::new(),
                wrote_text: None,
            });
        }
        img.record(Recorded::Sysctl {
            key: "k".into(),
            prior: Some("v".into()),
        });
        img.record(Recorded::Sysctl {
            key: "k".into(),
            prior: Some("changed".into()),
        }); // first record wins
        let mine = Present::File {
            bytes: b"mine\n".to_vec(),
            mode: 0o644,
        };
        img.wrote(&root.relative(&absent), &mine);
        save(&root, &img).unwrap();
        let loaded = load(&root).unwrap().unwrap();
        assert_eq!(loaded, img);
        assert_eq!(
            loaded.changes[3],
            Recorded::Sysctl {
                key: "k".into(),
                prior: Some("v".into())
            }
        );
        assert!(matches!(
            loaded.file(&root.relative(&absent)),
            Some(Recorded::File { wrote, wrote_text: Some(t), .. })
                if *wrote == [digest(b"mine\n")] && t == "mine\n"
        ));

        // Change everything, then restore from the loaded image.
        std::fs::write(&file, "other").unwrap();
        std::fs::remove_file(&link).unwrap();
        std::fs::write(&link, "now a file").unwrap();
        std::fs::write(&absent, "new").unwrap();
        for c in &loaded.changes {
            let Recorded::File { path, prior, .. } = c else {
                continue;
            };
            let p = root.path(path);
            assert!(!prior.matches(&Present::read(&p).unwrap()));
            prior.restore(&p).unwrap();
            assert!(prior.matches(&Present::read(&p).unwrap()), "{path}");
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
    fn corrupt_or_unknown_state_is_a_typed_error() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path()).unwrap();
        std::fs::create_dir_all(root.state_dir()).unwrap();
        std::fs::write(root.state_file(), "{not json").unwrap();
        assert!(matches!(load(&root), Err(HostError::State { .. })));
        std::fs::write(root.state_file(), r#"{"version": 9}"#).unwrap();
        let e = load(&root).unwrap_err().to_string();
        assert!(e.contains("version 9 is not one this bbrkit reads"), "{e}");
    }

    /// An image the bbrkit before the change model wrote (`enable --tune`
    /// then `enable --cc bbr3`), as it is on operators' hosts.
    #[test]
    fn a_version_1_image_reads_as_the_same_changes() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path()).unwrap();
        std::fs::create_dir_all(root.state_dir()).unwrap();
        std::fs::write(
            root.state_file(),
            include_str!("../tests/fixtures/v1-before-image-bbr3.json"),
        )
        .unwrap();
        let img = load(&root).unwrap().unwrap();
        assert_eq!(img.version, VERSION);
        assert_eq!(
            img.created_dirs[3],
            "etc/systemd/system/sysinit.target.wants"
        );
        let kinds: Vec<&str> = img
            .changes
            .iter()
            .map(|c| match c {
                Recorded::File { .. } => "file",
                Recorded::Sysctl { .. } => "sysctl",
                Recorded::Interface { .. } => "interface",
                Recorded::BpfRegistration { .. } => "bpf",
                Recorded::Policy { .. } => "policy",
            })
            .collect();
        assert_eq!(kinds, ["file", "file", "file", "sysctl", "bpf"]);
        assert!(matches!(
            &img.changes[2],
            Recorded::File { path, prior: Prior::Absent, wrote, .. }
                if path == "etc/sysctl.d/99-zz-bbrkit.conf" && wrote.is_empty()
        ));
    }
}
