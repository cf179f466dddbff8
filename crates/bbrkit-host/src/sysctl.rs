//! Runtime sysctl values: read and write `/proc/sys` of the calling thread's
//! network namespace, and classify write failures (missing key, value the
//! kernel rejects, EPERM, read-only). Never touches sysctl.d files.

use std::fs::OpenOptions;
use std::io::{self, Write};
use std::path::PathBuf;

/// `/proc/sys/...` path of a dotted key.
pub fn proc_path(key: &str) -> PathBuf {
    PathBuf::from("/proc/sys").join(key.replace('.', "/"))
}

/// Canonical form of a sysctl value: whitespace runs collapsed to one space
/// (the kernel prints `tcp_rmem` with tabs; files use spaces).
pub fn normalize(value: &str) -> String {
    value.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Reads a key's runtime value; `Ok(None)` when the key does not exist in
/// this network namespace.
pub fn read(key: &str) -> io::Result<Option<String>> {
    match std::fs::read_to_string(proc_path(key)) {
        Ok(s) => Ok(Some(normalize(&s))),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// True when this process may write the key (key exists, not read-only).
pub fn writable(key: &str) -> bool {
    nix::unistd::access(&proc_path(key), nix::unistd::AccessFlags::W_OK).is_ok()
}

/// Why a runtime write did not take effect.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum WriteError {
    /// The key does not exist here (e.g. `net.core.default_qdisc` in a
    /// non-initial network namespace).
    KeyMissing,
    /// The kernel rejected the value with ENOENT (e.g. `fq` without sch_fq).
    ValueUnknown,
    /// EPERM: e.g. an algorithm missing from tcp_allowed_congestion_control.
    NotPermitted,
    /// EACCES/EROFS: the key belongs to the host or /proc/sys is read-only.
    ReadOnly,
    /// The write succeeded but reading back gave something else.
    ReadBack {
        /// What the kernel reports now.
        got: String,
    },
    /// Any other OS error.
    Os {
        /// The error text.
        message: String,
    },
}

impl std::fmt::Display for WriteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WriteError::KeyMissing => write!(f, "key does not exist in this network namespace"),
            WriteError::ValueUnknown => write!(f, "kernel rejected the value (ENOENT: not built)"),
            WriteError::NotPermitted => write!(f, "EPERM: not permitted here"),
            WriteError::ReadOnly => write!(f, "read-only here (owned by the host)"),
            WriteError::ReadBack { got } => write!(f, "read back {got:?}"),
            WriteError::Os { message } => write!(f, "{message}"),
        }
    }
}

/// Writes `value` to the key and reads it back.
pub fn write(key: &str, value: &str) -> Result<(), WriteError> {
    let path = proc_path(key);
    let classify = |e: io::Error, opening: bool| match e.raw_os_error() {
        Some(libc::ENOENT) if opening => WriteError::KeyMissing,
        Some(libc::ENOENT) => WriteError::ValueUnknown,
        Some(libc::EPERM) => WriteError::NotPermitted,
        Some(libc::EACCES) | Some(libc::EROFS) => WriteError::ReadOnly,
        _ => WriteError::Os {
            message: e.to_string(),
        },
    };
    let mut f = OpenOptions::new()
        .write(true)
        .open(&path)
        .map_err(|e| classify(e, true))?;
    f.write_all(value.as_bytes())
        .map_err(|e| classify(e, false))?;
    drop(f);
    let got = read(key)
        .map_err(|e| classify(e, true))?
        .ok_or(WriteError::KeyMissing)?;
    if got == normalize(value) {
        Ok(())
    } else {
        Err(WriteError::ReadBack { got })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_and_normalisation() {
        assert_eq!(
            proc_path("net.ipv4.tcp_congestion_control"),
            PathBuf::from("/proc/sys/net/ipv4/tcp_congestion_control")
        );
        assert_eq!(
            normalize("4096\t131072\t33554432\n"),
            "4096 131072 33554432"
        );
    }

    #[test]
    fn reads_live_keys_and_reports_missing_ones() {
        assert!(read("net.ipv4.tcp_congestion_control").unwrap().is_some());
        assert_eq!(read("net.ipv4.no_such_key_bbrkit").unwrap(), None);
    }

    #[test]
    #[ignore = "needs root"]
    fn write_classifies_kernel_answers_in_a_fresh_netns() {
        std::thread::spawn(|| {
            nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWNET).unwrap();
            let key = "net.ipv4.tcp_congestion_control";
            assert_eq!(write(key, "no_such_cc"), Err(WriteError::ValueUnknown));
            assert_eq!(write(key, "reno"), Ok(()));
            assert_eq!(read(key).unwrap().as_deref(), Some("reno"));
            let allowed = bbrkit_diag::algorithms::allowed().unwrap();
            if let Some(na) = bbrkit_diag::algorithms::available()
                .unwrap()
                .into_iter()
                .find(|c| !allowed.contains(c))
            {
                assert_eq!(write(key, &na), Err(WriteError::NotPermitted), "{na}");
            }
            // Global keys are read-only (0444) outside the initial namespace,
            // and default_qdisc does not exist there.
            assert_eq!(
                write("net.core.rmem_max", "4194304"),
                Err(WriteError::ReadOnly)
            );
            assert_eq!(
                write("net.core.default_qdisc", "pfifo_fast"),
                Err(WriteError::KeyMissing)
            );
            assert!(!writable("net.core.rmem_max"));
            assert_eq!(write("net.ipv4.tcp_rmem", "4096 131072 6291456"), Ok(()));
        })
        .join()
        .unwrap();
    }
}
