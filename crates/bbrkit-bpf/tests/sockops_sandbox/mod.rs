//! Test harness of the sock_ops policy (shared by `tests/sockops_root.rs`
//! and `examples/policy_cost.rs` through `#[path]`): a throwaway network and
//! mount namespace on a dedicated thread (loopback up, test IPv6 addresses
//! on it, a private bpffs at /sys/fs/bpf), a throwaway child cgroup under
//! the cgroup2 mount (never the root cgroup), and `policy_peer` processes
//! born in that cgroup so the policy governs their sockets.
//!
//! Nothing outlives a test: the namespaces die with the thread and its
//! children, the bpffs with the mount namespace, and the cgroup is removed
//! on drop (after its processes exited; a cgroup with an attached program
//! can be removed, which detaches it).
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::net::{IpAddr, SocketAddr};
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use bbrkit_policy::Direction;

#[path = "../child_cgroup/mod.rs"]
mod child_cgroup;
#[path = "../../../bbrkit-diag/tests/netns/mod.rs"]
mod netns;

/// IPv6 addresses put on `lo` of each sandbox (so tests have IPv6 clients
/// and servers in different prefixes).
pub const V6_ADDRS: [&str; 4] = [
    "2001:db8:1::1",
    "2001:db8:1::5",
    "2001:db8:2::5",
    "2001:db8:3::5",
];

/// A sandbox: its cgroup (the test thread itself stays outside it).
pub struct Sandbox {
    /// The throwaway child cgroup.
    pub cgroup: PathBuf,
}

/// Runs `f` in a fresh sandbox on its own thread and returns its result.
pub fn in_sandbox<T: Send + 'static>(f: impl FnOnce(&Sandbox) -> T + Send + 'static) -> T {
    std::thread::spawn(move || {
        netns::enter_netns_with_private_bpffs();
        for a in V6_ADDRS {
            add_v6(a.parse().unwrap());
        }
        let cg = child_cgroup::ChildCgroup::new("policy");
        f(&Sandbox {
            cgroup: cg.0.clone(),
        })
    })
    .join()
    .unwrap_or_else(|e| std::panic::resume_unwind(e))
}

/// Adds `addr/128` to `lo` (ifindex 1 in a new namespace).
fn add_v6(addr: std::net::Ipv6Addr) {
    // SAFETY: SIOCSIFADDR on an AF_INET6 socket takes an in6_ifreq, which
    // is fully initialised here.
    unsafe {
        let fd = libc::socket(libc::AF_INET6, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        assert!(fd >= 0);
        let req = libc::in6_ifreq {
            ifr6_addr: libc::in6_addr {
                s6_addr: addr.octets(),
            },
            ifr6_prefixlen: 128,
            ifr6_ifindex: 1,
        };
        let rc = libc::ioctl(fd, libc::SIOCSIFADDR, &req);
        assert_eq!(rc, 0, "add {addr}: {}", std::io::Error::last_os_error());
        libc::close(fd);
    }
}

/// The path of one of this crate's examples (built by `cargo test`).
pub fn example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().unwrap();
    let dir = if dir.ends_with("deps") {
        dir.parent().unwrap()
    } else {
        dir
    };
    let p = dir.join("examples").join(name);
    assert!(
        p.exists(),
        "{} missing: run through cargo (it builds the examples)",
        p.display()
    );
    p
}

/// Spawns `policy_peer ARGS` as a member of `cgroup` (it moves itself there
/// before exec, so every socket it creates is governed).
pub fn spawn_in(cgroup: &Path, args: &[String]) -> Child {
    let procs = std::fs::OpenOptions::new()
        .write(true)
        .open(cgroup.join("cgroup.procs"))
        .expect("open cgroup.procs");
    let fd = procs.as_raw_fd();
    let mut cmd = Command::new(example("policy_peer"));
    cmd.args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    // SAFETY: runs in the child between fork and exec; write(2) is
    // async-signal-safe and `fd` stays open in the parent until spawn returns.
    unsafe {
        cmd.pre_exec(move || {
            if libc::write(fd, b"0".as_ptr().cast(), 1) != 1 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let child = cmd.spawn().expect("spawn policy_peer");
    drop(procs);
    child
}

/// One connection as the peer saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conn {
    /// Who opened it.
    pub side: Direction,
    /// `SO_COOKIE`.
    pub cookie: u64,
    /// The peer's end.
    pub local: SocketAddr,
    /// The other end.
    pub remote: SocketAddr,
    /// `TCP_CONGESTION` after establishment.
    pub cc: String,
}

fn parse_conn(line: &str) -> Option<Conn> {
    let f: Vec<&str> = line.split_whitespace().collect();
    let [_, side, cookie, local, remote, cc] = f.as_slice() else {
        return None;
    };
    Some(Conn {
        side: if *side == "active" {
            Direction::Active
        } else {
            Direction::Passive
        },
        cookie: cookie.parse().ok()?,
        local: local.parse().ok()?,
        remote: remote.parse().ok()?,
        cc: cc.to_string(),
    })
}

/// A running `policy_peer peer` in the sandbox's cgroup.
pub struct Peer {
    child: Child,
    stdin: Option<ChildStdin>,
    out: BufReader<ChildStdout>,
}

impl Peer {
    /// Starts it and waits until its listeners are up.
    pub fn start(cgroup: &Path, args: &[String]) -> Peer {
        let mut child = spawn_in(cgroup, &[&["peer".to_string()], args].concat());
        let stdin = child.stdin.take();
        let out = BufReader::new(child.stdout.take().unwrap());
        let mut p = Peer { child, stdin, out };
        p.expect("ready");
        p
    }

    fn expect(&mut self, want: &str) -> Vec<String> {
        let mut lines = Vec::new();
        loop {
            let mut line = String::new();
            assert!(
                self.out.read_line(&mut line).unwrap() > 0,
                "policy_peer exited before '{want}' (after {lines:?})"
            );
            if line.trim() == want {
                return lines;
            }
            lines.push(line.trim().to_string());
        }
    }

    /// Waits for every connection to be made and returns them.
    pub fn connections(&mut self) -> Vec<Conn> {
        self.expect("done")
            .iter()
            .map(|l| parse_conn(l).unwrap_or_else(|| panic!("bad line {l:?}")))
            .collect()
    }

    /// Closes every socket and waits for the process to exit.
    pub fn close(mut self) {
        let mut stdin = self.stdin.take().unwrap();
        let _ = stdin.write_all(b"close\n");
        self.expect("closed");
        drop(stdin);
        assert!(self.child.wait().unwrap().success());
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `--flag value` pairs as arguments.
pub fn args(pairs: &[(&str, String)]) -> Vec<String> {
    pairs
        .iter()
        .flat_map(|(f, v)| [f.to_string(), v.clone()])
        .collect()
}

/// The namespace's default algorithm (what an unmatched connection keeps).
pub fn default_cc() -> String {
    std::fs::read_to_string("/proc/sys/net/ipv4/tcp_congestion_control")
        .unwrap()
        .trim()
        .to_string()
}

/// `bbr3`, registered for the caller's lifetime when no one has it
/// registered (`None`: it already is, and that is used).
pub fn ensure_bbr3() -> Option<bbrkit_bpf::Registration> {
    if bbrkit_diag::algorithms::is_available("bbr3").unwrap() {
        return None;
    }
    Some(bbrkit_bpf::bbr3::register(Some(&["bbr3"])).expect("register bbr3"))
}

/// A TCP client socket bound to `from` (port 0) connected to `to`.
pub fn connect_from(from: IpAddr, to: SocketAddr) -> std::net::TcpStream {
    let s = socket2::Socket::new(
        socket2::Domain::for_address(to),
        socket2::Type::STREAM,
        None,
    )
    .unwrap();
    let from = match (from, to) {
        (IpAddr::V4(a), SocketAddr::V6(_)) => IpAddr::V6(a.to_ipv6_mapped()),
        _ => from,
    };
    s.bind(&SocketAddr::new(from, 0).into()).unwrap();
    s.connect(&to.into())
        .unwrap_or_else(|e| panic!("connect {from} -> {to}: {e}"));
    s.into()
}

/// Adds a local route to `dst/32` on `lo` carrying `congctl CC` (with
/// `lock`: `congctl lock CC`), like `ip route add local DST dev lo table
/// local congctl [lock] CC`.
pub fn add_congctl_route(dst: std::net::Ipv4Addr, cc: &str, lock: bool) {
    use netlink_packet_core::{NLM_F_CREATE, NLM_F_REPLACE};
    use netlink_packet_route::route::{
        RouteAddress, RouteAttribute, RouteMessage, RouteMetric, RouteProtocol, RouteScope,
        RouteType,
    };
    use netlink_packet_route::{AddressFamily, RouteNetlinkMessage};
    /// `RTAX_CC_ALGO` (include/uapi/linux/rtnetlink.h); `lock` sets its bit.
    const RTAX_CC_ALGO: u32 = 16;
    /// `RT_TABLE_LOCAL`.
    const RT_TABLE_LOCAL: u8 = 255;
    let mut msg = RouteMessage::default();
    msg.header.address_family = AddressFamily::Inet;
    msg.header.destination_prefix_length = 32;
    msg.header.table = RT_TABLE_LOCAL;
    msg.header.protocol = RouteProtocol::Static;
    msg.header.scope = RouteScope::Host;
    msg.header.kind = RouteType::Local;
    let mut metrics = vec![RouteMetric::CcAlgo(cc.to_string())];
    if lock {
        metrics.push(RouteMetric::Lock(1 << RTAX_CC_ALGO));
    }
    msg.attributes = vec![
        RouteAttribute::Destination(RouteAddress::Inet(dst)),
        RouteAttribute::Oif(1),
        RouteAttribute::Metrics(metrics),
    ];
    bbrkit_diag::rtnl::Rtnl::open()
        .and_then(|mut r| {
            r.ack(
                &format!("add route {dst}"),
                RouteNetlinkMessage::NewRoute(msg),
                NLM_F_CREATE | NLM_F_REPLACE,
            )
        })
        .unwrap_or_else(|e| panic!("{}", bbrkit_diag::error_chain(&e)));
}
