//! Fixtures for tests of code that consumes the census: a [`Socket`] as the
//! kernel would report it, without a kernel.
//!
//! Compiled for this crate's own tests and, with the `testing` feature, for
//! other crates' tests (they enable it through a dev-dependency); never part
//! of the default public API.

use std::net::SocketAddr;

use crate::{Family, Socket, TcpState};

/// An established IPv4 socket from `local` to `remote` on `cc`, with cookie
/// and inode 1, uid 0, no timer, empty queues, and no `tcp_info`, BBR info
/// or warnings: set what a test needs with struct update syntax.
pub fn socket(cc: Option<&str>, local: SocketAddr, remote: SocketAddr) -> Socket {
    Socket {
        family: Family::V4,
        state: TcpState::Established,
        local,
        remote,
        interface: 0,
        cookie: 1,
        uid: 0,
        inode: 1,
        timer: 0,
        timer_retrans: 0,
        expires_ms: 0,
        recv_queue: 0,
        send_queue: 0,
        cc: cc.map(str::to_string),
        tcp_info: None,
        bbr: None,
        warnings: Vec::new(),
    }
}
