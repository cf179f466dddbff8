//! The kernel's congestion-control algorithms, as the calling thread's
//! network namespace sees them: the registered ones
//! (`net.ipv4.tcp_available_congestion_control`, every socket's algorithm
//! is one of them) and those an unprivileged socket may choose
//! (`net.ipv4.tcp_allowed_congestion_control`).
//!
//! The one reader of these two lists for every crate. Must never write them.
//!
//! An algorithm built as a module (Debian's `tcp_bbr`,
//! `CONFIG_TCP_CONG_BBR=m`) is not registered until it is loaded; the
//! kernel loads it itself when a CAP_NET_ADMIN caller asks for it by name
//! (`tcp_ca_find_autoload` → `request_module("tcp_%s")`, net/ipv4/tcp_cong.c,
//! on `setsockopt(TCP_CONGESTION)` and on writing the default). [`usable`]
//! counts such an algorithm: it asks the same way, on a throwaway socket.

use std::path::Path;

use crate::DiagError;

/// `/proc/sys` file of the registered algorithms.
pub const AVAILABLE: &str = "/proc/sys/net/ipv4/tcp_available_congestion_control";
/// `/proc/sys` file of the algorithms unprivileged sockets may choose.
pub const ALLOWED: &str = "/proc/sys/net/ipv4/tcp_allowed_congestion_control";

/// The registered algorithms (`reno cubic bbr`, in the kernel's order).
pub fn available() -> Result<Vec<String>, DiagError> {
    read_list(Path::new(AVAILABLE))
}

/// Whether `name` is registered (in [`available`]).
pub fn is_available(name: &str) -> Result<bool, DiagError> {
    Ok(available()?.iter().any(|a| a == name))
}

/// The algorithms an unprivileged socket (and a non-initial network
/// namespace's default) may choose.
pub fn allowed() -> Result<Vec<String>, DiagError> {
    read_list(Path::new(ALLOWED))
}

/// The running kernel's module index (`modules.dep` lists every loadable
/// module, built-in ones are registered already).
fn modules_dep() -> Option<String> {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").ok()?;
    std::fs::read_to_string(format!("/lib/modules/{}/modules.dep", release.trim())).ok()
}

/// `modules_dep` (the text of `modules.dep`) lists the module of algorithm
/// `name`: `tcp_NAME.ko`, compressed or not, in any directory.
pub fn module_listed(name: &str, modules_dep: &str) -> bool {
    let want = format!("tcp_{name}.ko");
    modules_dep.lines().any(|l| {
        let path = l.split(':').next().unwrap_or_default();
        let file = path.rsplit('/').next().unwrap_or_default();
        file == want
            || file
                .strip_prefix(want.as_str())
                .is_some_and(|z| z.starts_with('.'))
    })
}

/// Whether `name` is usable: registered, or a module of the running kernel
/// that loads on demand — then it is loaded the way the kernel does, by
/// choosing it on a throwaway socket (needs CAP_NET_ADMIN), and the
/// registered list read again.
pub fn usable(name: &str) -> Result<bool, DiagError> {
    if is_available(name)? {
        return Ok(true);
    }
    if !modules_dep().is_some_and(|dep| module_listed(name, &dep)) {
        return Ok(false);
    }
    if let Ok(s) = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None) {
        // The error (EPERM unprivileged, ENOENT when the load failed) is
        // judged by reading the list again.
        let _ = s.set_tcp_congestion(name.as_bytes());
    }
    is_available(name)
}

fn read_list(path: &Path) -> Result<Vec<String>, DiagError> {
    let text = std::fs::read_to_string(path).map_err(|source| DiagError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    Ok(text.split_whitespace().map(String::from).collect())
}

#[cfg(test)]
mod tests {
    use super::module_listed;

    #[test]
    fn a_module_is_found_in_modules_dep_compressed_or_not() {
        // As on Debian 12's 6.1 kernel (tcp_bbr a module, cubic built in).
        let dep = "kernel/net/ipv4/tcp_bbr.ko.xz:\nkernel/net/ipv4/tcp_vegas.ko: kernel/net/ipv4/tcp_lp.ko\nkernel/net/sched/sch_fq.ko:\n";
        assert!(module_listed("bbr", dep));
        assert!(module_listed("vegas", dep));
        assert!(
            !module_listed("lp", dep),
            "a dependency is not a module line"
        );
        assert!(!module_listed("cubic", dep));
        assert!(!module_listed("bb", dep));
        assert!(!module_listed("bbr3", dep));
        assert!(module_listed("bbr", "kernel/net/ipv4/tcp_bbr.ko:\n"));
    }

    #[test]
    fn reno_is_always_registered_and_allowed() {
        // tcp_cong.c: reno is built in and always in the allowed list.
        assert!(super::available().unwrap().iter().any(|c| c == "reno"));
        assert!(super::allowed().unwrap().iter().any(|c| c == "reno"));
    }
}
