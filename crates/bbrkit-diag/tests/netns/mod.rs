//! Test helper (shared by the census tests, the benchmark, the capture example
//! and `crates/bbrkit/tests/diag*.rs` through `#[path]`): a throwaway network
//! namespace on a dedicated thread, with loopback up, and TCP connections with
//! a chosen congestion-control algorithm.
//!
//! Owns nothing on the host: `unshare(CLONE_NEWNET)` affects only the helper
//! thread; the namespace disappears when the thread and its sockets are gone.
//! Needs root (CAP_SYS_ADMIN for unshare, CAP_NET_ADMIN to pick any algorithm).
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;

/// Runs `f` on a new thread inside a fresh network namespace with `lo` up,
/// and returns its result. Child processes spawned by `f` (std `Command`) are
/// born in that namespace too, since fork copies the calling thread's namespaces.
pub fn in_new_netns<R: Send + 'static>(f: impl FnOnce() -> R + Send + 'static) -> R {
    std::thread::spawn(move || {
        // SAFETY: plain syscalls on this thread; CLONE_NEWNET is per thread.
        let rc = unsafe { libc::unshare(libc::CLONE_NEWNET) };
        assert_eq!(
            rc,
            0,
            "unshare(CLONE_NEWNET): {}",
            std::io::Error::last_os_error()
        );
        lo_up();
        f()
    })
    .join()
    .unwrap_or_else(|e| std::panic::resume_unwind(e))
}

/// Moves the calling thread into fresh network and mount namespaces, makes
/// every mount private (nothing propagates back to the host), mounts a
/// private bpffs at /sys/fs/bpf and sets `lo` up. Both namespaces, the
/// bpffs and every pin in it die with the thread and the processes it
/// spawns. (`bbrkit_lab::netns::make_mounts_private` is the product's
/// copy of the private-mounts step; this helper stays on libc so every
/// crate can include it.)
pub fn enter_netns_with_private_bpffs() {
    let none = std::ptr::null::<libc::c_char>();
    // SAFETY: plain syscalls on this thread with NUL-terminated literals or
    // null pointers where the kernel accepts them; unshare affects only the
    // calling thread.
    unsafe {
        let rc = libc::unshare(libc::CLONE_NEWNET | libc::CLONE_NEWNS);
        assert_eq!(
            rc,
            0,
            "unshare(NEWNET|NEWNS): {}",
            std::io::Error::last_os_error()
        );
        let rc = libc::mount(
            none,
            c"/".as_ptr(),
            none,
            libc::MS_REC | libc::MS_PRIVATE,
            std::ptr::null(),
        );
        assert_eq!(
            rc,
            0,
            "make mounts private: {}",
            std::io::Error::last_os_error()
        );
        let bpf = c"bpf".as_ptr();
        let rc = libc::mount(bpf, c"/sys/fs/bpf".as_ptr(), bpf, 0, std::ptr::null());
        assert_eq!(
            rc,
            0,
            "mount a private bpffs: {}",
            std::io::Error::last_os_error()
        );
    }
    lo_up();
}

/// Sets IFF_UP on `lo` of the calling thread's namespace.
pub fn lo_up() {
    // SAFETY: an AF_INET datagram socket used only for the two interface ioctls;
    // `ifr` is a properly initialised ifreq naming "lo".
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        assert!(fd >= 0);
        let mut ifr: libc::ifreq = std::mem::zeroed();
        for (d, s) in ifr.ifr_name.iter_mut().zip(b"lo\0") {
            *d = *s as libc::c_char;
        }
        assert_eq!(libc::ioctl(fd, libc::SIOCGIFFLAGS, &mut ifr), 0);
        ifr.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
        assert_eq!(
            libc::ioctl(fd, libc::SIOCSIFFLAGS, &ifr),
            0,
            "{}",
            std::io::Error::last_os_error()
        );
        libc::close(fd);
    }
}

/// `setsockopt(TCP_CONGESTION, name)`.
pub fn set_cc(fd: &impl AsRawFd, name: &str) {
    // SAFETY: passes a valid pointer/length pair to setsockopt.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            name.as_ptr().cast(),
            name.len() as libc::socklen_t,
        )
    };
    assert_eq!(
        rc,
        0,
        "TCP_CONGESTION {name}: {}",
        std::io::Error::last_os_error()
    );
}

/// `getsockopt(TCP_CONGESTION)`.
pub fn get_cc(fd: &impl AsRawFd) -> String {
    let mut buf = [0u8; 16];
    let mut len = buf.len() as libc::socklen_t;
    // SAFETY: buffer and length describe `buf`.
    let rc = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            buf.as_mut_ptr().cast(),
            &mut len,
        )
    };
    assert_eq!(rc, 0);
    let s = &buf[..len as usize];
    String::from_utf8_lossy(s.split(|&c| c == 0).next().unwrap()).into_owned()
}

/// The socket's own `getsockopt(TCP_INFO)` as the kernel's `struct tcp_info`
/// prefix known to the `libc` crate (decoded independently of bbrkit-diag),
/// plus the raw bytes for later fields.
pub fn tcp_info(fd: &impl AsRawFd) -> (libc::tcp_info, Vec<u8>) {
    let mut raw = vec![0u8; 512];
    let mut len = raw.len() as libc::socklen_t;
    // SAFETY: buffer and length describe `raw`.
    let rc = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            raw.as_mut_ptr().cast(),
            &mut len,
        )
    };
    assert_eq!(rc, 0);
    raw.truncate(len as usize);
    // SAFETY: tcp_info is plain old data; all zeroes is a valid value.
    let mut info: libc::tcp_info = unsafe { std::mem::zeroed() };
    let n = raw.len().min(std::mem::size_of::<libc::tcp_info>());
    // SAFETY: copies at most size_of::<tcp_info>() bytes into a POD struct.
    unsafe { std::ptr::copy_nonoverlapping(raw.as_ptr(), (&raw mut info).cast::<u8>(), n) };
    (info, raw)
}

/// One connection: both ends, the client's algorithm.
pub struct Pair {
    /// The connecting side.
    pub client: TcpStream,
    /// The accepted side.
    pub server: TcpStream,
    /// Algorithm set on both ends.
    pub cc: String,
}

/// A listener with `cc` on 127.0.0.1 (or ::1 when `v6`), ephemeral port.
pub fn listener(cc: &str, v6: bool) -> TcpListener {
    let addr: SocketAddr = if v6 { "[::1]:0" } else { "127.0.0.1:0" }.parse().unwrap();
    let l = TcpListener::bind(addr).expect("bind");
    set_cc(&l, cc);
    l
}

/// Opens `n` connections to `l` whose clients use `cc` (servers inherit the
/// listener's algorithm), and moves `bytes` from each client to its server
/// so that RTT and delivery-rate samples exist.
pub fn connect(l: &TcpListener, cc: &str, n: usize, bytes: usize) -> Vec<Pair> {
    let addr = l.local_addr().unwrap();
    let data = vec![7u8; bytes];
    let mut out = Vec::new();
    for _ in 0..n {
        let client = TcpStream::connect(addr).expect("connect");
        set_cc(&client, cc);
        let (mut server, _) = l.accept().expect("accept");
        let mut c = &client;
        c.write_all(&data).unwrap();
        let mut got = vec![0u8; bytes];
        server.read_exact(&mut got).unwrap();
        out.push(Pair {
            client,
            server,
            cc: cc.to_string(),
        });
    }
    out
}
