//! The interface this host reaches a remote address through, and how fast
//! that interface says it is: the route the kernel would pick (`ip route
//! get`, through [`Rtnl`]) and the link speed its driver reports to
//! `ethtool` (`ETHTOOL_GSET` on a socket of the calling thread's network
//! namespace — not `/sys/class/net`, which shows the namespace that
//! mounted sysfs, so a thread that entered another namespace would read
//! another interface of the same name).
//!
//! Owns that lookup only; `advise` uses it as the upper end of a path's
//! capacity when the operator gave none. Never changes anything.

use std::net::IpAddr;

use netlink_packet_route::link::{LinkAttribute, LinkMessage};
use netlink_packet_route::route::{RouteAddress, RouteAttribute, RouteHeader, RouteMessage};
use netlink_packet_route::{AddressFamily, RouteNetlinkMessage};

use crate::rtnl::{Rtnl, RtnlError};

/// An interface, with the speed its driver reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    /// Interface name (`eth0`).
    pub dev: String,
    /// Link speed, bits per second; `None` when the driver does not say
    /// (virtio, `lo`, a link that is down: `speed` reads -1 or fails).
    pub bits_per_second: Option<u64>,
}

/// The interface the kernel routes `remote` through, in the calling
/// thread's network namespace.
pub fn egress(remote: IpAddr) -> Result<Link, RtnlError> {
    let mut rtnl = Rtnl::open()?;
    let mut m = RouteMessage::default();
    (m.header.address_family, m.header.destination_prefix_length) = match remote {
        IpAddr::V4(_) => (AddressFamily::Inet, 32),
        IpAddr::V6(_) => (AddressFamily::Inet6, 128),
    };
    m.header.table = RouteHeader::RT_TABLE_UNSPEC;
    m.attributes
        .push(RouteAttribute::Destination(RouteAddress::from(remote)));
    let what = format!("route to {remote}");
    let oif = rtnl
        .get(&what, RouteNetlinkMessage::GetRoute(m))?
        .iter()
        .find_map(|r| match r {
            RouteNetlinkMessage::NewRoute(r) => r.attributes.iter().find_map(|a| match a {
                RouteAttribute::Oif(i) => Some(*i),
                _ => None,
            }),
            _ => None,
        })
        .ok_or_else(|| RtnlError {
            what: what.clone(),
            source: std::io::Error::other("the answer names no output interface"),
        })?;
    let mut l = LinkMessage::default();
    l.header.index = oif;
    let dev = rtnl
        .get(&format!("link {oif}"), RouteNetlinkMessage::GetLink(l))?
        .iter()
        .find_map(|m| match m {
            RouteNetlinkMessage::NewLink(l) => l.attributes.iter().find_map(|a| match a {
                LinkAttribute::IfName(n) => Some(n.clone()),
                _ => None,
            }),
            _ => None,
        })
        .unwrap_or_else(|| format!("if{oif}"));
    Ok(Link {
        bits_per_second: speed(&dev),
        dev,
    })
}

/// `ETHTOOL_GSET` (include/uapi/linux/ethtool.h): the legacy link
/// settings, which the kernel fills from a driver's `get_link_ksettings`.
const ETHTOOL_GSET: u32 = 0x1;
/// `SPEED_UNKNOWN`, 32 bits (`speed_hi:speed` of an unknown speed).
const SPEED_UNKNOWN: u32 = u32::MAX;

/// `struct ethtool_cmd` (44 bytes), the fields this reads.
#[repr(C)]
#[derive(Default)]
struct EthtoolCmd {
    cmd: u32,
    supported: u32,
    advertising: u32,
    speed: u16,
    duplex: u8,
    port: u8,
    phy_address: u8,
    transceiver: u8,
    autoneg: u8,
    mdio_support: u8,
    maxtxpkt: u32,
    maxrxpkt: u32,
    speed_hi: u16,
    eth_tp_mdix: u8,
    eth_tp_mdix_ctrl: u8,
    lp_advertising: u32,
    reserved: [u32; 2],
}

/// `struct ifreq` with `ifr_data`.
#[repr(C)]
struct IfReq {
    name: [u8; libc::IFNAMSIZ],
    data: *mut EthtoolCmd,
    pad: [u8; 16],
}

/// The speed `dev`'s driver reports, bits per second (`None`: not reported,
/// or the interface cannot be asked).
fn speed(dev: &str) -> Option<u64> {
    let bytes = dev.as_bytes();
    if bytes.len() >= libc::IFNAMSIZ {
        return None;
    }
    let sock = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::DGRAM, None).ok()?;
    let mut cmd = EthtoolCmd {
        cmd: ETHTOOL_GSET,
        ..EthtoolCmd::default()
    };
    let mut req = IfReq {
        name: [0; libc::IFNAMSIZ],
        data: &mut cmd,
        pad: [0; 16],
    };
    req.name[..bytes.len()].copy_from_slice(bytes);
    // SAFETY: `req` is a valid `ifreq` naming `dev` (NUL-terminated within
    // IFNAMSIZ), whose data points at a live `ethtool_cmd` the kernel fills
    // for ETHTOOL_GSET; `sock` is an open socket of this thread's namespace.
    let rc = unsafe {
        libc::ioctl(
            std::os::fd::AsRawFd::as_raw_fd(&sock),
            libc::SIOCETHTOOL,
            &mut req,
        )
    };
    if rc != 0 {
        return None;
    }
    mbit_to_bits((u32::from(cmd.speed_hi) << 16) | u32::from(cmd.speed))
}

/// A driver's speed in Mbit/s (0 or `SPEED_UNKNOWN` when it does not know)
/// in bits per second.
fn mbit_to_bits(mbit: u32) -> Option<u64> {
    (mbit != 0 && mbit != SPEED_UNKNOWN && mbit != u32::from(u16::MAX))
        .then(|| u64::from(mbit) * 1_000_000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn driver_speeds() {
        assert_eq!(std::mem::size_of::<EthtoolCmd>(), 44, "struct ethtool_cmd");
        assert_eq!(mbit_to_bits(10_000), Some(10_000_000_000));
        assert_eq!(mbit_to_bits(SPEED_UNKNOWN), None);
        assert_eq!(mbit_to_bits(0xffff), None, "an old driver's 16-bit unknown");
        assert_eq!(mbit_to_bits(0), None);
    }

    /// Loopback is reached through `lo`, whose driver reports no speed.
    #[test]
    fn loopback_goes_through_lo() {
        let l = egress("127.0.0.1".parse().unwrap()).unwrap();
        assert_eq!(
            l,
            Link {
                dev: "lo".into(),
                bits_per_second: None
            }
        );
    }
}
