//! The one rtnetlink client (netlink-sys + netlink-packet-route), synchronous:
//! a request goes out and every reply is read until the kernel's `DONE` (a
//! dump) or its acknowledgement (a change).
//!
//! Owns the conversation only — sequence numbers, framing, the kernel's
//! error code turned into an OS error — never what is asked: the host's
//! qdisc reads and re-creations, its route dump and the lab's links,
//! addresses, neighbours and qdiscs build their own messages and call
//! [`Rtnl::dump`], [`Rtnl::get`] or [`Rtnl::ack`]. The socket talks to the network
//! namespace of the thread that opened it. This crate's own use is read-only
//! (`qdisc::list`); it never changes anything by itself.

use std::io;

use netlink_packet_core::{
    NLM_F_ACK, NLM_F_DUMP, NLM_F_REQUEST, NetlinkHeader, NetlinkMessage, NetlinkPayload,
};
use netlink_packet_route::RouteNetlinkMessage;
use netlink_sys::{Socket, SocketAddr, protocols::NETLINK_ROUTE};

/// An rtnetlink request that failed: what was asked, and the OS error or the
/// kernel's refusal (its negative errno).
#[derive(Debug, thiserror::Error)]
#[error("{what}")]
pub struct RtnlError {
    /// What was being done (`open socket`, `dump qdiscs`, `add address 10.0.0.1/24`).
    pub what: String,
    /// The OS error, or the errno the kernel answered.
    #[source]
    pub source: io::Error,
}

fn fail(what: &str, source: io::Error) -> RtnlError {
    RtnlError {
        what: what.to_string(),
        source,
    }
}

/// An rtnetlink socket in the calling thread's network namespace.
pub struct Rtnl {
    sock: Socket,
    seq: u32,
}

impl Rtnl {
    /// Opens a socket in the calling thread's network namespace.
    pub fn open() -> Result<Rtnl, RtnlError> {
        let mut sock = Socket::new(NETLINK_ROUTE).map_err(|e| fail("open socket", e))?;
        sock.bind_auto().map_err(|e| fail("bind", e))?;
        sock.connect(&SocketAddr::new(0, 0))
            .map_err(|e| fail("connect", e))?;
        Ok(Rtnl { sock, seq: 0 })
    }

    /// Sends `msg` with `NLM_F_ACK` and `flags` (`NLM_F_CREATE`, ...) and
    /// waits for the kernel's answer: `Ok` on success, its errno otherwise.
    pub fn ack(
        &mut self,
        what: &str,
        msg: RouteNetlinkMessage,
        flags: u16,
    ) -> Result<(), RtnlError> {
        let seq = self.send(what, msg, NLM_F_ACK | flags)?;
        self.replies(what, seq, &mut |_| {})
    }

    /// Sends `msg` as a single request (`RTM_GET*` of one object, like `ip
    /// route get`) and returns the objects of the answer.
    pub fn get(
        &mut self,
        what: &str,
        msg: RouteNetlinkMessage,
    ) -> Result<Vec<RouteNetlinkMessage>, RtnlError> {
        self.collect(what, msg, NLM_F_ACK)
    }

    /// Sends `msg` as a dump request and returns every message of the answer.
    pub fn dump(
        &mut self,
        what: &str,
        msg: RouteNetlinkMessage,
    ) -> Result<Vec<RouteNetlinkMessage>, RtnlError> {
        self.collect(what, msg, NLM_F_DUMP)
    }

    fn collect(
        &mut self,
        what: &str,
        msg: RouteNetlinkMessage,
        flags: u16,
    ) -> Result<Vec<RouteNetlinkMessage>, RtnlError> {
        let seq = self.send(what, msg, flags)?;
        let mut out = Vec::new();
        self.replies(what, seq, &mut |m| out.push(m))?;
        Ok(out)
    }

    fn send(&mut self, what: &str, msg: RouteNetlinkMessage, flags: u16) -> Result<u32, RtnlError> {
        self.seq = self.seq.wrapping_add(1);
        let mut header = NetlinkHeader::default();
        header.flags = NLM_F_REQUEST | flags;
        header.sequence_number = self.seq;
        let mut packet = NetlinkMessage::new(header, NetlinkPayload::InnerMessage(msg));
        packet.finalize();
        let mut buf = vec![0u8; packet.buffer_len()];
        packet.serialize(&mut buf);
        self.sock.send(&buf, 0).map_err(|e| fail(what, e))?;
        Ok(self.seq)
    }

    /// Reads the answer to request `seq`, handing its messages to `each`,
    /// until `DONE` or the acknowledgement (an error message with code 0).
    /// Messages of other sequence numbers (a late answer) are skipped.
    fn replies(
        &mut self,
        what: &str,
        seq: u32,
        each: &mut dyn FnMut(RouteNetlinkMessage),
    ) -> Result<(), RtnlError> {
        loop {
            let (data, _) = self.sock.recv_from_full().map_err(|e| fail(what, e))?;
            let mut offset = 0;
            while offset < data.len() {
                let reply = NetlinkMessage::<RouteNetlinkMessage>::deserialize(&data[offset..])
                    .map_err(|e| fail(what, io::Error::other(e.to_string())))?;
                let len = reply.header.length as usize;
                if reply.header.sequence_number == seq {
                    match reply.payload {
                        NetlinkPayload::Done(_) => return Ok(()),
                        NetlinkPayload::Error(e) => {
                            return match e.code {
                                None => Ok(()),
                                Some(_) => Err(fail(what, e.to_io())),
                            };
                        }
                        NetlinkPayload::InnerMessage(m) => each(m),
                        _ => {}
                    }
                }
                if len == 0 {
                    break;
                }
                // NLMSG_ALIGN: the next message starts on a 4-byte boundary.
                offset += (len + 3) & !3;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use netlink_packet_route::link::LinkMessage;

    /// A dump in this (unprivileged, any) namespace lists `lo`, index 1.
    #[test]
    fn dumps_the_links_of_this_namespace() {
        let links = Rtnl::open()
            .unwrap()
            .dump(
                "dump links",
                RouteNetlinkMessage::GetLink(LinkMessage::default()),
            )
            .unwrap();
        assert!(
            links
                .iter()
                .any(|m| matches!(m, RouteNetlinkMessage::NewLink(l) if l.header.index == 1)),
            "{links:?}"
        );
    }

    /// The kernel's refusal comes back as its errno, with what was asked.
    #[test]
    fn a_refused_request_names_what_and_the_errno() {
        let mut m = LinkMessage::default();
        m.header.index = 999_999; // no such link
        let e = Rtnl::open()
            .unwrap()
            .ack("set link 999999", RouteNetlinkMessage::SetLink(m), 0)
            .unwrap_err();
        assert_eq!(e.what, "set link 999999");
        assert!(
            matches!(e.source.raw_os_error(), Some(libc::ENODEV | libc::EPERM)),
            "{e:?}"
        );
    }
}
