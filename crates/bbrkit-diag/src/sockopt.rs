//! A socket's own view of itself: `getsockopt(TCP_INFO)` and
//! `getsockopt(TCP_CC_INFO)` on a descriptor the caller holds, decoded by the
//! same parsers as the census's sock_diag copies ([`TcpInfo::parse`],
//! [`BbrInfo::parse`]), so a tester reading its own sender and `conns`
//! reading every socket see one `struct tcp_info`.
//!
//! Owns the one `getsockopt` of variable-length kernel structures. Must
//! never change a socket.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

use crate::{BbrInfo, TCP_INFO_KNOWN_LEN, TcpInfo};

/// Room for a newer kernel's longer `tcp_info`: the kernel copies at most
/// this much, and [`TcpInfo::len`] says how much it had.
const TCP_INFO_BUF: usize = TCP_INFO_KNOWN_LEN + 128;

/// `getsockopt(fd, IPPROTO_TCP, opt)` into `buf`; the bytes the kernel wrote.
fn tcp_opt(fd: BorrowedFd<'_>, opt: libc::c_int, buf: &mut [u8]) -> io::Result<usize> {
    let mut len = libc::socklen_t::try_from(buf.len()).unwrap_or(libc::socklen_t::MAX);
    // SAFETY: `buf` is writable for `len` bytes; the kernel writes at most
    // `len` bytes and stores the length it wrote in `len`.
    let rc = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::IPPROTO_TCP,
            opt,
            buf.as_mut_ptr().cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((len as usize).min(buf.len()))
}

/// The `tcp_info` of the TCP socket `fd`, as the kernel fills it now.
pub fn tcp_info(fd: BorrowedFd<'_>) -> io::Result<TcpInfo> {
    let mut buf = [0u8; TCP_INFO_BUF];
    let n = tcp_opt(fd, libc::TCP_INFO, &mut buf)?;
    Ok(TcpInfo::parse(&buf[..n]))
}

/// The congestion control's own info of `fd` (`TCP_CC_INFO`): for BBR its
/// `tcp_bbr_info`; `None` when the algorithm reports none or too little.
pub fn bbr_info(fd: BorrowedFd<'_>) -> io::Result<Option<BbrInfo>> {
    let mut buf = [0u8; 128];
    let n = tcp_opt(fd, libc::TCP_CC_INFO, &mut buf)?;
    Ok(BbrInfo::parse(&buf[..n]).ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::os::fd::AsFd;

    /// A loopback sender's own `tcp_info` counts what it sent, at the
    /// kernel's length, with the offsets sock_diag's copy uses.
    #[test]
    fn a_senders_own_tcp_info() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mut c = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (mut s, _) = l.accept().unwrap();
        c.write_all(&[1u8; 5000]).unwrap();
        let mut got = [0u8; 5000];
        s.read_exact(&mut got).unwrap();
        let t = tcp_info(c.as_fd()).unwrap();
        assert!(t.len >= 232, "a 6.x kernel's tcp_info: {}", t.len);
        assert_eq!(t.state, Some(1), "ESTABLISHED");
        assert_eq!(t.bytes_sent, Some(5000));
        assert!(t.snd_cwnd.unwrap() >= 10);
        assert!(t.rtt_sample_us().is_some());
    }

    #[test]
    fn reno_reports_no_bbr_info() {
        let sock =
            socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
        sock.set_tcp_congestion(b"reno").unwrap();
        assert_eq!(bbr_info(sock.as_fd()).unwrap(), None);
    }

    #[test]
    fn a_non_tcp_descriptor_is_an_error() {
        let f = std::fs::File::open("/dev/null").unwrap();
        assert!(tcp_info(f.as_fd()).is_err());
    }
}
