//! What the running kernel offers: release, congestion-control lists, BBR
//! presence (built in or module) and version, qdisc support. Every answer
//! carries its evidence; nothing is guessed from the kernel version.
//! Reads through a [`Host`]: its live `/proc` and `/sys`, and `boot/`,
//! `lib/modules/` under its root. Never loads modules or writes anything.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::host::Host;

/// How a kernel feature is provided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Provision {
    /// Compiled into the kernel image.
    BuiltIn,
    /// A loadable module (on disk or loaded).
    Module,
    /// Known absent (config says not set, nothing on disk, not registered).
    Absent,
    /// No evidence either way (no kernel config, no module tree).
    Unknown,
}

impl Provision {
    /// True when the feature can be used.
    pub fn present(self) -> bool {
        matches!(self, Provision::BuiltIn | Provision::Module)
    }
    /// Display word.
    pub fn word(self) -> &'static str {
        match self {
            Provision::BuiltIn => "built in",
            Provision::Module => "module",
            Provision::Absent => "absent",
            Provision::Unknown => "unknown",
        }
    }
}

/// One feature (a congestion-control module or a qdisc) with evidence.
#[derive(Debug, Clone, Serialize)]
pub struct Feature {
    /// Name (`bbr`, `fq`, `fq_codel`, `netem`).
    pub name: String,
    /// How it is provided.
    pub provision: Provision,
    /// Each fact that led to the answer.
    pub evidence: Vec<String>,
}

/// The kernel's configuration, from the first source that exists.
#[derive(Debug, Clone, Default)]
pub struct KernelConfig {
    /// `/proc/config.gz` or `boot/config-<release>`.
    pub source: Option<String>,
    /// `CONFIG_*` values (`y`, `m`, strings); "not set" lines are absent.
    pub values: BTreeMap<String, String>,
}

impl KernelConfig {
    /// Reads `/proc/config.gz`, else `boot/config-<release>` under the root.
    pub fn load(host: &dyn Host, release: &str) -> KernelConfig {
        if let Some(text) = host.proc_config() {
            return KernelConfig::parse(&text, "/proc/config.gz");
        }
        let root = host.root();
        let boot = root.path(format!("boot/config-{release}"));
        if let Ok(t) = std::fs::read_to_string(&boot) {
            return KernelConfig::parse(&t, &root.show(&boot));
        }
        KernelConfig::default()
    }

    /// Parses kernel config text.
    pub fn parse(text: &str, source: &str) -> KernelConfig {
        let values = text
            .lines()
            .filter(|l| l.starts_with("CONFIG_"))
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.to_string(), v.trim_matches('"').to_string()))
            .collect();
        KernelConfig {
            source: Some(source.to_string()),
            values,
        }
    }

    /// A value, if set.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.values.get(key).map(String::as_str)
    }
}

/// Everything `check` says about the kernel.
#[derive(Debug, Clone, Serialize)]
pub struct KernelFacts {
    /// `uname -r` (from `/proc/sys/kernel/osrelease`).
    pub release: String,
    /// Where the kernel config came from, if anywhere.
    pub config_source: Option<String>,
    /// `CONFIG_DEFAULT_TCP_CONG`, if known.
    pub config_default_cc: Option<String>,
    /// Algorithms registered now (`tcp_available_congestion_control`).
    pub available_cc: Vec<String>,
    /// Algorithms unprivileged sockets and non-initial namespaces may use.
    pub allowed_cc: Vec<String>,
    /// Algorithms not registered yet but loadable from the module tree.
    pub loadable_cc: Vec<String>,
    /// This namespace's default algorithm.
    pub current_cc: Option<String>,
    /// `net.core.default_qdisc` (None in a non-initial network namespace).
    pub default_qdisc: Option<String>,
    /// BBR support.
    pub bbr: Feature,
    /// BBR version from `/sys/module/tcp_bbr/version`, else `unknown`.
    pub bbr_version: String,
    /// Evidence for the version.
    pub bbr_version_evidence: String,
    /// fq, fq_codel, netem support.
    pub qdiscs: Vec<Feature>,
}

impl KernelFacts {
    /// The qdisc feature named `name`.
    pub fn qdisc(&self, name: &str) -> Option<&Feature> {
        self.qdiscs.iter().find(|f| f.name == name)
    }

    /// What the built-in bbr's version means (`": the built-in bbr is
    /// BBRv1 (mainline)"`), empty for a version bbrkit cannot name.
    pub fn bbr_version_meaning(&self) -> &'static str {
        match self.bbr_version.as_str() {
            "1" => ": the built-in bbr is BBRv1 (mainline)",
            "3" => ": the built-in bbr is BBRv3 (a patched kernel such as XanMod), not v1",
            _ => "",
        }
    }
}

struct ModTree {
    dir: std::path::PathBuf,
    builtin: Option<String>,
}

/// What a feature's sources say: the kernel config, the module tree,
/// `/sys/module`.
struct Sources<'a> {
    cfg: &'a KernelConfig,
    tree: &'a ModTree,
    host: &'a dyn Host,
}

fn feature(
    name: &str,
    config_key: &str,
    module: &str,
    rel_path: &str,
    src: &Sources<'_>,
    registered: Option<bool>,
) -> Feature {
    let mut f = Findings {
        prov: Provision::Unknown,
        evidence: Vec::new(),
    };
    f.config(src.cfg, config_key);
    f.module_tree(src.tree, rel_path);
    f.sys_module(module, src.host.sys_module(module));
    f.registration(name, registered);
    if f.evidence.is_empty() {
        f.evidence
            .push("no kernel config, module tree or /sys/module entry found".into());
    }
    Feature {
        name: name.into(),
        provision: f.prov,
        evidence: f.evidence,
    }
}

/// How a feature is provided, as the sources consulted so far say, and
/// what each of them said. Later sources refine earlier ones.
struct Findings {
    prov: Provision,
    evidence: Vec<String>,
}

impl Findings {
    /// The kernel config's `config_key` (`y`, `m`, or not set), if there
    /// is a config.
    fn config(&mut self, cfg: &KernelConfig, config_key: &str) {
        let Some(src) = &cfg.source else {
            return;
        };
        match cfg.get(config_key) {
            Some("y") => self.prov = Provision::BuiltIn,
            Some("m") => self.prov = Provision::Module,
            _ => self.prov = Provision::Absent,
        }
        let v = cfg.get(config_key).unwrap_or("is not set");
        let sep = if cfg.get(config_key).is_some() {
            "="
        } else {
            " "
        };
        self.evidence.push(format!("{src}: {config_key}{sep}{v}"));
    }

    /// `modules.builtin` listing `rel_path.ko`, or the module file itself
    /// (plain or compressed) in the module tree.
    fn module_tree(&mut self, tree: &ModTree, rel_path: &str) {
        if let Some(b) = &tree.builtin
            && b.lines().any(|l| l.trim() == format!("{rel_path}.ko"))
        {
            self.prov = Provision::BuiltIn;
            self.evidence.push(format!(
                "{} lists {rel_path}.ko",
                tree.dir.join("modules.builtin").display()
            ));
        }
        let ko = tree.dir.join(format!("{rel_path}.ko"));
        if let Some(found) = ["", ".xz", ".zst", ".gz"]
            .iter()
            .map(|ext| std::path::PathBuf::from(format!("{}{ext}", ko.display())))
            .find(|p| p.exists())
        {
            if self.prov != Provision::BuiltIn {
                self.prov = Provision::Module;
            }
            self.evidence.push(format!("{} exists", found.display()));
        }
    }

    /// `/sys/module/<module>`: a loaded module has `initstate`, a built-in
    /// one does not.
    fn sys_module(&mut self, module: &str, found: Option<crate::host::SysModule>) {
        let sys = std::path::Path::new("/sys/module").join(module);
        let Some(found) = found else {
            return;
        };
        let loaded = found.loaded;
        if self.prov == Provision::Unknown || self.prov == Provision::Absent {
            self.prov = if loaded {
                Provision::Module
            } else {
                Provision::BuiltIn
            };
        }
        self.evidence.push(format!(
            "{} exists ({})",
            sys.display(),
            if loaded { "loaded module" } else { "built in" }
        ));
    }

    /// Whether `tcp_available_congestion_control` lists `name` (None: not
    /// a congestion control, or not read).
    fn registration(&mut self, name: &str, registered: Option<bool>) {
        match registered {
            Some(true) => {
                if !self.prov.present() {
                    self.prov = Provision::BuiltIn;
                }
                self.evidence
                    .push(format!("tcp_available_congestion_control lists {name}"));
            }
            Some(false) => self.evidence.push(format!(
                "tcp_available_congestion_control does not list {name}"
            )),
            None => {}
        }
    }
}

/// Gathers the kernel facts through `host`. With `with_version`, a BBR
/// version the `/sys/module/tcp_bbr/version` file does not give is read
/// from a live BBR socket, else from a fresh unconnected one
/// ([`Host::bbr_version`]); without it the version stays `unknown` (for
/// callers that do not need it or take their own socket census: `verify`,
/// `doctor`, `enable`, `bbrkit metrics`).
pub fn gather(host: &dyn Host, with_version: bool) -> KernelFacts {
    let mut k = gather_without_sockets(host);
    if with_version && k.bbr_version == "unknown" {
        match host.bbr_version() {
            Some((v, e)) => (k.bbr_version, k.bbr_version_evidence) = (v, e),
            None => k
                .bbr_version_evidence
                .push_str(" and no live or throwaway BBR socket to read tcp_bbr_info from"),
        }
    }
    k
}

/// `tcp_*.ko` modules on disk that are not registered yet (autoloaded
/// when chosen), sorted.
fn loadable_cc(tree: &ModTree, available: &[String]) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(tree.dir.join("kernel/net/ipv4"))
        .map(|rd| {
            rd.flatten()
                .filter_map(|e| {
                    let n = e.file_name().to_string_lossy().into_owned();
                    let name = n.strip_prefix("tcp_")?.split(".ko").next()?.to_string();
                    (n.contains(".ko")
                        && !name.is_empty()
                        && !available.contains(&name)
                        && name != "diag")
                        .then_some(name)
                })
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

/// The BBR module's version from `/sys`, with its evidence.
fn bbr_module_version(host: &dyn Host) -> (String, String) {
    match host.sys_module("tcp_bbr").and_then(|m| m.version) {
        Some(v) => (
            v.trim().to_string(),
            format!("/sys/module/tcp_bbr/version = {}", v.trim()),
        ),
        None => (
            "unknown".to_string(),
            "/sys/module/tcp_bbr/version absent (mainline BBR exports no version; the BBRv3 patch sets 3)".to_string(),
        ),
    }
}

fn gather_without_sockets(host: &dyn Host) -> KernelFacts {
    let release = host.sysctl("kernel.osrelease").unwrap_or_default();
    let cfg = KernelConfig::load(host, &release);
    let dir = host.root().path(format!("lib/modules/{release}"));
    let tree = ModTree {
        builtin: std::fs::read_to_string(dir.join("modules.builtin")).ok(),
        dir,
    };
    let src = Sources {
        cfg: &cfg,
        tree: &tree,
        host,
    };
    let available_cc = host.available_cc();
    let allowed_cc = host.allowed_cc();
    let bbr = feature(
        "bbr",
        "CONFIG_TCP_CONG_BBR",
        "tcp_bbr",
        "kernel/net/ipv4/tcp_bbr",
        &src,
        Some(available_cc.iter().any(|c| c == "bbr")),
    );
    let loadable_cc = loadable_cc(&tree, &available_cc);
    let (bbr_version, bbr_version_evidence) = bbr_module_version(host);
    let qdiscs = [
        ("fq", "CONFIG_NET_SCH_FQ", "sch_fq"),
        ("fq_codel", "CONFIG_NET_SCH_FQ_CODEL", "sch_fq_codel"),
        ("netem", "CONFIG_NET_SCH_NETEM", "sch_netem"),
    ]
    .into_iter()
    .map(|(name, config, module)| {
        let path = format!("kernel/net/sched/{module}");
        feature(name, config, module, &path, &src, None)
    })
    .collect();
    KernelFacts {
        release,
        config_source: cfg.source.clone(),
        config_default_cc: cfg.get("CONFIG_DEFAULT_TCP_CONG").map(String::from),
        available_cc,
        allowed_cc,
        loadable_cc,
        current_cc: host.sysctl(crate::KEY_CC),
        default_qdisc: host.sysctl(crate::KEY_QDISC),
        bbr,
        bbr_version,
        bbr_version_evidence,
        qdiscs,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::MemoryHost;

    #[test]
    fn config_parse_and_feature_from_config_and_module_tree() {
        let cfg = KernelConfig::parse(
            "CONFIG_TCP_CONG_BBR=m\n# CONFIG_NET_SCH_FQ is not set\nCONFIG_DEFAULT_TCP_CONG=\"cubic\"\n",
            "/boot/config-x",
        );
        assert_eq!(cfg.get("CONFIG_DEFAULT_TCP_CONG"), Some("cubic"));
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("kernel/net/ipv4")).unwrap();
        std::fs::write(dir.path().join("kernel/net/ipv4/tcp_bbr.ko.zst"), "").unwrap();
        let tree = ModTree {
            dir: dir.path().to_path_buf(),
            builtin: Some("kernel/net/sched/sch_fq.ko\n".into()),
        };
        let host = MemoryHost::default();
        let src = Sources {
            cfg: &cfg,
            tree: &tree,
            host: &host,
        };
        let bbr = feature(
            "bbr",
            "CONFIG_TCP_CONG_BBR",
            "tcp_bbr",
            "kernel/net/ipv4/tcp_bbr",
            &src,
            Some(false),
        );
        assert_eq!(bbr.provision, Provision::Module);
        assert!(
            bbr.evidence
                .iter()
                .any(|e| e.contains("CONFIG_TCP_CONG_BBR=m"))
        );
        assert!(
            bbr.evidence
                .iter()
                .any(|e| e.ends_with("tcp_bbr.ko.zst exists"))
        );
        // modules.builtin overrides a config that says "not set".
        let fq = feature(
            "fq",
            "CONFIG_NET_SCH_FQ",
            "sch_fq",
            "kernel/net/sched/sch_fq",
            &src,
            None,
        );
        assert_eq!(fq.provision, Provision::BuiltIn);
        let none = feature(
            "netem",
            "CONFIG_NET_SCH_NETEM",
            "sch_netem",
            "kernel/net/sched/sch_netem",
            &Sources {
                cfg: &KernelConfig::default(),
                tree: &ModTree {
                    dir: dir.path().join("x"),
                    builtin: None,
                },
                host: &host,
            },
            None,
        );
        assert_eq!(none.provision, Provision::Unknown);
    }

    #[test]
    fn registered_algorithm_counts_as_present_even_without_config() {
        let tree = ModTree {
            dir: "/nonexistent".into(),
            builtin: None,
        };
        let f = feature(
            "bbr",
            "CONFIG_TCP_CONG_BBR",
            "tcp_bbr",
            "kernel/net/ipv4/tcp_bbr",
            &Sources {
                cfg: &KernelConfig::default(),
                tree: &tree,
                host: &MemoryHost::default(),
            },
            Some(true),
        );
        assert_eq!(f.provision, Provision::BuiltIn);
    }
}
