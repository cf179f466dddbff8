//! Delivery-rate estimation: Linux `net/ipv4/tcp_rate.c` (with the v3
//! `tx_in_flight`/`lost`/`delivered_ce` extensions of google/bbr) and
//! draft-cheng-iccrg-delivery-rate-estimation.
//!
//! The connection-level state lives in [`Tcp`] (`delivered`,
//! `delivered_time`, `first_send_time`, `app_limited`, `lost`,
//! `delivered_ce`), as in Linux. Per packet, the transport keeps the
//! [`TxSnapshot`] returned by [`on_send`]. Per ACK it builds one
//! [`RateSample`]: [`RateSample::default`], then [`on_packet_delivered`] for
//! every newly (S)ACKed packet, then [`generate`].
//!
//! ```text
//!   send P ──► on_send(tcp, ...) ──► TxSnapshot stored with P
//!   ACK    ──► for each newly delivered P: on_packet_delivered(tcp, &mut rs, &mut snap, ...)
//!          ──► generate(tcp, &mut rs, delivered, lost, ...) ──► controller.cong_control(tcp, &rs)
//! ```

//!
//! Reviewed against Linux `tcp_rate.c` (mainline and google/bbr v3).
//! Deliberate deviations, all listed in docs/cc.md:
//! * "newer" packet choice: Linux takes the first packet of each ACK when
//!   `rs->prior_delivered == 0` (also when that packet was sent before
//!   anything was delivered, so in the first round the *last processed*
//!   packet wins); here the first packet is taken only when the sample is
//!   empty, so the most recently sent packet always wins.
//! * With no RTT sample yet (`tcp.min_rtt == None`) the `interval < min_rtt`
//!   check is skipped; Linux compares with `~0U` (its min-RTT filter starts
//!   at "infinity"), but always has a SYN RTT sample by then.
//! * Times are nanoseconds, not whole microseconds.
//! * `tcp_rate_gen`'s `rate_delivered`/`rate_interval_us` (for `tcp_info`) are
//!   not kept.
//! * `rs.lost` is v3's: `rs.prior_lost` is taken from the chosen packet's
//!   `tx.lost` in [`on_packet_delivered`], and `rs.lost = tcp.lost -
//!   rs.prior_lost` in [`generate`] (google/bbr v3 `tcp_rate_gen`), so it
//!   includes the packets this ACK's loss detection marked. (v2alpha
//!   computed it in `tcp_rate_skb_delivered`, before the ACK's marks; this
//!   crate did so until the transport unification.)

use crate::tcp::Tcp;
use crate::time::{Duration, Instant};

/// What the rate sampler remembers about one sent packet (Linux `skb->tx`
/// plus `skb->skb_mstamp_ns`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TxSnapshot {
    /// When the packet was (last) sent.
    pub send_time: Instant,
    /// `tcp.first_send_time` at send.
    pub first_send_time: Instant,
    /// `tcp.delivered_time` at send; `None` once counted (SACKed earlier).
    pub delivered_time: Option<Instant>,
    /// `tcp.delivered` at send.
    pub delivered: u64,
    /// `tcp.delivered_ce` at send (v3).
    pub delivered_ce: u64,
    /// `tcp.lost` at send (v3).
    pub lost: u64,
    /// Packets in flight right after this one was sent, including it (v3 `tx.in_flight`).
    pub tx_in_flight: u32,
    /// Whether the connection was app-limited when this was sent.
    pub is_app_limited: bool,
    /// Whether this transmission was a retransmission.
    pub is_retrans: bool,
    /// End sequence number (bytes), the tie-breaker for "sent after".
    pub end_seq: u64,
}

/// One ACK's delivery-rate sample (Linux `struct rate_sample`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RateSample {
    /// `tcp.delivered` when the newest acknowledged packet was sent.
    pub prior_delivered: u64,
    /// `tcp.delivered_ce` when the newest acknowledged packet was sent.
    pub prior_delivered_ce: u64,
    /// `tcp.delivered_time` when the newest acknowledged packet was sent;
    /// `None` when no packet contributed (no valid sample).
    pub prior_time: Option<Instant>,
    /// Packets delivered over `interval`; `None` if the sample is invalid.
    pub delivered: Option<u64>,
    /// CE-marked packets delivered over `interval` (v3).
    pub delivered_ce: u64,
    /// Max of send and ACK elapsed times; `None` if the sample is invalid.
    pub interval: Option<Duration>,
    /// Send-side elapsed time of the newest acknowledged packet's flight.
    pub send_elapsed: Duration,
    /// ACK-side elapsed time.
    pub ack_elapsed: Duration,
    /// Packets newly (S)ACKed by this ACK.
    pub acked_sacked: u32,
    /// Packets newly marked lost while processing this ACK.
    pub losses: u32,
    /// Packets in flight before this ACK.
    pub prior_in_flight: u32,
    /// RTT of the most recently sent acknowledged packet, if measurable.
    pub rtt: Option<Duration>,
    /// In flight when the newest acknowledged packet was sent (v3 `tx_in_flight`).
    pub tx_in_flight: u32,
    /// Packets marked lost between that send and this ACK, this ACK's own
    /// marks included (v3 `rs->lost`, set by [`generate`]).
    pub lost: u64,
    /// `tcp.lost` when the newest acknowledged packet was sent (v3
    /// `rs->prior_lost`).
    pub prior_lost: u64,
    /// Whether the newest acknowledged packet was sent while app-limited.
    pub is_app_limited: bool,
    /// Whether the newest acknowledged packet was a retransmission.
    pub is_retrans: bool,
    /// Whether this ACK may have been delayed by the receiver.
    pub is_ack_delayed: bool,
    /// Whether this ACK carried an ECN echo (v3 `is_ece`).
    pub is_ece: bool,
    /// Send time and end sequence of the packet the sample is taken from.
    last_sent: Option<(Instant, u64)>,
}

/// Linux `tcp_rate_skb_sent`: call when a packet is (re)transmitted, after
/// `tcp.packets_out`/`tcp.snd_nxt` account for it. `was_idle` is whether
/// `packets_out` was zero before this send.
pub fn on_send(tcp: &mut Tcp, was_idle: bool, end_seq: u64, is_retrans: bool) -> TxSnapshot {
    if was_idle {
        tcp.first_send_time = tcp.now;
        tcp.delivered_time = tcp.now;
    }
    TxSnapshot {
        send_time: tcp.now,
        first_send_time: tcp.first_send_time,
        delivered_time: Some(tcp.delivered_time),
        delivered: tcp.delivered,
        delivered_ce: tcp.delivered_ce,
        lost: tcp.lost,
        tx_in_flight: tcp.packets_in_flight(),
        is_app_limited: tcp.app_limited != 0,
        is_retrans,
        end_seq,
    }
}

/// Linux `tcp_rate_skb_delivered`: call for each packet newly SACKed or
/// cumulatively ACKed by this ACK, before [`generate`]. `sacked` is true when
/// the packet was selectively (not cumulatively) acknowledged, so that a later
/// cumulative ACK of it does not count it again.
pub fn on_packet_delivered(tcp: &mut Tcp, rs: &mut RateSample, tx: &mut TxSnapshot, sacked: bool) {
    let Some(delivered_time) = tx.delivered_time else {
        return;
    };
    // "Newer" = sent later, ties broken by higher end sequence (tcp_skb_sent_after).
    let newer = match rs.last_sent {
        None => true,
        Some((t, seq)) => tx.send_time > t || (tx.send_time == t && tx.end_seq > seq),
    };
    if rs.prior_time.is_none() || newer {
        rs.prior_delivered = tx.delivered;
        rs.prior_delivered_ce = tx.delivered_ce;
        rs.prior_time = Some(delivered_time);
        rs.is_app_limited = tx.is_app_limited;
        rs.is_retrans = tx.is_retrans;
        rs.tx_in_flight = tx.tx_in_flight;
        rs.prior_lost = tx.lost;
        rs.last_sent = Some((tx.send_time, tx.end_seq));
        tcp.first_send_time = tx.send_time;
        rs.send_elapsed = tx.send_time - tx.first_send_time;
    }
    if sacked {
        tx.delivered_time = None;
    }
}

/// Linux `tcp_rate_gen`: completes `rs` after the transport has added this
/// ACK's newly delivered packets to `tcp.delivered` (`newly_delivered` of
/// them) and its newly lost ones to `tcp.lost` (`newly_lost`). `sack_reneg`
/// invalidates the sample. Returns whether the sample is valid.
pub fn generate(
    tcp: &mut Tcp,
    rs: &mut RateSample,
    newly_delivered: u32,
    newly_lost: u32,
    sack_reneg: bool,
) -> bool {
    // Clear the app-limited marker once the bubble has been ACKed.
    if tcp.app_limited != 0 && tcp.delivered > tcp.app_limited {
        tcp.app_limited = 0;
    }
    if newly_delivered > 0 {
        tcp.delivered_time = tcp.now;
    }
    rs.acked_sacked = newly_delivered;
    rs.losses = newly_lost;
    let Some(prior_time) = rs.prior_time else {
        rs.delivered = None;
        rs.interval = None;
        return false;
    };
    if sack_reneg {
        rs.delivered = None;
        rs.interval = None;
        return false;
    }
    rs.delivered = Some(tcp.delivered.saturating_sub(rs.prior_delivered));
    rs.lost = tcp.lost.saturating_sub(rs.prior_lost);
    rs.delivered_ce = tcp.delivered_ce.saturating_sub(rs.prior_delivered_ce);
    rs.ack_elapsed = tcp.now - prior_time;
    let interval = rs.send_elapsed.max(rs.ack_elapsed);
    // An interval shorter than the path's min RTT is implausible (e.g. a
    // spurious retransmit ACKed at once): Linux drops such samples.
    if tcp.min_rtt.is_some_and(|m| interval < m) {
        rs.interval = None;
        return false;
    }
    rs.interval = Some(interval);
    true
}

/// Linux `tcp_rate_check_app_limited`: call when the application writes, at
/// the start of ACK processing and from timers that may send. Marks the
/// connection app-limited when it has less than one MSS to send, nothing
/// queued below the transport, room in cwnd, and no lost packets waiting for
/// retransmission.
pub fn check_app_limited(tcp: &mut Tcp, unsent_bytes: u64, queued_below: bool) {
    if unsent_bytes < u64::from(tcp.mss)
        && !queued_below
        && tcp.packets_in_flight() < tcp.snd_cwnd
        && tcp.lost_out <= tcp.retrans_out
    {
        tcp.app_limited = (tcp.delivered + u64::from(tcp.packets_in_flight())).max(1);
    }
}

impl RateSample {
    /// Delivery rate in packets per second, if the sample is valid.
    pub fn delivery_rate_pps(&self) -> Option<f64> {
        let (d, i) = (self.delivered?, self.interval?);
        if i.is_zero() {
            return None;
        }
        Some(d as f64 / i.as_secs_f64())
    }
}

#[cfg(test)]
mod tests;
