//! [`MemoryHost`]: a host whose live state is plain data ([`Live`]) and
//! whose changes happen in memory, with on-disk files under a [`Root`] (a
//! temporary directory in tests). For fixture tests of every decision, as a
//! normal user, without touching the live kernel. [`Live::default`] is a
//! plain initial-namespace host like the project's machines (Linux 6.18,
//! `bbr` and `cubic` built in, no fq); a test changes what it is about.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use bbrkit_policy::Compiled;
use bbrkit_policy::attached::SockOpsProgram;

use super::{Established, Host, HostMut, KeyAccess, LabLeftover, SysModule, Traffic};
use crate::algorithm::{BPF_ALGORITHMS, Holding, RegisterFailure, Registration};
use crate::bpf::{Feature, FeatureId, Features};
use crate::env::Environment;
use crate::live::{Around, PolicyLive, PolicyPin};
use crate::netns::Namespace;
use crate::qdisc::{Class, InterfaceQdisc};
use crate::routes::CcRoute;
use crate::sysctl::WriteError;
use crate::{HostError, KEY_CC, KEY_QDISC, Root};

/// The live state of a [`MemoryHost`]. Failing reads are `Err(text)`.
#[derive(Debug, Clone)]
#[allow(missing_docs)] // each field is the answer of the `Host` method of that name
pub struct Live {
    /// Runtime sysctls of this namespace: value and access.
    pub sysctls: BTreeMap<String, (String, KeyAccess)>,
    pub available_cc: Vec<String>,
    pub allowed_cc: Vec<String>,
    pub proc_config: Option<String>,
    pub sys_modules: BTreeMap<String, SysModule>,
    pub bbr_version: Option<(String, String)>,
    pub interfaces: Result<Vec<InterfaceQdisc>, String>,
    pub sockets: Result<Vec<Established>, String>,
    pub routes: Result<Vec<CcRoute>, String>,
    pub namespaces: Vec<Namespace>,
    pub environment: Environment,
    pub traffic: Option<Traffic>,
    pub boot_id: Option<String>,
    pub cgroup2: Option<PathBuf>,
    pub lab_leftovers: Vec<LabLeftover>,
    pub bpf_features: Features,
    /// One per BPF algorithm bbrkit ships.
    pub registrations: Vec<Registration>,
    pub pinned: Vec<String>,
    /// What a trial load of a BPF algorithm answers.
    pub trial_load: Result<(), RegisterFailure>,
    /// The qdisc kinds this kernel has (a `default_qdisc` write of another
    /// one fails with ENOENT).
    pub qdisc_kinds: Vec<String>,
    /// Cgroup v2 directories and their ids (others are not cgroups).
    pub cgroups: BTreeMap<PathBuf, u64>,
    /// Policy pin directories.
    pub policy_pins: Vec<PolicyPin>,
    /// The sock_ops programs attached to each cgroup, in run order.
    pub sock_ops: BTreeMap<PathBuf, Vec<SockOpsProgram>>,
    /// Cgroups with an exclusive (legacy) sock_ops attachment.
    pub sock_ops_exclusive: Vec<PathBuf>,
}

/// An interface as the kernel lists it.
pub fn interface(ifindex: u32, name: &str, root: &str, leaves: &[&str]) -> InterfaceQdisc {
    InterfaceQdisc {
        ifindex,
        name: name.into(),
        root: root.into(),
        handle: "0:".into(),
        leaves: leaves.iter().map(|s| s.to_string()).collect(),
        ingress: None,
        tx_queues: leaves.len().max(1) as u32,
        up: true,
        class: crate::qdisc::classify(root, 0, false),
    }
}

fn feature(id: FeatureId, present: bool, detail: &str) -> Feature {
    Feature {
        id,
        present,
        detail: detail.into(),
    }
}

impl Default for Live {
    fn default() -> Live {
        let mut sysctls = BTreeMap::new();
        let w = KeyAccess::Writable;
        for (k, v) in [
            ("kernel.osrelease", "6.18.0-test"),
            (
                "kernel.random.boot_id",
                "00000000-0000-4000-8000-000000000001",
            ),
            (KEY_CC, "cubic"),
            (KEY_QDISC, "pfifo_fast"),
            ("net.core.rmem_max", "212992"),
            ("net.core.wmem_max", "212992"),
            ("net.ipv4.tcp_rmem", "4096 131072 6291456"),
            ("net.ipv4.tcp_wmem", "4096 16384 4194304"),
            ("net.ipv4.tcp_notsent_lowat", "4294967295"),
            ("net.ipv4.tcp_mtu_probing", "0"),
            ("net.ipv4.tcp_slow_start_after_idle", "1"),
        ] {
            sysctls.insert(k.to_string(), (v.to_string(), w));
        }
        Live {
            sysctls,
            available_cc: vec!["reno".into(), "bbr".into(), "cubic".into()],
            allowed_cc: vec!["reno".into(), "bbr".into(), "cubic".into()],
            proc_config: Some(
                "CONFIG_TCP_CONG_BBR=y\nCONFIG_TCP_CONG_CUBIC=y\nCONFIG_DEFAULT_TCP_CONG=\"cubic\"\n# CONFIG_NET_SCH_FQ is not set\n# CONFIG_NET_SCH_FQ_CODEL is not set\n# CONFIG_NET_SCH_NETEM is not set\n"
                    .into(),
            ),
            sys_modules: BTreeMap::new(),
            bbr_version: Some(("1".into(), "tcp_bbr_info of a test socket".into())),
            interfaces: Ok(vec![interface(1, "lo", "noqueue", &[])]),
            sockets: Ok(Vec::new()),
            routes: Ok(Vec::new()),
            namespaces: Vec::new(),
            environment: Environment {
                container: None,
                container_evidence: Vec::new(),
                virtualization: None,
                initial_netns: Some(true),
                netns_evidence:
                    "net:[4026531840] is kthreadd's (PID 2, a kernel thread: always in init_net)"
                        .into(),
                proc_sys_net_writable: true,
                proc_sys_evidence: "/proc/sys/net/ipv4/tcp_congestion_control is writable".into(),
            },
            traffic: None,
            boot_id: Some("00000000-0000-4000-8000-000000000001".into()),
            cgroup2: Some(PathBuf::from("/sys/fs/cgroup")),
            lab_leftovers: Vec::new(),
            bpf_features: Features {
                kernel: "6.18.0-test".into(),
                features: vec![
                    feature(FeatureId::KernelBtf, true, "/sys/kernel/btf/vmlinux parsed"),
                    feature(FeatureId::StructOpsTcp, true, "kernel BTF has it"),
                    feature(FeatureId::PacingWrites, true, "Linux 6.18 >= 6.0"),
                    feature(FeatureId::StructOpsLink, true, "kernel BTF has it"),
                    feature(FeatureId::CongControl, true, "4 arguments"),
                    feature(FeatureId::Bpffs, true, "/sys/fs/bpf is bpffs"),
                    feature(FeatureId::Lockdown, false, "no lockdown LSM"),
                    feature(FeatureId::Privileges, true, "root"),
                ],
            },
            registrations: BPF_ALGORITHMS
                .iter()
                .map(|a| Registration::absent(a.name))
                .collect(),
            pinned: Vec::new(),
            trial_load: Ok(()),
            qdisc_kinds: ["pfifo_fast", "pfifo", "noqueue"].map(String::from).to_vec(),
            cgroups: BTreeMap::from([(PathBuf::from("/sys/fs/cgroup"), 1)]),
            policy_pins: Vec::new(),
            sock_ops: BTreeMap::new(),
            sock_ops_exclusive: Vec::new(),
        }
    }
}

impl Live {
    /// Sets a runtime sysctl (writable).
    pub fn set(&mut self, key: &str, value: &str) -> &mut Live {
        self.sysctls
            .insert(key.into(), (value.into(), KeyAccess::Writable));
        self
    }

    /// What a non-initial network namespace looks like: no default qdisc,
    /// global keys read-only.
    pub fn in_container_netns(&mut self) -> &mut Live {
        self.sysctls.remove(KEY_QDISC);
        for k in ["net.core.rmem_max", "net.core.wmem_max"] {
            if let Some(e) = self.sysctls.get_mut(k) {
                e.1 = KeyAccess::ReadOnly;
            }
        }
        self.environment.initial_netns = Some(false);
        self.environment.netns_evidence =
            "net:[4026532999] is not kthreadd's net:[4026531840] (PID 2, a kernel thread: always in init_net)".into();
        self
    }

    /// The registration of `cc` (one of [`BPF_ALGORITHMS`]).
    pub fn registration_mut(&mut self, cc: &str) -> &mut Registration {
        let i = self
            .registrations
            .iter()
            .position(|r| r.cc == cc)
            .unwrap_or_else(|| panic!("{cc} is not a BPF algorithm bbrkit ships"));
        &mut self.registrations[i]
    }

    /// Marks `cc` registered as `holding` says.
    pub fn register(&mut self, cc: &str, holding: Holding) -> &mut Live {
        let pin = holding == Holding::Pin;
        self.available_cc.retain(|c| c != cc);
        if holding != Holding::None {
            self.available_cc.push(cc.into());
        }
        let r = self.registration_mut(cc);
        r.registered = holding != Holding::None;
        r.by_bbrkit = pin;
        r.pin_exists = pin;
        r.holding = holding;
        r.holder = match holding {
            Holding::None => "nobody (not registered)".into(),
            Holding::Pin => format!("bbrkit's pinned link {}", r.pin),
            Holding::BbrkitLink { link_id } => format!(
                "struct_ops link {link_id} (map 12) of bbrkit's programs held by a process (a running lab), not pinned"
            ),
            Holding::Other => {
                "struct_ops link 7 (map 12) held by a process, not bbrkit's pin".into()
            }
        };
        if pin {
            self.pinned.push(cc.into());
        } else {
            self.pinned.retain(|c| c != cc);
        }
        self
    }
}

/// A host made of [`Live`] data and files under a root.
#[derive(Debug, Clone)]
pub struct MemoryHost {
    root: Root,
    /// The live state; tests read it after a change.
    pub live: Live,
}

impl Default for MemoryHost {
    /// [`Live::default`] with files under `/` (only for tests that read no
    /// files; others use [`MemoryHost::new`] with a temporary root).
    fn default() -> MemoryHost {
        MemoryHost::new(Root::system(), Live::default())
    }
}

impl MemoryHost {
    /// A host with `live` state and files under `root`.
    pub fn new(root: Root, live: Live) -> MemoryHost {
        MemoryHost { root, live }
    }

    /// The root's module tree of this kernel has `tcp_<cc>.ko*` (what
    /// `crate::kernel` lists as loadable).
    fn module_on_disk(&self, cc: &str) -> bool {
        let release = self.sysctl("kernel.osrelease").unwrap_or_default();
        let dir = self
            .root
            .path(format!("lib/modules/{release}/kernel/net/ipv4"));
        let want = format!("tcp_{cc}.ko");
        std::fs::read_dir(dir).is_ok_and(|rd| {
            rd.flatten()
                .any(|e| e.file_name().to_string_lossy().starts_with(&want))
        })
    }
}

fn err(step: &'static str, text: &str) -> HostError {
    HostError::netlink(Some(step), std::io::Error::other(text.to_string()))
}

impl Host for MemoryHost {
    fn root(&self) -> &Root {
        &self.root
    }
    fn sysctl(&self, key: &str) -> Option<String> {
        self.live.sysctls.get(key).map(|(v, _)| v.clone())
    }
    fn sysctl_access(&self, key: &str) -> KeyAccess {
        self.live
            .sysctls
            .get(key)
            .map_or(KeyAccess::Missing, |(_, a)| *a)
    }
    fn available_cc(&self) -> Vec<String> {
        self.live.available_cc.clone()
    }
    fn allowed_cc(&self) -> Vec<String> {
        self.live.allowed_cc.clone()
    }
    fn proc_config(&self) -> Option<String> {
        self.live.proc_config.clone()
    }
    fn sys_module(&self, name: &str) -> Option<SysModule> {
        self.live.sys_modules.get(name).cloned()
    }
    fn bbr_version(&self) -> Option<(String, String)> {
        self.live.bbr_version.clone()
    }
    fn interfaces(&self) -> Result<Vec<InterfaceQdisc>, HostError> {
        self.live.interfaces.clone().map_err(|e| err("recv", &e))
    }
    fn sockets(&self) -> Result<Vec<Established>, HostError> {
        self.live.sockets.clone().map_err(|e| err("sock_diag", &e))
    }
    fn routes(&self) -> Result<Vec<CcRoute>, HostError> {
        self.live.routes.clone().map_err(|e| err("recv", &e))
    }
    fn namespaces(&self, limit: usize) -> Vec<Namespace> {
        self.live.namespaces.iter().take(limit).cloned().collect()
    }
    fn environment(&self) -> Environment {
        self.live.environment.clone()
    }
    fn traffic(&self) -> Option<Traffic> {
        self.live.traffic.clone()
    }
    fn boot_id(&self) -> Option<String> {
        self.live.boot_id.clone()
    }
    fn cgroup2(&self) -> Option<PathBuf> {
        self.live.cgroup2.clone()
    }
    fn lab_leftovers(&self) -> Vec<LabLeftover> {
        self.live.lab_leftovers.clone()
    }
    fn bpf_features(&self) -> Features {
        self.live.bpf_features.clone()
    }
    fn bpf_registration(&self, cc: &str) -> Registration {
        self.live
            .registrations
            .iter()
            .find(|r| r.cc == cc)
            .cloned()
            .unwrap_or_else(|| Registration::absent(cc))
    }
    fn bpf_pinned(&self) -> Vec<String> {
        self.live.pinned.clone()
    }
    fn bpf_link_holders(&self, cc: &str) -> Vec<String> {
        match self.live.registrations.iter().find(|r| r.cc == cc) {
            Some(r) if matches!(r.holding, Holding::BbrkitLink { .. }) => {
                vec!["pid 4242 (bbrkit)".into()]
            }
            _ => Vec::new(),
        }
    }
    fn cgroup_id(&self, path: &Path) -> Result<u64, HostError> {
        self.live
            .cgroups
            .get(path)
            .copied()
            .ok_or_else(|| HostError::PolicyRefused {
                reason: format!("{}: not a cgroup v2 directory", path.display()),
            })
    }
    fn policy_pins(&self) -> Vec<PolicyPin> {
        self.live.policy_pins.clone()
    }
    fn sock_ops_exclusive(&self, path: &Path) -> Result<Option<PathBuf>, String> {
        Ok(self
            .live
            .sock_ops_exclusive
            .iter()
            .find(|c| path.starts_with(c))
            .cloned())
    }
    fn sock_ops_around(&self, path: &Path) -> Result<Around, String> {
        Ok(self
            .live
            .sock_ops
            .iter()
            .filter(|(c, _)| path.starts_with(c) || c.starts_with(path))
            .map(|(c, p)| (c.clone(), p.clone()))
            .collect())
    }
}

impl HostMut for MemoryHost {
    /// Like the kernel: a missing key, a read-only one, an algorithm that
    /// is not registered (ENOENT) or not allowed outside the initial
    /// namespace (EPERM), and a default qdisc this kernel lacks (ENOENT).
    fn write_sysctl(&mut self, key: &str, value: &str) -> Result<(), WriteError> {
        let initial = self.live.environment.initial_netns != Some(false);
        let known_qdisc = |q: &str| self.live.qdisc_kinds.iter().any(|k| k == q);
        match self.sysctl_access(key) {
            KeyAccess::Missing => return Err(WriteError::KeyMissing),
            KeyAccess::ReadOnly | KeyAccess::Denied => return Err(WriteError::ReadOnly),
            KeyAccess::Writable => {}
        }
        if key == KEY_CC && !self.live.available_cc.iter().any(|c| c == value) {
            // The kernel autoloads a module the (privileged) writer names.
            if !self.module_on_disk(value) {
                return Err(WriteError::ValueUnknown);
            }
            self.live.available_cc.push(value.into());
        }
        if key == KEY_CC && !initial && !self.live.allowed_cc.iter().any(|c| c == value) {
            return Err(WriteError::NotPermitted);
        }
        if key == KEY_QDISC && !known_qdisc(value) {
            return Err(WriteError::ValueUnknown);
        }
        self.live.set(key, &crate::sysctl::normalize(value));
        Ok(())
    }

    fn recreate_root_qdisc(&mut self, ifindex: u32) -> Result<(), HostError> {
        let default = self
            .sysctl(KEY_QDISC)
            .unwrap_or_else(|| "pfifo_fast".into());
        let list = self.live.interfaces.as_mut().map_err(|e| err("recv", e))?;
        let i = list
            .iter_mut()
            .find(|i| i.ifindex == ifindex)
            .ok_or_else(|| err("recv", "No such device"))?;
        if i.root == "mq" || i.class == Class::Multiqueue {
            i.leaves = vec![default; i.leaves.len()];
        } else {
            i.root = default;
        }
        Ok(())
    }

    fn load_cc_module(&mut self, cc: &str) -> Result<(), HostError> {
        if self.live.available_cc.iter().any(|c| c == cc) {
            return Ok(());
        }
        if !self.module_on_disk(cc) {
            return Err(HostError::ModuleLoad {
                module: format!("tcp_{cc}"),
                reason: "not in this root's module tree".into(),
            });
        }
        self.live.available_cc.push(cc.into());
        Ok(())
    }

    fn trial_load_bpf(&mut self, _cc: &str) -> Result<(), RegisterFailure> {
        self.live.trial_load.clone()
    }

    fn register_bpf(&mut self, cc: &str) -> Result<Vec<PathBuf>, RegisterFailure> {
        self.live.trial_load.clone()?;
        self.live.register(cc, Holding::Pin);
        Ok(vec![PathBuf::from(Registration::absent(cc).pin)])
    }

    fn adopt_bpf(&mut self, cc: &str) -> Result<PathBuf, RegisterFailure> {
        self.live.register(cc, Holding::Pin);
        Ok(PathBuf::from(Registration::absent(cc).pin))
    }

    fn unregister_bpf(&mut self, cc: &str) -> Result<bool, HostError> {
        let had = self.live.pinned.iter().any(|c| c == cc);
        self.live.register(cc, Holding::None);
        Ok(had)
    }

    fn attach_policy(
        &mut self,
        compiled: &Compiled,
        cgroup: &Path,
        dir: &Path,
    ) -> Result<(), HostError> {
        let cgroup_id = self.cgroup_id(cgroup)?;
        let link_id = 100 + self.live.policy_pins.len() as u32;
        self.live.policy_pins.push(PolicyPin {
            dir: dir.to_path_buf(),
            live: Ok(PolicyLive {
                link_id,
                prog_id: link_id + 1000,
                cgroup_id,
                maps: Ok(compiled.clone()),
                counters: Err("no counters in memory".into()),
                layout: bbrkit_policy::attached::LAYOUT,
            }),
        });
        Ok(())
    }

    fn detach_policy(&mut self, dir: &Path) -> Result<bool, HostError> {
        let had = self
            .live
            .policy_pins
            .iter()
            .any(|p| p.dir == dir && p.live.is_ok());
        self.live.policy_pins.retain(|p| p.dir != dir);
        Ok(had)
    }

    fn crash_point(&self, _point: &str) {}
}
