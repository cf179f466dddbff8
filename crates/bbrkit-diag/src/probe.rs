//! Which `tcp_bbr_info` layout this kernel's BBR reports, asked without any
//! live BBR connection: a throwaway, never-connected TCP socket is switched to
//! `bbr` (`TCP_CONGESTION`) and its `getsockopt(TCP_CC_INFO)` answer is decoded
//! like `INET_DIAG_BBRINFO` (20 bytes = mainline v1, 52 bytes with the version
//! byte at offset 39 = BBRv3).
//!
//! Owns that probe only. Must never load a module (it does nothing unless
//! `bbr` is already in `tcp_available_congestion_control`), send a packet or
//! leave anything behind: the socket is unbound, unconnected and closed on
//! return.

use std::os::fd::AsFd;

use crate::BbrInfo;

/// The `tcp_bbr_info` the kernel's `bbr` reports on a fresh socket, or `None`
/// when BBR is not available (not built in, module not loaded), the caller
/// may not select it (`tcp_allowed_congestion_control`, no CAP_NET_ADMIN), or
/// the kernel returns no BBR info. Only the layout (`len`, `version()`) is
/// meaningful: the model of an unconnected socket is all zeros.
pub fn probe_bbr_info() -> Option<BbrInfo> {
    if !crate::algorithms::is_available("bbr").ok()? {
        return None;
    }
    let sock = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).ok()?;
    sock.set_tcp_congestion(b"bbr").ok()?;
    crate::sockopt::bbr_info(sock.as_fd()).ok().flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// On a kernel that offers `bbr` to this user, the probe answers with a
    /// layout the BBR parser knows; otherwise it says nothing.
    #[test]
    fn probe_matches_what_this_kernel_offers() {
        let available = crate::algorithms::available().unwrap().join(" ");
        let allowed = crate::algorithms::allowed().unwrap().join(" ");
        // SAFETY: geteuid has no preconditions.
        let root = unsafe { libc::geteuid() } == 0;
        let offered = available.split_whitespace().any(|c| c == "bbr")
            && (root || allowed.split_whitespace().any(|c| c == "bbr"));
        let got = probe_bbr_info();
        assert_eq!(
            got.is_some(),
            offered,
            "available: {available} allowed: {allowed}"
        );
        if let Some(b) = got {
            assert!(b.len == 20 || b.len >= 40, "layout of {} bytes", b.len);
            assert_eq!(b.version() == 1, b.len == 20);
        }
    }
}
