//! One TCP socket as the census reports it.
//!
//! Owns the [`Socket`] record. Must never hold anything that was not read from
//! the kernel's answer (no derived statistics; see `summary`).

use std::net::SocketAddr;

use crate::{BbrInfo, TcpInfo, TcpState};

/// Address family of a socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Family {
    /// `AF_INET`.
    V4,
    /// `AF_INET6` (including IPv4-mapped addresses on dual-stack sockets).
    V6,
}

/// A socket's value in one BPF `sk_storage` map (`SK_DIAG_BPF_STORAGE`):
/// the bytes as the map's value type lays them out; their meaning is the
/// map owner's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BpfStorage {
    /// Kernel id of the map (`SK_DIAG_BPF_STORAGE_MAP_ID`).
    pub map_id: u32,
    /// The value (`SK_DIAG_BPF_STORAGE_MAP_VALUE`).
    pub value: Vec<u8>,
}

/// One TCP socket from a sock_diag dump (`struct inet_diag_msg` plus attributes).
#[derive(Debug, Clone, PartialEq)]
pub struct Socket {
    /// Address family of the socket.
    pub family: Family,
    /// TCP state.
    pub state: TcpState,
    /// Local address and port.
    pub local: SocketAddr,
    /// Remote address and port (unspecified address, port 0 for listeners).
    pub remote: SocketAddr,
    /// Bound interface index (`SO_BINDTODEVICE`), 0 when unbound.
    pub interface: u32,
    /// Socket cookie, unique while the socket lives.
    pub cookie: u64,
    /// Owner uid.
    pub uid: u32,
    /// Inode number of the socket file (0 for TIME_WAIT and request sockets).
    pub inode: u32,
    /// Active timer (`idiag_timer`: 0 none, 1 retransmit, 2 keepalive, 3 TIME_WAIT, 4 zero-window probe).
    pub timer: u8,
    /// `idiag_retrans`: retransmit timer fires (or SYN-ACK retries for request sockets).
    pub timer_retrans: u8,
    /// Milliseconds until the active timer fires.
    pub expires_ms: u32,
    /// Bytes in the receive queue (for listeners: the accept queue length).
    pub recv_queue: u32,
    /// Bytes in the send queue (for listeners: the backlog).
    pub send_queue: u32,
    /// Congestion-control algorithm name from `INET_DIAG_CONG` (`bbr`, `cubic`, ...).
    /// `None` for sockets that have none (TIME_WAIT, request sockets).
    pub cc: Option<String>,
    /// `INET_DIAG_INFO`, when the kernel sent it (full sockets only).
    pub tcp_info: Option<TcpInfo>,
    /// `INET_DIAG_BBRINFO`, when the socket runs BBR and the payload was usable.
    pub bbr: Option<BbrInfo>,
    /// `INET_DIAG_SK_BPF_STORAGES`: the socket's value in each BPF
    /// `sk_storage` map the request asked for ([`crate::Filter::sk_storage_maps`])
    /// and the socket has, in the kernel's order. Empty when none was asked
    /// for or the socket has none.
    pub bpf_storages: Vec<BpfStorage>,
    /// `INET_DIAG_CGROUP_ID`: the cgroup v2 id of the socket (the inode
    /// number of its cgroup directory), `None` for TIME_WAIT and request
    /// sockets (the kernel sends it for full sockets only).
    pub cgroup_id: Option<u64>,
    /// Problems met while decoding this socket's attributes that did not stop
    /// the census (e.g. a truncated BBR attribute, which then leaves `bbr` at `None`).
    pub warnings: Vec<String>,
}
