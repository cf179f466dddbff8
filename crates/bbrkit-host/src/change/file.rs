//! Files bbrkit owns — its sysctl.d file, the boot unit and its enabling
//! symlink, the binary the unit runs — as one kind of change. Each write is
//! atomic and recorded with the prior state and what bbrkit put there (its
//! SHA-256), so an operator's later edit is recognised the way dpkg
//! recognises an edited conffile: content that differs from everything
//! bbrkit wrote there belongs to the operator now. `enable` then refuses to
//! replace it and `rollback` keeps it, each saying so in one line with the
//! way forward ([`Edit`]). Only writes under the root; never follows a
//! symlink at the target.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::Undo;
use crate::image::{BeforeImage, Present, Prior, Recorded};
use crate::outcome::{Action, ActionKind};
use crate::{HostError, Root, atomic};

/// Replace a file atomically.
#[derive(Debug, Clone)]
pub struct WriteFile {
    /// The file.
    pub path: PathBuf,
    /// Its new content.
    pub content: Vec<u8>,
    /// Its permission bits.
    pub mode: u32,
}

/// Create (or replace) a symlink atomically.
#[derive(Debug, Clone)]
pub struct WriteSymlink {
    /// The link.
    pub path: PathBuf,
    /// What it points to.
    pub target: PathBuf,
}

/// Records `path`'s prior state (first record wins) and that bbrkit writes
/// `written` there.
fn record(
    root: &Root,
    image: &mut BeforeImage,
    path: &Path,
    written: &Present,
) -> Result<(), HostError> {
    let rel = root.relative(path);
    image.record(Recorded::File {
        path: rel.clone(),
        prior: Prior::capture(path)?,
        wrote: Vec::new(),
        wrote_text: None,
    });
    image.wrote(&rel, written);
    Ok(())
}

fn create_parent(path: &Path) -> Result<(), HostError> {
    match path.parent() {
        Some(dir) => std::fs::create_dir_all(dir).map_err(|e| HostError::io(dir, e)),
        None => Ok(()),
    }
}

impl WriteFile {
    /// What it writes.
    pub fn written(&self) -> Present {
        Present::File {
            bytes: self.content.clone(),
            mode: self.mode,
        }
    }

    pub(super) fn record(&self, root: &Root, image: &mut BeforeImage) -> Result<(), HostError> {
        record(root, image, &self.path, &self.written())
    }

    pub(super) fn apply(&self) -> Result<(), HostError> {
        create_parent(&self.path)?;
        atomic::write_atomic(&self.path, &self.content, self.mode)
            .map_err(|e| HostError::io(&self.path, e))
    }
}

impl WriteSymlink {
    /// What it writes.
    pub fn written(&self) -> Present {
        Present::Symlink {
            target: self.target.display().to_string(),
        }
    }

    pub(super) fn record(&self, root: &Root, image: &mut BeforeImage) -> Result<(), HostError> {
        record(root, image, &self.path, &self.written())
    }

    pub(super) fn apply(&self) -> Result<(), HostError> {
        create_parent(&self.path)?;
        atomic::symlink_atomic(&self.path, &self.target).map_err(|e| HostError::io(&self.path, e))
    }
}

/// Remove a file or symlink bbrkit wrote earlier (the boot unit of an
/// algorithm a new default replaces). Its prior state was recorded when
/// bbrkit first wrote it (first record wins), so rollback still puts back
/// what was there before bbrkit.
#[derive(Debug, Clone)]
pub struct RemoveFile {
    /// The file.
    pub path: PathBuf,
}

impl RemoveFile {
    pub(super) fn record(&self, root: &Root, image: &mut BeforeImage) -> Result<(), HostError> {
        image.record(Recorded::File {
            path: root.relative(&self.path),
            prior: Prior::capture(&self.path)?,
            wrote: Vec::new(),
            wrote_text: None,
        });
        Ok(())
    }

    pub(super) fn apply(&self) -> Result<(), HostError> {
        match std::fs::remove_file(&self.path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(HostError::io(&self.path, e)),
            _ => Ok(()),
        }
    }
}

/// An operator's edit of a file bbrkit owns: the lines that differ from
/// what bbrkit wrote last (when it kept that text).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Edit {
    /// The file, as the operator names it.
    pub file: String,
    /// Lines the file has that bbrkit did not write.
    pub added: Vec<String>,
    /// Lines bbrkit wrote that the file no longer has.
    pub removed: Vec<String>,
}

/// At most this many changed lines are named in a one-line summary.
const LINES_SHOWN: usize = 3;

impl Edit {
    /// `+added; -removed` (the first few), or `its content differs` when
    /// there is no text to compare.
    pub fn summary(&self) -> String {
        let lines: Vec<String> = self
            .added
            .iter()
            .map(|l| format!("+{l}"))
            .chain(self.removed.iter().map(|l| format!("-{l}")))
            .collect();
        if lines.is_empty() {
            return "its content differs from what bbrkit wrote".into();
        }
        let more = lines.len().saturating_sub(LINES_SHOWN);
        let mut s = lines
            .into_iter()
            .take(LINES_SHOWN)
            .collect::<Vec<_>>()
            .join("; ");
        if more > 0 {
            s.push_str(&format!("; and {more} more"));
        }
        s
    }
}

/// Lines of `a` that `b` lacks (blank lines aside), in `a`'s order.
fn lines_not_in(a: &str, b: &str) -> Vec<String> {
    let theirs: Vec<&str> = b.lines().map(str::trim_end).collect();
    a.lines()
        .map(str::trim_end)
        .filter(|l| !l.trim().is_empty() && !theirs.contains(l))
        .map(String::from)
        .collect()
}

/// Whether the file at `path` (now `now`) was edited since bbrkit wrote
/// it. Nothing to say when bbrkit has no record of writing it (no image, a
/// version 1 image, a path it never wrote), when the file is gone, or when
/// it holds something bbrkit wrote.
pub fn edit(image: Option<&BeforeImage>, root: &Root, path: &Path, now: &Present) -> Option<Edit> {
    let Some(Recorded::File {
        wrote, wrote_text, ..
    }) = image?.file(&root.relative(path))
    else {
        return None;
    };
    let d = now.digest()?;
    if wrote.is_empty() || wrote.contains(&d) {
        return None;
    }
    let (added, removed) = match (now.text(), wrote_text) {
        (Some(n), Some(w)) => (lines_not_in(&n, w), lines_not_in(w, &n)),
        _ => (Vec::new(), Vec::new()),
    };
    Some(Edit {
        file: root.show(path),
        added,
        removed,
    })
}

/// Put a file back as the image recorded it.
#[derive(Debug, Clone)]
pub struct Restore {
    /// The file.
    pub path: PathBuf,
    /// Its recorded state.
    pub prior: Prior,
}

impl Restore {
    pub(super) fn apply(self, a: &mut Action) -> Result<(), HostError> {
        self.prior.restore(&self.path)?;
        a.action = if a.action == ActionKind::WouldRemove {
            ActionKind::Removed
        } else {
            ActionKind::Restored
        };
        Ok(())
    }
}

/// Removes the leftover temporary file of an interrupted write of `path`.
pub fn remove_temp(path: &Path, best_effort: bool) -> Result<(), HostError> {
    let r = atomic::remove_stale_temp(path);
    if best_effort {
        return Ok(());
    }
    r.map_err(|e| HostError::io(path, e))
}

/// `rollback`'s plan for the recorded files: each restored (or removed),
/// already as before, or kept because the operator edited it. Pushes one
/// line per file into `lines` and the steps into `steps`; returns whether
/// an edited file was kept (the rollback is then incomplete).
pub fn plan_undo(
    image: &BeforeImage,
    root: &Root,
    dry_run: bool,
    lines: &mut Vec<Action>,
    steps: &mut Vec<(Undo, Option<usize>)>,
) -> Result<bool, HostError> {
    let mut kept = false;
    for c in &image.changes {
        let Recorded::File { path, prior, .. } = c else {
            continue;
        };
        let path = root.path(path);
        let shown = root.show(&path);
        let now = Present::read(&path)?;
        if prior.matches(&now) {
            lines.push(Action::new(
                &shown,
                ActionKind::Unchanged,
                "already as before",
            ));
            let best_effort = false;
            steps.push((Undo::RemoveTemp { path, best_effort }, None));
            continue;
        }
        if let Some(e) = edit(Some(image), root, &path, &now) {
            kept = true;
            let verb = if dry_run {
                ActionKind::WouldKeep
            } else {
                ActionKind::Kept
            };
            lines.push(Action::new(&shown, verb, kept_detail(&e)));
            continue;
        }
        let (verb, detail) = match prior {
            Prior::Absent => (ActionKind::WouldRemove, "did not exist before".to_string()),
            Prior::File { content_hex, .. } => (
                ActionKind::WouldRestore,
                format!("{} bytes as before", content_hex.len() / 2),
            ),
            Prior::Symlink { target } => (
                ActionKind::WouldRestore,
                format!("symlink to {target} as before"),
            ),
        };
        let restore = Restore {
            path,
            prior: prior.clone(),
        };
        steps.push((Undo::RestoreFile(restore), Some(lines.len())));
        lines.push(Action::new(&shown, verb, detail));
    }
    Ok(kept)
}

/// Why rollback leaves an edited file, and what to do.
fn kept_detail(e: &Edit) -> String {
    format!(
        "edited since bbrkit wrote it ({}): your edit is kept and bbrkit's lines in it stay in effect; move your lines to a file of your own, delete this one, then run `bbrkit rollback` again",
        e.summary()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root() -> (tempfile::TempDir, Root) {
        let d = tempfile::tempdir().unwrap();
        let r = Root::new(d.path()).unwrap();
        (d, r)
    }

    #[test]
    fn an_edit_is_what_bbrkit_did_not_write() {
        let (_d, root) = root();
        let path = root.path("etc/sysctl.d/99-zz-bbrkit.conf");
        let w = WriteFile {
            path: path.clone(),
            content: b"# bbrkit\nnet.ipv4.tcp_congestion_control = bbr\n".to_vec(),
            mode: 0o644,
        };
        let mut image = BeforeImage::default();
        w.record(&root, &mut image).unwrap();
        w.apply().unwrap();
        let now = Present::read(&path).unwrap();
        assert_eq!(edit(Some(&image), &root, &path, &now), None, "bbrkit's own");
        assert_eq!(edit(None, &root, &path, &now), None, "no record to compare");

        std::fs::write(
            &path,
            "# bbrkit\nnet.ipv4.tcp_congestion_control = bbr\nnet.ipv4.tcp_ecn = 1\n",
        )
        .unwrap();
        let now = Present::read(&path).unwrap();
        let e = edit(Some(&image), &root, &path, &now).unwrap();
        assert_eq!(e.added, ["net.ipv4.tcp_ecn = 1"]);
        assert!(e.removed.is_empty());
        assert_eq!(e.summary(), "+net.ipv4.tcp_ecn = 1");

        // Deleted by the operator: nothing to protect.
        std::fs::remove_file(&path).unwrap();
        assert_eq!(edit(Some(&image), &root, &path, &Present::Absent), None);
    }

    #[test]
    fn rollback_keeps_an_edited_file_and_restores_the_others() {
        let (_d, root) = root();
        let ours = root.path("etc/sysctl.d/99-zz-bbrkit.conf");
        let unit = root.path("etc/systemd/system/x.service");
        let mut image = BeforeImage::default();
        for p in [&ours, &unit] {
            let w = WriteFile {
                path: p.clone(),
                content: b"a = 1\n".to_vec(),
                mode: 0o644,
            };
            w.record(&root, &mut image).unwrap();
            w.apply().unwrap();
        }
        std::fs::write(&ours, "a = 1\nb = 2\n").unwrap();
        let (mut lines, mut steps) = (Vec::new(), Vec::new());
        let kept = plan_undo(&image, &root, false, &mut lines, &mut steps).unwrap();
        assert!(kept);
        assert_eq!(lines[0].action, ActionKind::Kept);
        assert!(
            lines[0]
                .detail
                .starts_with("edited since bbrkit wrote it (+b = 2)"),
            "{:?}",
            lines[0]
        );
        assert_eq!(lines[1].action, ActionKind::WouldRemove);
        assert_eq!(steps.len(), 1, "only the unedited file is undone");
    }
}
