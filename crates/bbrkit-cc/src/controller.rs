//! The controller interface, shaped like Linux `struct tcp_congestion_ops`.
//!
//! The transport (the simulator, or any userspace TCP-like sender) calls:
//!
//! ```text
//!  per ACK ─┬─ rate::on_packet_delivered for each newly (S)ACKed packet
//!           ├─ pkts_acked(tcp, sample)              every ACK (sample.rtt None if no RTT)
//!           ├─ skb_marked_lost(tcp, tx, 1)          per packet newly marked lost (v3 hook)
//!           ├─ [ssthresh(tcp), set_state(tcp, Recovery|Cwr|Open)]  recovery entry/exit
//!           ├─ rate::generate
//!           └─ tcp_cong_control:
//!                 has_cong_control()? ── yes ──► cong_control(tcp, rate_sample)      (BBR)
//!                        │ no
//!                        ├─ Recovery/CWR? ──► transport runs PRR (RFC 6937)          (Reno, CUBIC)
//!                        ├─ else snd_una advanced? ──► cong_avoid(tcp, ack, acked)
//!                        └─ then pacing::tcp_update_pacing_rate(tcp)
//!  on RTO ──────────────────► ssthresh(tcp), cwnd_event(Loss), cwnd = in_flight + 1, set_state(Loss)
//!  on spurious recovery ────► undo_cwnd(tcp)
//!  on send, nothing in flight ► cwnd_event(TxStart)  (after CwndRestart for cong_avoid controllers)
//! ```
//!
//! `set_state` is called before `tcp.ca_state` changes, `ssthresh` before
//! `set_state`, as in Linux. `docs/cc.md` has the full transport contract.
//!
//! [`crate::transport::Sender`] is the complete, tested implementation of this order.
//!
//! Additions since the first version (additive, default no-op):
//! `skb_marked_lost` (google/bbr v3 `ops->skb_marked_lost`).
//!
//! Outputs live in [`Tcp`]: `snd_cwnd`, `snd_ssthresh` and (for controllers
//! that pace) `pacing_rate`; [`CongestionControl::tso_segs`] gives the send
//! quantum; [`CongestionControl::status`] the state for tracing.

use crate::rate::{RateSample, TxSnapshot};
use crate::tcp::{AckSample, CaEvent, CaState, Tcp};
use crate::time::Duration;

/// A snapshot of a controller's model for tracing, `bbrkit sim --timeseries`
/// and `tcp_bbr_info`-like reports. Fields a controller does not have are `None`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Status {
    /// State machine state, e.g. `"slow_start"`, `"startup"`, `"probe_bw_up"`.
    pub state: &'static str,
    /// Bottleneck bandwidth estimate, bits per second.
    pub bw_bps: Option<u64>,
    /// The controller's min RTT estimate.
    pub min_rtt: Option<Duration>,
    /// Current pacing gain (1.0 = pace at the bandwidth estimate).
    pub pacing_gain: Option<f64>,
    /// Current cwnd gain.
    pub cwnd_gain: Option<f64>,
    /// BBRv2/v3 long-term inflight bound (`inflight_hi`), packets.
    pub inflight_hi: Option<u32>,
    /// BBRv2/v3 short-term inflight bound (`inflight_lo`), packets.
    pub inflight_lo: Option<u32>,
    /// BBRv2/v3 short-term bandwidth bound (`bw_lo`), bits per second.
    pub bw_lo_bps: Option<u64>,
    /// BBRv1 long-term (policer) bandwidth in use, bits per second.
    pub lt_bw_bps: Option<u64>,
}

/// A TCP congestion controller (Linux `struct tcp_congestion_ops`).
///
/// Construction corresponds to `ops->init`. Every method receives the
/// transport state `tcp` with `tcp.now` set to the current time.
pub trait CongestionControl {
    /// The kernel's name for the algorithm (`"reno"`, `"cubic"`, `"bbr"`, ...).
    fn name(&self) -> &'static str;

    /// Whether this controller implements `cong_control` (owns cwnd and
    /// pacing on every ACK, like BBR) rather than `cong_avoid`.
    fn has_cong_control(&self) -> bool {
        false
    }

    /// `ops->cong_control`: called once per ACK with its rate sample.
    fn cong_control(&mut self, _tcp: &mut Tcp, _rs: &RateSample) {}

    /// `ops->cong_avoid`: grow cwnd on an ACK outside cwnd reduction.
    /// `ack` is the cumulative ACK (bytes), `acked` the packets newly (S)ACKed.
    fn cong_avoid(&mut self, _tcp: &mut Tcp, _ack: u64, _acked: u32) {}

    /// `ops->pkts_acked`: per-ACK timing information (HyStart uses it).
    fn pkts_acked(&mut self, _tcp: &mut Tcp, _sample: &AckSample) {}

    /// `ops->ssthresh`: the slow-start threshold to use on entering
    /// recovery or loss, in packets.
    fn ssthresh(&mut self, tcp: &mut Tcp) -> u32;

    /// `ops->undo_cwnd`: the cwnd to restore after a spurious reduction.
    fn undo_cwnd(&mut self, tcp: &mut Tcp) -> u32;

    /// `ops->set_state`: the transport changed `ca_state` to `new_state`
    /// (called before `tcp.ca_state` is updated, as in Linux).
    fn set_state(&mut self, _tcp: &mut Tcp, _new_state: CaState) {}

    /// `ops->cwnd_event`.
    fn cwnd_event(&mut self, _tcp: &mut Tcp, _event: CaEvent) {}

    /// `ops->skb_marked_lost` (google/bbr v3; not in mainline): the
    /// transport has just marked a packet lost (first time, or a lost
    /// retransmission) and added it to `tcp.lost`. `tx` is the snapshot of
    /// its last transmission; `pcount` its size in packets. Called during
    /// ACK processing before `cong_control`, and on RTO for every packet
    /// marked. Default: nothing (Reno, CUBIC, BBRv1).
    fn skb_marked_lost(&mut self, _tcp: &mut Tcp, _tx: &TxSnapshot, _pcount: u32) {}

    /// `ops->tso_segs` / `min_tso_segs`: how many packets to send in one
    /// burst (the send quantum); `None` = the transport's default autosizing.
    fn tso_segs(&self, _tcp: &Tcp) -> Option<u32> {
        None
    }

    /// The controller's state for tracing.
    fn status(&self, tcp: &Tcp) -> Status;
}
