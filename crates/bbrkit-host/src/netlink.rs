//! The host's rtnetlink requests, through the one client
//! ([`bbrkit_diag::rtnl::Rtnl`]): one request, all replies until DONE or the
//! ACK. Used by `qdisc` and `routes`.

use bbrkit_diag::rtnl::{Rtnl, RtnlError};
use netlink_packet_route::RouteNetlinkMessage;

use crate::HostError;

/// An rtnetlink failure as the host reports it (`netlink: <what>: <cause>`).
pub(crate) fn host_error(e: RtnlError) -> HostError {
    HostError::netlink(None, e)
}

/// Sends one request. `dump` asks for every object (NLM_F_DUMP); otherwise
/// NLM_F_ACK with `extra_flags`, and the kernel's error code (negative
/// errno) becomes an `Err` with its text.
pub fn request(
    msg: RouteNetlinkMessage,
    extra_flags: u16,
    dump: bool,
) -> Result<Vec<RouteNetlinkMessage>, HostError> {
    let mut rtnl = Rtnl::open().map_err(host_error)?;
    if dump {
        rtnl.dump("dump", msg).map_err(host_error)
    } else {
        rtnl.ack("request", msg, extra_flags)
            .map(|()| Vec::new())
            .map_err(host_error)
    }
}
