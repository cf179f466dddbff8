//! The transport's state as a congestion controller sees it: the subset of
//! Linux `struct tcp_sock` / `struct sock` that `tcp_congestion_ops` read and
//! write, with the kernel's names.
//!
//! The transport owns a [`Tcp`], keeps the read-only fields current, and passes
//! it to every controller call. Controllers write only `snd_cwnd`,
//! `snd_ssthresh`, `snd_cwnd_cnt` and `pacing_rate`, and BBR also
//! `app_limited` in PROBE_RTT (as their Linux counterparts do). Counts are
//! in packets (MSS-sized segments), like Linux;
//! sequence numbers are byte offsets from the start of the connection (no wrap).
//!
//! Additions since the first version (additive only; construct with
//! [`Tcp::new`] so new fields get their defaults): `lsndtime` (cc-core, for
//! CUBIC's idle shift), `paced` (cc-core, HyStart), `ecn_low`,
//! `departure_time` (bbr helpers).

use crate::time::{Duration, Instant};

/// Linux `TCP_INIT_CWND`: the initial congestion window, in packets (RFC 6928).
pub const TCP_INIT_CWND: u32 = 10;

/// Linux `TCP_INFINITE_SSTHRESH`: "no slow-start threshold yet".
pub const TCP_INFINITE_SSTHRESH: u32 = 0x7fff_ffff;

/// Linux `sk_pacing_shift` default (`net.ipv4.tcp_pacing_shift` absent;
/// `sk->sk_pacing_shift = 10` in `tcp_init_sock`): TSO autosizing aims for
/// about 1 ms (2^-10 s) of data per skb.
pub const DEFAULT_PACING_SHIFT: u8 = 10;

/// Linux `enum tcp_ca_state` (`include/net/tcp.h`), the loss-recovery state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub enum CaState {
    /// No loss suspected.
    #[default]
    Open,
    /// Duplicate ACKs or SACKs seen, no reduction yet.
    Disorder,
    /// The window is being reduced after an ECN echo (or local congestion).
    Cwr,
    /// Fast recovery after loss detected by SACK/dupACK/RACK.
    Recovery,
    /// Retransmission timeout: everything in flight is presumed lost.
    Loss,
}

/// Linux `enum tcp_ca_event`: events the transport reports through
/// [`crate::CongestionControl::cwnd_event`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CaEvent {
    /// First transmission when no packet was in flight (`CA_EVENT_TX_START`).
    TxStart,
    /// Congestion window restart after idle (`CA_EVENT_CWND_RESTART`).
    CwndRestart,
    /// End of a CWR period (`CA_EVENT_COMPLETE_CWR`).
    CompleteCwr,
    /// Retransmission timeout fired (`CA_EVENT_LOSS`).
    Loss,
    /// ECN: an ACK without a CE echo after ones with (`CA_EVENT_ECN_NO_CE`).
    EcnNoCe,
    /// ECN: an ACK echoing CE (`CA_EVENT_ECN_IS_CE`).
    EcnIsCe,
    /// A tail-loss probe repaired a loss (google/bbr v3
    /// `CA_EVENT_TLP_RECOVERY`; `tcp.tlp_orig_data_app_limited` says
    /// whether the probed data was sent app-limited).
    TlpRecovery,
}

/// Linux `struct ack_sample`, passed to `pkts_acked` once per ACK that
/// cumulatively or selectively acknowledged new data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AckSample {
    /// Packets newly acknowledged by this ACK.
    pub pkts_acked: u32,
    /// RTT measured from this ACK, if any (Karn's rule applied by the transport).
    pub rtt: Option<Duration>,
    /// Packets in flight before this ACK was processed.
    pub in_flight: u32,
}

/// The transport state a controller reads and writes (Linux `tcp_sock` subset).
#[derive(Debug, Clone, PartialEq)]
pub struct Tcp {
    /// Current time (`tp->tcp_mstamp`), set by the transport before each call.
    pub now: Instant,
    /// Maximum segment size in bytes (`tp->mss_cache`).
    pub mss: u32,

    /// Congestion window in packets (`tp->snd_cwnd`). Written by controllers.
    pub snd_cwnd: u32,
    /// Slow-start threshold in packets (`tp->snd_ssthresh`). Written by controllers.
    pub snd_ssthresh: u32,
    /// Linear-increase counter (`tp->snd_cwnd_cnt`, used by `tcp_cong_avoid_ai`).
    pub snd_cwnd_cnt: u32,
    /// Upper bound on `snd_cwnd` (`tp->snd_cwnd_clamp`).
    pub snd_cwnd_clamp: u32,
    /// The raw `tp->is_cwnd_limited` the transport keeps in
    /// `tcp_cwnd_validate`: the last window of sends was limited by cwnd.
    /// BBRv3 reads this flag itself; Reno and CUBIC ask
    /// [`Tcp::tcp_is_cwnd_limited`], which adds the slow-start clause.
    pub is_cwnd_limited: bool,
    /// Whether the data a tail-loss probe retransmitted had been sent
    /// app-limited (google/bbr v3 `tp->tlp_orig_data_app_limited`).
    pub tlp_orig_data_app_limited: bool,
    /// Most packets out during the last window of sends
    /// (`tp->max_packets_out`, kept in `tcp_cwnd_validate`).
    pub max_packets_out: u32,
    /// cwnd when the current reduction began (`tp->prior_cwnd`, set by the
    /// transport in `tcp_init_cwnd_reduction`); the undo target.
    pub prior_cwnd: u32,

    /// Packets sent and not yet cumulatively acknowledged (`tp->packets_out`).
    pub packets_out: u32,
    /// Packets selectively acknowledged (`tp->sacked_out`).
    pub sacked_out: u32,
    /// Packets marked lost (`tp->lost_out`).
    pub lost_out: u32,
    /// Retransmitted packets in flight (`tp->retrans_out`).
    pub retrans_out: u32,

    /// Highest sequence number sent + 1 (`tp->snd_nxt`), in bytes.
    pub snd_nxt: u64,
    /// Lowest unacknowledged sequence number (`tp->snd_una`), in bytes.
    pub snd_una: u64,

    /// Packets delivered so far, including SACKed ones (`tp->delivered`).
    pub delivered: u64,
    /// Packets delivered that carried an ECN CE mark (`tp->delivered_ce`).
    pub delivered_ce: u64,
    /// Packets marked lost so far (`tp->lost`).
    pub lost: u64,
    /// When `delivered` last changed (`tp->delivered_mstamp`).
    pub delivered_time: Instant,
    /// Send time of the most recently delivered packet (`tp->first_tx_mstamp`).
    pub first_send_time: Instant,
    /// 0, or the `delivered` count at which the current app-limited period
    /// ends (`tp->app_limited`).
    pub app_limited: u64,

    /// Smoothed RTT (`tp->srtt_us >> 3`); zero before the first sample.
    pub srtt: Duration,
    /// RTT variation (`tp->mdev_us >> 2`); zero before the first sample.
    pub rttvar: Duration,
    /// Long-window (300 s) minimum RTT (`tcp_min_rtt(tp)`); `None` before the first sample.
    pub min_rtt: Option<Duration>,

    /// When data was last sent (`tp->lsndtime`). The transport updates it
    /// after each data send, *after* raising [`CaEvent::TxStart`], so CUBIC
    /// can measure the idle time that TxStart ends.
    pub lsndtime: Instant,

    /// Loss-recovery state (`icsk_ca_state`).
    pub ca_state: CaState,
    /// Whether ECN was negotiated on this connection.
    pub ecn_enabled: bool,
    /// Whether the route says CE marks are shallow-threshold (DCTCP/L4S-style)
    /// ECN (Linux `tp->ecn_flags & TCP_ECN_LOW`, from the route feature
    /// `ecn_low`). BBRv3 uses ECN only when this and `ecn_enabled` are set.
    pub ecn_low: bool,

    /// Pacing rate in bytes per second (`sk->sk_pacing_rate`). Written by
    /// controllers that pace (BBR), or by [`crate::pacing::tcp_update_pacing_rate`].
    pub pacing_rate: u64,
    /// Upper bound on the pacing rate (`sk->sk_max_pacing_rate`), bytes per second.
    pub max_pacing_rate: u64,
    /// TSO autosizing shift (`sk->sk_pacing_shift`).
    pub pacing_shift: u8,
    /// Whether the transport paces this connection at `pacing_rate` (Linux
    /// `sk->sk_pacing_status != SK_PACING_NONE`: fq, or TCP internal pacing
    /// requested by BBR). CUBIC's HyStart ACK-train threshold depends on it.
    pub paced: bool,
    /// Earliest departure time of the next data packet (`tp->tcp_wstamp_ns`),
    /// kept by a pacing transport. At or before `now` when nothing is
    /// scheduled ahead; BBRv1 uses it to estimate the packets still "in the
    /// network" when the next packet leaves (`bbr_packets_in_net_at_edt`).
    pub departure_time: Instant,
}

impl Tcp {
    /// A fresh connection state at `now` with the given MSS, initial window
    /// [`TCP_INIT_CWND`], no ssthresh, and no RTT sample yet.
    pub fn new(now: Instant, mss: u32) -> Self {
        Tcp {
            now,
            mss,
            snd_cwnd: TCP_INIT_CWND,
            snd_ssthresh: TCP_INFINITE_SSTHRESH,
            snd_cwnd_cnt: 0,
            snd_cwnd_clamp: u32::MAX,
            is_cwnd_limited: false,
            max_packets_out: 0,
            tlp_orig_data_app_limited: false,
            prior_cwnd: 0,
            packets_out: 0,
            sacked_out: 0,
            lost_out: 0,
            retrans_out: 0,
            snd_nxt: 0,
            snd_una: 0,
            delivered: 0,
            delivered_ce: 0,
            lost: 0,
            delivered_time: now,
            first_send_time: now,
            app_limited: 0,
            srtt: Duration::ZERO,
            rttvar: Duration::ZERO,
            min_rtt: None,
            lsndtime: now,
            ca_state: CaState::Open,
            ecn_enabled: false,
            ecn_low: false,
            pacing_rate: 0,
            max_pacing_rate: u64::MAX,
            pacing_shift: DEFAULT_PACING_SHIFT,
            paced: false,
            departure_time: now,
        }
    }

    /// Linux `tcp_packets_in_flight`: `packets_out - left_out + retrans_out`,
    /// where `left_out = sacked_out + lost_out`.
    pub fn packets_in_flight(&self) -> u32 {
        (self.packets_out + self.retrans_out).saturating_sub(self.sacked_out + self.lost_out)
    }

    /// Linux `tcp_in_slow_start`: `snd_cwnd < snd_ssthresh`.
    pub fn in_slow_start(&self) -> bool {
        self.snd_cwnd < self.snd_ssthresh
    }

    /// Linux `tcp_is_cwnd_limited`: the raw flag, or in slow start while
    /// cwnd is below twice the packets out ("don't increase cwnd when not
    /// cwnd-limited, but allow slow start to double").
    pub fn tcp_is_cwnd_limited(&self) -> bool {
        if self.is_cwnd_limited {
            return true;
        }
        self.in_slow_start() && self.snd_cwnd < 2 * self.max_packets_out
    }

    /// Linux `tcp_snd_cwnd_set` semantics, clamped to `[1, snd_cwnd_clamp]`.
    pub fn set_cwnd(&mut self, cwnd: u32) {
        self.snd_cwnd = cwnd.clamp(1, self.snd_cwnd_clamp.max(1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_flight_follows_linux_formula() {
        let mut t = Tcp::new(Instant::ZERO, 1448);
        t.packets_out = 20;
        t.sacked_out = 5;
        t.lost_out = 3;
        t.retrans_out = 2;
        assert_eq!(t.packets_in_flight(), 14);
        t.sacked_out = 30;
        assert_eq!(t.packets_in_flight(), 0, "saturates instead of wrapping");
    }

    #[test]
    fn cwnd_is_clamped() {
        let mut t = Tcp::new(Instant::ZERO, 1448);
        t.snd_cwnd_clamp = 100;
        t.set_cwnd(0);
        assert_eq!(t.snd_cwnd, 1);
        t.set_cwnd(1000);
        assert_eq!(t.snd_cwnd, 100);
        assert!(t.in_slow_start());
    }
}
