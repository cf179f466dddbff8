//! Results of a run: per-flow and per-link figures in SI units with the unit
//! in the name (as the JSON contract wants), Jain's fairness index, and the
//! time-series rows handed to the caller while the run goes.

use serde::Serialize;

use crate::histogram::Histogram;

/// Three percentiles in milliseconds: bbrkit's one percentile summary.
pub use bbrkit_vocab::{Percentiles, jain_index};

/// The percentiles of a histogram of nanoseconds; `None` if it is empty.
pub fn percentiles_ms(h: &Histogram) -> Option<Percentiles> {
    let ms = |q| h.quantile(q).map(|v| v as f64 / 1e6);
    Some(Percentiles {
        p50: ms(0.5)?,
        p95: ms(0.95)?,
        p99: ms(0.99)?,
    })
}

/// What one flow achieved.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FlowReport {
    /// Flow index.
    pub flow: u32,
    /// Algorithm name (`reno`, `cubic`, `bbr1`, `bbr2`, `bbr3`).
    pub cc: &'static str,
    /// Start time, seconds.
    pub start_s: f64,
    /// Bytes the flow had to send (`None` = bulk).
    pub size_bytes: Option<u64>,
    /// Payload bytes delivered in order to the receiving application.
    pub bytes_delivered: u64,
    /// Goodput over the flow's active time, bits per second.
    pub bits_per_second: f64,
    /// Retransmitted packets.
    pub retransmits: u64,
    /// Data packets sent, retransmissions included.
    pub packets_sent: u64,
    /// Fraction of sent packets the network dropped (queue + random loss).
    pub loss: f64,
    /// Packets dropped by the full bottleneck buffer.
    pub queue_drops: u64,
    /// Packets dropped by the random loss model.
    pub random_drops: u64,
    /// Retransmission timeouts.
    pub rtos: u64,
    /// Fast-recovery episodes.
    pub recoveries: u64,
    /// Packets the bottleneck CE-marked (only with ECN on).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ce_marks: Option<u64>,
    /// Tail-loss probes sent (only when the flow sent any).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tlps: Option<u64>,
    /// RTT percentiles over per-ACK samples, milliseconds.
    pub rtt_ms: Option<Percentiles>,
    /// Flow completion time (finite flows that finished), seconds from start.
    pub fct_s: Option<f64>,
    /// Share of the sum of all flows' goodput (0..1).
    pub share: f64,
    /// Goodput relative to the first algorithm on the same condition (set by callers).
    pub ratio: Option<f64>,
    /// The BBRv2/v3 model's event counters (bbr2 and bbr3 flows only):
    /// the set the BPF bbr3 keeps per socket, for lab-vs-sim comparisons.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bbr_counters: Option<bbrkit_cc::bbr3::Counters>,
}

/// What the bottleneck did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LinkReport {
    /// Link rate, bits per second.
    pub bits_per_second: u64,
    /// Buffer limit, bytes.
    pub buffer_bytes: u64,
    /// Fraction of the run the link was busy (0..1).
    pub utilization: f64,
    /// Queueing delay (sojourn before serialization) percentiles, milliseconds.
    pub queue_delay_ms: Option<Percentiles>,
    /// Mean queueing delay, milliseconds.
    pub queue_delay_mean_ms: Option<f64>,
    /// Packets dropped because the buffer was full.
    pub drops: u64,
    /// Largest backlog, bytes.
    pub max_queue_bytes: u64,
    /// Packets dropped by random loss after the link.
    pub random_drops: u64,
}

/// Everything one run produced.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunReport {
    /// Simulated time actually run, seconds.
    pub duration_s: f64,
    /// Per-flow results.
    pub flows: Vec<FlowReport>,
    /// The bottleneck.
    pub link: LinkReport,
    /// Jain's fairness index over the flows' goodputs (1 = perfectly fair).
    pub jain_index: f64,
    /// Events processed (a cost measure, not a result).
    pub events: u64,
}

/// One time-series sample of one flow.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TraceRow {
    /// Simulated time, seconds.
    pub time_s: f64,
    /// Flow index.
    pub flow: u32,
    /// Algorithm name.
    pub cc: &'static str,
    /// New data arriving at the receiver (first copies, in order or not)
    /// over the last interval, bits per second.
    pub throughput_bps: f64,
    /// Data delivered in order to the application over the last interval,
    /// bits per second (jumps when a retransmission fills a hole).
    pub goodput_bps: f64,
    /// Congestion window, packets.
    pub cwnd_pkts: u32,
    /// Packets in flight (Linux `tcp_packets_in_flight`).
    pub inflight_pkts: u32,
    /// Pacing rate, bits per second (0 = not pacing).
    pub pacing_rate_bps: f64,
    /// Latest delivery-rate sample, bits per second.
    pub delivery_rate_bps: Option<f64>,
    /// Smoothed RTT, milliseconds.
    pub srtt_ms: f64,
    /// Controller's bandwidth estimate, bits per second (BBR).
    pub bw_estimate_bps: Option<f64>,
    /// Controller state (`slow_start`, `startup`, `probe_rtt`, ...).
    pub state: &'static str,
    /// Loss-recovery state (`open`, `disorder`, `recovery`, `loss`).
    pub ca_state: &'static str,
    /// Bottleneck backlog, bytes.
    pub queue_bytes: u64,
}
