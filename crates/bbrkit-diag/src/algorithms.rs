//! The kernel's congestion-control algorithms, as the calling thread's
//! network namespace sees them: the registered ones
//! (`net.ipv4.tcp_available_congestion_control`, every socket's algorithm
//! is one of them) and those an unprivileged socket may choose
//! (`net.ipv4.tcp_allowed_congestion_control`).
//!
//! The one reader of these two lists for every crate. Must never write them.

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

fn read_list(path: &Path) -> Result<Vec<String>, DiagError> {
    let text = std::fs::read_to_string(path).map_err(|source| DiagError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    Ok(text.split_whitespace().map(String::from).collect())
}

#[cfg(test)]
mod tests {
    #[test]
    fn reno_is_always_registered_and_allowed() {
        // tcp_cong.c: reno is built in and always in the allowed list.
        assert!(super::available().unwrap().iter().any(|c| c == "reno"));
        assert!(super::allowed().unwrap().iter().any(|c| c == "reno"));
    }
}
