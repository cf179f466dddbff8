//! `bbrkit conns`' report: one census of the sockets a [`Query`] selects,
//! the summary by algorithm, and one row per socket with every kernel value
//! interpreted — units converted (bits per second, milliseconds, seconds,
//! ratios 0..1), sentinels turned into "no value" (`null`), the CA state and
//! TCP state named — plus the model state of sockets on a BPF congestion
//! control, asked of a [`ModelSource`] (this crate knows no BPF), and the
//! rule of an attached per-connection policy that governs each socket,
//! from a [`RuleSource`] ([`policy`]).
//!
//! Owns the report's schema: its serde form *is* the `--json` document
//! (keys always present, `null` when the kernel did not say). The CLI only
//! renders it. Must never change anything.

use std::collections::HashMap;
use std::net::SocketAddr;

use serde::{Serialize, Serializer};

pub mod policy;

pub use policy::{AttachedPolicy, NoRules, Policies, PolicyRow, PolicySummaryRow, RuleSource};

use crate::summary::{self, AlgoSummary};
use crate::{BbrInfo, DiagError, Family, Filter, Socket, StateSet, TcpInfo, TcpState};

/// `tcpi_ca_state` names, by value (`enum tcp_ca_state`, include/net/tcp.h).
pub const CA_STATES: [&str; 5] = ["open", "disorder", "cwr", "recovery", "loss"];

/// `TCP_INFINITE_SSTHRESH` (include/net/tcp.h): slow start has no threshold yet.
pub const INFINITE_SSTHRESH: u32 = 0x7fff_ffff;

/// Which sockets to report (the `conns` flags).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Query {
    /// Only this algorithm (must be registered: see [`take`]).
    pub cc: Option<String>,
    /// Only sockets with this local or remote port.
    pub port: Option<u16>,
    /// Only these states.
    pub states: StateSet,
}

/// The model state of sockets whose algorithm reports none through
/// sock_diag (a BPF congestion control), by socket.
#[derive(Debug, Clone)]
pub struct Models<M> {
    by_socket: HashMap<(SocketAddr, SocketAddr), M>,
    /// Why some of those sockets have no model state, if they do not.
    pub note: Option<ModelNote>,
}

impl<M> Default for Models<M> {
    fn default() -> Self {
        Models {
            by_socket: HashMap::new(),
            note: None,
        }
    }
}

impl<M> Models<M> {
    /// The models of the sockets `(local, remote)` listed, with `note`.
    pub fn new(
        entries: impl IntoIterator<Item = ((SocketAddr, SocketAddr), M)>,
        note: Option<ModelNote>,
    ) -> Models<M> {
        Models {
            by_socket: entries.into_iter().collect(),
            note,
        }
    }

    /// The model state of `s`, if the source has it.
    pub fn get(&self, s: &Socket) -> Option<&M> {
        self.by_socket.get(&(s.local, s.remote))
    }
}

/// Why model states are missing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelNote {
    /// Nothing could be read (e.g. not root); one line saying why.
    Unreadable(String),
    /// Some sockets that should have a model have none; one line.
    Missing(String),
}

impl std::fmt::Display for ModelNote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ModelNote::Unreadable(s) | ModelNote::Missing(s) => f.write_str(s),
        }
    }
}

/// Where the model state of BPF-CA sockets comes from (bbrkit-bpf's
/// telemetry join; [`NoModels`] when there is none).
pub trait ModelSource {
    /// One socket's model state, as the JSON shows it.
    type Model: Serialize + Clone;
    /// Adds what the census must ask the kernel for (e.g. sk_storage maps
    /// whose values carry the model); nothing by default.
    fn ask(&self, _filter: &mut Filter) {}
    /// The models of those of `socks` it knows.
    fn models(&self, socks: &[Socket]) -> Models<Self::Model>;
}

/// A source that knows no models (a build without BPF).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoModels;

impl ModelSource for NoModels {
    type Model = ();
    fn models(&self, _: &[Socket]) -> Models<()> {
        Models::default()
    }
}

/// The whole report; its serde form is the `--json` document.
#[derive(Debug, Clone, Serialize)]
pub struct Report<M> {
    /// The query, as run.
    pub filter: FilterReport,
    /// One entry per algorithm, most sockets first.
    pub summary: Vec<SummaryRow>,
    /// One row per socket, in kernel order (IPv4 first).
    pub sockets: Vec<SocketRow<M>>,
    /// Why a BPF-CA socket has no `bpf_model` (e.g. not root), else null.
    pub bpf_model_note: Option<String>,
    /// Sockets an attached policy governs, by (cgroup, rule, algorithm);
    /// empty when none does.
    pub policy_summary: Vec<PolicySummaryRow>,
    /// Why an attached policy could not be read (e.g. not root), else null.
    pub policy_note: Option<String>,
}

/// The query in the report.
#[derive(Debug, Clone, Serialize)]
pub struct FilterReport {
    /// `--cc`.
    pub cc: Option<String>,
    /// `--port`.
    pub port: Option<u16>,
    /// Kernel names of the states asked for, in kernel order.
    pub states: Vec<String>,
}

/// One algorithm's sockets, summarised.
#[derive(Debug, Clone, Serialize)]
pub struct SummaryRow {
    /// Algorithm (`null` for sockets without one: TIME_WAIT, request sockets).
    pub cc: Option<String>,
    /// Sockets.
    pub sockets: usize,
    /// Sockets with a smoothed-RTT sample.
    pub rtt_samples: usize,
    /// Median smoothed RTT, ms.
    pub median_rtt_ms: Option<f64>,
    /// Median minimum RTT, ms.
    pub median_min_rtt_ms: Option<f64>,
    /// Sum of the delivery rates that measured the path (app-limited
    /// samples left out), bits/s.
    pub delivery_rate_total_bits_per_second: u64,
    /// Bytes sent, retransmissions included.
    pub bytes_sent: u64,
    /// Bytes retransmitted.
    pub bytes_retrans: u64,
    /// Segments retransmitted over the sockets' lives.
    pub retrans_segments_total: u64,
    /// `bytes_retrans / bytes_sent` (0..1).
    pub retrans_ratio: Option<f64>,
    /// Sockets whose delivery rate the total adds up.
    pub delivery_rate_samples: usize,
    /// Sockets whose latest delivery rate was app-limited (left out of the total).
    pub delivery_rate_app_limited: usize,
}

/// One socket. Keys are always present; `null` means the kernel did not say
/// (no `tcp_info` for TIME_WAIT and request sockets, or an older kernel).
#[derive(Debug, Clone, Serialize)]
pub struct SocketRow<M> {
    /// TCP state (kernel name).
    #[serde(serialize_with = "display")]
    pub state: TcpState,
    /// Algorithm.
    pub cc: Option<String>,
    /// `ipv4` or `ipv6`.
    pub family: &'static str,
    /// Local address.
    #[serde(serialize_with = "display")]
    pub local: SocketAddr,
    /// Remote address.
    #[serde(serialize_with = "display")]
    pub remote: SocketAddr,
    /// Owner uid.
    pub uid: u32,
    /// Socket inode.
    pub inode: u32,
    /// Receive queue, bytes.
    pub recv_queue_bytes: u32,
    /// Send queue, bytes.
    pub send_queue_bytes: u32,
    /// Congestion-avoidance state ([`CA_STATES`], `unknown` past them).
    pub ca_state: Option<&'static str>,
    /// Congestion window, packets.
    pub cwnd: Option<u32>,
    /// Slow-start threshold, packets (`null` while infinite).
    pub ssthresh: Option<u32>,
    /// Sender MSS, bytes.
    pub mss_bytes: Option<u32>,
    /// Smoothed RTT, ms (`null` before the first sample).
    pub rtt_ms: Option<f64>,
    /// RTT variation, ms (with `rtt_ms`).
    pub rttvar_ms: Option<f64>,
    /// Minimum RTT, ms.
    pub min_rtt_ms: Option<f64>,
    /// Retransmission timeout, ms.
    pub rto_ms: Option<f64>,
    /// Pacing rate, bits/s (`null` when unlimited).
    pub pacing_rate_bits_per_second: Option<u64>,
    /// Latest delivery rate, bits/s.
    pub delivery_rate_bits_per_second: Option<u64>,
    /// Whether that rate sample was limited by the application.
    pub delivery_rate_app_limited: Option<bool>,
    /// Packets in flight.
    pub unacked: Option<u32>,
    /// Packets marked lost.
    pub lost: Option<u32>,
    /// Packets retransmitted and unacknowledged.
    pub retrans_current: Option<u32>,
    /// Segments retransmitted over the connection's life.
    pub retrans_total: Option<u32>,
    /// Bytes sent, retransmissions included.
    pub bytes_sent: Option<u64>,
    /// Bytes acknowledged.
    pub bytes_acked: Option<u64>,
    /// Bytes received.
    pub bytes_received: Option<u64>,
    /// Bytes retransmitted.
    pub bytes_retrans: Option<u64>,
    /// `bytes_retrans / bytes_sent`.
    pub retrans_ratio: Option<f64>,
    /// Time with data in flight, s.
    pub busy_s: Option<f64>,
    /// The same, microseconds as the kernel counts it (for the table).
    #[serde(skip)]
    pub busy_us: Option<u64>,
    /// Share of the busy time limited by the peer's receive window.
    pub rwnd_limited_ratio: Option<f64>,
    /// Share of the busy time limited by the send buffer.
    pub sndbuf_limited_ratio: Option<f64>,
    /// Bytes of `tcp_info` the kernel sent.
    pub tcp_info_bytes: Option<usize>,
    /// The kernel BBR's model (`INET_DIAG_BBRINFO`).
    pub bbr: Option<BbrRow>,
    /// Model state of a BPF congestion control (bbr3), from the [`ModelSource`].
    pub bpf_model: Option<M>,
    /// The rule of the attached policy that governs the socket (`null`:
    /// none governs it, or it is not established yet).
    pub policy: Option<PolicyRow>,
    /// Problems decoding this socket.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// The kernel BBR's model of one socket.
#[derive(Debug, Clone, Serialize)]
pub struct BbrRow {
    /// 1 (mainline layout) or the layout's `bbr_version`.
    pub version: u8,
    /// Bandwidth estimate, bits/s.
    pub bw_bits_per_second: u64,
    /// Minimum RTT, ms.
    pub min_rtt_ms: f64,
    /// Pacing gain (1.0 = the estimate).
    pub pacing_gain: f64,
    /// Cwnd gain.
    pub cwnd_gain: f64,
    /// The v3 layout's model bounds.
    pub v3: Option<BbrV3Row>,
}

/// The v3 layout's model fields.
#[derive(Debug, Clone, Serialize)]
pub struct BbrV3Row {
    /// Long-term upper bound on bandwidth, bits/s.
    pub bw_hi_bits_per_second: u64,
    /// Short-term lower bound on bandwidth, bits/s.
    pub bw_lo_bits_per_second: u64,
    /// `bbr_mode`.
    pub mode: u8,
    /// `bbr_phase` (`enum tcp_bbr_phase`).
    pub phase: u8,
    /// Packets.
    pub inflight_lo: u32,
    /// Packets.
    pub inflight_hi: u32,
    /// Packets.
    pub extra_acked: u32,
}

fn display<T: std::fmt::Display, S: Serializer>(v: &T, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(v)
}

/// Takes the census `q` selects in the calling thread's network namespace
/// and builds the report, with BPF-CA models from `source` and the
/// policies' rules from `rules`. A `cc` the kernel has not registered (a
/// typo such as `bbr2`) is refused: no socket can have it. The check is
/// skipped when the list cannot be read.
pub fn take<S: ModelSource, R: RuleSource>(
    q: &Query,
    source: &S,
    rules: &R,
) -> Result<Report<S::Model>, DiagError> {
    if let (Some(cc), Ok(available)) = (&q.cc, crate::algorithms::available())
        && !available.iter().any(|a| a.eq_ignore_ascii_case(cc))
    {
        return Err(DiagError::UnknownAlgorithm {
            name: cc.clone(),
            available,
        });
    }
    let mut filter = Filter {
        states: q.states,
        port: q.port,
        cc: q.cc.clone(),
        ..Filter::default()
    };
    source.ask(&mut filter);
    let socks = crate::census(&filter)?;
    let models = source.models(&socks);
    let policies = rules.policies(&socks);
    Ok(report(q, &socks, &models, &policies))
}

/// The report of `socks` (a census `q` selected) with `models` and the
/// rules of `policies`.
pub fn report<M: Clone>(
    q: &Query,
    socks: &[Socket],
    models: &Models<M>,
    policies: &Policies,
) -> Report<M> {
    let sockets: Vec<SocketRow<M>> = socks
        .iter()
        .map(|s| SocketRow {
            policy: policy::row(policies, s),
            ..socket_row(s, models.get(s).cloned())
        })
        .collect();
    Report {
        policy_summary: policy::summary(sockets.iter().filter_map(|s| s.policy.as_ref())),
        policy_note: policies.note.clone(),
        filter: FilterReport {
            cc: q.cc.clone(),
            port: q.port,
            states: TcpState::all()
                .filter(|s| q.states.contains(*s))
                .map(|s| s.to_string())
                .collect(),
        },
        summary: summary::by_algorithm(socks)
            .iter()
            .map(summary_row)
            .collect(),
        sockets,
        bpf_model_note: models.note.as_ref().map(ToString::to_string),
    }
}

fn us_to_ms(us: impl Into<f64>) -> f64 {
    us.into() / 1000.0
}

fn bits(bytes_per_second: u64) -> u64 {
    bytes_per_second.saturating_mul(8)
}

fn summary_row(s: &AlgoSummary) -> SummaryRow {
    SummaryRow {
        cc: s.cc.clone(),
        sockets: s.sockets,
        rtt_samples: s.rtt_samples,
        median_rtt_ms: s.median_rtt_us.map(us_to_ms),
        median_min_rtt_ms: s.median_min_rtt_us.map(us_to_ms),
        delivery_rate_total_bits_per_second: bits(s.delivery_rate_total),
        bytes_sent: s.bytes_sent,
        bytes_retrans: s.bytes_retrans,
        retrans_segments_total: s.total_retrans,
        retrans_ratio: s.retrans_ratio(),
        delivery_rate_samples: s.delivery_rate_samples,
        delivery_rate_app_limited: s.delivery_rate_app_limited,
    }
}

/// The row of `s`: every `tcp_info` field interpreted.
pub fn socket_row<M>(s: &Socket, bpf_model: Option<M>) -> SocketRow<M> {
    let t = s.tcp_info.as_ref();
    let f = |g: fn(&TcpInfo) -> Option<u32>| t.and_then(g);
    let f64_ = |g: fn(&TcpInfo) -> Option<u64>| t.and_then(g);
    SocketRow {
        state: s.state,
        cc: s.cc.clone(),
        family: match s.family {
            Family::V4 => "ipv4",
            Family::V6 => "ipv6",
        },
        local: s.local,
        remote: s.remote,
        uid: s.uid,
        inode: s.inode,
        recv_queue_bytes: s.recv_queue,
        send_queue_bytes: s.send_queue,
        ca_state: t
            .and_then(|t| t.ca_state)
            .map(|c| CA_STATES.get(usize::from(c)).copied().unwrap_or("unknown")),
        cwnd: f(|t| t.snd_cwnd),
        ssthresh: f(|t| t.snd_ssthresh.filter(|&v| v < INFINITE_SSTHRESH)),
        mss_bytes: f(|t| t.snd_mss),
        rtt_ms: f(TcpInfo::rtt_sample_us).map(us_to_ms),
        rttvar_ms: f(|t| t.rtt_sample_us().and(t.rttvar_us)).map(us_to_ms),
        min_rtt_ms: f(TcpInfo::min_rtt_sample_us).map(us_to_ms),
        rto_ms: f(|t| t.rto_us).map(us_to_ms),
        pacing_rate_bits_per_second: f64_(TcpInfo::pacing_rate_limited).map(bits),
        delivery_rate_bits_per_second: f64_(|t| t.delivery_rate).map(bits),
        delivery_rate_app_limited: t.and_then(|t| t.delivery_rate_app_limited),
        unacked: f(|t| t.unacked),
        lost: f(|t| t.lost),
        retrans_current: f(|t| t.retrans),
        retrans_total: f(|t| t.total_retrans),
        bytes_sent: f64_(|t| t.bytes_sent),
        bytes_acked: f64_(|t| t.bytes_acked),
        bytes_received: f64_(|t| t.bytes_received),
        bytes_retrans: f64_(|t| t.bytes_retrans),
        retrans_ratio: t.and_then(TcpInfo::retrans_ratio),
        busy_s: f64_(|t| t.busy_time_us).map(|v| v as f64 / 1e6),
        busy_us: f64_(|t| t.busy_time_us),
        rwnd_limited_ratio: t.and_then(TcpInfo::rwnd_limited_ratio),
        sndbuf_limited_ratio: t.and_then(TcpInfo::sndbuf_limited_ratio),
        tcp_info_bytes: t.map(|t| t.len),
        bbr: s.bbr.as_ref().map(bbr_row),
        bpf_model,
        policy: None,
        warnings: s.warnings.clone(),
    }
}

fn bbr_row(b: &BbrInfo) -> BbrRow {
    BbrRow {
        version: b.version(),
        bw_bits_per_second: bits(b.bw_bytes_per_second),
        min_rtt_ms: us_to_ms(b.min_rtt_us),
        pacing_gain: b.pacing_gain(),
        cwnd_gain: b.cwnd_gain(),
        v3: b.v3.map(|m| BbrV3Row {
            bw_hi_bits_per_second: bits(m.bw_hi),
            bw_lo_bits_per_second: bits(m.bw_lo),
            mode: m.mode,
            phase: m.phase,
            inflight_lo: m.inflight_lo,
            inflight_hi: m.inflight_hi,
            extra_acked: m.extra_acked,
        }),
    }
}

impl<M> SocketRow<M> {
    /// Whether the row has path measurements to show: a listener's
    /// `tcp_info` holds none.
    pub fn measures_a_path(&self) -> bool {
        self.tcp_info_bytes.is_some() && self.state != TcpState::Listen
    }
}

#[cfg(test)]
#[path = "conns/tests.rs"]
mod tests;
