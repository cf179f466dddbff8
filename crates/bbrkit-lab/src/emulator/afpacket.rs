//! AF_PACKET sockets bound to one lab link, with batched receive and send.
//!
//! Owns the socket options that make a raw link socket fit for forwarding:
//! bound to one ifindex, own transmissions ignored (`PACKET_IGNORE_OUTGOING`),
//! qdisc bypassed on send, a memory-mapped receive ring (`PACKET_RX_RING`,
//! `TPACKET_V2`: the kernel writes each frame and its arrival time straight
//! into shared memory, so receiving costs no syscall), and the kernel's drop
//! counter (`PACKET_STATISTICS`). Must only be opened on a thread inside the
//! router namespace, and only one thread may receive from a socket.

use std::io;
use std::mem::{size_of, zeroed};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicU32, Ordering, fence};

const SOL_PACKET: libc::c_int = 263;
const PACKET_STATISTICS: libc::c_int = 6;
const PACKET_QDISC_BYPASS: libc::c_int = 20;
const PACKET_IGNORE_OUTGOING: libc::c_int = 23;
const PACKET_RX_RING: libc::c_int = 5;
const PACKET_VERSION: libc::c_int = 10;
const TPACKET_V2: libc::c_int = 1;
const TP_STATUS_KERNEL: u32 = 0;
const TP_STATUS_USER: u32 = 1;
/// Bytes of one ring slot: the `tpacket2_hdr`, link address and frame.
const RING_FRAME: usize = 2048;
/// Bytes of one ring block (whole pages; slots never straddle blocks).
const RING_BLOCK: usize = 1 << 16;
/// Slots in the receive ring: 16 MB, a few ms of frames at the ceiling,
/// like the socket buffer it replaces (absorbs short CPU stalls without
/// turning an overloaded emulator into a 100 ms queue).
const RING_FRAMES: usize = 8192;
const ETH_P_ALL: u16 = 0x0003;

/// Most frames moved by one `recvmmsg`/`sendmmsg`.
pub const BATCH: usize = 64;

/// A raw Ethernet socket on one link.
pub struct PacketSocket {
    ring: RxRing,
    fd: OwnedFd,
}

/// The mmap'ed `TPACKET_V2` receive ring of a socket.
struct RxRing {
    base: *mut u8,
    len: usize,
    frame_size: usize,
    frames: u32,
    /// Next slot to read (only the receiving thread touches it).
    head: AtomicU32,
}

// SAFETY: the mapping is owned by the ring and lives until drop; slots are
// handed between kernel and user by their status word, and only one thread
// receives (see the module header).
unsafe impl Send for RxRing {}
unsafe impl Sync for RxRing {}

/// `struct tpacket2_hdr` from `<linux/if_packet.h>`.
#[repr(C)]
struct Tpacket2Hdr {
    tp_status: u32,
    tp_len: u32,
    tp_snaplen: u32,
    tp_mac: u16,
    tp_net: u16,
    tp_sec: u32,
    tp_nsec: u32,
    tp_vlan_tci: u16,
    tp_vlan_tpid: u16,
    tp_padding: [u8; 4],
}

/// `struct tpacket_req` from `<linux/if_packet.h>`.
#[repr(C)]
struct TpacketReq {
    tp_block_size: u32,
    tp_block_nr: u32,
    tp_frame_size: u32,
    tp_frame_nr: u32,
}

impl RxRing {
    /// Sets up and maps the receive ring of `fd`, slots fit for `max_frame`
    /// byte frames.
    fn map(fd: libc::c_int, max_frame: usize) -> io::Result<RxRing> {
        setopt(fd, SOL_PACKET, PACKET_VERSION, TPACKET_V2)?;
        // Header (32) + sockaddr_ll, aligned, before the frame.
        let frame_size = (max_frame + 128).next_power_of_two().max(RING_FRAME);
        let block = RING_BLOCK.max(frame_size);
        let per_block = block / frame_size;
        let blocks = RING_FRAMES.div_ceil(per_block);
        let req = TpacketReq {
            tp_block_size: block as u32,
            tp_block_nr: blocks as u32,
            tp_frame_size: frame_size as u32,
            tp_frame_nr: (blocks * per_block) as u32,
        };
        // SAFETY: passes a live struct and its size.
        check(unsafe {
            libc::setsockopt(
                fd,
                SOL_PACKET,
                PACKET_RX_RING,
                (&req as *const TpacketReq).cast(),
                size_of::<TpacketReq>() as libc::socklen_t,
            )
        })?;
        let len = block * blocks;
        // SAFETY: maps the ring the kernel just allocated for `fd`.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_POPULATE,
                fd,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(RxRing {
            base: base.cast(),
            len,
            frame_size,
            frames: (blocks * per_block) as u32,
            head: AtomicU32::new(0),
        })
    }

    /// The header of slot `i`. Slots never straddle blocks, and blocks are a
    /// whole number of slots, so slot `i` starts at `i * frame_size`.
    fn slot(&self, i: u32) -> *mut Tpacket2Hdr {
        // SAFETY: i < frames, so the slot lies inside the mapping.
        unsafe { self.base.add(i as usize * self.frame_size).cast() }
    }
}

impl Drop for RxRing {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping made in `map`.
        unsafe { libc::munmap(self.base.cast(), self.len) };
    }
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
    /// Frames longer than `max_frame` bytes are reported as truncated.
    pub fn open(ifindex: u32, bypass_qdisc: bool, max_frame: usize) -> io::Result<PacketSocket> {
        // Protocol 0 at creation: nothing is queued before bind() narrows it.
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
        // Kernel receive timestamps (the ring carries them for every
        // frame): a frame's arrival time is when the kernel saw it, not when
        // a busy emulator got around to reading it.
        setopt(raw, libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, 1)?;
        let ring = RxRing::map(raw, max_frame)?;
        setopt(raw, libc::SOL_SOCKET, libc::SO_SNDBUFFORCE, 8 << 20)
            .or_else(|_| setopt(raw, libc::SOL_SOCKET, libc::SO_SNDBUF, 8 << 20))?;
        // SAFETY: zeroed sockaddr_ll is valid; we fill the fields bind needs.
        let mut addr: libc::sockaddr_ll = unsafe { zeroed() };
        addr.sll_family = libc::AF_PACKET as u16;
        addr.sll_protocol = ETH_P_ALL.to_be();
        addr.sll_ifindex = ifindex as i32;
        check(unsafe {
            libc::bind(
                raw,
                (&addr as *const libc::sockaddr_ll).cast(),
                size_of::<libc::sockaddr_ll>() as libc::socklen_t,
            )
        })?;
        let s = PacketSocket { ring, fd };
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
        let ring = &self.ring;
        let mut head = ring.head.load(Ordering::Relaxed);
        let mut got = 0;
        let mut offset = None;
        while got < n {
            let hdr = ring.slot(head);
            // SAFETY: `hdr` points at a slot header inside the mapping; the
            // status word is shared with the kernel, so it is read volatile
            // and the frame only after an acquire fence.
            let status = unsafe { std::ptr::read_volatile(&(*hdr).tp_status) };
            if status & TP_STATUS_USER == 0 {
                break;
            }
            fence(Ordering::Acquire);
            let (now_ns, off) = *offset.get_or_insert_with(|| {
                let now = monotonic_ns();
                (now, realtime_ns().saturating_sub(now))
            });
            // SAFETY: the slot is ours (TP_STATUS_USER) until we hand it
            // back; the kernel keeps mac + snaplen inside the slot.
            unsafe {
                let h = &*hdr;
                let (len, snap) = (h.tp_len as usize, h.tp_snaplen as usize);
                let buf = &mut bufs[got];
                if snap < len || len > buf.len() {
                    lens[got] = 0;
                } else {
                    let src = (hdr as *const u8).add(h.tp_mac as usize);
                    std::ptr::copy_nonoverlapping(src, buf.as_mut_ptr(), len);
                    lens[got] = len;
                }
                let real = h.tp_sec as u64 * 1_000_000_000 + h.tp_nsec as u64;
                stamps[got] = if real > off {
                    (real - off).min(now_ns)
                } else {
                    now_ns
                };
                fence(Ordering::Release);
                std::ptr::write_volatile(&mut (*hdr).tp_status, TP_STATUS_KERNEL);
            }
            got += 1;
            head = if head + 1 == ring.frames { 0 } else { head + 1 };
        }
        ring.head.store(head, Ordering::Relaxed);
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
        let mut msgs: [libc::mmsghdr; BATCH] = unsafe { zeroed() };
        for i in 0..n {
            iov[i].iov_base = frames[i].as_ptr() as *mut libc::c_void;
            iov[i].iov_len = frames[i].len();
            msgs[i].msg_hdr.msg_iov = &mut iov[i];
            msgs[i].msg_hdr.msg_iovlen = 1;
        }
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

fn realtime_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid timespec pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// CLOCK_MONOTONIC in nanoseconds.
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid timespec pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}
