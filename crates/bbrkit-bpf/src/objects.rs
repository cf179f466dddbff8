//! Kernel BPF objects by id: those one registration or one process holds,
//! and which of them still exist. For leak checks that look only at what
//! one run or test created, so they hold while bbrkit runs elsewhere on the
//! host (another lab's programs, maps and links have other ids; names say
//! nothing about who made an object).
//!
//! Each id is looked up by itself (`BPF_{PROG,MAP,LINK}_GET_FD_BY_ID`): the
//! kernel's id iterators end early when an object is freed between two
//! steps, which other processes' objects do at any time. Ids are not reused
//! until the kernel's 31-bit counters wrap.
//!
//! A registration that another process joined (`crate::share`) rightly
//! outlives its maker: its link, and the struct_ops map, programs and maps
//! loaded with it, stay while that process holds the link.
//! [`Objects::shared`] names those, so a check can tell them from a leak.
//!
//! ```text
//!   Registration ──of──▶ Objects{programs, maps, links} ◀──held_by── /proc/PID/fdinfo
//!                            │ alive(): looked up one by one
//!                            │ shared(): a link another process holds, and its load
//!                            ▼
//!                 left_after(timeout) = alive − shared, once empty or at the deadline
//! ```
//!
//! Reads only; needs CAP_SYS_ADMIN (as another user nothing is alive).

use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

use libbpf_rs::{MapCore, Program};

use crate::load::Loaded;
use crate::register::Registration;

/// Ids of BPF programs, maps and links, ascending and without repeats.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Objects {
    /// Program ids.
    pub programs: Vec<u32>,
    /// Map ids.
    pub maps: Vec<u32>,
    /// Link ids.
    pub links: Vec<u32>,
}

/// The three kinds of object, with their look-up by id.
#[derive(Debug, Clone, Copy)]
enum Kind {
    Program,
    Map,
    Link,
}

impl Kind {
    /// `BPF_*_GET_FD_BY_ID`: a new descriptor of object `id`, or `None`
    /// when it no longer exists (or cannot be read).
    fn fd(self, id: u32) -> Option<OwnedFd> {
        use libbpf_sys as sys;
        let get = match self {
            Kind::Program => sys::bpf_prog_get_fd_by_id,
            Kind::Map => sys::bpf_map_get_fd_by_id,
            Kind::Link => sys::bpf_link_get_fd_by_id,
        };
        // SAFETY: the call takes a plain id and returns a new descriptor
        // or a negative errno.
        let fd = unsafe { get(id) };
        // SAFETY: `fd` was just returned to this process; nothing else owns it.
        (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd) })
    }
}

impl Objects {
    /// The programs and maps `loaded` created (those of struct_ops maps
    /// it left out are not loaded).
    pub fn of_loaded(loaded: &Loaded) -> Objects {
        let obj = loaded.object();
        let programs = obj
            .progs()
            .filter(|p| p.autoload())
            .filter_map(|p| Program::id_from_fd(p.as_fd()).ok());
        let maps = obj
            .maps()
            .filter(|m| m.autocreate())
            .filter_map(|m| m.info().ok().map(|i| i.info.id));
        Objects::from_ids(programs, maps, std::iter::empty())
    }

    /// What `reg` created: its object's programs and maps, and its links.
    pub fn of_registration(reg: &Registration) -> Objects {
        let mut o = Objects::of_loaded(reg.loaded());
        o.links = reg.link_ids();
        o.links.sort_unstable();
        o
    }

    /// What process `pid` holds a descriptor of now (`prog_id:`, `map_id:`
    /// and `link_id:` in `/proc/PID/fdinfo`; a link's descriptor counts as
    /// the link only, not the program or map it refers to). Empty once the
    /// process is gone.
    pub fn held_by(pid: u32) -> Objects {
        let mut o = Objects::default();
        let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fdinfo")) else {
            return o;
        };
        for fd in fds.flatten() {
            // A descriptor closed since the listing has no fdinfo any more.
            let Ok(info) = std::fs::read_to_string(fd.path()) else {
                continue;
            };
            let (prog, map, link) = (
                fdinfo_id(&info, "prog_id:"),
                fdinfo_id(&info, "map_id:"),
                fdinfo_id(&info, "link_id:"),
            );
            match (link, prog, map) {
                (Some(l), _, _) => o.links.push(l),
                (None, Some(p), _) => o.programs.push(p),
                (None, None, Some(m)) => o.maps.push(m),
                (None, None, None) => {}
            }
        }
        o.normalise();
        o
    }

    /// Adds `other`'s ids.
    pub fn add(&mut self, other: &Objects) {
        self.programs.extend(&other.programs);
        self.maps.extend(&other.maps);
        self.links.extend(&other.links);
        self.normalise();
    }

    /// True when there is no id.
    pub fn is_empty(&self) -> bool {
        self.programs.is_empty() && self.maps.is_empty() && self.links.is_empty()
    }

    /// Those of them the kernel still has.
    pub fn alive(&self) -> Objects {
        let keep = |ids: &[u32], kind: Kind| -> Vec<u32> {
            ids.iter()
                .copied()
                .filter(|&id| kind.fd(id).is_some())
                .collect()
        };
        Objects {
            programs: keep(&self.programs, Kind::Program),
            maps: keep(&self.maps, Kind::Map),
            links: keep(&self.links, Kind::Link),
        }
    }

    /// The names of those of its maps that are alive, in id order.
    pub fn map_names(&self) -> Vec<String> {
        self.maps
            .iter()
            .filter_map(|&id| map_info(id))
            .map(|i| {
                let bytes: Vec<u8> = i
                    .name
                    .iter()
                    .take_while(|&&c| c != 0)
                    .map(|&c| c as u8)
                    .collect();
                String::from_utf8_lossy(&bytes).into_owned()
            })
            .collect()
    }

    /// Those of them another process still uses through a link it holds
    /// (a registration it joined, `crate::share`): each such link, and the
    /// programs and maps loaded with the same BTF as its struct_ops map
    /// (one object's load).
    pub fn shared(&self) -> Objects {
        let me = std::process::id();
        let mut btfs = Vec::new();
        let mut links = Vec::new();
        for &l in &self.links {
            let others = crate::status::link_holders(l)
                .iter()
                .any(|(pid, _)| *pid != me);
            if !others {
                continue;
            }
            links.push(l);
            if let Some(btf) = link_map(l).and_then(|m| btf_of(Kind::Map, m)) {
                btfs.push(btf);
            }
        }
        let loaded_with = |ids: &[u32], kind: Kind| -> Vec<u32> {
            ids.iter()
                .copied()
                .filter(|&id| btf_of(kind, id).is_some_and(|b| btfs.contains(&b)))
                .collect()
        };
        Objects {
            programs: loaded_with(&self.programs, Kind::Program),
            maps: loaded_with(&self.maps, Kind::Map),
            links,
        }
    }

    /// What `self` has that `other` does not.
    pub fn without(&self, other: &Objects) -> Objects {
        let keep = |a: &[u32], b: &[u32]| a.iter().copied().filter(|x| !b.contains(x)).collect();
        Objects {
            programs: keep(&self.programs, &other.programs),
            maps: keep(&self.maps, &other.maps),
            links: keep(&self.links, &other.links),
        }
    }

    /// Those of them still alive and not [`Objects::shared`], once there
    /// are none or `timeout` has passed (empty: nothing left). The kernel
    /// frees maps and links asynchronously after their last user, so a
    /// check right after a run ends waits here; polls every 20 ms.
    pub fn left_after(&self, timeout: Duration) -> Objects {
        let until = Instant::now() + timeout;
        loop {
            let alive = self.alive();
            let left = alive.without(&alive.shared());
            if left.is_empty() || Instant::now() >= until {
                return left;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn from_ids(
        programs: impl Iterator<Item = u32>,
        maps: impl Iterator<Item = u32>,
        links: impl Iterator<Item = u32>,
    ) -> Objects {
        let mut o = Objects {
            programs: programs.collect(),
            maps: maps.collect(),
            links: links.collect(),
        };
        o.normalise();
        o
    }

    fn normalise(&mut self) {
        for v in [&mut self.programs, &mut self.maps, &mut self.links] {
            v.sort_unstable();
            v.dedup();
        }
    }
}

/// The id after `key` in an fdinfo text (`map_id:\t12`).
fn fdinfo_id(info: &str, key: &str) -> Option<u32> {
    info.lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.trim().parse().ok())
}

/// The struct_ops map of link `id` (`map_id:` in its fdinfo).
fn link_map(id: u32) -> Option<u32> {
    let fd = Kind::Link.fd(id)?;
    let info = std::fs::read_to_string(format!("/proc/self/fdinfo/{}", fd.as_raw_fd())).ok()?;
    fdinfo_id(&info, "map_id:")
}

/// `bpf_map_info` of map `id`, if it is alive.
fn map_info(id: u32) -> Option<libbpf_sys::bpf_map_info> {
    let fd = Kind::Map.fd(id)?;
    let mut info = libbpf_sys::bpf_map_info::default();
    let mut len = std::mem::size_of_val(&info) as u32;
    // SAFETY: `info` is a live bpf_map_info of `len` bytes the kernel fills
    // (at most `len`); `fd` is open for the call.
    let rc = unsafe { libbpf_sys::bpf_map_get_info_by_fd(fd.as_raw_fd(), &mut info, &mut len) };
    (rc == 0).then_some(info)
}

/// The id of the BTF program or map `id` was loaded with (0: none).
fn btf_of(kind: Kind, id: u32) -> Option<u32> {
    match kind {
        Kind::Program => {
            let fd = kind.fd(id)?;
            let mut info = libbpf_sys::bpf_prog_info::default();
            let mut len = std::mem::size_of_val(&info) as u32;
            // SAFETY: `info` is a live bpf_prog_info of `len` bytes the
            // kernel fills (at most `len`); `fd` is open for the call.
            let rc =
                unsafe { libbpf_sys::bpf_prog_get_info_by_fd(fd.as_raw_fd(), &mut info, &mut len) };
            (rc == 0).then_some(info.btf_id)
        }
        Kind::Map => map_info(id).map(|i| i.btf_id),
        Kind::Link => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fdinfo_ids() {
        let link = "pos:\t0\nflags:\t02000002\nmnt_id:\t16\nino:\t1057\nlink_type:\tstruct_ops\nlink_id:\t41\nmap_id:\t77\n";
        assert_eq!(fdinfo_id(link, "link_id:"), Some(41));
        assert_eq!(fdinfo_id(link, "map_id:"), Some(77));
        assert_eq!(fdinfo_id(link, "prog_id:"), None);
        assert_eq!(fdinfo_id("prog_id:\tx\n", "prog_id:"), None);
    }

    #[test]
    fn without_and_add() {
        let mut a = Objects::from_ids([3, 1].into_iter(), [5].into_iter(), [9, 9].into_iter());
        assert_eq!(a.links, [9]);
        let b = Objects::from_ids([1].into_iter(), [].into_iter(), [9].into_iter());
        assert_eq!(
            a.without(&b),
            Objects {
                programs: vec![3],
                maps: vec![5],
                links: vec![],
            }
        );
        a.add(&Objects::from_ids(
            [2].into_iter(),
            [].into_iter(),
            [].into_iter(),
        ));
        assert_eq!(a.programs, [1, 2, 3]);
        assert!(!a.is_empty() && Objects::default().is_empty());
    }

    /// Ids that were never handed out are not alive (the kernel's ids
    /// start at 1 and this process has no object with id 0x7fff_fff0).
    #[test]
    fn unknown_ids_are_not_alive() {
        let o = Objects::from_ids(
            [0x7fff_fff0].into_iter(),
            [0x7fff_fff1].into_iter(),
            [0x7fff_fff2].into_iter(),
        );
        assert!(o.alive().is_empty());
        assert!(o.left_after(Duration::ZERO).is_empty());
    }
}
