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

/// Every sysctl file under a root that either loader may apply, read once:
/// the `.conf` files of each sysctl.d directory (also those a same-named
/// file in an earlier directory masks) and `etc/sysctl.conf`. Which of them
/// a loader applies, in which order, with or without bbrkit's planned file,
/// is decided from this by [`Sources::applied`], without reading again.
#[derive(Debug, Clone, Default)]
pub struct Sources {
    /// `(index in PROCPS_DIRS, source)` of every `.conf` file found.
    candidates: Vec<(usize, Source)>,
    /// `etc/sysctl.conf`, when it is a regular file.
    conf: Option<Source>,
    /// How the planned file is labelled (`/etc/sysctl.d/NAME` on the live
    /// system, the full path under another root).
    first_dir: String,
}

impl Sources {
    /// Reads every candidate file under `root`.
    pub fn read(root: &Root) -> Result<Sources, HostError> {
        let mut candidates = Vec::new();
        for (di, dir) in PROCPS_DIRS.iter().enumerate() {
            let full = root.path(dir);
            let entries = match std::fs::read_dir(&full) {
                Ok(e) => e,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) if e.kind() == std::io::ErrorKind::NotADirectory => continue,
                Err(e) => return Err(HostError::io(&full, e)),
            };
            let mut names: Vec<(String, PathBuf)> = entries
                .flatten()
                .map(|e| (e.file_name().to_string_lossy().into_owned(), e.path()))
                .filter(|(n, _)| n.ends_with(".conf") && !n.starts_with('.'))
                .collect();
            names.sort();
            for (name, path) in names {
                candidates.push((di, source(root, name, &path, dir)));
            }
        }
        Ok(Sources {
            candidates,
            conf: sysctl_conf(root),
            first_dir: show(root, SYSTEMD_DIRS[0], ""),
        })
    }

    /// The files `loader` applies, in application order, with `overlay`
    /// standing in `etc/sysctl.d` when given: for one basename only the
    /// first directory's file counts (the overlay first of all), sorted by
    /// basename; procps applies `etc/sysctl.conf` last.
    pub fn applied(&self, loader: Loader, overlay: Option<&Overlay>) -> Vec<Source> {
        let dirs = match loader {
            Loader::Systemd => SYSTEMD_DIRS.len(),
            Loader::Procps => PROCPS_DIRS.len(),
        };
        let mut seen: Vec<Source> = Vec::new();
        if let Some(o) = overlay
            && let Some(content) = &o.content
        {
            let file = format!("{}{}", self.first_dir, o.basename);
            seen.push(Source {
                assignments: parse(content, &file),
                file,
                basename: o.basename.clone(),
                masked: false,
            });
        }
        for (di, src) in self.candidates.iter().filter(|(di, _)| *di < dirs) {
            if *di == 0 && overlay.is_some_and(|o| o.basename == src.basename) {
                continue; // replaced by the overlay (or absent in the plan)
            }
            if seen.iter().any(|s| s.basename == src.basename) {
                continue; // masked by a same-named file in an earlier dir
            }
            seen.push(src.clone());
        }
        seen.sort_by(|a, b| a.basename.cmp(&b.basename));
        if loader == Loader::Procps {
            seen.extend(self.conf.clone());
        }
        seen
    }
}

/// The file `name` of `dir` at `path` and its assignments; a link to
/// `/dev/null` is masked.
fn source(root: &Root, name: String, path: &Path, dir: &str) -> Source {
    let shown = show(root, dir, &name);
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

/// Resolves `keys` under both loaders (with bbrkit's planned file in
/// place when `overlay` is given).
pub fn resolve(sources: &Sources, keys: &[&str], overlay: Option<&Overlay>) -> Vec<Resolution> {
    let mut out = Vec::new();
    for loader in Loader::BOTH {
        let srcs = sources.applied(loader, overlay);
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
    out
}

#[cfg(test)]
#[path = "precedence_tests.rs"]
mod tests;
