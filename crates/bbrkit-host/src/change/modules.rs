//! The kernel modules of the congestion controls bbrkit relies on, kept
//! across reboots (issue 33.1): Debian builds `tcp_bbr` as a module
//! (`CONFIG_TCP_CONG_BBR=m`), which is registered only once loaded.
//! `enable --cc bbr` and `enable --policy` with a rule naming `bbr` do the
//! same thing about it ([`plan`]):
//!
//! ```text
//!   plan:     each algorithm the change relies on that is a module
//!             (Provider::Module) ─▶ tcp_<cc> in etc/modules-load.d/bbrkit.conf
//!             (the file's modules kept: one file, the union)
//!   record:   the file, as any file change (its prior, what bbrkit wrote)
//!   apply:    the file (atomic), then each module not registered yet
//!             loaded now the way the kernel autoloads it (Change::LoadModule)
//!   boot:     systemd-modules-load.service (Debian's kmod init script
//!             without systemd) loads the file's modules; `boot --policy`
//!             also loads any a recorded policy names (the autoload path)
//!   rollback: the file restored byte for byte (removed when it was absent);
//!             a loaded module stays loaded (sockets may use it)
//! ```
//!
//! Loading goes through the kernel's own autoload (`request_module` when a
//! CAP_NET_ADMIN caller chooses the name, `bbrkit_diag::algorithms::usable`):
//! no modprobe, no module file read by bbrkit.

use serde::Serialize;

use super::Change;
use super::file::WriteFile;
use crate::image::Present;
use crate::snapshot::Snapshot;
use crate::{HostError, Provider};

/// bbrkit's modules-load.d file, under the root. systemd-modules-load reads
/// `/etc/modules-load.d/*.conf` (modules-load.d(5)); so does Debian's kmod
/// init script.
pub const FILE: &str = "etc/modules-load.d/bbrkit.conf";

/// The module of algorithm `cc` (the kernel's `request_module("tcp_%s")`,
/// net/ipv4/tcp_cong.c).
pub fn module(cc: &str) -> String {
    format!("tcp_{cc}")
}

/// The modules part of `enable`'s report (`modules` in `--json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ModulesPlan {
    /// bbrkit's modules-load.d file.
    pub file: String,
    /// The modules it lists (with this change).
    pub modules: Vec<String>,
    /// The file is (or would be) written because it differs.
    pub write: bool,
    /// The modules loaded now (not registered yet).
    pub load: Vec<String>,
}

/// Load a congestion control's module now.
#[derive(Debug, Clone)]
pub struct Load {
    /// The algorithm (`bbr`).
    pub cc: String,
}

/// The modules bbrkit's file lists (its non-comment lines).
fn listed(bytes: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(bytes)
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#') && !l.starts_with(';'))
        .map(String::from)
        .collect()
}

/// bbrkit's file listing `modules` (deterministic: a second run is a no-op).
pub fn render(modules: &[String]) -> String {
    let mut s = String::from(
        "# Written by `bbrkit enable`; undo with `bbrkit rollback` (do not edit: bbrkit\n\
         # compares this file byte for byte). The congestion controls bbrkit relies on\n\
         # are modules of this kernel: loaded at boot so they are registered before\n\
         # the default or a policy names them (modules-load.d(5)).\n",
    );
    for m in modules {
        s.push_str(m);
        s.push('\n');
    }
    s
}

/// Decides the modules part for the algorithms `ccs` a change relies on:
/// none when no one of them is a module; else the file (the union with the
/// modules it lists already) and, with `load_now`, the loads of those not
/// registered yet.
pub fn plan(
    snap: &Snapshot,
    ccs: &[String],
    load_now: bool,
) -> Result<(Option<ModulesPlan>, Vec<Change>), HostError> {
    let ours: Vec<&String> = ccs
        .iter()
        .filter(|c| snap.provider(c) == Provider::Module)
        .collect();
    if ours.is_empty() {
        return Ok((None, Vec::new()));
    }
    let path = snap.root.path(FILE);
    let now = Present::read(&path)?;
    let mut modules = match &now {
        Present::File { bytes, .. } => listed(bytes),
        _ => Vec::new(),
    };
    modules.extend(ours.iter().map(|c| module(c)));
    modules.sort();
    modules.dedup();
    let content = render(&modules);
    let write = !matches!(&now, Present::File { bytes, .. } if *bytes == content.as_bytes());
    let load: Vec<String> = ours
        .iter()
        .filter(|c| load_now && !snap.kernel.available_cc.contains(c))
        .map(|c| c.to_string())
        .collect();
    let mut changes = Vec::new();
    if write {
        changes.push(Change::File(WriteFile {
            path,
            content: content.into_bytes(),
            mode: 0o644,
        }));
    }
    changes.extend(
        load.iter()
            .map(|cc| Change::LoadModule(Load { cc: cc.clone() })),
    );
    let report = ModulesPlan {
        file: snap.root.show(&snap.root.path(FILE)),
        modules,
        write,
        load: load.iter().map(|c| module(c)).collect(),
    };
    Ok((Some(report), changes))
}

/// The human lines of the modules part.
pub fn lines(p: &ModulesPlan, dry_run: bool) -> Vec<String> {
    let list = p.modules.join(" ");
    let mut out = vec![match (p.write, dry_run) {
        (false, _) => format!("modules: {} unchanged ({list}, loaded at boot)", p.file),
        (true, true) => format!("modules: would write {} ({list}, loaded at boot)", p.file),
        (true, false) => format!("modules: wrote {} ({list}, loaded at boot)", p.file),
    }];
    for m in &p.load {
        let verb = if dry_run { "would load" } else { "loaded" };
        out.push(format!(
            "modules: {verb} {m} now (the kernel's autoload: the algorithm chosen on a throwaway socket)"
        ));
    }
    out
}

#[cfg(test)]
#[path = "modules_tests.rs"]
mod tests;
