//! Offload switches of a lab link through the legacy `SIOCETHTOOL` ioctl.
//!
//! Owns turning off checksum offload, TSO, GSO and GRO on a veth so that every
//! frame on the wire is one MTU-sized packet with a complete checksum: the
//! emulator then decides loss per packet (not per 64 KB super-packet) and can
//! re-inject frames through AF_PACKET without fixing checksums. Must only be
//! called on threads inside a lab namespace (the ioctl socket belongs to the
//! calling thread's namespace).

use std::io;

use crate::error::{LabError, Result};

const ETHTOOL_SRXCSUM: u32 = 0x15;
const ETHTOOL_STXCSUM: u32 = 0x17;
const ETHTOOL_SSG: u32 = 0x19;
const ETHTOOL_STSO: u32 = 0x1f;
const ETHTOOL_SGSO: u32 = 0x24;
const ETHTOOL_GGSO: u32 = 0x23;
const ETHTOOL_GTSO: u32 = 0x1e;
const ETHTOOL_GTXCSUM: u32 = 0x16;
const ETHTOOL_SGRO: u32 = 0x2c;
const ETHTOOL_GGRO: u32 = 0x2b;

#[repr(C)]
struct EthtoolValue {
    cmd: u32,
    data: u32,
}

#[repr(C)]
struct IfReq {
    name: [u8; libc::IFNAMSIZ],
    data: *mut EthtoolValue,
    _pad: [u8; 16],
}

fn ioctl(ifname: &str, cmd: u32, data: u32) -> io::Result<u32> {
    // SAFETY: socket(2) with constant arguments; checked below and closed
    // on every path.
    let sock = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if sock < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut value = EthtoolValue { cmd, data };
    let mut req = IfReq {
        name: [0; libc::IFNAMSIZ],
        data: &mut value,
        _pad: [0; 16],
    };
    let bytes = ifname.as_bytes();
    if bytes.len() >= libc::IFNAMSIZ {
        // SAFETY: `sock` is our open descriptor, closed once.
        unsafe { libc::close(sock) };
        return Err(io::Error::from(io::ErrorKind::InvalidInput));
    }
    req.name[..bytes.len()].copy_from_slice(bytes);
    // SAFETY: `req` is a valid ifreq whose data points at a live ethtool_value.
    let rc = unsafe { libc::ioctl(sock, libc::SIOCETHTOOL, &mut req) };
    let err = io::Error::last_os_error();
    // SAFETY: `sock` is our open descriptor, closed once.
    unsafe { libc::close(sock) };
    if rc < 0 {
        return Err(err);
    }
    Ok(value.data)
}

/// Turns off TX/RX checksum offload, scatter-gather, TSO, GSO and GRO on
/// `ifname`. Any switch the driver does not have is skipped.
pub fn offloads_off(ifname: &str) -> Result<()> {
    for cmd in [
        ETHTOOL_STSO,
        ETHTOOL_SGSO,
        ETHTOOL_SGRO,
        ETHTOOL_SSG,
        ETHTOOL_STXCSUM,
        ETHTOOL_SRXCSUM,
    ] {
        match ioctl(ifname, cmd, 0) {
            Ok(_) => {}
            Err(e) if e.raw_os_error() == Some(libc::EOPNOTSUPP) => {}
            Err(e) => return Err(LabError::io(format!("ethtool {cmd:#x} on {ifname}"), e)),
        }
    }
    Ok(())
}

/// Offload state of a link: (tx checksum, TSO, GSO, GRO), each on/off.
pub fn offload_state(ifname: &str) -> Result<[bool; 4]> {
    let mut out = [false; 4];
    for (i, cmd) in [ETHTOOL_GTXCSUM, ETHTOOL_GTSO, ETHTOOL_GGSO, ETHTOOL_GGRO]
        .into_iter()
        .enumerate()
    {
        out[i] = ioctl(ifname, cmd, 0)
            .map_err(|e| LabError::io(format!("ethtool get {cmd:#x} on {ifname}"), e))?
            != 0;
    }
    Ok(out)
}
