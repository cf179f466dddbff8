//! Reno: RFC 5681 slow start and congestion avoidance, as Linux implements
//! them in `net/ipv4/tcp_cong.c` (`tcp_reno_cong_avoid`, `tcp_slow_start`,
//! `tcp_cong_avoid_ai`, `tcp_reno_ssthresh`, `tcp_reno_undo_cwnd`).
//!
//! ```text
//!            cwnd < ssthresh                  cwnd >= ssthresh
//!   ┌──────────────────────────┐   ┌───────────────────────────────┐
//!   │ slow start: +1 per ACKed │──►│ congestion avoidance:         │
//!   │ packet (capped at        │   │ +1 per cwnd ACKed packets     │
//!   │ ssthresh)                │   │ (snd_cwnd_cnt counts them)    │
//!   └──────────────────────────┘   └───────────────────────────────┘
//!          ▲   loss: ssthresh = max(cwnd/2, 2); the transport runs
//!          └── NewReno/PRR recovery (RFC 6582, RFC 6937), or RTO → cwnd 1
//! ```
//!
//! Recovery itself (PRR, NewReno partial ACKs) belongs to the transport, as
//! in Linux: this module only answers `ssthresh`, `cong_avoid` and `undo_cwnd`.
//! The building blocks (`tcp_slow_start`, `tcp_cong_avoid_ai`, ...) live in
//! [`crate::tcp_cong`], shared with CUBIC as in the kernel.

use crate::controller::{CongestionControl, Status};
use crate::tcp::Tcp;
use crate::tcp_cong::{
    cong_avoid_acked, reno_state_name, tcp_cong_avoid_ai, tcp_reno_ssthresh, tcp_reno_undo_cwnd,
};

/// Reno has no state of its own beyond what [`Tcp`] holds.
#[derive(Debug, Clone, Default)]
pub struct Reno {}

impl Reno {
    /// `tcp_reno` has no `init`.
    pub fn new(_tcp: &mut Tcp) -> Self {
        Reno {}
    }
}

impl CongestionControl for Reno {
    fn name(&self) -> &'static str {
        "reno"
    }

    /// Linux `tcp_reno_cong_avoid`.
    fn cong_avoid(&mut self, tcp: &mut Tcp, _ack: u64, acked: u32) {
        if let Some(acked) = cong_avoid_acked(tcp, acked) {
            let w = tcp.snd_cwnd;
            tcp_cong_avoid_ai(tcp, w, acked);
        }
    }

    /// Linux `tcp_reno_ssthresh`.
    fn ssthresh(&mut self, tcp: &mut Tcp) -> u32 {
        tcp_reno_ssthresh(tcp)
    }

    /// Linux `tcp_reno_undo_cwnd`.
    fn undo_cwnd(&mut self, tcp: &mut Tcp) -> u32 {
        tcp_reno_undo_cwnd(tcp)
    }

    fn status(&self, tcp: &Tcp) -> Status {
        Status {
            state: reno_state_name(tcp),
            ..Status::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::Instant;

    fn tcp() -> Tcp {
        let mut t = Tcp::new(Instant::ZERO, 1448);
        t.is_cwnd_limited = true;
        t
    }

    #[test]
    fn slow_start_adds_one_per_acked_packet_up_to_ssthresh() {
        let mut t = tcp();
        t.snd_ssthresh = 14;
        let mut r = Reno::new(&mut t);
        r.cong_avoid(&mut t, 0, 2);
        assert_eq!(t.snd_cwnd, 12);
        // 2 to reach ssthresh, the other 3 go to additive increase (cnt 3 < 14).
        r.cong_avoid(&mut t, 0, 5);
        assert_eq!(t.snd_cwnd, 14);
        assert_eq!(t.snd_cwnd_cnt, 3);
    }

    #[test]
    fn congestion_avoidance_adds_one_per_window() {
        let mut t = tcp();
        t.snd_cwnd = 20;
        t.snd_ssthresh = 10;
        let mut r = Reno::new(&mut t);
        for _ in 0..19 {
            r.cong_avoid(&mut t, 0, 1);
        }
        assert_eq!(t.snd_cwnd, 20);
        r.cong_avoid(&mut t, 0, 1);
        assert_eq!(t.snd_cwnd, 21);
        assert_eq!(t.snd_cwnd_cnt, 0);
    }

    #[test]
    fn no_growth_when_not_cwnd_limited() {
        let mut t = tcp();
        t.is_cwnd_limited = false;
        let mut r = Reno::new(&mut t);
        r.cong_avoid(&mut t, 0, 5);
        assert_eq!(t.snd_cwnd, 10);
    }

    #[test]
    fn ssthresh_halves_with_floor_and_undo_restores() {
        let mut t = tcp();
        let mut r = Reno::new(&mut t);
        t.snd_cwnd = 40;
        assert_eq!(r.ssthresh(&mut t), 20);
        t.snd_cwnd = 3;
        assert_eq!(r.ssthresh(&mut t), 2);
        t.prior_cwnd = 40;
        assert_eq!(r.undo_cwnd(&mut t), 40);
    }
}
