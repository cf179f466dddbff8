//! The lab topology: client, router and server namespaces joined by veths.
//!
//! ```text
//!  client ns                router ns                  server ns
//!  veth-c 198.18.0.1/24 ── veth-rc   [emulator]   veth-rs ── veth-s 198.18.0.2/24
//! ```
//!
//! Client and server know each other's MAC address (permanent neighbour
//! entries), so no ARP crosses the router.
//!
//! Owns building it (every link is born inside a lab namespace, so nothing
//! ever appears in the host's namespace) and tearing it down (dropping the
//! three namespace descriptors destroys the namespaces and their links). The
//! router has no IP addresses and does not forward IP: the emulator bridges
//! Ethernet frames between `veth-rc` and `veth-rs`. Must never touch a link,
//! address or sysctl outside these three namespaces.

use std::net::Ipv4Addr;

use crate::error::Result;
use crate::ethtool;
use crate::netlink::Rtnl;
use crate::netns::Netns;

/// The client's address (the data receiver).
pub const CLIENT_ADDR: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 1);
/// The server's address (the data sender).
pub const SERVER_ADDR: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 2);
/// Client-side link name inside the client namespace.
pub const CLIENT_IF: &str = "veth-c";
/// Server-side link name inside the server namespace.
pub const SERVER_IF: &str = "veth-s";
/// MAC address of `veth-c` (locally administered, fixed so that each end
/// gets a permanent neighbour entry for the other).
pub const CLIENT_MAC: [u8; 6] = [0x02, 0x62, 0x62, 0x72, 0x6b, 0x01];
/// MAC address of `veth-s`.
pub const SERVER_MAC: [u8; 6] = [0x02, 0x62, 0x62, 0x72, 0x6b, 0x02];
/// The router's link toward the client (egress of the impaired direction).
pub const ROUTER_CLIENT_IF: &str = "veth-rc";
/// The router's link toward the server.
pub const ROUTER_SERVER_IF: &str = "veth-rs";

/// The three namespaces and their link indexes.
#[derive(Debug)]
pub struct Topology {
    /// Per-run name prefix (e.g. `bbrk1234`), used in reports and labels.
    pub prefix: String,
    /// Data receiver's namespace.
    pub client: Netns,
    /// Emulator's namespace.
    pub router: Netns,
    /// Data sender's namespace.
    pub server: Netns,
    /// Link MTU in bytes.
    pub mtu: u32,
    /// ifindex of `veth-rc` in the router.
    pub router_client_index: u32,
    /// ifindex of `veth-rs` in the router.
    pub router_server_index: u32,
}

impl Topology {
    /// Builds the topology with links of `mtu` bytes.
    /// With `named`, the namespaces also get `/run/netns/<prefix>-<role>`
    /// names for `ip netns exec` (removed on drop).
    pub fn build(prefix: &str, mtu: u32, named: bool) -> Result<Topology> {
        let mut client = Netns::create(&format!("{prefix}-client"))?;
        let mut router = Netns::create(&format!("{prefix}-router"))?;
        let mut server = Netns::create(&format!("{prefix}-server"))?;
        if named {
            for ns in [&mut client, &mut router, &mut server] {
                ns.bind_name()?;
            }
        }

        for ns in [&client, &router, &server] {
            ns.run(|| quiet_ipv6(ns))?;
        }
        let (rc, rs) = router.run(|| {
            let mut nl = Rtnl::open()?;
            nl.add_veth(
                ROUTER_CLIENT_IF,
                CLIENT_IF,
                client.raw_fd(),
                CLIENT_MAC,
                mtu,
            )?;
            nl.add_veth(
                ROUTER_SERVER_IF,
                SERVER_IF,
                server.raw_fd(),
                SERVER_MAC,
                mtu,
            )?;
            router.write_sysctl("net/ipv4/ip_forward", "0")?;
            let rc = index(ROUTER_CLIENT_IF)?;
            let rs = index(ROUTER_SERVER_IF)?;
            for (name, idx) in [(ROUTER_CLIENT_IF, rc), (ROUTER_SERVER_IF, rs)] {
                ethtool::offloads_off(name)?;
                nl.set_up(idx)?;
            }
            Ok((rc, rs))
        })?;
        for (ns, ifname, addr, peer_addr, peer_mac) in [
            (&client, CLIENT_IF, CLIENT_ADDR, SERVER_ADDR, SERVER_MAC),
            (&server, SERVER_IF, SERVER_ADDR, CLIENT_ADDR, CLIENT_MAC),
        ] {
            ns.run(|| {
                let mut nl = Rtnl::open()?;
                // Socket buffers that fit long fat paths (1 Gbit/s × 100 ms
                // is 12.5 MB); these sysctls are per namespace.
                ns.write_sysctl("net/ipv4/tcp_rmem", "4096 131072 67108864")?;
                ns.write_sysctl("net/ipv4/tcp_wmem", "4096 16384 67108864")?;
                let lo = index("lo")?;
                nl.set_up(lo)?;
                let idx = index(ifname)?;
                ethtool::offloads_off(ifname)?;
                nl.add_address(idx, addr, 24)?;
                nl.set_up(idx)?;
                // No ARP across the emulator: a lost ARP request would stall
                // the first second of a run (the kernel retries after 1 s)
                // and is no part of a wide-area path.
                nl.add_neighbour(idx, peer_addr, peer_mac)?;
                Ok(())
            })?;
        }
        Ok(Topology {
            prefix: prefix.to_string(),
            client,
            router,
            server,
            mtu,
            router_client_index: rc,
            router_server_index: rs,
        })
    }

    /// Makes the client and server namespaces request ECN on the
    /// connections they open and accept it on those they accept
    /// (`tcp_ecn=1`; the kernel's default 2 only accepts), for
    /// `--ecn-threshold`. Per namespace, so the host's setting is untouched.
    pub fn negotiate_ecn(&self) -> Result<()> {
        for ns in [&self.client, &self.server] {
            ns.run(|| ns.write_sysctl("net/ipv4/tcp_ecn", "1"))?;
        }
        Ok(())
    }

    /// The `/run/netns` names of the three namespaces, if they were named.
    pub fn names(&self) -> Vec<String> {
        [&self.client, &self.router, &self.server]
            .iter()
            .filter_map(|ns| ns.bound_name())
            .map(|p| p.display().to_string())
            .collect()
    }

    /// Inodes of the three namespaces (for leak checks).
    pub fn inodes(&self) -> [u64; 3] {
        [
            self.client.inode(),
            self.router.inode(),
            self.server.inode(),
        ]
    }
}

/// Disables IPv6 in the calling thread's namespace so that router
/// solicitations and neighbour discovery do not cross the emulator.
fn quiet_ipv6(ns: &Netns) -> Result<()> {
    if std::path::Path::new("/proc/sys/net/ipv6").exists() {
        ns.write_sysctl("net/ipv6/conf/all/disable_ipv6", "1")?;
        ns.write_sysctl("net/ipv6/conf/default/disable_ipv6", "1")?;
    }
    Ok(())
}

fn index(name: &str) -> Result<u32> {
    nix::net::if_::if_nametoindex(name)
        .map_err(|e| crate::error::LabError::io(format!("find link {name}"), e.into()))
}

/// A fresh per-run prefix: `bbrk` + the process id.
pub fn run_prefix() -> String {
    format!("bbrk{}", std::process::id())
}
