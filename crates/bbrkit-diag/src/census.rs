//! Taking a census: one `NETLINK_SOCK_DIAG` socket, a dump per address family,
//! every answer decoded by `wire` and filtered by a [`Filter`].
//!
//! Owns the netlink conversation. The netlink socket is opened in the network
//! namespace of the calling *thread*, so the census describes that namespace.
//! Must never change anything: it only sends dump requests.

use netlink_sys::{Socket as NlSocket, SocketAddr as NlAddr, protocols::NETLINK_SOCK_DIAG};

use crate::wire::{self, AF_INET, AF_INET6, Progress};
use crate::{DiagError, Socket, StateSet};

/// Which sockets a census reports. `Filter::default()` is every TCP socket
/// (all states, IPv4 and IPv6) with details (`tcp_info`, algorithm, BBR info)
/// and no BPF storage.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Filter {
    /// States to report; applied by the kernel.
    pub states: StateSet,
    /// Include IPv4 sockets.
    pub ipv4: bool,
    /// Include IPv6 sockets (IPv4-mapped dual-stack sockets are reported here).
    pub ipv6: bool,
    /// Only sockets whose local *or* remote port is this; applied by the
    /// kernel (an `INET_DIAG_REQ_BYTECODE` program, as `ss` does it) and
    /// checked again in user space.
    pub port: Option<u16>,
    /// Only sockets whose congestion-control algorithm is this name
    /// (ASCII case-insensitive: `BBR` matches the kernel's `bbr`).
    pub cc: Option<String>,
    /// Ask for `INET_DIAG_INFO` and BBR info (the algorithm name is always asked for).
    pub details: bool,
    /// File descriptors of BPF `sk_storage` maps whose value of each socket
    /// the kernel should add ([`Socket::bpf_storages`]); the caller keeps
    /// them open for the census. Needs CAP_BPF or CAP_SYS_ADMIN: without,
    /// the kernel refuses the whole dump (`EPERM`).
    pub sk_storage_maps: Vec<i32>,
}

impl Default for Filter {
    fn default() -> Self {
        Filter {
            states: StateSet::ALL,
            ipv4: true,
            ipv6: true,
            port: None,
            cc: None,
            details: true,
            sk_storage_maps: Vec::new(),
        }
    }
}

impl Filter {
    /// Whether `s` passes the user-space part of the filter (port, algorithm).
    /// States, families and the port are also filtered by the kernel request.
    pub fn matches(&self, s: &Socket) -> bool {
        if let Some(p) = self.port
            && s.local.port() != p
            && s.remote.port() != p
        {
            return false;
        }
        match &self.cc {
            Some(cc) => s.cc.as_deref().is_some_and(|x| x.eq_ignore_ascii_case(cc)),
            None => true,
        }
    }
}

/// Every TCP socket of the calling thread's network namespace that passes
/// `filter`, IPv4 first, in kernel order.
///
/// An IPv6 dump refused with `ENOENT`/`EINVAL`/`EAFNOSUPPORT` (kernel without
/// IPv6) yields no IPv6 sockets rather than an error.
pub fn census(filter: &Filter) -> Result<Vec<Socket>, DiagError> {
    let mut out = Vec::new();
    census_each(filter, |s| out.push(s))?;
    Ok(out)
}

/// Like [`census`], but hands each matching socket to `visit` as it is
/// decoded instead of collecting them: for aggregations over very many
/// sockets, where holding every [`Socket`] (about 740 bytes each) would cost
/// more than the dump itself. Returns the number of sockets visited.
pub fn census_each(filter: &Filter, mut visit: impl FnMut(Socket)) -> Result<usize, DiagError> {
    let mut conn = Conn::open()?;
    let mut n = 0;
    let mut sink = |s: Socket| {
        if filter.matches(&s) {
            n += 1;
            visit(s);
        }
    };
    if filter.ipv4 {
        conn.dump(AF_INET, "IPv4", filter, &mut sink)?;
    }
    if filter.ipv6 {
        match conn.dump(AF_INET6, "IPv6", filter, &mut sink) {
            Err(DiagError::Kernel { ref source, .. })
                if matches!(
                    source.raw_os_error(),
                    Some(libc::ENOENT | libc::EINVAL | libc::EAFNOSUPPORT)
                ) => {}
            r => r?,
        }
    }
    Ok(n)
}

/// The raw datagrams of one dump, as the kernel sent them (for capturing test
/// fixtures and debugging; see `examples/capture.rs`).
pub fn dump_raw(family_v6: bool, filter: &Filter) -> Result<Vec<Vec<u8>>, DiagError> {
    let mut conn = Conn::open()?;
    let (af, name) = if family_v6 {
        (AF_INET6, "IPv6")
    } else {
        (AF_INET, "IPv4")
    };
    conn.send(af, filter)?;
    let mut frames = Vec::new();
    loop {
        let n = conn.recv()?;
        let frame = conn.buf[..n].to_vec();
        let progress = wire::parse_datagram(&frame, name, &mut |_| {})?;
        frames.push(frame);
        if progress == Progress::Done {
            return Ok(frames);
        }
    }
}

/// Receive buffer: larger than the 32 KiB the kernel puts in one dump datagram.
const RECV_BUF: usize = 64 * 1024;

struct Conn {
    sock: NlSocket,
    buf: Vec<u8>,
    seq: u32,
}

impl Conn {
    fn open() -> Result<Conn, DiagError> {
        let nl = |context| move |source| DiagError::Netlink { context, source };
        let sock = NlSocket::new(NETLINK_SOCK_DIAG).map_err(nl("open socket"))?;
        sock.connect(&NlAddr::new(0, 0))
            .map_err(nl("connect to the kernel"))?;
        Ok(Conn {
            sock,
            buf: vec![0; RECV_BUF],
            seq: 0,
        })
    }

    fn send(&mut self, family: u8, filter: &Filter) -> Result<(), DiagError> {
        self.seq += 1;
        let req = wire::dump_request(
            family,
            filter.states,
            filter.details,
            filter.port,
            &filter.sk_storage_maps,
            self.seq,
        );
        self.sock
            .send(&req, 0)
            .map_err(|source| DiagError::Netlink {
                context: "send dump request",
                source,
            })?;
        Ok(())
    }

    fn recv(&mut self) -> Result<usize, DiagError> {
        loop {
            let mut slice: &mut [u8] = &mut self.buf[..];
            match self.sock.recv(&mut slice, 0) {
                Ok(n) if n > RECV_BUF => {
                    return Err(DiagError::Malformed {
                        what: "datagram",
                        offset: 0,
                        detail: format!("{n} bytes exceed the {RECV_BUF}-byte receive buffer"),
                    });
                }
                Ok(n) => return Ok(n),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(source) => {
                    return Err(DiagError::Netlink {
                        context: "receive dump",
                        source,
                    });
                }
            }
        }
    }

    fn dump(
        &mut self,
        family: u8,
        name: &'static str,
        filter: &Filter,
        sink: &mut dyn FnMut(Socket),
    ) -> Result<(), DiagError> {
        self.send(family, filter)?;
        loop {
            let n = self.recv()?;
            if wire::parse_datagram(&self.buf[..n], name, sink)? == Progress::Done {
                return Ok(());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sock(cc: Option<&str>, local: u16, remote: u16) -> Socket {
        crate::testing::socket(
            cc,
            ([127, 0, 0, 1], local).into(),
            ([127, 0, 0, 1], remote).into(),
        )
    }

    #[test]
    fn user_space_filter_matches_port_either_end_and_cc_any_case() {
        let f = Filter {
            cc: Some("BBR".into()),
            port: Some(443),
            ..Filter::default()
        };
        assert!(f.matches(&sock(Some("bbr"), 443, 5000)));
        assert!(f.matches(&sock(Some("bbr"), 5000, 443)));
        assert!(!f.matches(&sock(Some("bbr"), 5000, 5001)), "port");
        assert!(!f.matches(&sock(Some("cubic"), 443, 5000)), "algorithm");
        assert!(
            !f.matches(&sock(None, 443, 5000)),
            "TIME_WAIT has no algorithm"
        );
        assert!(
            !f.matches(&sock(Some("bbr2"), 443, 5000)),
            "whole name only"
        );
        assert!(Filter::default().matches(&sock(None, 1, 2)));
    }
}
