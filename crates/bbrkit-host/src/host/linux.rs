//! [`LinuxHost`]: the live kernel of the calling thread's network namespace
//! (`/proc/sys`, `/proc`, `/sys`, rtnetlink, sock_diag, bpf) and the files
//! under a [`Root`]. Each method is one read (or one change) through the
//! module that owns that interface; this file only connects them.

use std::io::Read as _;
use std::path::{Path, PathBuf};

use bbrkit_policy::Compiled;

use super::{Established, Host, HostMut, KeyAccess, LabLeftover, SysModule, Traffic};
use crate::algorithm::{RegisterFailure, Registration};
use crate::env::Environment;
use crate::live::{Around, PolicyPin};
use crate::netns::Namespace;
use crate::qdisc::InterfaceQdisc;
use crate::routes::CcRoute;
use crate::sysctl::WriteError;
use crate::{HostError, Root, bpf, env, netns, qdisc, routes, sysctl};

/// The running Linux host, with on-disk files under `root`.
#[derive(Debug, Clone)]
pub struct LinuxHost {
    root: Root,
}

impl LinuxHost {
    /// The live host with files under `root`.
    pub fn new(root: Root) -> LinuxHost {
        LinuxHost { root }
    }
}

impl Host for LinuxHost {
    fn root(&self) -> &Root {
        &self.root
    }

    fn sysctl(&self, key: &str) -> Option<String> {
        sysctl::read(key).ok().flatten()
    }

    fn sysctl_access(&self, key: &str) -> KeyAccess {
        use std::os::unix::fs::PermissionsExt;
        match std::fs::metadata(sysctl::proc_path(key)) {
            Err(_) => KeyAccess::Missing,
            Ok(m) if m.permissions().mode() & 0o222 == 0 => KeyAccess::ReadOnly,
            Ok(_) if sysctl::writable(key) => KeyAccess::Writable,
            Ok(_) => KeyAccess::Denied,
        }
    }

    fn available_cc(&self) -> Vec<String> {
        bbrkit_diag::algorithms::available().unwrap_or_default()
    }

    fn allowed_cc(&self) -> Vec<String> {
        bbrkit_diag::algorithms::allowed().unwrap_or_default()
    }

    fn proc_config(&self) -> Option<String> {
        let f = std::fs::File::open("/proc/config.gz").ok()?;
        let mut text = String::new();
        flate2::read::GzDecoder::new(f)
            .read_to_string(&mut text)
            .ok()?;
        Some(text)
    }

    fn sys_module(&self, name: &str) -> Option<SysModule> {
        let dir = std::path::Path::new("/sys/module").join(name);
        dir.exists().then(|| SysModule {
            loaded: dir.join("initstate").exists(),
            version: std::fs::read_to_string(dir.join("version")).ok(),
        })
    }

    fn bbr_version(&self) -> Option<(String, String)> {
        bbr_version_from_sockets().or_else(bbr_version_from_probe)
    }

    fn interfaces(&self) -> Result<Vec<InterfaceQdisc>, HostError> {
        qdisc::list()
    }

    fn sockets(&self) -> Result<Vec<Established>, HostError> {
        let filter = bbrkit_diag::Filter {
            states: bbrkit_diag::StateSet::empty().with(bbrkit_diag::TcpState::Established),
            details: false,
            ..Default::default()
        };
        bbrkit_diag::census(&filter)
            .map(|v| v.iter().filter_map(Established::from_socket).collect())
            .map_err(|source| HostError::Diag {
                what: "sock_diag",
                source,
            })
    }

    fn routes(&self) -> Result<Vec<CcRoute>, HostError> {
        routes::with_congctl()
    }

    fn namespaces(&self, limit: usize) -> Vec<Namespace> {
        netns::others(limit)
    }

    fn environment(&self) -> Environment {
        env::detect(&self.root)
    }

    fn traffic(&self) -> Option<Traffic> {
        let c = bbrkit_diag::nstat::read().ok()?;
        Some(Traffic {
            in_octets: c.get("IpExtInOctets")?,
            out_octets: c.get("IpExtOutOctets")?,
            loopback: std::fs::read_to_string("/proc/net/dev")
                .ok()
                .and_then(|t| loopback_bytes(&t)),
            tcp_segs: c.get("TcpInSegs").zip(c.get("TcpOutSegs")),
        })
    }

    fn boot_id(&self) -> Option<String> {
        self.sysctl("kernel.random.boot_id")
    }

    fn cgroup2(&self) -> Option<PathBuf> {
        let text = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
        cgroup2_mount(&text)
    }

    fn lab_leftovers(&self) -> Vec<LabLeftover> {
        bbrkit_lab::cleanup::leftovers()
            .unwrap_or_default()
            .into_iter()
            .filter_map(|p| {
                let name = p.file_name()?.to_string_lossy().into_owned();
                Some(LabLeftover {
                    pid: bbrkit_lab::cleanup::owner_pid(&name)?,
                    path: p.display().to_string(),
                })
            })
            .collect()
    }

    fn bpf_features(&self) -> bpf::Features {
        bpf::features()
    }

    fn bpf_registration(&self, cc: &str) -> Registration {
        bpf::registration(cc)
    }

    fn bpf_pinned(&self) -> Vec<String> {
        bpf::pinned()
    }

    fn bpf_link_holders(&self, cc: &str) -> Vec<String> {
        bpf::link_holders(cc)
    }

    fn cgroup_id(&self, path: &Path) -> Result<u64, HostError> {
        bpf::cgroup_id(path)
    }

    fn policy_pins(&self) -> Vec<PolicyPin> {
        bpf::policy_pins()
    }

    fn sock_ops_around(&self, path: &Path) -> Result<Around, String> {
        let mount = self.cgroup2().unwrap_or_else(|| path.to_path_buf());
        bpf::sock_ops_around(path, &mount)
    }

    fn sock_ops_exclusive(&self, path: &Path) -> Result<Option<PathBuf>, String> {
        let mount = self.cgroup2().unwrap_or_else(|| path.to_path_buf());
        bpf::sock_ops_exclusive(path, &mount)
    }
}

impl HostMut for LinuxHost {
    fn write_sysctl(&mut self, key: &str, value: &str) -> Result<(), WriteError> {
        sysctl::write(key, value)
    }

    fn recreate_root_qdisc(&mut self, ifindex: u32) -> Result<(), HostError> {
        qdisc::recreate_root(ifindex)
    }

    fn load_cc_module(&mut self, cc: &str) -> Result<(), HostError> {
        let err = |reason: String| HostError::ModuleLoad {
            module: format!("tcp_{cc}"),
            reason,
        };
        match bbrkit_diag::algorithms::usable(cc) {
            Ok(true) => Ok(()),
            Ok(false) => Err(err(format!(
                "choosing {cc} on a socket did not register it ({} does not list it; the module is missing from modules.dep, or this process lacks CAP_NET_ADMIN)",
                bbrkit_diag::algorithms::AVAILABLE
            ))),
            Err(e) => Err(err(bbrkit_diag::error_chain(&e))),
        }
    }

    fn trial_load_bpf(&mut self, cc: &str) -> Result<(), RegisterFailure> {
        bpf::trial_load(cc)
    }

    fn register_bpf(&mut self, cc: &str) -> Result<Vec<PathBuf>, RegisterFailure> {
        bpf::register_pinned(cc)
    }

    fn adopt_bpf(&mut self, cc: &str) -> Result<PathBuf, RegisterFailure> {
        bpf::adopt(cc)
    }

    fn attach_policy(
        &mut self,
        compiled: &Compiled,
        cgroup: &Path,
        dir: &Path,
    ) -> Result<(), HostError> {
        bpf::attach_policy(compiled, cgroup, dir)
    }

    fn detach_policy(&mut self, dir: &Path) -> Result<bool, HostError> {
        bpf::detach_policy(dir)
    }

    fn unregister_bpf(&mut self, cc: &str) -> Result<bool, HostError> {
        bpf::unregister(cc)
    }
}

/// The mount point of the cgroup v2 hierarchy in `mountinfo` text (the
/// fifth field of the line whose filesystem type, after ` - `, is `cgroup2`).
pub fn cgroup2_mount(mountinfo: &str) -> Option<PathBuf> {
    mountinfo.lines().find_map(|l| {
        let (mount, fs) = l.split_once(" - ")?;
        (fs.split_whitespace().next()? == "cgroup2")
            .then(|| mount.split_whitespace().nth(4).map(PathBuf::from))?
    })
}

/// The BBR version as the kernel reports it on a live socket: the
/// `bbr_version` byte of `INET_DIAG_BBRINFO` (offset 39, BBRv3 layout), or 1
/// when the kernel sends the 20-byte mainline layout. None without a BBR
/// socket in this network namespace.
fn bbr_version_from_sockets() -> Option<(String, String)> {
    let filter = bbrkit_diag::Filter {
        cc: Some("bbr".into()),
        ..Default::default()
    };
    let socks = bbrkit_diag::census(&filter).ok()?;
    socks.iter().find_map(|s| {
        let info = s.bbr.as_ref()?;
        Some(version_of(
            info,
            &format!("live socket {} -> {}", s.local, s.remote),
        ))
    })
}

/// The same read from a fresh, unconnected socket switched to `bbr` with
/// `TCP_CONGESTION` (`TCP_CC_INFO`, through `bbrkit_diag::probe_bbr_info`):
/// no connection, no traffic, and never a module load (it requires `bbr`
/// to be registered already).
fn bbr_version_from_probe() -> Option<(String, String)> {
    let info = bbrkit_diag::probe_bbr_info()?;
    Some(version_of(
        &info,
        "a fresh unconnected socket set to bbr with TCP_CONGESTION (TCP_CC_INFO)",
    ))
}

/// `(version, evidence)` from a `tcp_bbr_info`: the `bbr_version` byte of
/// the BBRv3 layout, or `1` for the 20-byte mainline layout.
fn version_of(info: &bbrkit_diag::BbrInfo, whose: &str) -> (String, String) {
    match info.version_byte {
        Some(v) => (
            v.to_string(),
            format!(
                "tcp_bbr_info of {whose}: {} bytes, bbr_version byte = {v}",
                info.len
            ),
        ),
        None => (
            "1".to_string(),
            format!(
                "tcp_bbr_info of {whose}: {} bytes, the mainline (v1) layout",
                info.len
            ),
        ),
    }
}

/// Received and sent bytes of `lo` from `/proc/net/dev`.
pub(crate) fn loopback_bytes(dev: &str) -> Option<(u64, u64)> {
    let rest = dev
        .lines()
        .find_map(|l| l.trim_start().strip_prefix("lo:"))?;
    let f: Vec<u64> = rest
        .split_whitespace()
        .map(|x| x.parse().ok())
        .collect::<Option<_>>()?;
    Some((*f.first()?, *f.get(8)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bbr_version_from_a_fresh_socket_when_bbr_is_selectable() {
        let available = bbrkit_diag::algorithms::available().unwrap();
        let allowed = bbrkit_diag::algorithms::allowed().unwrap();
        let root = nix::unistd::geteuid().is_root();
        let selectable =
            available.iter().any(|c| c == "bbr") && (root || allowed.iter().any(|c| c == "bbr"));
        match bbr_version_from_probe() {
            Some((v, evidence)) => {
                assert!(selectable);
                assert!(v == "1" || v == "3", "{v}: {evidence}");
                assert!(evidence.contains("TCP_CC_INFO"), "{evidence}");
            }
            None => assert!(
                !selectable,
                "bbr is selectable here but the probe read nothing"
            ),
        }
    }

    #[test]
    fn cgroup2_mount_from_mountinfo() {
        let hybrid = "25 30 0:22 / /sys rw,nosuid - sysfs sysfs rw\n\
            31 25 0:26 / /sys/fs/cgroup/unified rw,nosuid,nodev - cgroup2 cgroup2 rw,nsdelegate\n\
            32 25 0:27 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n";
        assert_eq!(
            cgroup2_mount(hybrid),
            Some(PathBuf::from("/sys/fs/cgroup/unified"))
        );
        assert_eq!(
            cgroup2_mount("25 30 0:22 / /sys rw - sysfs sysfs rw\n"),
            None
        );
    }
}
