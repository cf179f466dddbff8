//! Where bbrkit runs: container or virtual machine hints, whether this is the
//! initial network namespace (asked of `bbrkit_diag::initial_netns`), whether `/proc/sys/net` is writable. Follows
//! systemd's `detect_container()` order (OpenVZ, WSL, PID 1's `container=`),
//! then weaker hints (`/.dockerenv`, `/run/.containerenv`, cgroup paths).
//! Only reads.

use serde::Serialize;

use crate::Root;

/// The execution environment.
#[derive(Debug, Clone, Serialize)]
pub struct Environment {
    /// Container technology, when a strong signal names one.
    pub container: Option<String>,
    /// Evidence for/against a container (strong and weak hints).
    pub container_evidence: Vec<String>,
    /// Hypervisor hint (`/proc/cpuinfo` flag, DMI vendor).
    pub virtualization: Option<String>,
    /// True in the initial network namespace; None when unknown
    /// ([`bbrkit_diag::initial_netns`] decides).
    pub initial_netns: Option<bool>,
    /// Evidence for the namespace answer.
    pub netns_evidence: String,
    /// True when this process may write `/proc/sys/net/ipv4/tcp_congestion_control`.
    pub proc_sys_net_writable: bool,
    /// Evidence for writability.
    pub proc_sys_evidence: String,
}

/// Detects the environment (live `/proc`, files under `root`).
pub fn detect(root: &Root) -> Environment {
    let mut evidence = Vec::new();
    let mut container = None;
    let vz = std::path::Path::new("/proc/vz").exists();
    let bc = std::path::Path::new("/proc/bc").exists();
    if vz && !bc {
        container = Some("openvz".to_string());
        evidence.push("/proc/vz exists and /proc/bc does not (OpenVZ guest)".into());
    } else if vz {
        evidence.push("/proc/vz and /proc/bc exist (OpenVZ host, not a guest)".into());
    }
    let osrelease = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    if container.is_none() && (osrelease.contains("Microsoft") || osrelease.contains("WSL")) {
        container = Some("wsl".into());
        evidence.push(format!("kernel release {:?} names WSL", osrelease.trim()));
    }
    if container.is_none() {
        let run = root.path("run/systemd/container");
        if let Ok(c) = std::fs::read_to_string(&run) {
            container = Some(c.trim().to_string());
            evidence.push(format!("{} = {}", root.show(&run), c.trim()));
        } else {
            match std::fs::read("/proc/1/environ") {
                Ok(env) => {
                    if let Some(v) = env
                        .split(|b| *b == 0)
                        .filter_map(|kv| std::str::from_utf8(kv).ok())
                        .find_map(|kv| kv.strip_prefix("container="))
                    {
                        container = Some(v.to_string());
                        evidence.push(format!("PID 1 environment has container={v}"));
                    }
                }
                Err(e) => evidence.push(format!("/proc/1/environ unreadable ({e})")),
            }
        }
    }
    for (file, kind) in [("/.dockerenv", "docker"), ("/run/.containerenv", "podman")] {
        let p = root.path(file);
        if p.exists() {
            evidence.push(format!("{} exists (hint: {kind} image)", root.show(&p)));
        }
    }
    if let Ok(cg) = std::fs::read_to_string("/proc/1/cgroup") {
        for hint in ["docker", "lxc", "kubepods", "containerd", "libpod"] {
            if cg.contains(hint) {
                evidence.push(format!("/proc/1/cgroup mentions {hint}"));
            }
        }
    }
    let virtualization = detect_virt();
    let netns = bbrkit_diag::initial_netns::detect();
    let probe = crate::sysctl::proc_path(crate::KEY_CC);
    let (proc_sys_net_writable, proc_sys_evidence) =
        match nix::unistd::access(&probe, nix::unistd::AccessFlags::W_OK) {
            Ok(()) => (true, format!("{} is writable", probe.display())),
            Err(e) => (false, format!("{}: {}", probe.display(), e.desc())),
        };
    Environment {
        container,
        container_evidence: evidence,
        virtualization,
        initial_netns: netns.initial,
        netns_evidence: netns.evidence,
        proc_sys_net_writable,
        proc_sys_evidence,
    }
}

fn detect_virt() -> Option<String> {
    let vendor = std::fs::read_to_string("/sys/class/dmi/id/sys_vendor").ok();
    let product = std::fs::read_to_string("/sys/class/dmi/id/product_name").ok();
    let flagged = std::fs::read_to_string("/proc/cpuinfo")
        .map(|c| {
            c.lines()
                .any(|l| l.starts_with("flags") && l.split_whitespace().any(|w| w == "hypervisor"))
        })
        .unwrap_or(false);
    match (vendor, product, flagged) {
        (Some(v), Some(p), _) if !v.trim().is_empty() => {
            Some(format!("{} {} (DMI)", v.trim(), p.trim()))
        }
        (_, _, true) => Some("virtual machine (cpuinfo flag: hypervisor)".into()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_has_a_readable_netns() {
        let e = detect(&Root::system());
        assert!(e.initial_netns.is_some(), "{}", e.netns_evidence);
    }

    #[test]
    fn run_systemd_container_under_root_is_a_strong_signal() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("run/systemd")).unwrap();
        std::fs::write(dir.path().join("run/systemd/container"), "lxc\n").unwrap();
        std::fs::write(dir.path().join(".dockerenv"), "").unwrap();
        let e = detect(&Root::new(dir.path()).unwrap());
        if e.container.as_deref() != Some("openvz") && e.container.as_deref() != Some("wsl") {
            assert_eq!(e.container.as_deref(), Some("lxc"));
        }
        assert!(
            e.container_evidence
                .iter()
                .any(|s| s.contains(".dockerenv exists"))
        );
    }
}
