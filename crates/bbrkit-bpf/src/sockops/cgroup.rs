//! cgroup v2 for the sock_ops program: where it is mounted (from
//! `/proc/self/mountinfo`: `/sys/fs/cgroup` on current distributions,
//! `/sys/fs/cgroup/unified` on hybrid hosts), a directory's cgroup id, and
//! every sock_ops program a cgroup runs (`BPF_PROG_QUERY`), and every one
//! attached around it (ancestors, itself, descendants), so `verify` and
//! `doctor` can name another program that sets the algorithm (bpftune,
//! Cilium, a trial, ...).
//! Reads only.

use std::collections::{HashMap, HashSet};
use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use libbpf_rs::ProgramAttachType;
use libbpf_rs::query::{LinkInfoIter, LinkTypeInfo, ProgInfoIter};

use crate::error::{BpfError, Result};

/// `CGROUP2_SUPER_MAGIC` (include/uapi/linux/magic.h).
const CGROUP2_SUPER_MAGIC: i64 = 0x6367_7270;
/// `BPF_F_QUERY_EFFECTIVE` (include/uapi/linux/bpf.h).
const BPF_F_QUERY_EFFECTIVE: u32 = 1;
/// Programs asked for per query (the kernel says how many there are).
const QUERY_MAX: usize = 64;

/// The first cgroup2 mount of the whole hierarchy in a mountinfo text.
pub fn cgroup2_mount_in(mountinfo: &str) -> Option<PathBuf> {
    mountinfo.lines().find_map(|line| {
        let (fields, rest) = line.split_once(" - ")?;
        let fields: Vec<&str> = fields.split(' ').collect();
        let fstype = rest.split(' ').next()?;
        let mount_point = fields.get(4)?;
        (fstype == "cgroup2" && fields.get(3) == Some(&"/"))
            .then(|| PathBuf::from(unescape(mount_point)))
    })
}

/// mountinfo escapes space, tab, newline and backslash as `\ooo`.
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let oct = b
            .get(i + 1..i + 4)
            .filter(|d| d.iter().all(|c| (b'0'..=b'7').contains(c)));
        match (b[i], oct) {
            (b'\\', Some(d)) => {
                out.push((d[0] - b'0') * 64 + (d[1] - b'0') * 8 + (d[2] - b'0'));
                i += 4;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Where this process sees cgroup v2 mounted (`None`: not mounted).
pub fn cgroup2_mount() -> std::io::Result<Option<PathBuf>> {
    Ok(cgroup2_mount_in(&std::fs::read_to_string(
        "/proc/self/mountinfo",
    )?))
}

/// Fails unless `path` is a directory on cgroup v2.
pub fn check_cgroup2(path: &Path) -> Result<()> {
    let err = |source| BpfError::Cgroup {
        path: path.to_path_buf(),
        source,
    };
    match crate::features::statfs_type(path).map_err(err)? {
        CGROUP2_SUPER_MAGIC => Ok(()),
        _ => Err(err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "not a cgroup v2 directory (see /proc/self/mountinfo for the cgroup2 mount)",
        ))),
    }
}

/// The id of the cgroup v2 directory `path`: its inode number, which is
/// the kernel's cgroup id on 64-bit kernels (kernfs node id, Linux 5.5+).
pub fn cgroup_id(path: &Path) -> Result<u64> {
    check_cgroup2(path)?;
    std::fs::metadata(path)
        .map(|m| m.ino())
        .map_err(|source| BpfError::Cgroup {
            path: path.to_path_buf(),
            source,
        })
}

/// The directories under cgroup2 mount `root` (itself included) whose ids
/// are in `ids`, found by one walk that stops when all are found. A
/// directory that cannot be read is skipped (a cgroup removed during the
/// walk).
pub fn paths_of(root: &Path, ids: &HashSet<u64>) -> HashMap<u64, PathBuf> {
    let mut found = HashMap::new();
    let mut todo = vec![root.to_path_buf()];
    while let Some(dir) = todo.pop() {
        if found.len() == ids.len() {
            break;
        }
        let Ok(meta) = std::fs::symlink_metadata(&dir) else {
            continue;
        };
        if ids.contains(&meta.ino()) {
            found.insert(meta.ino(), dir.clone());
        }
        let Ok(rd) = std::fs::read_dir(&dir) else {
            continue;
        };
        todo.extend(
            rd.flatten()
                .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                .map(|e| e.path()),
        );
    }
    found
}

pub use bbrkit_policy::attached::SockOpsProgram;

/// The ids of the sock_ops programs of cgroup `path`, in run order:
/// attached to it (`effective` = false), or every one its sockets run,
/// ancestors' included (`effective` = true).
fn query_ids(path: &Path, effective: bool) -> Result<Vec<u32>> {
    query(path, effective).map(|(ids, _)| ids)
}

/// [`query_ids`] and the cgroup's attach flags (`BPF_F_ALLOW_*`, of the
/// programs attached to it; 0 when none or exclusive).
fn query(path: &Path, effective: bool) -> Result<(Vec<u32>, u32)> {
    let err = |source| BpfError::Query {
        cgroup: path.to_path_buf(),
        source,
    };
    let dir = std::fs::File::open(path).map_err(err)?;
    let mut ids = [0u32; QUERY_MAX];
    let mut count = ids.len() as u32;
    let flags = if effective { BPF_F_QUERY_EFFECTIVE } else { 0 };
    let mut attach_flags = 0u32;
    // SAFETY: `dir` is an open fd; `ids` has room for `count` ids and the
    // kernel writes at most that many and the real count into `count`;
    // `attach_flags` is a u32 the kernel writes.
    let rc = unsafe {
        libbpf_sys::bpf_prog_query(
            dir.as_raw_fd(),
            libbpf_sys::BPF_CGROUP_SOCK_OPS,
            flags,
            &mut attach_flags,
            ids.as_mut_ptr(),
            &mut count,
        )
    };
    if rc != 0 {
        return Err(err(std::io::Error::from_raw_os_error(-rc)));
    }
    Ok((
        ids[..(count as usize).min(QUERY_MAX)].to_vec(),
        attach_flags,
    ))
}

/// `BPF_F_ALLOW_OVERRIDE`, `BPF_F_ALLOW_MULTI` (include/uapi/linux/bpf.h).
const BPF_F_ALLOW_OVERRIDE: u32 = 1;
const BPF_F_ALLOW_MULTI: u32 = 2;

/// The cgroup whose sock_ops attachment makes the kernel refuse a BPF link
/// (`BPF_F_ALLOW_MULTI`) on `path` with EPERM, if any: `path` itself when
/// it holds programs attached without `BPF_F_ALLOW_MULTI` (an older tool's
/// `BPF_PROG_ATTACH`; `__cgroup_bpf_attach` refuses other flags), or the
/// nearest ancestor up to the mount `mount` with a program attached
/// exclusively (flags 0; `hierarchy_allows_attach`, kernel/bpf/cgroup.c:
/// an ancestor with `BPF_F_ALLOW_MULTI`, or one program with
/// `BPF_F_ALLOW_OVERRIDE`, allows it).
pub fn sock_ops_exclusive(path: &Path, mount: &Path) -> Result<Option<PathBuf>> {
    crate::log::install();
    let (ids, flags) = query(path, false)?;
    if !ids.is_empty() && flags != BPF_F_ALLOW_MULTI {
        return Ok(Some(path.to_path_buf()));
    }
    for up in path
        .ancestors()
        .skip(1)
        .take_while(|a| a.starts_with(mount))
    {
        let (ids, flags) = query(up, false)?;
        if flags & BPF_F_ALLOW_MULTI != 0 {
            return Ok(None);
        }
        if !ids.is_empty() {
            return Ok((flags & BPF_F_ALLOW_OVERRIDE == 0).then(|| up.to_path_buf()));
        }
    }
    Ok(None)
}

/// Names the programs `ids` of each cgroup `(path, id, ids)`, with the
/// sock_ops link attaching each to that cgroup (one pass over the kernel's
/// programs and links for all of them).
fn describe(found: Vec<(PathBuf, u64, Vec<u32>)>) -> Vec<(PathBuf, Vec<SockOpsProgram>)> {
    if found.is_empty() {
        return Vec::new();
    }
    let links: Vec<(u64, u32, u32)> = LinkInfoIter::default()
        .filter_map(|l| match l.info {
            LinkTypeInfo::Cgroup(c)
                if matches!(c.attach_type, ProgramAttachType::CgroupSockOps) =>
            {
                Some((c.cgroup_id, l.prog_id, l.id))
            }
            _ => None,
        })
        .collect();
    let names: HashMap<u32, String> = ProgInfoIter::default()
        .filter(|p| found.iter().any(|(_, _, ids)| ids.contains(&p.id)))
        .map(|p| (p.id, p.name.to_string_lossy().into_owned()))
        .collect();
    found
        .into_iter()
        .map(|(path, cgroup, ids)| {
            let progs = ids
                .iter()
                .map(|id| {
                    let name = names.get(id).cloned().unwrap_or_default();
                    SockOpsProgram {
                        id: *id,
                        ours: name == super::PROGRAM,
                        name,
                        link_id: links
                            .iter()
                            .find(|(c, p, _)| *c == cgroup && p == id)
                            .map(|(_, _, l)| *l),
                    }
                })
                .collect();
            (path, progs)
        })
        .collect()
}

/// The sock_ops programs of cgroup `path`: attached to it (`effective` =
/// false), or every one its sockets run, ancestors' included, in run order
/// (`effective` = true). Needs CAP_SYS_ADMIN or CAP_BPF.
pub fn sock_ops_programs(path: &Path, effective: bool) -> Result<Vec<SockOpsProgram>> {
    crate::log::install();
    let ids = query_ids(path, effective)?;
    let cgroup = cgroup_id(path)?;
    let mut d = describe(vec![(path.to_path_buf(), cgroup, ids)]);
    Ok(d.pop().map(|(_, p)| p).unwrap_or_default())
}

/// Every sock_ops program that can run for the sockets of cgroup `path`
/// or set their algorithm first: those attached to each cgroup from the
/// cgroup2 mount `mount` down to `path` (ancestors: they run after its own,
/// for its sockets), to `path` itself (in attach order) and to every
/// cgroup below it (descendants: for their own sockets they run before
/// `path`'s). Only cgroups with a program are listed, ancestors first, each
/// with its programs in run order. A descendant removed during the walk is
/// skipped. Needs CAP_SYS_ADMIN or CAP_BPF.
pub fn sock_ops_around(path: &Path, mount: &Path) -> Result<Vec<(PathBuf, Vec<SockOpsProgram>)>> {
    crate::log::install();
    let mut found = Vec::new();
    let mut up: Vec<&Path> = path
        .ancestors()
        .skip(1)
        .take_while(|a| a.starts_with(mount))
        .collect();
    up.reverse();
    for dir in up.into_iter().chain(std::iter::once(path)) {
        let ids = query_ids(dir, false)?;
        if !ids.is_empty() {
            found.push((dir.to_path_buf(), cgroup_id(dir)?, ids));
        }
    }
    let mut todo = subdirs(path);
    while let Some(dir) = todo.pop() {
        let (Ok(ids), Ok(id)) = (query_ids(&dir, false), cgroup_id(&dir)) else {
            continue;
        };
        if !ids.is_empty() {
            found.push((dir.clone(), id, ids));
        }
        todo.extend(subdirs(&dir));
    }
    Ok(describe(found))
}

/// The directories right below `dir` (none if it cannot be read).
fn subdirs(dir: &Path) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut v: Vec<PathBuf> = rd
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .collect();
    v.sort();
    v.reverse();
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_cgroup2_mount_on_hybrid_and_unified_hosts() {
        let hybrid = "\
24 31 0:22 / /sys rw,nosuid shared:7 - sysfs sysfs rw
30 24 0:26 / /sys/fs/cgroup ro shared:9 - tmpfs tmpfs ro,mode=755
31 30 0:27 / /sys/fs/cgroup/unified rw shared:10 - cgroup2 cgroup2 rw,nsdelegate
32 30 0:28 / /sys/fs/cgroup/systemd rw shared:11 - cgroup cgroup rw,name=systemd
";
        assert_eq!(
            cgroup2_mount_in(hybrid),
            Some(PathBuf::from("/sys/fs/cgroup/unified"))
        );
        let unified = "35 24 0:30 / /sys/fs/cgroup rw,nosuid shared:9 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot\n";
        assert_eq!(
            cgroup2_mount_in(unified),
            Some(PathBuf::from("/sys/fs/cgroup"))
        );
        // A container's view of a sub-tree (root not "/") is not the hierarchy.
        let sub = "40 30 0:27 /docker/abc /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n";
        assert_eq!(cgroup2_mount_in(sub), None);
        let spaced = "41 30 0:27 / /mnt/my\\040cgroup rw - cgroup2 cgroup2 rw\n";
        assert_eq!(
            cgroup2_mount_in(spaced),
            Some(PathBuf::from("/mnt/my cgroup"))
        );
        assert_eq!(cgroup2_mount_in(""), None);
    }

    /// The walk finds directories by inode (a cgroup id is its directory's
    /// inode), nested ones included, and nothing it was not asked for.
    #[test]
    fn paths_of_finds_directories_by_inode() {
        let t = tempfile::tempdir().unwrap();
        let deep = t.path().join("a/b/c");
        std::fs::create_dir_all(&deep).unwrap();
        std::fs::create_dir(t.path().join("d")).unwrap();
        let ino = |p: &Path| std::fs::metadata(p).unwrap().ino();
        let want: HashSet<u64> = [ino(&deep), ino(t.path()), 0].into_iter().collect();
        let got = paths_of(t.path(), &want);
        assert_eq!(got.len(), 2, "{got:?}");
        assert_eq!(got[&ino(&deep)], deep);
        assert_eq!(got[&ino(t.path())], t.path());
    }
}
