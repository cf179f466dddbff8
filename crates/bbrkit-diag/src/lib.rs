//! What the host's TCP is doing now: a socket census through sock_diag netlink
//! (`inet_diag` with `INET_DIAG_INFO`, `INET_DIAG_CONG`, `INET_DIAG_BBRINFO`),
//! tolerant `tcp_info` / `tcp_bbr_info` parsing, the nstat counters of
//! `/proc/net/snmp` and `/proc/net/netstat`, and what `conns` and `metrics`
//! make of them ([`conns`]: the report and its JSON schema; [`metrics`]:
//! every metric family and the Prometheus text exposition).
//!
//! It is also the lowest crate the host and the lab share, so it holds the
//! one reader of each kernel interface they both use: the network
//! namespace's identity ([`netns`]), the rtnetlink client ([`rtnl`]; the
//! qdisc listing [`qdisc`], the route and link speed [`link`]) and a
//! socket's own `TCP_INFO` ([`sockopt`], through the same decoder as the
//! census).
//!
//! Its own functions never change anything on the host: they only read
//! (the rtnetlink client carries the changes host and lab build, never one
//! of its own). Must never depend on `bbrkit-host` (the dependency goes the
//! other way).
//!
//! # Census
//!
//! ```no_run
//! use bbrkit_diag::{census, Filter, TcpState, StateSet};
//!
//! // Every established TCP socket, IPv4 and IPv6, with tcp_info and BBR info.
//! let filter = Filter { states: StateSet::empty().with(TcpState::Established), ..Filter::default() };
//! for s in census(&filter)? {
//!     let cwnd = s.tcp_info.as_ref().and_then(|t| t.snd_cwnd);
//!     println!("{} {} -> {} cc={:?} cwnd={cwnd:?}", s.state, s.local, s.remote, s.cc);
//!     if let Some(bbr) = &s.bbr {
//!         println!("  BBRv{} bw={} B/s", bbr.version(), bbr.bw_bytes_per_second);
//!     }
//! }
//! # Ok::<(), bbrkit_diag::DiagError>(())
//! ```
//!
//! * [`census`] opens a `NETLINK_SOCK_DIAG` socket **in the calling thread's
//!   network namespace** and dumps IPv4 then IPv6 TCP sockets. To look into
//!   another namespace, call it from a thread that has `setns(2)`-ed there.
//! * Each [`Socket`] has its [`TcpState`] (`Display` gives the kernel name,
//!   e.g. `ESTABLISHED`), local/remote [`std::net::SocketAddr`], uid, inode,
//!   cookie, the algorithm name `cc` (`None` for TIME_WAIT and request
//!   sockets, which have no congestion control), the parsed [`TcpInfo`]
//!   (`None` for those mini-sockets) and [`BbrInfo`] (only for BBR sockets).
//! * Sockets need no privilege to be listed; all users see all sockets of the
//!   namespace.
//!
//! # Tolerance (as `ss` does it)
//!
//! * `tcp_info` of any length decodes: fields beyond the payload are `None`,
//!   bytes beyond the fields known here are ignored ([`TcpInfo::unknown_tail`]).
//! * `tcp_bbr_info` of 20 bytes is BBRv1; 40+ bytes carries `bbr_version` at
//!   byte 39; 52 bytes adds the v3 model ([`BbrV3Model`]). Fewer than 20 bytes
//!   leaves `bbr` at `None` and records a warning on the socket.
//! * Netlink framing that does not fit its buffer is an error
//!   ([`DiagError::Malformed`]), never a panic or a silent skip.
//!
//! [`probe_bbr_info`] tells the layout (v1 or v3) of this kernel's BBR without
//! a live BBR connection, from a throwaway unconnected socket.

#![warn(missing_docs)]

pub mod algorithms;
mod bbr_info;
mod census;
pub mod conns;
mod error;
pub mod initial_netns;
pub mod link;
pub mod metrics;
pub mod model;
pub mod netns;
pub mod nstat;
mod probe;
pub mod prom;
pub mod qdisc;
pub mod rtnl;
mod socket;
pub mod sockopt;
mod state;
pub mod summary;
mod tcp_info;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
pub mod wire;

pub use bbr_info::{BbrInfo, BbrV3Model};
pub use census::{Filter, census, census_each, dump_raw};
pub use error::{DiagError, error_chain};
pub use probe::probe_bbr_info;
pub use socket::{BpfStorage, Family, Socket};
pub use state::{StateSet, TcpState};
pub use tcp_info::{KNOWN_LEN as TCP_INFO_KNOWN_LEN, TcpInfo};
