//! [`ConnRecord`]: one TCP connection's outcome, as the sock_ops program
//! reads it from the kernel's `struct tcp_sock` when the connection reaches
//! `TCP_CLOSE` (`BPF_SOCK_OPS_STATE_CB`), or as a trial samples a connection
//! still open at its end (`open`). Every counter is the kernel's own, in the
//! kernel's units converted to SI-suffixed fields; derived quantities
//! (goodput, retransmit rate, limited fractions) are methods, so there is
//! one definition of each.
//!
//! The byte layout the program writes into its ring buffer, and its
//! decoding, live beside the program in `bbrkit-bpf`; this type is what
//! every consumer sees.

use std::net::IpAddr;

use serde::{Deserialize, Serialize};

/// Who opened the connection, as sock_ops saw it established.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// This host connected (`BPF_SOCK_OPS_ACTIVE_ESTABLISHED_CB`).
    Active,
    /// This host accepted (`BPF_SOCK_OPS_PASSIVE_ESTABLISHED_CB`).
    Passive,
}

/// One connection's outcome.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConnRecord {
    /// The kernel's socket cookie (`bpf_get_socket_cookie`): unique per
    /// socket for the life of the kernel, so "one record per connection"
    /// can be checked.
    pub cookie: u64,
    /// Index of the policy rule the connection matched (`None`: no rule
    /// matched and the host default applied).
    pub rule: Option<u16>,
    /// Index of the arm the rule drew for it (0 for a rule with one
    /// algorithm).
    pub arm: u8,
    /// The algorithm the connection ran when the record was taken
    /// (`TCP_CONGESTION`), which is the arm's unless the application chose
    /// its own.
    pub cc: String,
    /// The program set the arm's algorithm on this connection; false when
    /// the application had chosen its own or the kernel refused the name.
    pub assigned: bool,
    /// Active or passive open.
    pub direction: Direction,
    /// Remote address; an IPv4-mapped IPv6 address is stored as IPv4.
    pub remote: IpAddr,
    /// Local (service) port.
    pub local_port: u16,
    /// Remote port.
    pub remote_port: u16,
    /// `CLOCK_MONOTONIC` nanoseconds (`bpf_ktime_get_ns`) when established.
    pub start_ns: u64,
    /// `CLOCK_MONOTONIC` nanoseconds at close, or when sampled (`open`).
    pub end_ns: u64,
    /// `tcpi_bytes_acked`: payload bytes the peer acknowledged.
    pub bytes_acked: u64,
    /// `tcpi_bytes_received`: payload bytes received.
    pub bytes_received: u64,
    /// `tcpi_bytes_retrans`: payload bytes retransmitted.
    pub bytes_retrans: u64,
    /// `tcpi_segs_out`: segments sent, retransmissions included.
    pub segs_out: u32,
    /// `tcpi_total_retrans`: segments retransmitted.
    pub total_retrans: u32,
    /// `tp->lost`: segments the stack marked lost.
    pub lost: u32,
    /// `tcpi_delivered`: segments delivered.
    pub delivered: u32,
    /// Minimum RTT seen (`tcp_min_rtt`), microseconds.
    pub min_rtt_us: u32,
    /// Smoothed RTT (`srtt_us >> 3`), microseconds.
    pub srtt_us: u32,
    /// `tcpi_busy_time`: microseconds with data to send (the sum of the
    /// three chronographs: busy, receive-window-limited, send-buffer-limited).
    pub busy_us: u64,
    /// `tcpi_rwnd_limited`: microseconds limited by the peer's receive window.
    pub rwnd_limited_us: u64,
    /// `tcpi_sndbuf_limited`: microseconds limited by the send buffer.
    pub sndbuf_limited_us: u64,
    /// Sampled at the end of a trial while still open, not closed.
    pub open: bool,
}

impl ConnRecord {
    /// Wall time from established to close (or sampling), microseconds.
    pub fn duration_us(&self) -> u64 {
        self.end_ns.saturating_sub(self.start_ns) / 1_000
    }

    /// Goodput while there was data to send: acknowledged payload over
    /// `busy_us`. `None` when nothing was acknowledged or the kernel kept
    /// no busy time: never re-measured over the connection's lifetime,
    /// which is another quantity (it counts the application's idle time).
    pub fn goodput_bits_per_second(&self) -> Option<f64> {
        (self.bytes_acked > 0 && self.busy_us > 0)
            .then(|| self.bytes_acked as f64 * 8e6 / self.busy_us as f64)
    }

    /// Acknowledged data but no busy time: the kernel's chronographs said
    /// nothing, so the record has no goodput (see
    /// [`goodput_bits_per_second`](Self::goodput_bits_per_second)).
    pub fn no_busy_time(&self) -> bool {
        self.bytes_acked > 0 && self.busy_us == 0
    }

    /// Retransmitted over sent segments (`None` when nothing was sent).
    pub fn retransmit_rate(&self) -> Option<f64> {
        (self.segs_out > 0).then(|| f64::from(self.total_retrans) / f64::from(self.segs_out))
    }

    /// Smoothed over minimum RTT: how much the connection's own queue (or
    /// others') inflated its delay. `None` without an RTT sample.
    pub fn rtt_inflation(&self) -> Option<f64> {
        (self.min_rtt_us > 0 && self.srtt_us > 0)
            .then(|| f64::from(self.srtt_us) / f64::from(self.min_rtt_us))
    }

    /// Fraction of the busy time limited by the receive window.
    pub fn rwnd_limited_fraction(&self) -> Option<f64> {
        fraction(self.rwnd_limited_us, self.busy_us)
    }

    /// Fraction of the busy time limited by the send buffer.
    pub fn sndbuf_limited_fraction(&self) -> Option<f64> {
        fraction(self.sndbuf_limited_us, self.busy_us)
    }

    /// Fraction of the connection's life with nothing to send (the
    /// application was the limit).
    pub fn app_limited_fraction(&self) -> Option<f64> {
        let d = self.duration_us();
        (d > 0).then(|| 1.0 - (self.busy_us.min(d) as f64 / d as f64))
    }

    /// This host mostly received on the connection: congestion control
    /// acts on the sender, so the record says little about the algorithm.
    pub fn mostly_received(&self) -> bool {
        self.bytes_received > self.bytes_acked
    }
}

fn fraction(part: u64, whole: u64) -> Option<f64> {
    (whole > 0).then(|| part.min(whole) as f64 / whole as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec() -> ConnRecord {
        ConnRecord {
            cookie: 1,
            rule: Some(0),
            arm: 1,
            cc: "bbr".into(),
            assigned: true,
            direction: Direction::Passive,
            remote: "203.0.113.7".parse().unwrap(),
            local_port: 443,
            remote_port: 50000,
            start_ns: 1_000_000_000,
            end_ns: 3_000_000_000,
            bytes_acked: 1_000_000,
            bytes_received: 300,
            bytes_retrans: 14_480,
            segs_out: 700,
            total_retrans: 10,
            lost: 9,
            delivered: 690,
            min_rtt_us: 30_000,
            srtt_us: 45_000,
            busy_us: 1_000_000,
            rwnd_limited_us: 250_000,
            sndbuf_limited_us: 0,
            open: false,
        }
    }

    #[test]
    fn derived_quantities_follow_the_kernel_counters() {
        let r = rec();
        assert_eq!(r.duration_us(), 2_000_000);
        assert_eq!(r.goodput_bits_per_second(), Some(8e6));
        assert_eq!(r.retransmit_rate(), Some(10.0 / 700.0));
        assert_eq!(r.rtt_inflation(), Some(1.5));
        assert_eq!(r.rwnd_limited_fraction(), Some(0.25));
        assert_eq!(r.sndbuf_limited_fraction(), Some(0.0));
        assert_eq!(r.app_limited_fraction(), Some(0.5));
        assert!(!r.mostly_received());
    }

    #[test]
    fn empty_connections_have_no_rates() {
        let r = ConnRecord {
            bytes_acked: 0,
            segs_out: 0,
            busy_us: 0,
            min_rtt_us: 0,
            end_ns: 1_000_000_000,
            ..rec()
        };
        assert_eq!(r.goodput_bits_per_second(), None);
        assert_eq!(r.retransmit_rate(), None);
        assert_eq!(r.rtt_inflation(), None);
        assert_eq!(r.rwnd_limited_fraction(), None);
        assert_eq!(r.app_limited_fraction(), None);
        assert!(r.mostly_received());
    }

    #[test]
    fn no_busy_time_means_no_goodput_not_a_lifetime_one() {
        let r = ConnRecord {
            busy_us: 0,
            ..rec()
        };
        assert!(r.no_busy_time());
        assert_eq!(r.goodput_bits_per_second(), None);
        assert!(!rec().no_busy_time());
    }
}
