//! The sock_diag wire format: building `SOCK_DIAG_BY_FAMILY` dump requests and
//! decoding the kernel's answers (`nlmsghdr`, `inet_diag_msg`, `rtattr`).
//!
//! Owns every byte offset of those structures (uapi `linux/netlink.h`,
//! `linux/inet_diag.h`, `linux/sock_diag.h`). Decoding is bounds-checked and
//! never panics: framing that does not fit (a header or attribute longer than
//! the bytes left) is a [`DiagError::Malformed`]; a truncated fixed structure is
//! a [`DiagError::Truncated`]; attributes of unexpected length are decoded as
//! far as they go (see `tcp_info` and `bbr_info`). Must never do I/O.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV6};

use crate::{BbrInfo, BpfStorage, DiagError, Family, Socket, StateSet, TcpInfo, TcpState};

/// `SOCK_DIAG_BY_FAMILY` netlink message type.
pub const SOCK_DIAG_BY_FAMILY: u16 = 20;
/// `NLMSG_NOOP`.
pub const NLMSG_NOOP: u16 = 1;
/// `NLMSG_ERROR`.
pub const NLMSG_ERROR: u16 = 2;
/// `NLMSG_DONE`.
pub const NLMSG_DONE: u16 = 3;
/// `NLM_F_REQUEST`.
pub const NLM_F_REQUEST: u16 = 0x1;
/// `NLM_F_DUMP` (`NLM_F_ROOT | NLM_F_MATCH`).
pub const NLM_F_DUMP: u16 = 0x300;
/// `AF_INET`.
pub const AF_INET: u8 = 2;
/// `AF_INET6`.
pub const AF_INET6: u8 = 10;
/// `IPPROTO_TCP`.
pub const IPPROTO_TCP: u8 = 6;

/// `INET_DIAG_INFO`: `struct tcp_info`.
pub const INET_DIAG_INFO: u16 = 2;
/// `INET_DIAG_VEGASINFO`: its request bit also asks for BBR and DCTCP info.
pub const INET_DIAG_VEGASINFO: u16 = 3;
/// `INET_DIAG_CONG`: NUL-terminated algorithm name.
pub const INET_DIAG_CONG: u16 = 4;
/// `INET_DIAG_BBRINFO`: `struct tcp_bbr_info`.
pub const INET_DIAG_BBRINFO: u16 = 16;
/// `INET_DIAG_SK_BPF_STORAGES`: nested `SK_DIAG_BPF_STORAGE` entries.
pub const INET_DIAG_SK_BPF_STORAGES: u16 = 20;
/// `INET_DIAG_CGROUP_ID`: the socket's cgroup v2 id (`u64`), sent for every
/// full socket (no request bit; `CONFIG_SOCK_CGROUP_DATA`, Linux 5.7+).
pub const INET_DIAG_CGROUP_ID: u16 = 21;
/// `INET_DIAG_REQ_SK_BPF_STORAGES`: the request's nested list of map fds.
pub const INET_DIAG_REQ_SK_BPF_STORAGES: u16 = 2;
/// `SK_DIAG_BPF_STORAGE_REQ_MAP_FD`: one `u32` map fd in that list.
pub const SK_DIAG_BPF_STORAGE_REQ_MAP_FD: u16 = 1;
/// `SK_DIAG_BPF_STORAGE`: one map's entry in the answer (nested).
pub const SK_DIAG_BPF_STORAGE: u16 = 1;
/// `SK_DIAG_BPF_STORAGE_MAP_ID`: `u32` map id inside an entry.
pub const SK_DIAG_BPF_STORAGE_MAP_ID: u16 = 2;
/// `SK_DIAG_BPF_STORAGE_MAP_VALUE`: the value inside an entry.
pub const SK_DIAG_BPF_STORAGE_MAP_VALUE: u16 = 3;
/// `NLA_F_NESTED`.
pub const NLA_F_NESTED: u16 = 1 << 15;

/// Size of `struct nlmsghdr`.
pub const NLMSG_HDR_LEN: usize = 16;
/// Size of `struct inet_diag_req_v2`.
pub const REQ_V2_LEN: usize = 56;
/// Size of `struct inet_diag_msg`.
pub const INET_DIAG_MSG_LEN: usize = 72;

fn align4(n: usize) -> usize {
    (n + 3) & !3
}

fn u16_ne(b: &[u8], off: usize) -> u16 {
    u16::from_ne_bytes([b[off], b[off + 1]])
}

fn u32_ne(b: &[u8], off: usize) -> u32 {
    u32::from_ne_bytes([b[off], b[off + 1], b[off + 2], b[off + 3]])
}

/// `INET_DIAG_REQ_BYTECODE`: a filter program appended to the request.
pub const INET_DIAG_REQ_BYTECODE: u16 = 1;
/// Bytecode op: always take the `no` branch.
pub const INET_DIAG_BC_JMP: u8 = 1;
/// Bytecode op: source (local) port equals the port in the next op's `no`.
pub const INET_DIAG_BC_S_EQ: u8 = 11;
/// Bytecode op: destination (remote) port equals the port in the next op's `no`.
pub const INET_DIAG_BC_D_EQ: u8 = 12;

/// One `struct inet_diag_bc_op` (`code`, `yes`, `no`).
fn bc_op(b: &mut Vec<u8>, code: u8, yes: u8, no: u16) {
    b.push(code);
    b.push(yes);
    b.extend_from_slice(&no.to_ne_bytes());
}

/// The kernel filter program "local port == `port` OR remote port == `port`",
/// laid out as `ss` compiles `sport = :P or dport = :P` (the kernel's auditor
/// only accepts jump targets on the `yes` chain, hence the JMP in the middle):
///
/// ```text
///  0  S_EQ yes=8 no=12    match: go to the JMP, which jumps to the end (accept)
///  4  (port)              mismatch: skip the JMP, try the remote port
///  8  JMP  yes=4 no=12
/// 12  D_EQ yes=8 no=12    match: end (accept); mismatch: end + 4 (reject)
/// 16  (port)
/// ```
pub fn port_bytecode(port: u16) -> Vec<u8> {
    let mut b = Vec::with_capacity(20);
    bc_op(&mut b, INET_DIAG_BC_S_EQ, 8, 12);
    bc_op(&mut b, 0, 0, port);
    bc_op(&mut b, INET_DIAG_BC_JMP, 4, 12);
    bc_op(&mut b, INET_DIAG_BC_D_EQ, 8, 12);
    bc_op(&mut b, 0, 0, port);
    b
}

/// The request attribute `INET_DIAG_REQ_SK_BPF_STORAGES` asking for the
/// socket's value in each BPF `sk_storage` map of `map_fds` (as
/// `ss --bpf-maps` does; the kernel's `bpf_sk_storage_diag_alloc` needs
/// CAP_BPF or CAP_SYS_ADMIN and refuses fds of other map types).
pub fn sk_storages_attr(map_fds: &[i32]) -> Vec<u8> {
    let len = 4 + 8 * map_fds.len();
    let mut b = Vec::with_capacity(len);
    b.extend_from_slice(&(len as u16).to_ne_bytes());
    b.extend_from_slice(&(INET_DIAG_REQ_SK_BPF_STORAGES | NLA_F_NESTED).to_ne_bytes());
    for fd in map_fds {
        b.extend_from_slice(&8u16.to_ne_bytes());
        b.extend_from_slice(&SK_DIAG_BPF_STORAGE_REQ_MAP_FD.to_ne_bytes());
        b.extend_from_slice(&(*fd as u32).to_ne_bytes());
    }
    b
}

/// A `SOCK_DIAG_BY_FAMILY` dump request for TCP sockets of `family` in
/// `states`. With `details`, it asks for `INET_DIAG_INFO`, `INET_DIAG_CONG`
/// and (through the VEGASINFO bit, as `ss -i` does) `INET_DIAG_BBRINFO`.
/// With `port`, the kernel itself keeps only sockets with that local or
/// remote port ([`port_bytecode`]). With `sk_storage_maps` (BPF map fds),
/// each socket's value in those `sk_storage` maps ([`sk_storages_attr`]).
pub fn dump_request(
    family: u8,
    states: StateSet,
    details: bool,
    port: Option<u16>,
    sk_storage_maps: &[i32],
    seq: u32,
) -> Vec<u8> {
    let bytecode = port.map(port_bytecode);
    let storages = (!sk_storage_maps.is_empty()).then(|| sk_storages_attr(sk_storage_maps));
    let attr_len =
        bytecode.as_ref().map_or(0, |bc| 4 + bc.len()) + storages.as_ref().map_or(0, Vec::len);
    let len = NLMSG_HDR_LEN + REQ_V2_LEN + attr_len;
    let mut b = Vec::with_capacity(len);
    b.extend_from_slice(&(len as u32).to_ne_bytes());
    b.extend_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
    b.extend_from_slice(&(NLM_F_REQUEST | NLM_F_DUMP).to_ne_bytes());
    b.extend_from_slice(&seq.to_ne_bytes());
    b.extend_from_slice(&0u32.to_ne_bytes()); // pid: the kernel fills ours in
    let ext: u8 = if details {
        (1 << (INET_DIAG_INFO - 1)) | (1 << (INET_DIAG_VEGASINFO - 1)) | (1 << (INET_DIAG_CONG - 1))
    } else {
        1 << (INET_DIAG_CONG - 1)
    };
    b.extend_from_slice(&[family, IPPROTO_TCP, ext, 0]);
    b.extend_from_slice(&states.0.to_ne_bytes());
    b.resize(NLMSG_HDR_LEN + REQ_V2_LEN, 0); // inet_diag_sockid: all wildcards
    if let Some(bc) = bytecode {
        b.extend_from_slice(&((4 + bc.len()) as u16).to_ne_bytes());
        b.extend_from_slice(&INET_DIAG_REQ_BYTECODE.to_ne_bytes());
        b.extend_from_slice(&bc);
    }
    if let Some(st) = storages {
        b.extend_from_slice(&st);
    }
    debug_assert_eq!(b.len(), len);
    b
}

/// What the rest of a dump looks like after one datagram was decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// More datagrams follow.
    More,
    /// `NLMSG_DONE` was seen: the dump is complete.
    Done,
}

/// Decodes one datagram of a dump answer, handing each socket to `sink`.
/// `family` names the dump in error messages (`IPv4`/`IPv6`).
pub fn parse_datagram(
    buf: &[u8],
    family: &'static str,
    sink: &mut dyn FnMut(Socket),
) -> Result<Progress, DiagError> {
    let mut off = 0;
    while off < buf.len() {
        let rest = &buf[off..];
        if rest.len() < NLMSG_HDR_LEN {
            return Err(malformed(
                "nlmsghdr",
                off,
                format!("{} bytes left, header needs 16", rest.len()),
            ));
        }
        let len = u32_ne(rest, 0) as usize;
        let kind = u16_ne(rest, 4);
        if len < NLMSG_HDR_LEN || len > rest.len() {
            return Err(malformed(
                "nlmsghdr",
                off,
                format!("length {len} outside 16..={} bytes left", rest.len()),
            ));
        }
        let payload = &rest[NLMSG_HDR_LEN..len];
        match kind {
            NLMSG_DONE => {
                if let Some(code) = payload.get(..4).map(|_| u32_ne(payload, 0) as i32)
                    && code < 0
                {
                    return Err(kernel(family, code));
                }
                return Ok(Progress::Done);
            }
            NLMSG_ERROR => {
                let code = payload
                    .get(..4)
                    .map(|_| u32_ne(payload, 0) as i32)
                    .unwrap_or(-libc::EBADMSG);
                if code < 0 {
                    return Err(kernel(family, code));
                }
            }
            SOCK_DIAG_BY_FAMILY => {
                let sock =
                    parse_inet_diag_msg(payload).map_err(|e| shift(e, off + NLMSG_HDR_LEN))?;
                sink(sock);
            }
            _ => {} // NLMSG_NOOP, NLMSG_OVERRUN and future types carry no socket
        }
        off += align4(len);
    }
    Ok(Progress::More)
}

fn kernel(family: &'static str, code: i32) -> DiagError {
    DiagError::Kernel {
        family,
        source: std::io::Error::from_raw_os_error(code.saturating_neg()),
    }
}

fn malformed(what: &'static str, offset: usize, detail: String) -> DiagError {
    DiagError::Malformed {
        what,
        offset,
        detail,
    }
}

/// Makes a `Malformed` offset relative to the whole datagram.
fn shift(e: DiagError, by: usize) -> DiagError {
    match e {
        DiagError::Malformed {
            what,
            offset,
            detail,
        } => malformed(what, offset + by, detail),
        e => e,
    }
}

/// Decodes one `struct inet_diag_msg` and its attributes (the payload of a
/// `SOCK_DIAG_BY_FAMILY` message).
pub fn parse_inet_diag_msg(p: &[u8]) -> Result<Socket, DiagError> {
    if p.len() < INET_DIAG_MSG_LEN {
        return Err(DiagError::Truncated {
            what: "inet_diag_msg",
            need: INET_DIAG_MSG_LEN,
            got: p.len(),
        });
    }
    let family = match p[0] {
        AF_INET => Family::V4,
        AF_INET6 => Family::V6,
        other => {
            return Err(malformed(
                "inet_diag_msg",
                0,
                format!("unknown address family {other}"),
            ));
        }
    };
    let interface = u32_ne(p, 40);
    let mut sock = Socket {
        family,
        state: TcpState::from_number(p[1]),
        local: socket_addr(p, family, interface, 8, 4),
        remote: socket_addr(p, family, interface, 24, 6),
        interface,
        cookie: (u64::from(u32_ne(p, 48)) << 32) | u64::from(u32_ne(p, 44)),
        timer: p[2],
        timer_retrans: p[3],
        expires_ms: u32_ne(p, 52),
        recv_queue: u32_ne(p, 56),
        send_queue: u32_ne(p, 60),
        uid: u32_ne(p, 64),
        inode: u32_ne(p, 68),
        cc: None,
        tcp_info: None,
        bbr: None,
        bpf_storages: Vec::new(),
        cgroup_id: None,
        warnings: Vec::new(),
    };
    let mut off = INET_DIAG_MSG_LEN;
    while off < p.len() {
        let (kind, data) = rtattr(p, off)?;
        apply_attribute(&mut sock, kind, data);
        off += align4(4 + data.len()); // header and data, padded to 4
    }
    Ok(sock)
}

/// The address at `off` with the big-endian port at `port_off` of an
/// `inet_diag_msg` (`p` holds at least [`INET_DIAG_MSG_LEN`] bytes). A
/// link-local IPv6 address gets `interface` as its scope.
fn socket_addr(
    p: &[u8],
    family: Family,
    interface: u32,
    off: usize,
    port_off: usize,
) -> SocketAddr {
    let port = u16::from_be_bytes([p[port_off], p[port_off + 1]]);
    match family {
        Family::V4 => SocketAddr::new(
            IpAddr::V4(Ipv4Addr::new(p[off], p[off + 1], p[off + 2], p[off + 3])),
            port,
        ),
        Family::V6 => {
            let mut o = [0u8; 16];
            o.copy_from_slice(&p[off..off + 16]);
            let ip = Ipv6Addr::from(o);
            let scope = if ip.is_unicast_link_local() {
                interface
            } else {
                0
            };
            SocketAddr::V6(SocketAddrV6::new(ip, port, 0, scope))
        }
    }
}

/// The `rtattr` at `off` of `p`: its type (without `NLA_F_NESTED` /
/// `NLA_F_NET_BYTEORDER`) and its data. `Malformed` when its header or its
/// length does not fit the bytes left.
fn rtattr(p: &[u8], off: usize) -> Result<(u16, &[u8]), DiagError> {
    let rest = &p[off..];
    if rest.len() < 4 {
        return Err(malformed(
            "rtattr",
            off,
            format!("{} bytes left, header needs 4", rest.len()),
        ));
    }
    let len = usize::from(u16_ne(rest, 0));
    let kind = u16_ne(rest, 2) & 0x3fff; // strip NLA_F_NESTED / NLA_F_NET_BYTEORDER
    if len < 4 || len > rest.len() {
        return Err(malformed(
            "rtattr",
            off,
            format!("length {len} outside 4..={} bytes left", rest.len()),
        ));
    }
    Ok((kind, &rest[4..len]))
}

/// Stores the attribute of type `kind` in `sock`; unknown types are skipped.
fn apply_attribute(sock: &mut Socket, kind: u16, data: &[u8]) {
    match kind {
        INET_DIAG_INFO => sock.tcp_info = Some(TcpInfo::parse(data)),
        INET_DIAG_CONG => {
            let name = data.split(|&c| c == 0).next().unwrap_or(&[]);
            sock.cc = Some(String::from_utf8_lossy(name).into_owned());
        }
        INET_DIAG_BBRINFO => match BbrInfo::parse(data) {
            Ok(b) => sock.bbr = Some(b),
            Err(e) => sock.warnings.push(e.to_string()),
        },
        INET_DIAG_SK_BPF_STORAGES => match parse_sk_storages(data) {
            Ok(v) => sock.bpf_storages = v,
            Err(e) => sock.warnings.push(e.to_string()),
        },
        INET_DIAG_CGROUP_ID if data.len() >= 8 => {
            sock.cgroup_id = Some(u64::from_ne_bytes(data[..8].try_into().unwrap_or([0; 8])));
        }
        _ => {}
    }
}

/// The entries of an `INET_DIAG_SK_BPF_STORAGES` attribute: each a nested
/// `SK_DIAG_BPF_STORAGE` holding `SK_DIAG_BPF_STORAGE_MAP_ID` and
/// `SK_DIAG_BPF_STORAGE_MAP_VALUE` (`bpf_sk_storage_diag_put`; the value
/// may follow a `SK_DIAG_BPF_STORAGE_PAD` for 64-bit alignment). An entry
/// without a map id or a value is skipped.
pub fn parse_sk_storages(data: &[u8]) -> Result<Vec<BpfStorage>, DiagError> {
    let mut out = Vec::new();
    let mut off = 0;
    while off < data.len() {
        let (kind, entry) = rtattr(data, off)?;
        off += align4(4 + entry.len());
        if kind != SK_DIAG_BPF_STORAGE {
            continue;
        }
        let (mut map_id, mut value) = (None, None);
        let mut i = 0;
        while i < entry.len() {
            let (k, d) = rtattr(entry, i)?;
            i += align4(4 + d.len());
            match k {
                SK_DIAG_BPF_STORAGE_MAP_ID if d.len() >= 4 => map_id = Some(u32_ne(d, 0)),
                SK_DIAG_BPF_STORAGE_MAP_VALUE => value = Some(d.to_vec()),
                _ => {}
            }
        }
        if let (Some(map_id), Some(value)) = (map_id, value) {
            out.push(BpfStorage { map_id, value });
        }
    }
    Ok(out)
}
