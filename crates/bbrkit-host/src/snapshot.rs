//! [`Snapshot`]: everything one host command reads, read once through a
//! [`Host`], as plain data. [`Scope`] says which of the costlier parts a
//! command needs (a socket census, the BPF feature probes, the doctor's
//! walk over namespaces and routes); a part out of scope is empty.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::algorithm::{BPF_ALGORITHMS, Provider, Registration};
use crate::bpf::Features;
use crate::env::Environment;
use crate::host::{Established, Host, KeyAccess, LabLeftover, Traffic};
use crate::kernel::{self, KernelFacts, Provision};
use crate::live::{self as policy, PolicyRecord, PolicyView};
use crate::netns::Namespace;
use crate::precedence::{self, Overlay, Resolution, Sources};
use crate::qdisc::InterfaceQdisc;
use crate::routes::CcRoute;
use crate::unit::{self, BootRecord, UnitState};
use crate::{HostError, KEY_CC, KEY_QDISC, Root};

/// Which parts a command reads besides the kernel facts, the environment,
/// the runtime values of the keys bbrkit manages and the files under the
/// root (always read).
#[derive(Debug, Clone, Default)]
pub struct Scope {
    /// Every interface's root qdisc (rtnetlink).
    pub interfaces: bool,
    /// The established sockets (one sock_diag dump).
    pub sockets: bool,
    /// The BBR version from a live or throwaway socket (`check`).
    pub bbr_version: bool,
    /// The BPF feature probes (kernel BTF, bpffs, ...).
    pub bpf_features: bool,
    /// Routes, other namespaces, traffic counters, lab leftovers (`doctor`).
    pub doctor: bool,
    /// More runtime sysctls to read (the keys a before-image names).
    pub keys: Vec<String>,
}

impl Scope {
    /// What `check` reads.
    pub fn check() -> Scope {
        Scope {
            interfaces: true,
            bbr_version: true,
            bpf_features: true,
            ..Scope::default()
        }
    }

    /// What `verify` reads.
    pub fn verify() -> Scope {
        Scope {
            interfaces: true,
            sockets: true,
            ..Scope::default()
        }
    }

    /// What `doctor` reads.
    pub fn doctor() -> Scope {
        Scope {
            interfaces: true,
            sockets: true,
            bpf_features: true,
            doctor: true,
            ..Scope::default()
        }
    }
}

/// A runtime sysctl as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Runtime {
    /// Its value (None: absent here).
    pub value: Option<String>,
    /// Whether this process may write it.
    pub access: KeyAccess,
}

/// The BPF side of the snapshot.
#[derive(Debug, Clone, Default)]
pub struct BpfView {
    /// The requirements and their evidence (read when in scope).
    pub features: Option<Features>,
    /// The first requirement missing to register one, if any.
    pub missing: Option<String>,
    /// The registration of each BPF algorithm bbrkit ships.
    pub registrations: Vec<Registration>,
    /// Algorithms with a bbrkit pin.
    pub pinned: Vec<String>,
}

/// A BPF algorithm's boot unit under the root and its last run's record.
#[derive(Debug, Clone)]
pub struct UnitView {
    /// The algorithm.
    pub cc: String,
    /// The unit as systemd would find it.
    pub unit: UnitState,
    /// What the last `bbrkit boot` recorded (`run/bbrkit/<cc>.boot.json`).
    pub record: Option<BootRecord>,
}

/// What only `doctor` reads.
#[derive(Debug, Clone, Default)]
pub struct DoctorFacts {
    /// Routes with their own congestion control (None: unreadable).
    pub routes: Option<Vec<CcRoute>>,
    /// Other network namespaces.
    pub namespaces: Vec<Namespace>,
    /// Traffic counters.
    pub traffic: Option<Traffic>,
    /// Namespaces of killed labs.
    pub labs: Vec<LabLeftover>,
}

/// Everything a command reads of the host, read once.
#[derive(Debug, Clone)]
pub struct Snapshot {
    /// The filesystem root.
    pub root: Root,
    /// What the kernel offers.
    pub kernel: KernelFacts,
    /// Container, virtualisation, namespace.
    pub environment: Environment,
    /// Runtime sysctls read (bbrkit's keys and the scope's).
    pub runtime: BTreeMap<String, Runtime>,
    /// Root qdiscs (`Err`: why they could not be listed).
    pub interfaces: Result<Vec<InterfaceQdisc>, String>,
    /// Established sockets (`Err`: why they could not be read).
    pub sockets: Result<Vec<Established>, String>,
    /// BPF requirements and registrations.
    pub bpf: BpfView,
    /// This boot's id.
    pub boot_id: Option<String>,
    /// The cgroup v2 mount (where a sock_ops program would attach).
    pub cgroup2: Option<PathBuf>,
    /// The sysctl files of both loaders.
    pub sysctl_files: Sources,
    /// bbrkit's own sysctl.d file, if it exists.
    pub bbrkit_file: Option<String>,
    /// The boot unit of each BPF algorithm.
    pub units: Vec<UnitView>,
    /// Whether the root boots with systemd, and the evidence.
    pub systemd: (bool, String),
    /// What only `doctor` reads.
    pub doctor: DoctorFacts,
    /// The per-connection policies the before-image records, and the pins.
    pub policy: PolicyView,
}

/// Every runtime key bbrkit manages.
fn managed_keys() -> impl Iterator<Item = &'static str> {
    [KEY_CC, KEY_QDISC]
        .into_iter()
        .chain(crate::tuning::TUNING.iter().map(|t| t.key))
}

/// The policies the before-image records (an unreadable image: none), the
/// pins, and the sock_ops programs around each recorded cgroup.
fn policy_view(host: &dyn Host, root: &Root) -> PolicyView {
    let image = crate::image::load(root).ok().flatten();
    let records: Vec<PolicyRecord> = policy::recorded(image.as_ref())
        .into_iter()
        .map(|(cg, cgroup_id)| {
            let cgroup = PathBuf::from(cg);
            let copy = policy::copy_path(root, host.cgroup2().as_deref(), &cgroup);
            let text = std::fs::read(&copy).ok();
            PolicyRecord {
                now_id: host.cgroup_id(&cgroup).ok(),
                cgroup,
                cgroup_id,
                copy,
                text,
            }
        })
        .collect();
    let programs = records
        .iter()
        .map(|r| (r.cgroup.clone(), host.sock_ops_around(&r.cgroup)))
        .collect();
    PolicyView {
        records,
        pins: host.policy_pins(),
        programs,
        unit: crate::unit::inspect(root, crate::unit::POLICY),
    }
}

fn text(e: HostError) -> String {
    bbrkit_diag::error_chain(&e)
}

impl Snapshot {
    /// Reads `host` as `scope` says. Fails only when the sysctl
    /// directories under the root cannot be listed.
    pub fn read(host: &dyn Host, scope: &Scope) -> Result<Snapshot, HostError> {
        let root = host.root().clone();
        let keys = managed_keys().map(String::from).chain(scope.keys.clone());
        let runtime = keys
            .map(|k| {
                let r = Runtime {
                    value: host.sysctl(&k),
                    access: host.sysctl_access(&k),
                };
                (k, r)
            })
            .collect();
        let features = scope.bpf_features.then(|| host.bpf_features());
        let registrations = BPF_ALGORITHMS
            .iter()
            .map(|a| host.bpf_registration(a.name))
            .collect();
        let units = BPF_ALGORITHMS
            .iter()
            .map(|a| UnitView {
                cc: a.name.to_string(),
                unit: unit::inspect(&root, a.name),
                record: unit::load_record(&root, a.name),
            })
            .collect();
        Ok(Snapshot {
            kernel: kernel::gather(host, scope.bbr_version),
            environment: host.environment(),
            runtime,
            interfaces: if scope.interfaces {
                host.interfaces().map_err(text)
            } else {
                Ok(Vec::new())
            },
            sockets: if scope.sockets {
                host.sockets().map_err(text)
            } else {
                Ok(Vec::new())
            },
            bpf: BpfView {
                missing: features.as_ref().and_then(crate::bpf::missing_requirement),
                features,
                registrations,
                pinned: host.bpf_pinned(),
            },
            boot_id: host.boot_id(),
            cgroup2: host.cgroup2(),
            sysctl_files: Sources::read(&root)?,
            bbrkit_file: std::fs::read_to_string(root.bbrkit_file()).ok(),
            units,
            systemd: unit::systemd_booted(&root),
            doctor: if scope.doctor {
                DoctorFacts {
                    routes: host.routes().ok(),
                    namespaces: host.namespaces(256),
                    traffic: host.traffic(),
                    labs: host.lab_leftovers(),
                }
            } else {
                DoctorFacts::default()
            },
            policy: policy_view(host, &root),
            root,
        })
    }

    /// A runtime value read (None: absent, or not read).
    pub fn runtime(&self, key: &str) -> Option<&str> {
        self.runtime.get(key).and_then(|r| r.value.as_deref())
    }

    /// Whether this process may write `key` (Missing when not read).
    pub fn access(&self, key: &str) -> KeyAccess {
        self.runtime
            .get(key)
            .map_or(KeyAccess::Missing, |r| r.access)
    }

    /// The value bbrkit's own file sets for `key`, if the file sets it.
    pub fn bbrkit_value(&self, key: &str) -> Option<String> {
        let text = self.bbrkit_file.as_deref()?;
        precedence::parse(text, "")
            .into_iter()
            .rev()
            .find(|a| a.key == key)
            .map(|a| a.value)
    }

    /// The registration of BPF algorithm `cc`.
    pub fn registration(&self, cc: &str) -> Option<&Registration> {
        self.bpf.registrations.iter().find(|r| r.cc == cc)
    }

    /// The boot unit of BPF algorithm `cc`.
    pub fn unit(&self, cc: &str) -> Option<&UnitView> {
        self.units.iter().find(|u| u.cc == cc)
    }

    /// How this host provides `cc` (see [`Provider`]).
    pub fn provider(&self, cc: &str) -> Provider<'_> {
        if let Some(r) = self.registration(cc) {
            return Provider::Bpf(r);
        }
        let k = &self.kernel;
        if k.loadable_cc.iter().any(|c| c == cc) {
            return Provider::Module;
        }
        if !k.available_cc.iter().any(|c| c == cc) {
            return Provider::Absent;
        }
        match (cc, k.bbr.provision) {
            ("bbr", Provision::Module) => Provider::Module,
            _ => Provider::BuiltIn,
        }
    }

    /// The winner at boot of each of `keys` under both loaders, with
    /// bbrkit's planned file in place when `overlay` is given.
    pub fn resolve(&self, keys: &[&str], overlay: Option<&Overlay>) -> Vec<Resolution> {
        precedence::resolve(&self.sysctl_files, keys, overlay)
    }

    /// The interfaces listed (empty when they could not be).
    pub fn interface_list(&self) -> &[InterfaceQdisc] {
        self.interfaces.as_deref().unwrap_or_default()
    }
}
