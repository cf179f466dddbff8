//! The sock_ops program's maps, by name: filled from a [`Compiled`] policy,
//! read back into one (so "the maps equal the file" is `==`), its counters
//! summed over CPUs, and a rule's weights rewritten while attached.

use std::path::Path;

use bbrkit_policy::attached::{ArmCounters, Counters, Stats};
use bbrkit_policy::{Compiled, RuleEntry, TrieEntry};
use libbpf_rs::{MapCore, MapFlags, MapHandle};
use zerocopy::{FromBytes, IntoBytes};

use super::layout::{self, MAX_ARMS, RawCfg, RawHits, RawRule};
use crate::error::{BpfError, Result};
use crate::load::Loaded;

/// Every map of the object, pinned under these names.
pub(crate) const NAMES: [&str; 10] = [
    "bkpol_v4",
    "bkpol_v6",
    "bkpol_lport",
    "bkpol_rport",
    "bkpol_rules",
    "bkpol_cfg",
    "bkpol_conn",
    "bkpol_hits",
    "bkpol_stats",
    "bkpol_ring",
];

/// `BKPOL_S_COUNT`: the counters `0..BKPOL_S_LAST_FAILED`, then the time stamp.
const STATS: u32 = 7;
/// `BKPOL_S_LAST_FAILED`: per CPU, the monotonic time of its latest failure.
const LAST_FAILED: u32 = 7;

/// Handles on the program's maps (from the loaded object or from pins).
#[derive(Debug)]
pub struct Maps {
    handles: Vec<MapHandle>,
}

fn map_err(map: &str, op: &'static str) -> impl FnOnce(libbpf_rs::Error) -> BpfError {
    let map = map.to_string();
    move |source| BpfError::Map { map, op, source }
}

impl Maps {
    /// The maps of a loaded sock_ops object.
    pub(crate) fn of_object(loaded: &Loaded) -> Result<Maps> {
        let handles = NAMES
            .iter()
            .map(|name| {
                let map = loaded
                    .object()
                    .maps()
                    .find(|m| m.name().to_str() == Some(name))
                    .ok_or_else(|| BpfError::Missing {
                        object: loaded.name().into(),
                        what: format!("map {name}"),
                    })?;
                MapHandle::try_from(&map).map_err(map_err(name, "open"))
            })
            .collect::<Result<_>>()?;
        Ok(Maps { handles })
    }

    /// The maps pinned in `dir`. Layouts 1 and 2 pin the same maps; a
    /// later layout that adds one opens the pins by the layout it reads
    /// first ([`Maps::layout_of`]), so an older attachment still opens and
    /// is replaced by `enable`.
    pub(crate) fn of_pins(dir: &Path) -> Result<Maps> {
        let handles = NAMES
            .iter()
            .map(|name| {
                let path = dir.join(name);
                MapHandle::from_pinned_path(&path).map_err(|source| BpfError::Pin { path, source })
            })
            .collect::<Result<_>>()?;
        Ok(Maps { handles })
    }

    fn get(&self, name: &str) -> &MapHandle {
        let i = NAMES
            .iter()
            .position(|n| *n == name)
            .expect("a name of NAMES");
        &self.handles[i]
    }

    /// The per-connection sk_storage map (`bkpol_conn`, values
    /// [`layout::RawConn`]) of connections of recorded rules: what sock_diag's
    /// `INET_DIAG_REQ_SK_BPF_STORAGES` asks for to sample a trial's
    /// connections still open (start, rule, arm). The rule and arm of any
    /// connection are also `Compiled::decide` of its addresses and cookie.
    pub fn conn(&self) -> &MapHandle {
        self.get("bkpol_conn")
    }

    /// The ring of close records (`bkpol_ring`).
    pub fn ring(&self) -> &MapHandle {
        self.get("bkpol_ring")
    }

    /// Pins every map in `dir` under its name.
    pub(crate) fn pin(&mut self, dir: &Path) -> Result<()> {
        for (h, name) in self.handles.iter_mut().zip(NAMES) {
            let path = dir.join(name);
            h.pin(&path)
                .map_err(|source| BpfError::Pin { path, source })?;
        }
        Ok(())
    }

    /// Pins the layout marker in `dir`: a one-entry array map
    /// (`bkpol_layout`) holding [`super::LAYOUT`], made here, not by the
    /// object, so every later layout can read any earlier one's.
    pub(crate) fn pin_layout(dir: &Path) -> Result<()> {
        let opts = libbpf_sys::bpf_map_create_opts {
            sz: std::mem::size_of::<libbpf_sys::bpf_map_create_opts>() as libbpf_sys::size_t,
            ..Default::default()
        };
        let name = super::LAYOUT_PIN;
        let mut h = MapHandle::create(
            libbpf_rs::MapType::Array,
            Some("bkpol_layout"),
            4,
            4,
            1,
            &opts,
        )
        .map_err(map_err(name, "create"))?;
        h.update(
            &0u32.to_ne_bytes(),
            &super::LAYOUT.to_ne_bytes(),
            MapFlags::ANY,
        )
        .map_err(map_err(name, "update"))?;
        let path = dir.join(name);
        h.pin(&path)
            .map_err(|source| BpfError::Pin { path, source })
    }

    /// The layout of the pins in `dir`: its marker's value, or 1 (the
    /// first layout, issue 19, pinned no marker).
    pub(crate) fn layout_of(dir: &Path) -> Result<u32> {
        let path = dir.join(super::LAYOUT_PIN);
        if !path.exists() {
            return Ok(1);
        }
        let h =
            MapHandle::from_pinned_path(&path).map_err(|source| BpfError::Pin { path, source })?;
        let v = h
            .lookup(&0u32.to_ne_bytes(), MapFlags::ANY)
            .map_err(map_err(super::LAYOUT_PIN, "lookup"))?
            .and_then(|b| b.get(..4).and_then(|b| b.try_into().ok()))
            .map(u32::from_ne_bytes);
        v.ok_or_else(|| missing(super::LAYOUT_PIN, "entry 0"))
    }

    fn update(&self, name: &str, key: &[u8], value: &[u8]) -> Result<()> {
        self.get(name)
            .update(key, value, MapFlags::ANY)
            .map_err(map_err(name, "update"))
    }

    fn lookup(&self, name: &str, key: &[u8]) -> Result<Vec<u8>> {
        self.get(name)
            .lookup(key, MapFlags::ANY)
            .map_err(map_err(name, "lookup"))?
            .ok_or_else(|| BpfError::Missing {
                object: name.into(),
                what: format!("entry {key:?}"),
            })
    }

    /// Writes the policy's contents (into freshly loaded, empty maps).
    pub(crate) fn fill(&self, c: &Compiled) -> Result<()> {
        let cfg = RawCfg {
            salt: c.salt,
            nrules: c.rules.len() as u32,
            pad: 0,
        };
        self.update("bkpol_cfg", &0u32.to_ne_bytes(), cfg.as_bytes())?;
        for (i, r) in c.rules.iter().enumerate() {
            let row = RawRule::from_entry(r);
            self.update("bkpol_rules", &(i as u32).to_ne_bytes(), row.as_bytes())?;
        }
        for (name, entries) in tries(c) {
            for e in entries {
                self.update(name, &layout::trie_key(e), &e.rules.to_ne_bytes())?;
            }
        }
        Ok(())
    }

    /// The policy as the maps hold it now.
    pub fn read_back(&self) -> Result<Compiled> {
        let cfg = self.cfg()?;
        let rules = (0..cfg.nrules)
            .map(|i| self.rule(i as usize))
            .collect::<Result<Vec<_>>>()?;
        let trie = |name: &str| -> Result<Vec<TrieEntry>> {
            let map = self.get(name);
            let mut out = Vec::new();
            for key in map.keys() {
                let value = self.lookup(name, &key)?;
                out.extend(layout::trie_entry(&key, &value));
            }
            out.sort();
            Ok(out)
        };
        Ok(Compiled {
            salt: cfg.salt,
            rules,
            v4: trie("bkpol_v4")?,
            v6: trie("bkpol_v6")?,
            local_port: trie("bkpol_lport")?,
            remote_port: trie("bkpol_rport")?,
        })
    }

    fn cfg(&self) -> Result<RawCfg> {
        let bytes = self.lookup("bkpol_cfg", &0u32.to_ne_bytes())?;
        RawCfg::read_from_bytes(&bytes).map_err(|_| missing("bkpol_cfg", "a bkpol_cfg value"))
    }

    fn raw_rule(&self, i: usize) -> Result<RawRule> {
        let bytes = self.lookup("bkpol_rules", &(i as u32).to_ne_bytes())?;
        RawRule::read_from_bytes(&bytes).map_err(|_| missing("bkpol_rules", "a bkpol_rule value"))
    }

    fn rule(&self, i: usize) -> Result<RuleEntry> {
        self.raw_rule(i)?
            .to_entry()
            .ok_or_else(|| missing("bkpol_rules", &format!("a valid row {i}")))
    }

    /// The per-rule, per-arm and global counters.
    pub fn counters(&self) -> Result<Counters> {
        let nrules = self.cfg()?.nrules as usize;
        let mut arms = Vec::new();
        for rule in 0..nrules {
            let entry = self.rule(rule)?;
            for (arm, a) in entry.arms.iter().enumerate() {
                let h: RawHits = self.percpu_sum("bkpol_hits", (rule * MAX_ARMS + arm) as u32)?;
                arms.push(ArmCounters {
                    rule,
                    arm,
                    cc: a.cc.clone(),
                    matched: h.matched,
                    assigned: h.assigned,
                    kept_app: h.kept_app,
                    kept_route: h.kept_route,
                    failed: h.failed,
                });
            }
        }
        let s = (0..STATS)
            .map(|i| self.percpu_u64("bkpol_stats", i))
            .collect::<Result<Vec<u64>>>()?;
        let last_failed_ns = self
            .percpu("bkpol_stats", LAST_FAILED)?
            .iter()
            .filter_map(|v| v.get(..8).and_then(|b| b.try_into().ok()))
            .map(u64::from_ne_bytes)
            .max()
            .unwrap_or(0);
        let read_ns = monotonic_ns();
        let stats = Stats {
            established: s[0],
            unmatched: s[1],
            no_arm: s[2],
            no_storage: s[3],
            records: s[4],
            ring_full: s[5],
            no_tcp_sock: s[6],
            last_failed_ns,
            read_ns,
        };
        Ok(Counters { arms, stats })
    }

    fn percpu(&self, name: &str, key: u32) -> Result<Vec<Vec<u8>>> {
        self.get(name)
            .lookup_percpu(&key.to_ne_bytes(), MapFlags::ANY)
            .map_err(map_err(name, "lookup"))?
            .ok_or_else(|| missing(name, &format!("entry {key}")))
    }

    fn percpu_u64(&self, name: &str, key: u32) -> Result<u64> {
        Ok(self
            .percpu(name, key)?
            .iter()
            .filter_map(|v| v.get(..8).and_then(|b| b.try_into().ok()))
            .map(u64::from_ne_bytes)
            .sum())
    }

    fn percpu_sum(&self, name: &str, key: u32) -> Result<RawHits> {
        let mut sum = RawHits::default();
        for v in self.percpu(name, key)? {
            let h = RawHits::read_from_prefix(&v)
                .map_err(|_| missing(name, "a bkpol_hits value"))?
                .0;
            sum.matched += h.matched;
            sum.assigned += h.assigned;
            sum.kept_app += h.kept_app;
            sum.kept_route += h.kept_route;
            sum.failed += h.failed;
        }
        Ok(sum)
    }

    /// Rewrites rule `rule`'s arm weights (one per arm, not all 0): new
    /// connections draw with them; connections already open keep their arm.
    /// The program reads the weights as one word, so a connection drawing
    /// during the rewrite sees the old or the new weights.
    pub fn set_weights(&self, rule: usize, weights: &[u16]) -> Result<()> {
        let nrules = self.cfg()?.nrules as usize;
        let bad = |problem: String| BpfError::Weights { rule, problem };
        if rule >= nrules {
            return Err(bad(format!("the attached policy has {nrules} rules")));
        }
        let mut row = self.raw_rule(rule)?;
        if weights.len() != usize::from(row.narms) {
            return Err(bad(format!(
                "{} weights for {} arms",
                weights.len(),
                row.narms
            )));
        }
        if weights.iter().all(|&w| w == 0) {
            return Err(bad("every weight is 0".into()));
        }
        row.weights = layout::weights_word(weights);
        self.update("bkpol_rules", &(rule as u32).to_ne_bytes(), row.as_bytes())
    }
}

/// `CLOCK_MONOTONIC` in ns: `bpf_ktime_get_ns`'s clock.
fn monotonic_ns() -> u64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid timespec the call writes; CLOCK_MONOTONIC
    // always exists.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut t) };
    if rc != 0 {
        return 0;
    }
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

fn missing(object: &str, what: &str) -> BpfError {
    BpfError::Missing {
        object: object.into(),
        what: what.into(),
    }
}

fn tries(c: &Compiled) -> [(&'static str, &Vec<TrieEntry>); 4] {
    [
        ("bkpol_v4", &c.v4),
        ("bkpol_v6", &c.v6),
        ("bkpol_lport", &c.local_port),
        ("bkpol_rport", &c.remote_port),
    ]
}
