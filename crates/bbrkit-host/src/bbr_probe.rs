//! The running BBR's version as the kernel itself reports it, without
//! waiting for a live BBR connection: a throwaway loopback TCP connection is
//! switched to `bbr` with `TCP_CONGESTION` and its `INET_DIAG_BBRINFO` read
//! back through sock_diag. With the privilege to do so it runs on a private
//! thread inside a fresh network namespace (only its own `lo`), so the
//! host's socket table never sees it; otherwise on this namespace's
//! loopback. Changes no configuration and sends nothing off the machine.

use std::ffi::OsString;
use std::net::{Ipv4Addr, TcpListener, TcpStream};

use netlink_packet_route::RouteNetlinkMessage;
use netlink_packet_route::link::{LinkFlags, LinkMessage};

use crate::netlink::request;

/// `(version, evidence)` from the `tcp_bbr_info` of `s`: the `bbr_version`
/// byte of the BBRv3 layout, or `1` for the 20-byte mainline layout.
pub(crate) fn version_of(s: &bbrkit_diag::Socket, whose: &str) -> Option<(String, String)> {
    let info = s.bbr.as_ref()?;
    Some(match info.version_byte {
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
    })
}

fn lo_up() -> bool {
    let mut m = LinkMessage::default();
    m.header.index = 1;
    m.header.flags = LinkFlags::Up;
    m.header.change_mask = LinkFlags::Up;
    request(RouteNetlinkMessage::SetLink(m), 0, false).is_ok()
}

fn probe_here(place: &str) -> Option<(String, String)> {
    let l = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).ok()?;
    let port = l.local_addr().ok()?.port();
    let c = TcpStream::connect(("127.0.0.1", port)).ok()?;
    let (_server, _) = l.accept().ok()?;
    nix::sys::socket::setsockopt(
        &c,
        nix::sys::socket::sockopt::TcpCongestion,
        &OsString::from("bbr"),
    )
    .ok()?;
    let me = c.local_addr().ok()?;
    let filter = bbrkit_diag::Filter {
        cc: Some("bbr".into()),
        port: Some(port),
        ..Default::default()
    };
    let socks = bbrkit_diag::census(&filter).ok()?;
    let s = socks.iter().find(|s| s.local == me)?;
    version_of(
        s,
        &format!("a throwaway loopback connection set to bbr with TCP_CONGESTION ({place})"),
    )
}

/// Reads the BBR version from a throwaway connection (see the module
/// header). None when BBR cannot be selected or the kernel sends no
/// `tcp_bbr_info`. Call it only when `bbr` is registered
/// (`tcp_available_congestion_control`): selecting an unregistered
/// algorithm would make the kernel load its module.
pub fn probe() -> Option<(String, String)> {
    std::thread::spawn(|| {
        if nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWNET).is_ok() {
            if !lo_up() {
                return None;
            }
            probe_here("in a private network namespace")
        } else {
            probe_here("on this namespace's loopback")
        }
    })
    .join()
    .ok()
    .flatten()
}

#[cfg(test)]
mod tests {
    #[test]
    #[ignore = "needs root"]
    fn probe_reads_the_version_of_the_running_bbr() {
        let available =
            std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control").unwrap();
        if !available.split_whitespace().any(|c| c == "bbr") {
            assert_eq!(super::probe(), None);
            return;
        }
        let (v, evidence) = super::probe().expect("a BBR socket's tcp_bbr_info");
        assert!(v == "1" || v == "3", "{v}: {evidence}");
        assert!(evidence.contains("private network namespace"), "{evidence}");
    }
}
