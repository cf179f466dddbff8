//! The Reno building blocks that Linux keeps in `net/ipv4/tcp_cong.c` and
//! that more than one controller calls: slow start, additive increase, the
//! Reno undo, and the common head of every Reno-family `cong_avoid`.
//!
//! Owns the one implementation of each; [`crate::reno`] and
//! [`crate::cubic`] call them as `tcp_reno_cong_avoid` and
//! `cubictcp_cong_avoid` call the kernel's. Must never hold state: all of it
//! lives in [`Tcp`] (`snd_cwnd`, `snd_ssthresh`, `snd_cwnd_cnt`).
//!
//! ```text
//!   ACK of `acked` packets ──► cwnd-limited? ── no ──► nothing grows
//!                                   │ yes
//!                 cwnd < ssthresh? ─┴─ yes ─► tcp_slow_start: +1 per packet,
//!                                   │          up to ssthresh; the rest ──┐
//!                                   ▼ no                                  ▼
//!              congestion avoidance (the caller's w) ◄── tcp_cong_avoid_ai
//! ```

use crate::tcp::Tcp;

/// Linux `tcp_slow_start`: grow cwnd by one per ACKed packet, up to
/// ssthresh. Returns the ACKed packets left over for congestion avoidance.
pub fn tcp_slow_start(tcp: &mut Tcp, acked: u32) -> u32 {
    let cwnd = tcp.snd_cwnd.saturating_add(acked).min(tcp.snd_ssthresh);
    let used = cwnd.saturating_sub(tcp.snd_cwnd);
    tcp.set_cwnd(cwnd.min(tcp.snd_cwnd_clamp));
    acked - used.min(acked)
}

/// Linux `tcp_cong_avoid_ai`: additive increase of one packet per `w`
/// ACKed packets, carrying the remainder in `snd_cwnd_cnt`.
pub fn tcp_cong_avoid_ai(tcp: &mut Tcp, w: u32, acked: u32) {
    let w = w.max(1);
    // Credits accumulated at a higher w are applied gently now.
    if tcp.snd_cwnd_cnt >= w {
        tcp.snd_cwnd_cnt = 0;
        tcp.set_cwnd(tcp.snd_cwnd.saturating_add(1));
    }
    tcp.snd_cwnd_cnt = tcp.snd_cwnd_cnt.saturating_add(acked);
    if tcp.snd_cwnd_cnt >= w {
        let delta = tcp.snd_cwnd_cnt / w;
        tcp.snd_cwnd_cnt -= delta * w;
        tcp.set_cwnd(tcp.snd_cwnd.saturating_add(delta));
    }
    tcp.set_cwnd(tcp.snd_cwnd.min(tcp.snd_cwnd_clamp));
}

/// The head that `tcp_reno_cong_avoid` and `cubictcp_cong_avoid` share
/// (written out in each in the kernel): no growth unless
/// `tcp_is_cwnd_limited`; in slow start, [`tcp_slow_start`] takes what it
/// can. Returns the ACKed packets left for congestion avoidance, `None`
/// when there are none (the kernel's early `return`s).
pub fn cong_avoid_acked(tcp: &mut Tcp, acked: u32) -> Option<u32> {
    if !tcp.tcp_is_cwnd_limited() {
        return None;
    }
    if !tcp.in_slow_start() {
        return Some(acked);
    }
    Some(tcp_slow_start(tcp, acked)).filter(|&left| left > 0)
}

/// Linux `tcp_reno_ssthresh`: half the window, at least 2.
pub fn tcp_reno_ssthresh(tcp: &Tcp) -> u32 {
    (tcp.snd_cwnd >> 1).max(2)
}

/// Linux `tcp_reno_undo_cwnd` (CUBIC's `undo_cwnd` too): the larger of
/// cwnd and the cwnd before the reduction.
pub fn tcp_reno_undo_cwnd(tcp: &Tcp) -> u32 {
    tcp.snd_cwnd.max(tcp.prior_cwnd)
}

/// The state name Reno and CUBIC report in [`crate::Status::state`].
pub fn reno_state_name(tcp: &Tcp) -> &'static str {
    if tcp.in_slow_start() {
        "slow_start"
    } else {
        "congestion_avoidance"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::Instant;

    fn tcp(cwnd: u32, ssthresh: u32) -> Tcp {
        let mut t = Tcp::new(Instant::ZERO, 1448);
        t.is_cwnd_limited = true;
        t.snd_cwnd = cwnd;
        t.snd_ssthresh = ssthresh;
        t
    }

    #[test]
    fn slow_start_stops_at_ssthresh_and_returns_the_rest() {
        let mut t = tcp(10, 14);
        assert_eq!(tcp_slow_start(&mut t, 2), 0);
        assert_eq!(t.snd_cwnd, 12);
        assert_eq!(tcp_slow_start(&mut t, 5), 3);
        assert_eq!(t.snd_cwnd, 14);
    }

    #[test]
    fn head_gives_nothing_when_not_cwnd_limited_or_all_used_by_slow_start() {
        let mut t = tcp(10, 14);
        t.is_cwnd_limited = false;
        t.max_packets_out = 5; // cwnd ≥ 2·packets out: not limited
        assert_eq!(cong_avoid_acked(&mut t, 3), None);
        assert_eq!(t.snd_cwnd, 10);
        t.is_cwnd_limited = true;
        assert_eq!(cong_avoid_acked(&mut t, 3), None);
        assert_eq!(t.snd_cwnd, 13);
        assert_eq!(cong_avoid_acked(&mut t, 3), Some(2));
        assert_eq!(t.snd_cwnd, 14);
        assert_eq!(cong_avoid_acked(&mut t, 3), Some(3));
        assert_eq!(t.snd_cwnd, 14);
    }

    #[test]
    fn additive_increase_carries_the_remainder() {
        let mut t = tcp(20, 10);
        tcp_cong_avoid_ai(&mut t, 20, 25);
        assert_eq!((t.snd_cwnd, t.snd_cwnd_cnt), (21, 5));
        // Credit beyond a smaller w: one packet now, the count restarts.
        tcp_cong_avoid_ai(&mut t, 4, 1);
        assert_eq!((t.snd_cwnd, t.snd_cwnd_cnt), (22, 1));
    }
}
