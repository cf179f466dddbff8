//! Who has a congestion-control name registered, and which BPF objects of
//! ours exist in the kernel.
//!
//! The kernel lists registered names in
//! `net.ipv4.tcp_available_congestion_control`; BPF ones are struct_ops
//! maps named after the algorithm. Each such map's value starts with
//! `struct bpf_struct_ops_common_value { refcount_t refcnt; enum
//! bpf_struct_ops_state state; }`, and a struct_ops link names its map. From
//! those this module tells a bbrkit pin from another holder (a process
//! holding a link, or a plain `.struct_ops` map that stays registered after
//! its loader died), and finds maps that are no longer registered but still
//! used by open connections (`TOBEFREE`). Reading maps and links by id needs
//! CAP_SYS_ADMIN; as another user the lists come back empty. Reads only.

use std::path::PathBuf;

use libbpf_rs::query::{LinkInfoIter, LinkTypeInfo, MapInfoIter, ProgInfoIter};
use libbpf_rs::{Link, MapCore, MapFlags, MapHandle, MapType};

use crate::pin;

/// `enum bpf_struct_ops_state` (kernel/bpf/bpf_struct_ops.c).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OpsState {
    /// Created, no value yet.
    Init,
    /// Registered the plain way (`.struct_ops`, map update).
    InUse,
    /// Unregistered, waiting for the last user (a connection) to go.
    ToBeFree,
    /// Filled for a link (`.struct_ops.link`); registered while a link holds it.
    Ready,
    /// A value this build does not know.
    Unknown(u32),
}

impl OpsState {
    fn from_raw(v: u32) -> OpsState {
        match v {
            0 => OpsState::Init,
            1 => OpsState::InUse,
            2 => OpsState::ToBeFree,
            3 => OpsState::Ready,
            n => OpsState::Unknown(n),
        }
    }
}

/// One struct_ops map in the kernel.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct OpsMap {
    /// Map id.
    pub id: u32,
    /// Map name (the algorithm's, for congestion controls).
    pub name: String,
    /// Id of the BTF its object was loaded with (its programs share it).
    pub btf_id: u32,
    /// Its state (`None`: its value could not be read).
    pub state: Option<OpsState>,
    /// Ids of the struct_ops links holding it.
    pub links: Vec<u32>,
}

/// Who holds a registered name.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Holder {
    /// bbrkit's pin in bpffs.
    BbrkitPin {
        /// The link pin (Linux < 6.4: the struct_ops map pin).
        path: PathBuf,
    },
    /// A struct_ops link held by some process (e.g. a running bbrkit lab,
    /// or another loader).
    Link {
        /// Link id.
        link_id: u32,
        /// Map id.
        map_id: u32,
        /// The registered programs are bbrkit's own (every one of them has
        /// the name of a program of this build's embedded object): a lab's
        /// or another bbrkit's registration, which may be shared
        /// (`crate::share`).
        bbrkit: bool,
    },
    /// A plain struct_ops map registered without a link (stays registered
    /// when its loader exits).
    Map {
        /// Map id.
        map_id: u32,
    },
    /// Not a BPF struct_ops: built into the kernel or a module.
    Kernel,
}

/// A congestion-control name's registration.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct CaStatus {
    /// The name.
    pub name: String,
    /// Listed in `tcp_available_congestion_control`.
    pub registered: bool,
    /// Who holds it, when registered.
    pub holder: Option<Holder>,
    /// struct_ops maps of that name that are no longer registered but still
    /// exist (connections still use them).
    pub lingering: Vec<u32>,
}

/// Every struct_ops map in the kernel with its state and links.
pub fn ops_maps() -> Vec<OpsMap> {
    crate::log::install();
    let links: Vec<(u32, u32)> = LinkInfoIter::default()
        .filter_map(|l| match l.info {
            LinkTypeInfo::StructOps(s) => Some((l.id, s.map_id)),
            _ => None,
        })
        .collect();
    MapInfoIter::default()
        .filter(|m| m.ty == MapType::StructOps)
        .map(|m| OpsMap {
            id: m.id,
            name: m.name.to_string_lossy().into_owned(),
            btf_id: m.btf_id,
            state: ops_state(m.id),
            links: links
                .iter()
                .filter(|(_, map)| *map == m.id)
                .map(|(l, _)| *l)
                .collect(),
        })
        .collect()
}

/// The state word of struct_ops map `id` (offset 4 of its value).
fn ops_state(id: u32) -> Option<OpsState> {
    let map = MapHandle::from_map_id(id).ok()?;
    let value = map.lookup(&0u32.to_ne_bytes(), MapFlags::ANY).ok()??;
    let raw = u32::from_ne_bytes(value.get(4..8)?.try_into().ok()?);
    Some(OpsState::from_raw(raw))
}

/// The map id of the link pinned at `path`, if it is a struct_ops link.
fn pinned_map_id(path: &std::path::Path) -> Option<u32> {
    if !path.exists() {
        return None;
    }
    crate::log::install();
    let link = Link::open(path).ok()?;
    match link.info().ok()?.info {
        LinkTypeInfo::StructOps(s) => Some(s.map_id),
        _ => None,
    }
}

/// The registration of `name`.
pub fn ca_status(name: &str) -> CaStatus {
    let registered = bbrkit_diag::algorithms::is_available(name).unwrap_or(false);
    let maps: Vec<OpsMap> = ops_maps().into_iter().filter(|m| m.name == name).collect();
    let live = |m: &OpsMap| !m.links.is_empty() || m.state == Some(OpsState::InUse);
    let holder = registered.then(|| holder(name, &maps));
    let lingering = maps.iter().filter(|m| !live(m)).map(|m| m.id).collect();
    CaStatus {
        name: name.to_string(),
        registered,
        holder,
        lingering,
    }
}

/// The id of the struct_ops map pinned at `path` (bbrkit's pin on Linux
/// < 6.4, where the map registers the name by itself).
fn pinned_ops_map_id(path: &std::path::Path) -> Option<u32> {
    if !path.exists() {
        return None;
    }
    crate::log::install();
    let map = MapHandle::from_pinned_path(path).ok()?;
    (map.map_type() == MapType::StructOps)
        .then(|| map.info().ok().map(|i| i.info.id))
        .flatten()
}

fn holder(name: &str, maps: &[OpsMap]) -> Holder {
    let pin = pin::link_path(name);
    if let Some(map_id) = pinned_map_id(&pin)
        && maps.iter().any(|m| m.id == map_id)
    {
        return Holder::BbrkitPin { path: pin };
    }
    let map_pin = pin::map_path(name);
    if let Some(map_id) = pinned_ops_map_id(&map_pin)
        && maps
            .iter()
            .any(|m| m.id == map_id && m.state == Some(OpsState::InUse))
    {
        return Holder::BbrkitPin { path: map_pin };
    }
    if let Some(m) = maps.iter().find(|m| !m.links.is_empty()) {
        return Holder::Link {
            link_id: m.links[0],
            map_id: m.id,
            bbrkit: is_bbrkit_object(m.btf_id),
        };
    }
    match maps.iter().find(|m| m.state == Some(OpsState::InUse)) {
        Some(m) => Holder::Map { map_id: m.id },
        None => Holder::Kernel,
    }
}

/// Whether the programs loaded with BTF `btf_id` (one object's load) are
/// bbrkit's: there is at least one, and each has the name of a program of
/// this build's embedded object. A name check, not a proof: it tells
/// bbrkit's own registrations (a lab's, another bbrkit's) from another
/// loader's, which would have to copy bbrkit's program names to pass.
pub fn is_bbrkit_object(btf_id: u32) -> bool {
    if btf_id == 0 {
        return false;
    }
    let Ok(open) = crate::bbr3::source().open() else {
        return false;
    };
    let ours: Vec<String> = open
        .progs()
        .map(|p| p.name().to_string_lossy().into_owned())
        .collect();
    let mut theirs = ProgInfoIter::default()
        .filter(|p| p.btf_id == btf_id)
        .map(|p| p.name.to_string_lossy().into_owned())
        .peekable();
    theirs.peek().is_some() && theirs.all(|n| ours.contains(&n))
}

/// Processes that hold an open file descriptor of link `link_id`
/// (`/proc/<pid>/fdinfo/<fd>` says `link_id:`), as `(pid, command name)`.
/// Reads every process's descriptors: for messages, not for polling.
pub fn link_holders(link_id: u32) -> Vec<(u32, String)> {
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let wanted = format!("link_id:\t{link_id}");
    let mut out = Vec::new();
    for p in procs.flatten() {
        let Some(pid) = p.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(fds) = std::fs::read_dir(p.path().join("fdinfo")) else {
            continue;
        };
        let holds = fds.flatten().any(|fd| {
            std::fs::read_to_string(fd.path())
                .is_ok_and(|t| t.lines().any(|l| l.trim_end() == wanted))
        });
        if holds {
            let comm = std::fs::read_to_string(p.path().join("comm")).unwrap_or_default();
            out.push((pid, comm.trim().to_string()));
        }
    }
    out
}

/// BPF objects in the kernel that belong to bbrkit's congestion controls:
/// programs and maps whose name starts with `prefix` (e.g. `bbr3`, which
/// also matches the `bbr3` struct_ops map and `bbr3_*` programs and maps),
/// struct_ops maps named in `algorithms`, the struct_ops links holding any
/// of those maps, and bbrkit's pins.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Leftovers {
    /// `(id, name)` of programs.
    pub programs: Vec<(u32, String)>,
    /// `(id, name)` of maps.
    pub maps: Vec<(u32, String)>,
    /// Link ids.
    pub links: Vec<u32>,
    /// Algorithms with a pin under [`pin::PIN_ROOT`].
    pub pins: Vec<String>,
}

impl Leftovers {
    /// What `self` has that `before` did not (objects created since).
    pub fn since(&self, before: &Leftovers) -> Leftovers {
        fn new<T: PartialEq + Clone>(now: &[T], before: &[T]) -> Vec<T> {
            now.iter()
                .filter(|x| !before.contains(x))
                .cloned()
                .collect()
        }
        Leftovers {
            programs: new(&self.programs, &before.programs),
            maps: new(&self.maps, &before.maps),
            links: new(&self.links, &before.links),
            pins: new(&self.pins, &before.pins),
        }
    }

    /// True when nothing is left.
    pub fn is_empty(&self) -> bool {
        self.programs.is_empty()
            && self.maps.is_empty()
            && self.links.is_empty()
            && self.pins.is_empty()
    }
}

/// Scans the kernel for [`Leftovers`].
pub fn leftovers(prefix: &str, algorithms: &[&str]) -> Leftovers {
    let ours = |name: &str| name.starts_with(prefix) || algorithms.contains(&name);
    let programs = ProgInfoIter::default()
        .filter_map(|p| {
            let n = p.name.to_string_lossy().into_owned();
            ours(&n).then_some((p.id, n))
        })
        .collect();
    let maps: Vec<(u32, String)> = MapInfoIter::default()
        .filter_map(|m| {
            let n = m.name.to_string_lossy().into_owned();
            ours(&n).then_some((m.id, n))
        })
        .collect();
    let links = ops_maps()
        .into_iter()
        .filter(|m| maps.iter().any(|(id, _)| *id == m.id))
        .flat_map(|m| m.links)
        .collect();
    Leftovers {
        programs,
        maps,
        links,
        pins: pin::pinned(),
    }
}

/// The [`leftovers`] that `before` did not have, once they are gone or
/// `timeout` has passed (empty: nothing left). The kernel frees maps and
/// links asynchronously after the last process or socket using them is
/// gone, so a check right after a run ends waits here. For tests and
/// diagnostics: polls every 20 ms.
pub fn leftovers_after(
    before: &Leftovers,
    prefix: &str,
    algorithms: &[&str],
    timeout: std::time::Duration,
) -> Leftovers {
    let until = std::time::Instant::now() + timeout;
    loop {
        let left = leftovers(prefix, algorithms).since(before);
        if left.is_empty() || std::time::Instant::now() >= until {
            return left;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}
