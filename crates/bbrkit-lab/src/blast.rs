//! A paced UDP stream from the server to the client, across the impaired
//! direction.
//!
//! Owns measuring the rate the path delivers, at the receiver, to check the
//! emulator's rate limit against its configuration. The offered load is
//! paced per millisecond from a sender thread of raised priority, and the
//! sender reports how far behind its schedule it ever fell: a link measured
//! below its rate is only evidence against the emulator if the offered load
//! never stopped for longer than the bottleneck buffer lasts. Must never send
//! outside the lab namespaces.

use std::io::IoSliceMut;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;

use nix::sys::socket::{ControlMessageOwned, MsgFlags, recvmsg, setsockopt, sockopt};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::error::{LabError, Result};
use crate::topology::{CLIENT_ADDR, SERVER_ADDR, Topology};

/// UDP payload per datagram: one 1500-byte IPv4 packet.
pub const PAYLOAD_BYTES: usize = 1472;
/// The Ethernet frame that payload travels in (+ UDP 8, IPv4 20, Ethernet
/// 14): the unit a rate limit counts.
pub const FRAME_BYTES: u64 = PAYLOAD_BYTES as u64 + 42;

/// What the receiver saw.
#[derive(Debug, Clone, PartialEq)]
pub struct BlastResult {
    /// Datagrams the sending socket accepted.
    pub sent: u64,
    /// Datagrams received.
    pub frames: u64,
    /// From the first arrival to the last (`None`: nothing arrived).
    pub span: Option<Duration>,
    /// The most the sender ever fell behind its pacing schedule.
    pub max_lag: Duration,
}

impl BlastResult {
    /// The delivered rate in Ethernet frame bits per second, first to last
    /// arrival (`None` with fewer than two frames).
    pub fn rate_bps(&self) -> Option<f64> {
        let span = self.span?.as_secs_f64();
        (self.frames >= 2 && span > 0.0)
            .then(|| (self.frames - 1) as f64 * FRAME_BYTES as f64 * 8.0 / span)
    }
}

/// Offers `offered_bps` (Ethernet frame bits) of UDP from the server to the
/// client for `duration`, and counts what arrives until 200 ms after the
/// last send.
pub fn blast(topo: &Topology, offered_bps: u64, duration: Duration) -> Result<BlastResult> {
    let bind = |ns: &crate::netns::Netns, addr| {
        ns.run(|| {
            UdpSocket::bind(SocketAddr::from((addr, 0)))
                .map_err(|e| LabError::io("bind a UDP socket in the lab", e))
        })
    };
    let rx = bind(&topo.client, CLIENT_ADDR)?;
    rx.set_read_timeout(Some(Duration::from_millis(50)))
        .map_err(|e| LabError::io("set a receive timeout", e))?;
    // Arrival times are the kernel's (SO_TIMESTAMPNS, stamped when the
    // frame left the link), not the reader's: a receiver kept off the CPU
    // when the last frames arrive would otherwise stretch the span. CI
    // once measured the split emulator's 100 Mbit/s tbf at 83.0 Mbit/s on
    // an idle machine with the sender never more than 14.5 ms behind.
    setsockopt(&rx, sockopt::ReceiveTimestampns, &true)
        .map_err(|e| LabError::io("enable receive timestamps", e.into()))?;
    let to = rx
        .local_addr()
        .map_err(|e| LabError::io("read the receiver's address", e))?;
    let tx = bind(&topo.server, SERVER_ADDR)?;
    let per_ms = (offered_bps / 8).div_ceil(FRAME_BYTES * 1000).max(1);
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        let receiver = s.spawn(|| {
            let (mut frames, mut first, mut last) = (0u64, None, 0u64);
            while !stop.load(Ordering::Relaxed) {
                if let Some(at) = recv_stamped(&rx) {
                    frames += 1;
                    last = at;
                    first.get_or_insert(at);
                }
            }
            (
                frames,
                first.map(|f| Duration::from_nanos(last.saturating_sub(f))),
            )
        });
        let sender = s.spawn(|| {
            // Best effort: a busy machine must not pause the offered load,
            // or the link idles and the rate measured is the sender's.
            // SAFETY: setpriority on this thread only; no pointers.
            unsafe { libc::setpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t, -15) };
            let payload = [0u8; PAYLOAD_BYTES];
            let start = Instant::now();
            let (mut next, mut max_lag, mut sent) = (start, Duration::ZERO, 0u64);
            while start.elapsed() < duration {
                max_lag = max_lag.max(Instant::now().saturating_duration_since(next));
                for _ in 0..per_ms {
                    // A full socket buffer refuses the datagram: offered
                    // load above the link's rate is the point.
                    sent += u64::from(tx.send_to(&payload, to).is_ok());
                }
                next += Duration::from_millis(1);
                if let Some(d) = next.checked_duration_since(Instant::now()) {
                    std::thread::sleep(d);
                }
            }
            (sent, max_lag)
        });
        let (sent, max_lag) = sender
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p));
        std::thread::sleep(Duration::from_millis(200));
        stop.store(true, Ordering::Relaxed);
        let (frames, span) = receiver
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p));
        Ok(BlastResult {
            sent,
            frames,
            span,
            max_lag,
        })
    })
}

/// One datagram from `rx`: its kernel receive time in nanoseconds
/// (`CLOCK_REALTIME`, which only differences are taken of), or `None` on
/// timeout or a datagram without a stamp.
fn recv_stamped(rx: &UdpSocket) -> Option<u64> {
    let mut buf = [0u8; 2048];
    let mut iov = [IoSliceMut::new(&mut buf)];
    let mut cmsg = nix::cmsg_space!(nix::sys::time::TimeSpec);
    let msg = recvmsg::<()>(rx.as_raw_fd(), &mut iov, Some(&mut cmsg), MsgFlags::empty()).ok()?;
    msg.cmsgs().ok()?.find_map(|c| match c {
        ControlMessageOwned::ScmTimestampns(ts) => {
            Some(ts.tv_sec() as u64 * 1_000_000_000 + ts.tv_nsec() as u64)
        }
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_counts_frames_between_first_and_last_arrival() {
        let r = BlastResult {
            sent: 2000,
            frames: 1001,
            span: Some(Duration::from_millis(100)),
            max_lag: Duration::ZERO,
        };
        // 1000 frames of 1514 B in 0.1 s.
        assert_eq!(r.rate_bps(), Some(1000.0 * 1514.0 * 8.0 / 0.1));
        let one = BlastResult {
            frames: 1,
            ..r.clone()
        };
        assert_eq!(one.rate_bps(), None);
        let none = BlastResult { span: None, ..r };
        assert_eq!(none.rate_bps(), None);
    }
}
