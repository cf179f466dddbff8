//! Which sysctl file wins at boot. Models both loaders exactly as documented:
//!
//! - **systemd-sysctl** reads `etc/sysctl.d`, `run/sysctl.d`,
//!   `usr/local/lib/sysctl.d`, `usr/lib/sysctl.d`; for one basename only the
//!   first directory's file is read (a symlink to `/dev/null` masks it); the
//!   survivors are applied in basename order, so the lexicographically latest
//!   file wins a key. It does not read `etc/sysctl.conf`. Explicit keys beat
//!   glob patterns regardless of order.
//! - **procps `sysctl --system`** does the same over the same directories plus
//!   `lib/sysctl.d`, then applies `etc/sysctl.conf` last when it is a regular
//!   file, so that file beats every sysctl.d file. Glob keys are ignored.
//!
//! Line syntax (both): `#`/`;` comments, blank lines, `key = value` with
//! whitespace trimmed, a leading `-` meaning "ignore failure", `/` accepted as
//! separator. A later line beats an earlier one, within a file or across files.
//! Never writes anything.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::root::{PROCPS_DIRS, SYSTEMD_DIRS};
use crate::{HostError, Root, sysctl::normalize};

/// The program that applies sysctl files at boot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Loader {
    /// `systemd-sysctl.service`.
    Systemd,
    /// procps `sysctl --system`.
    Procps,
}

impl Loader {
    /// Both loaders, in the order bbrkit reports them.
    pub const BOTH: [Loader; 2] = [Loader::Systemd, Loader::Procps];

    /// Display name.
    pub fn name(self) -> &'static str {
        match self {
            Loader::Systemd => "systemd-sysctl",
            Loader::Procps => "sysctl --system",
        }
    }
}

/// One `key = value` line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Assignment {
    /// Dotted key (or glob pattern).
    pub key: String,
    /// Value with whitespace normalised.
    pub value: String,
    /// The file, as the operator would name it.
    pub file: String,
    /// 1-based line number.
    pub line: usize,
    /// The line had a `-` prefix.
    pub ignore_failure: bool,
}

/// Converts `net/ipv4/x` to `net.ipv4.x` (the first separator decides).
pub fn normalize_key(key: &str) -> String {
    match key.find(['.', '/']) {
        Some(i) if key.as_bytes()[i] == b'/' => key
            .chars()
            .map(|c| match c {
                '/' => '.',
                '.' => '/',
                c => c,
            })
            .collect(),
        _ => key.to_string(),
    }
}

/// Parses sysctl.d text; `file` labels the assignments.
pub fn parse(text: &str, file: &str) -> Vec<Assignment> {
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        let Some((k, v)) = line.split_once('=') else {
            continue;
        };
        let mut key = k.trim();
        let ignore_failure = key.starts_with('-');
        if ignore_failure {
            key = key[1..].trim_start();
        }
        if key.is_empty() {
            continue;
        }
        out.push(Assignment {
            key: normalize_key(key),
            value: normalize(v),
            file: file.to_string(),
            line: i + 1,
            ignore_failure,
        });
    }
    out
}

/// A file the loader applies, in order.
#[derive(Debug, Clone, Serialize)]
pub struct Source {
    /// Shown name (`/etc/sysctl.d/99-sysctl.conf -> ../sysctl.conf`).
    pub file: String,
    /// Basename that decides sorting and masking.
    pub basename: String,
    /// Masked by a symlink to /dev/null (nothing is read).
    pub masked: bool,
    /// Assignments in line order.
    #[serde(skip)]
    pub assignments: Vec<Assignment>,
}

/// A planned content for one `etc/sysctl.d` basename (bbrkit's own file),
/// used to resolve "as if written". `None` content = the file is absent.
#[derive(Debug, Clone)]
pub struct Overlay {
    /// Basename in `etc/sysctl.d`.
    pub basename: String,
    /// Planned content, or absent.
    pub content: Option<String>,
}

enum Read {
    DevNull,
    Text(String, Option<String>),
    Unreadable,
}

fn read_in_root(root: &Root, path: &Path) -> Read {
    let mut p = path.to_path_buf();
    let mut first_target = None;
    for _ in 0..8 {
        match std::fs::read_link(&p) {
            Ok(t) => {
                if first_target.is_none() {
                    first_target = Some(t.display().to_string());
                }
                if t == Path::new("/dev/null") {
                    return Read::DevNull;
                }
                p = if t.is_absolute() {
                    root.path(&t)
                } else {
                    p.parent().unwrap_or(Path::new("/")).join(t)
                };
            }
            Err(_) => break,
        }
    }
    match std::fs::read(&p) {
        Ok(b) => Read::Text(String::from_utf8_lossy(&b).into_owned(), first_target),
        Err(_) => Read::Unreadable,
    }
}

fn show(root: &Root, rel_dir: &str, name: &str) -> String {
    if root.is_system() {
        format!("/{rel_dir}/{name}")
    } else {
        root.path(rel_dir).join(name).display().to_string()
    }
}

/// The files `loader` applies under `root`, in application order.
pub fn sources(
    root: &Root,
    loader: Loader,
    overlay: Option<&Overlay>,
) -> Result<Vec<Source>, HostError> {
    let dirs: &[&str] = match loader {
        Loader::Systemd => &SYSTEMD_DIRS,
        Loader::Procps => &PROCPS_DIRS,
    };
    let mut out: Vec<Source> = applied_files(root, dirs, overlay)?
        .into_iter()
        .map(|(name, path, dir)| source(root, overlay, name, &path, dir))
        .collect();
    if loader == Loader::Procps
        && let Some(conf) = sysctl_conf(root)
    {
        out.push(conf);
    }
    Ok(out)
}

/// The `.conf` files of `dirs` by name (a name in an earlier directory
/// masks the same name in later ones), sorted by name: `(name, path, dir)`,
/// with an empty path for the overlay, which stands in the first directory.
fn applied_files<'d>(
    root: &Root,
    dirs: &[&'d str],
    overlay: Option<&Overlay>,
) -> Result<Vec<(String, PathBuf, &'d str)>, HostError> {
    let mut seen: Vec<(String, PathBuf, &str)> = Vec::new();
    for (di, dir) in dirs.iter().enumerate() {
        if di == 0
            && let Some(o) = overlay
            && o.content.is_some()
        {
            seen.push((o.basename.clone(), PathBuf::new(), dir));
        }
        let full = root.path(dir);
        let entries = match std::fs::read_dir(&full) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) if e.kind() == std::io::ErrorKind::NotADirectory => continue,
            Err(e) => return Err(HostError::io(&full, e)),
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if !name.ends_with(".conf") || name.starts_with('.') {
                continue;
            }
            if di == 0 && overlay.is_some_and(|o| o.basename == name) {
                continue; // replaced by the overlay (or absent in the plan)
            }
            if seen.iter().any(|(n, _, _)| *n == name) {
                continue; // masked by a same-named file in an earlier dir
            }
            seen.push((name, entry.path(), dir));
        }
    }
    seen.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(seen)
}

/// The file `name` of `dir` at `path` (empty: the overlay) and its
/// assignments; a link to `/dev/null` is masked.
fn source(root: &Root, overlay: Option<&Overlay>, name: String, path: &Path, dir: &str) -> Source {
    let shown = show(root, dir, &name);
    if path.as_os_str().is_empty() {
        let content = overlay.and_then(|o| o.content.clone()).unwrap_or_default();
        return Source {
            assignments: parse(&content, &shown),
            file: shown,
            basename: name,
            masked: false,
        };
    }
    let (masked, text, target) = match read_in_root(root, path) {
        Read::DevNull => (true, String::new(), None),
        Read::Text(t, target) => (false, t, target),
        Read::Unreadable => (false, String::new(), None),
    };
    let label = match &target {
        Some(t) => format!("{shown} -> {t}"),
        None => shown,
    };
    Source {
        assignments: parse(&text, &label),
        file: label,
        basename: name,
        masked,
    }
}

/// `/etc/sysctl.conf`, which procps applies after the directories, if it
/// is a file.
fn sysctl_conf(root: &Root) -> Option<Source> {
    let conf = root.path("etc/sysctl.conf");
    if !std::fs::metadata(&conf).is_ok_and(|m| m.is_file()) {
        return None;
    }
    let shown = show(root, "etc", "sysctl.conf");
    let text = std::fs::read(&conf)
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default();
    Some(Source {
        assignments: parse(&text, &shown),
        file: shown,
        basename: "sysctl.conf".into(),
        masked: false,
    })
}

/// Simple shell glob (`*`, `?`) as systemd accepts in keys.
fn glob_match(pattern: &str, s: &str) -> bool {
    fn go(p: &[u8], s: &[u8]) -> bool {
        match (p.first(), s.first()) {
            (None, None) => true,
            (Some(b'*'), _) => go(&p[1..], s) || (!s.is_empty() && go(p, &s[1..])),
            (Some(b'?'), Some(_)) => go(&p[1..], &s[1..]),
            (Some(a), Some(b)) if a == b => go(&p[1..], &s[1..]),
            _ => false,
        }
    }
    go(pattern.as_bytes(), s.as_bytes())
}

fn is_glob(key: &str) -> bool {
    key.contains(['*', '?', '['])
}

/// Every assignment of `key` that `loader` would apply, in order; the last
/// one is the winner.
pub fn assignments_for(sources: &[Source], loader: Loader, key: &str) -> Vec<Assignment> {
    let all = sources
        .iter()
        .filter(|s| !s.masked)
        .flat_map(|s| s.assignments.iter());
    let explicit: Vec<Assignment> = all.clone().filter(|a| a.key == key).cloned().collect();
    if !explicit.is_empty() || loader == Loader::Procps {
        return explicit;
    }
    all.filter(|a| is_glob(&a.key) && glob_match(&a.key, key))
        .cloned()
        .collect()
}

/// The boot-time outcome of one key under one loader.
#[derive(Debug, Clone, Serialize)]
pub struct Resolution {
    /// Which loader.
    pub loader: Loader,
    /// The key.
    pub key: String,
    /// The winning assignment, if any file sets the key.
    pub winner: Option<Assignment>,
    /// Earlier assignments the winner overrides.
    pub overridden: Vec<Assignment>,
}

/// Resolves `keys` under both loaders.
pub fn resolve(
    root: &Root,
    keys: &[&str],
    overlay: Option<&Overlay>,
) -> Result<Vec<Resolution>, HostError> {
    let mut out = Vec::new();
    for loader in Loader::BOTH {
        let srcs = sources(root, loader, overlay)?;
        for key in keys {
            let mut all = assignments_for(&srcs, loader, key);
            let winner = all.pop();
            out.push(Resolution {
                loader,
                key: key.to_string(),
                winner,
                overridden: all,
            });
        }
    }
    Ok(out)
}

#[cfg(test)]
#[path = "precedence_tests.rs"]
mod tests;
