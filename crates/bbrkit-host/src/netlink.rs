//! A small synchronous rtnetlink client (netlink-sys + netlink-packet-route):
//! one request, all replies until DONE or the ACK. Used by `qdisc` only.

use netlink_packet_core::{
    NLM_F_ACK, NLM_F_DUMP, NLM_F_REQUEST, NetlinkHeader, NetlinkMessage, NetlinkPayload,
};
use netlink_packet_route::RouteNetlinkMessage;
use netlink_sys::{Socket, SocketAddr, protocols::NETLINK_ROUTE};

use crate::HostError;

fn err(what: &str, e: impl std::fmt::Display) -> HostError {
    HostError::Netlink(format!("{what}: {e}"))
}

/// Sends one request. `dump` adds NLM_F_DUMP; otherwise NLM_F_ACK and the
/// kernel's error code (negative errno) becomes an `Err` with its text.
pub fn request(
    msg: RouteNetlinkMessage,
    extra_flags: u16,
    dump: bool,
) -> Result<Vec<RouteNetlinkMessage>, HostError> {
    let mut socket = Socket::new(NETLINK_ROUTE).map_err(|e| err("socket", e))?;
    socket.bind_auto().map_err(|e| err("bind", e))?;
    socket
        .connect(&SocketAddr::new(0, 0))
        .map_err(|e| err("connect", e))?;
    let mut header = NetlinkHeader::default();
    header.flags = NLM_F_REQUEST | extra_flags | if dump { NLM_F_DUMP } else { NLM_F_ACK };
    header.sequence_number = 1;
    let mut packet = NetlinkMessage::new(header, NetlinkPayload::InnerMessage(msg));
    packet.finalize();
    let mut buf = vec![0u8; packet.buffer_len()];
    packet.serialize(&mut buf);
    socket.send(&buf, 0).map_err(|e| err("send", e))?;
    let mut out = Vec::new();
    loop {
        let (data, _) = socket.recv_from_full().map_err(|e| err("recv", e))?;
        let mut offset = 0;
        while offset < data.len() {
            let bytes = &data[offset..];
            let reply = NetlinkMessage::<RouteNetlinkMessage>::deserialize(bytes)
                .map_err(|e| err("parse", e))?;
            let len = reply.header.length as usize;
            match reply.payload {
                NetlinkPayload::Done(_) => return Ok(out),
                NetlinkPayload::Error(e) => {
                    return match e.code {
                        None => Ok(out),
                        Some(code) => Err(HostError::Netlink(
                            std::io::Error::from_raw_os_error(-code.get()).to_string(),
                        )),
                    };
                }
                NetlinkPayload::InnerMessage(m) => out.push(m),
                _ => {}
            }
            if len == 0 {
                break;
            }
            offset += (len + 3) & !3;
        }
        if !dump && out.is_empty() {
            continue;
        }
    }
}
