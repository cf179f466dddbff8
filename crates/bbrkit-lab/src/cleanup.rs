//! `bbrkit lab --cleanup`: removes what a lab killed with SIGKILL can leave.
//!
//! A lab's namespaces are held by file descriptors and vanish with the
//! process, so the only possible leftovers are the `/run/netns/bbrk<pid>-*`
//! names created by `--netns-names` and the empty cgroup a workload run
//! created (`bbrkit-lab-<pid>`). Owns finding those whose process is gone
//! and removing them. Must never touch a name of a lab that is still running
//! or any name without the `bbrk` prefix.

use std::path::PathBuf;

use crate::error::{LabError, Result};
use crate::netns::{NETNS_DIR, unbind};

/// The prefix of every lab name.
pub const PREFIX: &str = "bbrk";

/// Named lab namespaces whose owning process no longer runs.
pub fn leftovers() -> Result<Vec<PathBuf>> {
    let dir = match std::fs::read_dir(NETNS_DIR) {
        Ok(d) => d,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(LabError::io("read /run/netns", e)),
    };
    let mut out = Vec::new();
    for entry in dir.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = owner_pid(&name) else {
            continue;
        };
        if !process_alive(pid) {
            out.push(entry.path());
        }
    }
    out.sort();
    Ok(out)
}

/// The pid encoded in `bbrk<pid>-<role>`.
pub fn owner_pid(name: &str) -> Option<u32> {
    let rest = name.strip_prefix(PREFIX)?;
    let (pid, role) = rest.split_once('-')?;
    if role.is_empty() {
        return None;
    }
    pid.parse().ok()
}

fn process_alive(pid: u32) -> bool {
    // Conservative: any live process with that pid keeps its names.
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .map(|c| !c.trim().is_empty())
        .unwrap_or(false)
}

/// Removes every leftover — names, and the empty `bbrkit-lab-<pid>`
/// cgroups of workload runs; returns what was removed.
pub fn remove_leftovers() -> Result<Vec<PathBuf>> {
    let mut found = leftovers()?;
    for p in &found {
        unbind(p);
    }
    found.extend(crate::workload::cgroup::remove_leftovers());
    Ok(found)
}

/// Removes the names of this very process (`bbrk<own pid>-*`). For the
/// signal thread's emergency exit, which skips the destructors that would
/// otherwise remove them; errors are ignored.
pub fn remove_own() {
    let prefix = format!("{PREFIX}{}-", std::process::id());
    let Ok(dir) = std::fs::read_dir(NETNS_DIR) else {
        return;
    };
    for entry in dir.flatten() {
        if entry.file_name().to_string_lossy().starts_with(&prefix) {
            unbind(&entry.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_carry_the_owner() {
        assert_eq!(owner_pid("bbrk1234-client"), Some(1234));
        assert_eq!(owner_pid("bbrk1234-"), None);
        assert_eq!(owner_pid("bbrkx-client"), None);
        assert_eq!(owner_pid("mynetns"), None);
    }
}
