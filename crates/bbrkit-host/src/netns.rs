//! Other network namespaces and their default congestion control. A new
//! namespace copies the initial namespace's default when it is *created*
//! (`tcp_sk_init`), so containers started before `enable` keep the old
//! algorithm until they are recreated. Enumerates `/proc/*/ns/net` and
//! `/run/netns/*`, enters each one on a short-lived thread (`setns`) and
//! reads its `tcp_congestion_control`. Only reads; needs CAP_SYS_ADMIN and
//! silently skips namespaces it may not enter.

use std::collections::BTreeMap;
use std::os::fd::AsFd;

use serde::Serialize;

/// One other network namespace.
#[derive(Debug, Clone, Serialize)]
pub struct Namespace {
    /// The namespace inode (`net:[N]`).
    pub inode: u64,
    /// Where it was found (`pid 1234 (nginx)` or `/run/netns/name`).
    pub found_at: String,
    /// Its default congestion control.
    pub cc: Option<String>,
}

fn inode_of(path: &std::path::Path) -> Option<u64> {
    bbrkit_diag::netns::inode_of(path).ok()
}

fn cc_inside(path: &std::path::Path) -> Option<String> {
    let file = std::fs::File::open(path).ok()?;
    std::thread::scope(|s| {
        s.spawn(|| {
            nix::sched::setns(file.as_fd(), nix::sched::CloneFlags::CLONE_NEWNET).ok()?;
            crate::sysctl::read(crate::KEY_CC).ok().flatten()
        })
        .join()
        .ok()
        .flatten()
    })
}

/// Every network namespace other than the caller's (at most `limit`).
pub fn others(limit: usize) -> Vec<Namespace> {
    let own = bbrkit_diag::netns::current().ok();
    let mut seen: BTreeMap<u64, (String, std::path::PathBuf)> = BTreeMap::new();
    if let Ok(rd) = std::fs::read_dir("/run/netns") {
        for e in rd.flatten() {
            let p = e.path();
            if let Some(ino) = inode_of(&p) {
                seen.entry(ino).or_insert((p.display().to_string(), p));
            }
        }
    }
    if let Ok(rd) = std::fs::read_dir("/proc") {
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if !name.bytes().all(|b| b.is_ascii_digit()) {
                continue;
            }
            let link = e.path().join("ns/net");
            if let Some(ino) = inode_of(&link)
                && !seen.contains_key(&ino)
            {
                let comm = std::fs::read_to_string(e.path().join("comm")).unwrap_or_default();
                seen.insert(ino, (format!("pid {name} ({})", comm.trim()), link));
            }
        }
    }
    seen.into_iter()
        .filter(|(ino, _)| Some(*ino) != own)
        .take(limit)
        .map(|(inode, (found_at, path))| Namespace {
            inode,
            found_at,
            cc: cc_inside(&path),
        })
        .collect()
}
