//! The lab: kernel TCP in throwaway network namespaces.
//!
//! Owns namespace topologies with guaranteed cleanup (the namespaces are held
//! only by file descriptors, so they vanish with the process whatever ends
//! it), the link emulator (kernel netem where present, else a userspace
//! AF_PACKET forwarder), the traffic tester and the experiment runner. Must
//! never touch an interface, namespace or sysctl outside its own namespaces.

pub mod blast;
pub mod bpf_cc;
pub mod cleanup;
pub mod clock;
pub mod emulator;
pub mod error;
pub mod ethtool;
pub mod netlink;
pub mod netns;
pub mod probe;
pub mod runner;
pub mod tcpinfo;
pub mod tester;
pub mod topology;

pub use error::{LabError, Result};

/// Fails with [`LabError::NotRoot`] unless the process runs as root.
pub fn require_root() -> Result<()> {
    if nix::unistd::geteuid().is_root() {
        Ok(())
    } else {
        Err(LabError::NotRoot)
    }
}
