//! AF_PACKET sockets bound to one lab link, with batched receive and send.
//!
//! Owns the socket options that make a raw link socket fit for forwarding:
//! bound to one ifindex, own transmissions ignored (`PACKET_IGNORE_OUTGOING`),
//! qdisc bypassed on send, a large receive buffer, and the kernel's drop
//! counter (`PACKET_STATISTICS`). Must only be opened on a thread inside the
//! router namespace.

use std::io;
use std::mem::{size_of, zeroed};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

const SOL_PACKET: libc::c_int = 263;
const PACKET_STATISTICS: libc::c_int = 6;
const PACKET_QDISC_BYPASS: libc::c_int = 20;
const PACKET_IGNORE_OUTGOING: libc::c_int = 23;
const ETH_P_ALL: u16 = 0x0003;

/// Most frames moved by one `recvmmsg`/`sendmmsg`.
pub const BATCH: usize = 64;

/// A raw Ethernet socket on one link.
pub struct PacketSocket {
    fd: OwnedFd,
}

fn check(rc: libc::c_int) -> io::Result<libc::c_int> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc)
    }
}

fn setopt(
    fd: libc::c_int,
    level: libc::c_int,
    name: libc::c_int,
    value: libc::c_int,
) -> io::Result<()> {
    // SAFETY: passes a pointer to a live c_int and its size.
    check(unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            (&value as *const libc::c_int).cast(),
            size_of::<libc::c_int>() as libc::socklen_t,
        )
    })
    .map(|_| ())
}

impl PacketSocket {
    /// Opens a non-blocking socket bound to link `ifindex` of the calling
    /// thread's namespace. With `bypass_qdisc`, frames it sends skip the
    /// link's qdisc (the userspace emulator); without, they pass through it
    /// (netem mode: the kernel qdisc impairs them).
    pub fn open(ifindex: u32, bypass_qdisc: bool) -> io::Result<PacketSocket> {
        Self::open_proto(ifindex, bypass_qdisc, ETH_P_ALL)
    }

    /// Opens a socket that only sends on link `ifindex` (bypassing its
    /// qdisc): bound with protocol 0, the kernel never copies a received
    /// frame into it, so frames the kernel forwards past it cost nothing.
    pub fn open_send_only(ifindex: u32) -> io::Result<PacketSocket> {
        Self::open_proto(ifindex, true, 0)
    }

    fn open_proto(ifindex: u32, bypass_qdisc: bool, protocol: u16) -> io::Result<PacketSocket> {
        // Protocol 0 at creation: nothing is queued before bind() narrows it.
        // SAFETY: socket(2) with constant arguments; the result is checked
        // and owned by `fd` below.
        let raw = check(unsafe {
            libc::socket(
                libc::AF_PACKET,
                libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
                0,
            )
        })?;
        // SAFETY: `raw` is a fresh descriptor we own.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        setopt(raw, SOL_PACKET, PACKET_IGNORE_OUTGOING, 1)?;
        setopt(
            raw,
            SOL_PACKET,
            PACKET_QDISC_BYPASS,
            bypass_qdisc as libc::c_int,
        )?;
        // Kernel receive timestamps: a frame's arrival time is when the
        // kernel saw it, not when a busy emulator got around to reading it.
        setopt(raw, libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, 1)?;
        // 8 MB (a few thousand frames): absorbs CPU stalls of a few ms
        // without turning an overloaded emulator into a 100 ms queue.
        setopt(raw, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, 8 << 20)
            .or_else(|_| setopt(raw, libc::SOL_SOCKET, libc::SO_RCVBUF, 8 << 20))?;
        setopt(raw, libc::SOL_SOCKET, libc::SO_SNDBUFFORCE, 8 << 20)
            .or_else(|_| setopt(raw, libc::SOL_SOCKET, libc::SO_SNDBUF, 8 << 20))?;
        // SAFETY: zeroed sockaddr_ll is valid; we fill the fields bind needs.
        let mut addr: libc::sockaddr_ll = unsafe { zeroed() };
        addr.sll_family = libc::AF_PACKET as u16;
        addr.sll_protocol = protocol.to_be();
        addr.sll_ifindex = ifindex as i32;
        // SAFETY: `addr` is an initialised sockaddr_ll and the length passed
        // is its size; `raw` is our open socket.
        check(unsafe {
            libc::bind(
                raw,
                (&addr as *const libc::sockaddr_ll).cast(),
                size_of::<libc::sockaddr_ll>() as libc::socklen_t,
            )
        })?;
        let s = PacketSocket { fd };
        s.take_kernel_drops()?; // reset the counter
        Ok(s)
    }

    /// Receives up to `bufs.len()` frames into `bufs`, writing each frame's
    /// length (0 for truncated frames) into `lens` and its kernel arrival
    /// time on CLOCK_MONOTONIC (ns; at most `now_ns`) into `stamps`. Returns
    /// how many arrived (0 if none is waiting).
    pub fn recv_batch(
        &self,
        bufs: &mut [&mut [u8]],
        lens: &mut [usize],
        stamps: &mut [u64],
    ) -> io::Result<usize> {
        let n = bufs.len().min(BATCH);
        // SAFETY: zeroed iovec/mmsghdr arrays are valid; each iovec points
        // into a live, exclusively borrowed buffer for the duration of the call.
        let mut iov: [libc::iovec; BATCH] = unsafe { zeroed() };
        // SAFETY: as above, a zeroed mmsghdr array is valid.
        let mut msgs: [libc::mmsghdr; BATCH] = unsafe { zeroed() };
        let mut ctrl = [[0u64; 8]; BATCH];
        for i in 0..n {
            iov[i].iov_base = bufs[i].as_mut_ptr().cast();
            iov[i].iov_len = bufs[i].len();
            msgs[i].msg_hdr.msg_iov = &mut iov[i];
            msgs[i].msg_hdr.msg_iovlen = 1;
            msgs[i].msg_hdr.msg_control = ctrl[i].as_mut_ptr().cast();
            msgs[i].msg_hdr.msg_controllen = size_of::<[u64; 8]>();
        }
        // SAFETY: the first `n` headers point at live iovecs and control
        // buffers set up above, all outliving the call.
        let rc = unsafe {
            libc::recvmmsg(
                self.fd.as_raw_fd(),
                msgs.as_mut_ptr(),
                n as libc::c_uint,
                libc::MSG_DONTWAIT | libc::MSG_TRUNC,
                std::ptr::null_mut(),
            )
        };
        if rc < 0 {
            let e = io::Error::last_os_error();
            return match e.raw_os_error() {
                Some(libc::EAGAIN) | Some(libc::EINTR) => Ok(0),
                _ => Err(e),
            };
        }
        let got = rc as usize;
        // The kernel stamps frames on CLOCK_REALTIME; deadlines are on
        // CLOCK_MONOTONIC. Read the real clock first: the offset then comes
        // out at most the true one (never larger by the time between the two
        // reads, which an interrupt can stretch to microseconds), so a
        // converted stamp is never earlier than the arrival and no frame
        // leaves before its delay has passed.
        let real = realtime_ns();
        let now = monotonic_ns();
        let offset = real.saturating_sub(now);
        for i in 0..got {
            let len = msgs[i].msg_len as usize;
            let truncated = msgs[i].msg_hdr.msg_flags & libc::MSG_TRUNC != 0 || len > bufs[i].len();
            lens[i] = if truncated { 0 } else { len };
            stamps[i] = match kernel_stamp(&msgs[i].msg_hdr) {
                Some(real) if real > offset => (real - offset).min(now),
                _ => now,
            };
        }
        Ok(got)
    }

    /// Sends the frames in `frames`; returns how many the kernel took
    /// (fewer on a full send buffer).
    pub fn send_batch(&self, frames: &[&[u8]]) -> io::Result<usize> {
        let n = frames.len().min(BATCH);
        if n == 0 {
            return Ok(0);
        }
        // SAFETY: as in recv_batch; the buffers are only read by the kernel.
        let mut iov: [libc::iovec; BATCH] = unsafe { zeroed() };
        // SAFETY: a zeroed mmsghdr array is valid.
        let mut msgs: [libc::mmsghdr; BATCH] = unsafe { zeroed() };
        for i in 0..n {
            iov[i].iov_base = frames[i].as_ptr() as *mut libc::c_void;
            iov[i].iov_len = frames[i].len();
            msgs[i].msg_hdr.msg_iov = &mut iov[i];
            msgs[i].msg_hdr.msg_iovlen = 1;
        }
        // SAFETY: the first `n` headers point at live iovecs over frames
        // that outlive the call; the kernel only reads them.
        let rc = unsafe {
            libc::sendmmsg(
                self.fd.as_raw_fd(),
                msgs.as_mut_ptr(),
                n as libc::c_uint,
                libc::MSG_DONTWAIT,
            )
        };
        if rc < 0 {
            let e = io::Error::last_os_error();
            return match e.raw_os_error() {
                Some(libc::EAGAIN) | Some(libc::ENOBUFS) | Some(libc::EINTR) => Ok(0),
                _ => Err(e),
            };
        }
        Ok(rc as usize)
    }

    /// Waits until a frame is readable or `timeout_ns` passed.
    pub fn wait_readable(&self, timeout_ns: u64) {
        let mut pfd = libc::pollfd {
            fd: self.fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let ts = libc::timespec {
            tv_sec: (timeout_ns / 1_000_000_000) as libc::time_t,
            tv_nsec: (timeout_ns % 1_000_000_000) as libc::c_long,
        };
        // SAFETY: one valid pollfd, a valid timespec, no signal mask.
        unsafe { libc::ppoll(&mut pfd, 1, &ts, std::ptr::null()) };
    }

    /// Frames the kernel dropped because this socket's buffer was full,
    /// since the previous call (reading resets the kernel counter).
    pub fn take_kernel_drops(&self) -> io::Result<u64> {
        #[repr(C)]
        struct TpacketStats {
            packets: u32,
            drops: u32,
        }
        let mut st = TpacketStats {
            packets: 0,
            drops: 0,
        };
        let mut len = size_of::<TpacketStats>() as libc::socklen_t;
        // SAFETY: passes a live struct and its size.
        check(unsafe {
            libc::getsockopt(
                self.fd.as_raw_fd(),
                SOL_PACKET,
                PACKET_STATISTICS,
                (&mut st as *mut TpacketStats).cast(),
                &mut len,
            )
        })?;
        Ok(st.drops as u64)
    }
}

/// The `SCM_TIMESTAMPNS` of a received message (CLOCK_REALTIME ns).
fn kernel_stamp(hdr: &libc::msghdr) -> Option<u64> {
    // SAFETY: walks the control buffer the kernel filled, with libc's macros.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(hdr);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_TIMESTAMPNS {
                let ts = std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const libc::timespec);
                return Some(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64);
            }
            c = libc::CMSG_NXTHDR(hdr, c);
        }
    }
    None
}

pub use crate::clock::monotonic_ns;
use crate::clock::realtime_ns;
