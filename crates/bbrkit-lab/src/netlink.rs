//! The lab's rtnetlink requests for its own namespaces, through the one
//! client (`bbrkit_diag::rtnl`).
//!
//! Owns the few requests the lab needs: create a veth pair whose ends are
//! born inside lab namespaces, bring links up, add IPv4 addresses and
//! permanent neighbours, add a
//! qdisc and delete it again. The socket talks to the namespace of the thread that created it;
//! must never be created on a thread that is not inside a lab namespace.

use std::net::{IpAddr, Ipv4Addr};
use std::os::fd::RawFd;

use netlink_packet_core::{DefaultNla, NLM_F_CREATE, NLM_F_EXCL, NLM_F_REPLACE};
use netlink_packet_route::address::{AddressAttribute, AddressMessage};
use netlink_packet_route::link::{
    InfoData, InfoKind, InfoVeth, LinkAttribute, LinkFlags, LinkInfo, LinkMessage,
};
use netlink_packet_route::neighbour::{
    NeighbourAddress, NeighbourAttribute, NeighbourMessage, NeighbourState,
};
use netlink_packet_route::route::RouteType;
use netlink_packet_route::tc::{TcAttribute, TcHandle, TcMessage};
use netlink_packet_route::{AddressFamily, RouteNetlinkMessage};

use crate::error::{LabError, Result};

/// An rtnetlink socket bound to the calling thread's network namespace
/// (the one client, [`bbrkit_diag::rtnl::Rtnl`]).
pub struct Rtnl(bbrkit_diag::rtnl::Rtnl);

impl Rtnl {
    /// Opens a socket in the calling thread's namespace.
    pub fn open() -> Result<Rtnl> {
        bbrkit_diag::rtnl::Rtnl::open().map(Rtnl).map_err(nl)
    }

    fn request(&mut self, what: &str, msg: RouteNetlinkMessage, flags: u16) -> Result<()> {
        self.0.ack(what, msg, flags).map_err(nl)
    }

    /// Creates veth `name` here (in this namespace) with its peer `peer`
    /// born directly in the namespace `peer_ns` with MAC address `peer_mac`,
    /// both with `mtu`.
    pub fn add_veth(
        &mut self,
        name: &str,
        peer: &str,
        peer_ns: RawFd,
        peer_mac: [u8; 6],
        mtu: u32,
    ) -> Result<()> {
        let mut peer_msg = LinkMessage::default();
        peer_msg.attributes = vec![
            LinkAttribute::IfName(peer.to_string()),
            LinkAttribute::Mtu(mtu),
            LinkAttribute::Address(peer_mac.to_vec()),
            LinkAttribute::NetNsFd(peer_ns),
        ];
        let mut msg = LinkMessage::default();
        msg.attributes = vec![
            LinkAttribute::IfName(name.to_string()),
            LinkAttribute::Mtu(mtu),
            LinkAttribute::LinkInfo(vec![
                LinkInfo::Kind(InfoKind::Veth),
                LinkInfo::Data(InfoData::Veth(InfoVeth::Peer(peer_msg))),
            ]),
        ];
        self.request(
            &format!("create veth {name}/{peer}"),
            RouteNetlinkMessage::NewLink(msg),
            NLM_F_CREATE | NLM_F_EXCL,
        )
    }

    /// Sets link `index` administratively up.
    pub fn set_up(&mut self, index: u32) -> Result<()> {
        let mut msg = LinkMessage::default();
        msg.header.index = index;
        msg.header.flags = LinkFlags::Up;
        msg.header.change_mask = LinkFlags::Up;
        self.request(
            &format!("set link {index} up"),
            RouteNetlinkMessage::SetLink(msg),
            0,
        )
    }

    /// Adds `addr/prefix` to link `index`.
    pub fn add_address(&mut self, index: u32, addr: Ipv4Addr, prefix: u8) -> Result<()> {
        let mut msg = AddressMessage::default();
        msg.header.family = AddressFamily::Inet;
        msg.header.prefix_len = prefix;
        msg.header.index = index;
        msg.attributes = vec![
            AddressAttribute::Local(IpAddr::V4(addr)),
            AddressAttribute::Address(IpAddr::V4(addr)),
        ];
        self.request(
            &format!("add address {addr}/{prefix}"),
            RouteNetlinkMessage::NewAddress(msg),
            NLM_F_CREATE | NLM_F_EXCL,
        )
    }

    /// Adds a permanent neighbour entry `addr` → `mac` on link `index` (no
    /// ARP is ever sent for it).
    pub fn add_neighbour(&mut self, index: u32, addr: Ipv4Addr, mac: [u8; 6]) -> Result<()> {
        let mut msg = NeighbourMessage::default();
        msg.header.family = AddressFamily::Inet;
        msg.header.ifindex = index;
        msg.header.state = NeighbourState::Permanent;
        msg.header.kind = RouteType::Unicast;
        msg.attributes = vec![
            NeighbourAttribute::Destination(NeighbourAddress::Inet(addr)),
            NeighbourAttribute::LinkLayerAddress(mac.to_vec()),
        ];
        self.request(
            &format!("add neighbour {addr}"),
            RouteNetlinkMessage::NewNeighbour(msg),
            NLM_F_CREATE | NLM_F_REPLACE,
        )
    }

    /// Adds (or with `replace`, replaces) the root qdisc of link `index`
    /// with one of `kind` and raw `TCA_OPTIONS` bytes.
    pub fn root_qdisc(
        &mut self,
        index: u32,
        kind: &str,
        options: Vec<u8>,
        replace: bool,
    ) -> Result<()> {
        let mut msg = TcMessage::default();
        msg.header.family = AddressFamily::Unspec;
        msg.header.index = index as i32;
        msg.header.handle = TcHandle { major: 1, minor: 0 };
        msg.header.parent = TcHandle::ROOT;
        msg.attributes = vec![
            TcAttribute::Kind(kind.to_string()),
            TcAttribute::Other(DefaultNla::new(TCA_OPTIONS, options)),
        ];
        self.request(
            &format!("add {kind} qdisc"),
            RouteNetlinkMessage::NewQueueDiscipline(msg),
            if replace {
                NLM_F_CREATE | NLM_F_REPLACE
            } else {
                NLM_F_CREATE | NLM_F_EXCL
            },
        )
    }

    /// Deletes the root qdisc of link `index` (the link falls back to its
    /// default, `noqueue` for a veth).
    pub fn delete_root_qdisc(&mut self, index: u32) -> Result<()> {
        let mut msg = TcMessage::default();
        msg.header.family = AddressFamily::Unspec;
        msg.header.index = index as i32;
        msg.header.parent = TcHandle::ROOT;
        self.request(
            "delete root qdisc",
            RouteNetlinkMessage::DelQueueDiscipline(msg),
            0,
        )
    }
}

const TCA_OPTIONS: u16 = 2;

/// Appends one netlink attribute (`struct nlattr` header, `value`, padding
/// to 4 bytes) to `out`, for the raw `TCA_OPTIONS` payloads of qdiscs.
pub fn push_nla(out: &mut Vec<u8>, kind: u16, value: &[u8]) {
    let len = 4 + value.len();
    out.extend_from_slice(&(len as u16).to_ne_bytes());
    out.extend_from_slice(&kind.to_ne_bytes());
    out.extend_from_slice(value);
    out.resize(out.len() + ((4 - len % 4) % 4), 0);
}

fn nl(e: bbrkit_diag::rtnl::RtnlError) -> LabError {
    LabError::Netlink {
        what: e.what,
        source: e.source,
    }
}
