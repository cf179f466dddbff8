//! The error type of the BPF side. Owns the wording of every failure; the
//! underlying libbpf or OS error is the `source`, so an error-chain printer
//! names each cause once.

use std::path::PathBuf;

/// Everything that can go wrong loading, registering or reading a BPF
/// congestion control.
#[derive(Debug, thiserror::Error)]
pub enum BpfError {
    /// The object file could not be read.
    #[error("read BPF object {}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The object could not be parsed.
    #[error("open BPF object {object}")]
    Open {
        /// File name or embedded object name.
        object: String,
        /// libbpf's error.
        #[source]
        source: libbpf_rs::Error,
    },
    /// The verifier refused a program. `log` is its full log (level 1,
    /// asked for only on the retry after the refusal).
    #[error("the kernel's verifier refused BPF program {program} of {object}: {reason}")]
    Refused {
        /// Object name.
        object: String,
        /// Program name.
        program: String,
        /// The last line of the verifier log (its verdict).
        reason: String,
        /// The whole verifier log.
        log: String,
    },
    /// Loading failed for another reason (map creation, BTF, struct_ops
    /// layout). `detail` carries libbpf's own warnings.
    #[error("load BPF object {object}{detail}")]
    Load {
        /// Object name.
        object: String,
        /// libbpf's warnings, as `: ...`, or empty.
        detail: String,
        /// libbpf's error.
        #[source]
        source: libbpf_rs::Error,
    },
    /// Registering a struct_ops map (creating its link) failed.
    #[error("register struct_ops {map}")]
    Register {
        /// The struct_ops map.
        map: String,
        /// libbpf's error.
        #[source]
        source: libbpf_rs::Error,
    },
    /// Pinning or unpinning in bpffs failed.
    #[error("pin {path}")]
    Pin {
        /// The bpffs path.
        path: PathBuf,
        /// libbpf's error.
        #[source]
        source: libbpf_rs::Error,
    },
    /// Taking a reference to another user's registration failed (the
    /// link went away, or no permission).
    #[error("join the registration of {name} (link {link_id})")]
    Join {
        /// The algorithm.
        name: String,
        /// The link's id (0: none found).
        link_id: u32,
        /// The OS error of `BPF_LINK_GET_FD_BY_ID`.
        #[source]
        source: std::io::Error,
    },
    /// Removing bbrkit's pins failed.
    #[error("unpin {ca}")]
    Unpin {
        /// The congestion control.
        ca: String,
        /// The OS error (names the path).
        #[source]
        source: std::io::Error,
    },
    /// The object has no map or program of that name.
    #[error("BPF object {object} has no {what}")]
    Missing {
        /// Object name.
        object: String,
        /// What was looked for.
        what: String,
    },
    /// A cgroup directory could not be opened or is not cgroup v2.
    #[error("cgroup {}", path.display())]
    Cgroup {
        /// The directory.
        path: PathBuf,
        /// The OS error (or `InvalidInput`: not on cgroup v2).
        #[source]
        source: std::io::Error,
    },
    /// Attaching the sock_ops program to a cgroup failed.
    #[error("attach {program} to cgroup {}", cgroup.display())]
    Attach {
        /// The program.
        program: String,
        /// The cgroup directory.
        cgroup: PathBuf,
        /// libbpf's error.
        #[source]
        source: libbpf_rs::Error,
    },
    /// Detaching the sock_ops program's link failed.
    #[error("detach {program} from its cgroup")]
    Detach {
        /// The program.
        program: String,
        /// libbpf's error.
        #[source]
        source: libbpf_rs::Error,
    },
    /// Reading or writing a map failed.
    #[error("{op} map {map}")]
    Map {
        /// The map.
        map: String,
        /// What was done (`update`, `lookup`, ...).
        op: &'static str,
        /// libbpf's error.
        #[source]
        source: libbpf_rs::Error,
    },
    /// A pin directory that cannot be used as asked (not bpffs, already
    /// holding an attachment, incomplete, holding foreign files).
    #[error("{}: {problem}", dir.display())]
    PinDir {
        /// The directory.
        dir: PathBuf,
        /// What is wrong.
        problem: String,
    },
    /// Asking the kernel which programs a cgroup runs failed.
    #[error("query sock_ops programs of cgroup {}", cgroup.display())]
    Query {
        /// The cgroup directory.
        cgroup: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// A ring size the kernel would refuse.
    #[error("a ring of {bytes} bytes: the size must be a power of two of at least 4096")]
    RingSize {
        /// As asked.
        bytes: u32,
    },
    /// A weight rewrite that does not fit the attached rule table.
    #[error("rule {}: {problem}", rule + 1)]
    Weights {
        /// Rule index (0-based; shown from 1).
        rule: usize,
        /// What is wrong.
        problem: String,
    },
}

/// Result alias for the BPF side.
pub type Result<T> = std::result::Result<T, BpfError>;
