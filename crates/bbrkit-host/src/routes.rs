//! Per-route congestion control (`ip route ... congctl ALGO`, the
//! `RTAX_CC_ALGO` route metric): such routes override the namespace default
//! for every connection they carry. Dumps IPv4 and IPv6 routes of every
//! table through rtnetlink. Only reads.

use netlink_packet_route::route::{RouteAddress, RouteAttribute, RouteMessage, RouteMetric};
use netlink_packet_route::{AddressFamily, RouteNetlinkMessage};
use serde::Serialize;

use crate::HostError;
use crate::netlink::request;

/// A route that names its own congestion control.
#[derive(Debug, Clone, Serialize)]
pub struct CcRoute {
    /// Destination prefix (`10.9.0.0/16`, `default`).
    pub destination: String,
    /// Routing table number.
    pub table: u32,
    /// Output interface index, if any.
    pub oif: Option<u32>,
    /// The algorithm the route sets.
    pub cc: String,
}

fn address(a: &RouteAddress) -> String {
    match a {
        RouteAddress::Inet(ip) => ip.to_string(),
        RouteAddress::Inet6(ip) => ip.to_string(),
        other => format!("{other:?}"),
    }
}

/// Routes (both families, all tables) that carry `RTAX_CC_ALGO`.
pub fn with_congctl() -> Result<Vec<CcRoute>, HostError> {
    let mut out = Vec::new();
    for family in [AddressFamily::Inet, AddressFamily::Inet6] {
        let mut m = RouteMessage::default();
        m.header.address_family = family;
        let replies = match request(RouteNetlinkMessage::GetRoute(m), 0, true) {
            Ok(r) => r,
            Err(_) if family == AddressFamily::Inet6 => continue, // no IPv6
            Err(e) => return Err(e),
        };
        for r in replies {
            let RouteNetlinkMessage::NewRoute(r) = r else {
                continue;
            };
            let mut cc = None;
            let mut dest = None;
            let mut table = u32::from(r.header.table);
            let mut oif = None;
            for a in &r.attributes {
                match a {
                    RouteAttribute::Metrics(ms) => {
                        cc = ms.iter().find_map(|m| match m {
                            RouteMetric::CcAlgo(s) => Some(s.clone()),
                            _ => None,
                        })
                    }
                    RouteAttribute::Destination(d) => dest = Some(address(d)),
                    RouteAttribute::Table(t) => table = *t,
                    RouteAttribute::Oif(i) => oif = Some(*i),
                    _ => {}
                }
            }
            if let Some(cc) = cc {
                let destination = match dest {
                    Some(d) => format!("{d}/{}", r.header.destination_prefix_length),
                    None => "default".to_string(),
                };
                out.push(CcRoute {
                    destination,
                    table,
                    oif,
                    cc,
                });
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use netlink_packet_core::{NLM_F_CREATE, NLM_F_EXCL};
    use netlink_packet_route::route::{RouteHeader, RouteProtocol, RouteScope, RouteType};

    #[test]
    fn dump_works_without_root() {
        assert!(with_congctl().is_ok());
    }

    #[test]
    #[ignore = "needs root"]
    fn finds_a_congctl_route_in_a_fresh_netns() {
        std::thread::spawn(|| {
            nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWNET).unwrap();
            assert!(with_congctl().unwrap().is_empty());
            let mut link = netlink_packet_route::link::LinkMessage::default();
            link.header.index = 1;
            link.header.flags = netlink_packet_route::link::LinkFlags::Up;
            link.header.change_mask = netlink_packet_route::link::LinkFlags::Up;
            request(RouteNetlinkMessage::SetLink(link), 0, false).unwrap();
            let mut m = RouteMessage::default();
            m.header.address_family = AddressFamily::Inet;
            m.header.destination_prefix_length = 16;
            m.header.table = RouteHeader::RT_TABLE_MAIN;
            m.header.protocol = RouteProtocol::Static;
            m.header.scope = RouteScope::Link;
            m.header.kind = RouteType::Unicast;
            m.attributes = vec![
                RouteAttribute::Destination(RouteAddress::Inet("10.9.0.0".parse().unwrap())),
                RouteAttribute::Oif(1),
                RouteAttribute::Metrics(vec![RouteMetric::CcAlgo("reno".into())]),
            ];
            request(
                RouteNetlinkMessage::NewRoute(m),
                NLM_F_CREATE | NLM_F_EXCL,
                false,
            )
            .unwrap();
            let found = with_congctl().unwrap();
            assert_eq!(found.len(), 1, "{found:?}");
            assert_eq!(
                (
                    found[0].destination.as_str(),
                    found[0].cc.as_str(),
                    found[0].table,
                    found[0].oif
                ),
                ("10.9.0.0/16", "reno", 254, Some(1))
            );
        })
        .join()
        .unwrap();
    }
}
