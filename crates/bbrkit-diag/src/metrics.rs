//! `bbrkit metrics`: every metric family bbrkit publishes, in one place —
//! host facts (`bbrkit_info`, root qdiscs), sockets by algorithm and state
//! with min-RTT and delivery-rate histograms, BPF registrations, the BBR
//! model's states and bandwidth estimates, the TCP counters that decide a
//! BBR-vs-CUBIC argument, and the `verify` checks.
//!
//! Owns the metric names, help texts, units and buckets (base units:
//! seconds, bytes), the aggregation of sockets into low-cardinality series
//! (`cc`, `state`; never one per socket) and the `--json` form of an
//! exposition. Reads nothing: the inputs come as plain values ([`Inputs`]:
//! `bbrkit-host` gathers the host facts, the `verify` checks and the BPF
//! registrations and feeds the census through [`SocketStats`] and
//! [`ModelStats`]), so every family is tested on fixtures.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::model::BbrState;
use crate::nstat::Counters;
use crate::prom::{Exposition, Histogram, MetricType};
use crate::qdisc::InterfaceQdisc;
use crate::{BbrInfo, DiagError, Socket, TcpState};

mod policy;

pub use policy::{PolicyArm, PolicyForeign, PolicyStats};

/// Upper bounds of the min-RTT histogram, seconds (100 µs to 2.5 s).
pub const MIN_RTT_BUCKETS_S: [f64; 14] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
];

/// Upper bounds of the delivery-rate histogram, bytes per second: one per
/// decade of bit rate, 100 kbit/s to 100 Gbit/s.
pub const DELIVERY_RATE_BUCKETS: [f64; 7] =
    [12_500.0, 125_000.0, 1.25e6, 1.25e7, 1.25e8, 1.25e9, 1.25e10];

/// Label value for sockets without an algorithm (TIME_WAIT, request sockets).
pub const NO_CC: &str = "none";

/// The TCP counters exported, as (nstat name, metric name, help).
pub const TCP_COUNTERS: [(&str, &str, &str); 8] = [
    (
        "TcpOutSegs",
        "bbrkit_tcp_segments_sent_total",
        "TCP segments sent, including retransmissions and pure ACKs (TcpOutSegs).",
    ),
    (
        "TcpExtTCPOrigDataSent",
        "bbrkit_tcp_original_data_segments_sent_total",
        "TCP data segments sent excluding retransmissions (TcpExtTCPOrigDataSent): the denominator of the retransmission rate.",
    ),
    (
        "TcpRetransSegs",
        "bbrkit_tcp_retransmitted_segments_total",
        "TCP segments retransmitted (TcpRetransSegs).",
    ),
    (
        "TcpExtTCPLostRetransmit",
        "bbrkit_tcp_lost_retransmits_total",
        "Retransmissions that were lost again (TcpExtTCPLostRetransmit).",
    ),
    (
        "TcpExtTCPTimeouts",
        "bbrkit_tcp_timeouts_total",
        "Retransmission timeouts (TcpExtTCPTimeouts).",
    ),
    (
        "TcpExtTCPSynRetrans",
        "bbrkit_tcp_syn_retransmits_total",
        "SYN and SYN-ACK retransmissions (TcpExtTCPSynRetrans).",
    ),
    (
        "TcpExtTCPFastRetrans",
        "bbrkit_tcp_fast_retransmits_total",
        "Fast retransmissions (TcpExtTCPFastRetrans).",
    ),
    (
        "TcpExtTCPSpuriousRtxHostQueues",
        "bbrkit_tcp_spurious_host_queue_retransmits_total",
        "Retransmissions skipped because the original was still in a local queue (TcpExtTCPSpuriousRtxHostQueues).",
    ),
];

/// Socket aggregates for the exposition, fed one socket at a time (so an
/// exporter can use [`crate::census_each`] and never hold every socket).
#[derive(Debug, Clone, Default)]
pub struct SocketStats {
    counts: BTreeMap<(String, TcpState), usize>,
    rtt: BTreeMap<String, Histogram>,
    rate: BTreeMap<String, Histogram>,
    bbr_version: Option<u8>,
}

impl SocketStats {
    /// Counts `s`.
    pub fn observe(&mut self, s: &Socket) {
        let cc = s.cc.as_deref().unwrap_or(NO_CC);
        *self.counts.entry((cc.to_string(), s.state)).or_default() += 1;
        if self.bbr_version.is_none() {
            self.bbr_version = s.bbr.as_ref().map(BbrInfo::version);
        }
        let Some(t) = &s.tcp_info else { return };
        if let Some(us) = t.min_rtt_sample_us() {
            entry(&mut self.rtt, cc, &MIN_RTT_BUCKETS_S).observe(f64::from(us) / 1e6);
        }
        if let Some(r) = t.delivery_rate.filter(|&r| r > 0) {
            entry(&mut self.rate, cc, &DELIVERY_RATE_BUCKETS).observe(r as f64);
        }
    }

    /// Number of sockets observed.
    pub fn sockets(&self) -> usize {
        self.counts.values().sum()
    }

    /// BBR version of the first BBR socket with BBR info (see [`BbrInfo::version`]).
    pub fn bbr_version(&self) -> Option<u8> {
        self.bbr_version
    }
}

/// Upper bounds of the bandwidth-estimate histogram, bytes per second (as
/// the delivery-rate histogram: one per decade, 100 kbit/s to 100 Gbit/s).
pub const BW_BUCKETS: [f64; 7] = DELIVERY_RATE_BUCKETS;

/// BBR model state aggregated by algorithm: how many sockets of each
/// BBR-family algorithm (the kernel's `bbr`, bbrkit's BPF `bbr3`) are in
/// each state of the model, and a histogram of their bandwidth estimates.
/// The BPF bbr3's state comes from its telemetry; the caller converts it
/// (this crate does not know BPF).
#[derive(Debug, Clone, Default)]
pub struct ModelStats {
    states: BTreeMap<(String, BbrState), usize>,
    bw: BTreeMap<String, Histogram>,
}

impl ModelStats {
    /// Counts one socket of algorithm `cc` in `state` with bandwidth
    /// estimate `bw_bytes_per_second` (0: none yet, not observed).
    pub fn observe(&mut self, cc: &str, state: BbrState, bw_bytes_per_second: u64) {
        *self.states.entry((cc.to_string(), state)).or_default() += 1;
        if bw_bytes_per_second > 0 {
            entry(&mut self.bw, cc, &BW_BUCKETS).observe(bw_bytes_per_second as f64);
        }
    }

    /// Counts a socket whose model the kernel reported (`INET_DIAG_BBRINFO`).
    pub fn observe_kernel(&mut self, cc: &str, info: &BbrInfo) {
        self.observe(cc, BbrState::of(info), info.bw_bytes_per_second);
    }

    /// Sockets counted.
    pub fn sockets(&self) -> usize {
        self.states.values().sum()
    }
}

/// The host facts of `bbrkit_info`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostInfo {
    /// Kernel release.
    pub kernel: String,
    /// Default congestion control of this network namespace.
    pub default_cc: Option<String>,
    /// `net.core.default_qdisc` (none outside the initial namespace).
    pub default_qdisc: Option<String>,
    /// BBR version (`/sys/module/tcp_bbr/version`, else a live BBR socket's
    /// layout, else a probe's), `unknown` when BBR is not available.
    pub bbr_version: String,
}

/// A BPF congestion control bbrkit ships, as registered now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BpfRegistration {
    /// The algorithm (`bbr3`).
    pub cc: String,
    /// Listed in `tcp_available_congestion_control`.
    pub registered: bool,
    /// Held by bbrkit's pinned link.
    pub by_bbrkit: bool,
}

/// One `bbrkit verify` check's outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifyCheck {
    /// Check name (`sysctl`, `sockets`, ...).
    pub name: String,
    /// What was measured.
    pub key: String,
    /// Passed.
    pub ok: bool,
}

/// Everything an exposition is made of, read once.
#[derive(Debug, Clone, Default)]
pub struct Inputs {
    /// Host facts.
    pub host: HostInfo,
    /// Every interface's root qdisc.
    pub interfaces: Vec<InterfaceQdisc>,
    /// Sockets by algorithm and state.
    pub sockets: SocketStats,
    /// BPF congestion controls bbrkit ships.
    pub bpf: Vec<BpfRegistration>,
    /// BBR model states.
    pub models: ModelStats,
    /// TCP counters (`/proc/net/snmp`, `/proc/net/netstat`).
    pub counters: Counters,
    /// The `verify` checks and whether all passed; `None` when they did not
    /// run (both families are then written without samples).
    pub verify: Option<(Vec<VerifyCheck>, bool)>,
    /// The attached policies' per-rule, per-arm counters (the family is
    /// written only when a policy is attached).
    pub policy: Vec<PolicyArm>,
    /// The attached policies' global counters.
    pub policy_stats: Vec<PolicyStats>,
    /// Other sock_ops programs around each recorded policy's cgroup.
    pub policy_foreign: Vec<PolicyForeign>,
    /// What went wrong on the way without stopping the exposition (one
    /// line each, for stderr).
    pub warnings: Vec<String>,
}

/// Writes every family of `inputs`, in the published order.
pub fn exposition(inputs: &Inputs) -> Result<Exposition, DiagError> {
    let mut e = Exposition::new();
    write_host(&mut e, &inputs.host, &inputs.interfaces)?;
    write_sockets(&mut e, &inputs.sockets)?;
    write_bpf(&mut e, &inputs.bpf)?;
    write_models(&mut e, &inputs.models)?;
    write_tcp_counters(&mut e, &inputs.counters)?;
    write_verify(&mut e, inputs.verify.as_ref())?;
    policy::write_arms(&mut e, &inputs.policy)?;
    policy::write_stats(&mut e, &inputs.policy_stats)?;
    policy::write_foreign(&mut e, &inputs.policy_foreign)?;
    Ok(e)
}

fn write_host(
    e: &mut Exposition,
    h: &HostInfo,
    interfaces: &[InterfaceQdisc],
) -> Result<(), DiagError> {
    e.family(
        "bbrkit_info",
        MetricType::Gauge,
        "Host congestion-control facts: default algorithm, default qdisc, BBR version, kernel (value 1).",
    )?;
    e.sample(
        &[
            ("default_cc", h.default_cc.as_deref().unwrap_or("unknown")),
            (
                "default_qdisc",
                h.default_qdisc.as_deref().unwrap_or("unknown"),
            ),
            ("bbr_version", &h.bbr_version),
            ("kernel", &h.kernel),
        ],
        1.0,
    )?;
    e.family(
        "bbrkit_interface_root_qdisc_info",
        MetricType::Gauge,
        "Root qdisc of each network interface (value 1); effective is the leaf kind under mq.",
    )?;
    for i in interfaces {
        e.sample(
            &[
                ("dev", &i.name),
                ("kind", &i.root),
                ("effective", i.effective()),
            ],
            1.0,
        )?;
    }
    Ok(())
}

/// `bbrkit_sockets{cc,state}` and the two histograms by `cc`.
fn write_sockets(e: &mut Exposition, st: &SocketStats) -> Result<(), DiagError> {
    by_cc_and_state(
        e,
        "bbrkit_sockets",
        "TCP sockets by congestion-control algorithm and state.",
        st.counts.iter().map(|((cc, s), n)| (cc, s.name(), *n)),
    )?;
    histograms_by_cc(
        e,
        "bbrkit_socket_min_rtt_seconds",
        "Minimum RTT (tcpi_min_rtt) of TCP sockets with an RTT sample, by algorithm.",
        &st.rtt,
    )?;
    histograms_by_cc(
        e,
        "bbrkit_socket_delivery_rate_bytes_per_second",
        "Latest delivery rate (tcpi_delivery_rate) of TCP sockets that delivered data, by algorithm.",
        &st.rate,
    )
}

/// A gauge family of socket counts labelled `cc` and `state`.
fn by_cc_and_state<'a>(
    e: &mut Exposition,
    name: &str,
    help: &str,
    counts: impl Iterator<Item = (&'a String, &'static str, usize)>,
) -> Result<(), DiagError> {
    e.family(name, MetricType::Gauge, help)?;
    for (cc, state, n) in counts {
        e.sample(&[("cc", cc), ("state", state)], n as f64)?;
    }
    Ok(())
}

/// A histogram family with one histogram per `cc`.
fn histograms_by_cc(
    e: &mut Exposition,
    name: &str,
    help: &str,
    by_cc: &BTreeMap<String, Histogram>,
) -> Result<(), DiagError> {
    e.family(name, MetricType::Histogram, help)?;
    for (cc, h) in by_cc {
        e.histogram(&[("cc", cc)], h)?;
    }
    Ok(())
}

/// `bbrkit_bpf_registered{cc}` and `bbrkit_bpf_registered_by_bbrkit{cc}`.
fn write_bpf(e: &mut Exposition, regs: &[BpfRegistration]) -> Result<(), DiagError> {
    let one = |b: bool| if b { 1.0 } else { 0.0 };
    e.family(
        "bbrkit_bpf_registered",
        MetricType::Gauge,
        "1 when the BPF congestion control is registered (listed in tcp_available_congestion_control), else 0.",
    )?;
    for r in regs {
        e.sample(&[("cc", &r.cc)], one(r.registered))?;
    }
    e.family(
        "bbrkit_bpf_registered_by_bbrkit",
        MetricType::Gauge,
        "1 when bbrkit's pinned link holds the registration; 0 when not registered or registered by another program.",
    )?;
    for r in regs {
        e.sample(&[("cc", &r.cc)], one(r.by_bbrkit))?;
    }
    Ok(())
}

/// `bbrkit_bbr_model_sockets{cc,state}` and
/// `bbrkit_bbr_bandwidth_estimate_bytes_per_second{cc}`.
fn write_models(e: &mut Exposition, m: &ModelStats) -> Result<(), DiagError> {
    by_cc_and_state(
        e,
        "bbrkit_bbr_model_sockets",
        "Sockets of each BBR-family algorithm by model state (startup, drain, probe_bw_up/down/cruise/refill, probe_rtt, unknown).",
        m.states.iter().map(|((cc, s), n)| (cc, s.name(), *n)),
    )?;
    histograms_by_cc(
        e,
        "bbrkit_bbr_bandwidth_estimate_bytes_per_second",
        "The BBR model's max-filtered bandwidth estimate of sockets that have one, by algorithm.",
        &m.bw,
    )
}

/// Writes the [`TCP_COUNTERS`] present in `c` (absent ones are left out).
fn write_tcp_counters(e: &mut Exposition, c: &Counters) -> Result<(), DiagError> {
    for (nstat, name, help) in TCP_COUNTERS {
        if let Some(v) = c.get(nstat) {
            e.family(name, MetricType::Counter, help)?;
            e.sample(&[], v as f64)?;
        }
    }
    Ok(())
}

/// `bbrkit_verify_ok{check,key}` (1 passed, 0 failed) for every check (the
/// first of a repeated name and key) and `bbrkit_verify_all_ok`.
fn write_verify(
    e: &mut Exposition,
    verify: Option<&(Vec<VerifyCheck>, bool)>,
) -> Result<(), DiagError> {
    let one = |b: bool| if b { 1.0 } else { 0.0 };
    e.family(
        "bbrkit_verify_ok",
        MetricType::Gauge,
        "Result of each `bbrkit verify` check: 1 passed, 0 failed (key names what was measured).",
    )?;
    let mut seen = std::collections::BTreeSet::new();
    for c in verify.iter().flat_map(|(checks, _)| checks) {
        if seen.insert((c.name.as_str(), c.key.as_str())) {
            e.sample(&[("check", &c.name), ("key", &c.key)], one(c.ok))?;
        }
    }
    e.family(
        "bbrkit_verify_all_ok",
        MetricType::Gauge,
        "1 when every `bbrkit verify` check passed, else 0.",
    )?;
    if let Some((_, all_ok)) = verify {
        e.sample(&[], one(*all_ok))?;
    }
    Ok(())
}

/// One family of an exposition in its `--json` form.
#[derive(Debug, Clone, Serialize)]
pub struct FamilyJson {
    /// Family name.
    pub name: String,
    /// `gauge`, `counter` or `histogram`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// Help text.
    pub help: String,
    /// Every series line.
    pub samples: Vec<SampleJson>,
}

/// One series line in its `--json` form.
#[derive(Debug, Clone, Serialize)]
pub struct SampleJson {
    /// Series name (`_bucket`, `_sum`, `_count` for histograms).
    pub name: String,
    /// Labels, `le` included.
    pub labels: BTreeMap<String, String>,
    /// Value.
    pub value: f64,
}

/// The families of `exp` as written, for `--json`.
pub fn families_json(exp: &Exposition) -> Vec<FamilyJson> {
    exp.records()
        .iter()
        .map(|f| FamilyJson {
            name: f.name.clone(),
            kind: f.kind.as_str(),
            help: f.help.clone(),
            samples: f
                .samples
                .iter()
                .map(|s| SampleJson {
                    name: s.name.clone(),
                    labels: s.labels.iter().cloned().collect(),
                    value: s.value,
                })
                .collect(),
        })
        .collect()
}

fn entry<'a>(
    m: &'a mut BTreeMap<String, Histogram>,
    cc: &str,
    bounds: &[f64],
) -> &'a mut Histogram {
    if !m.contains_key(cc) {
        m.insert(cc.to_string(), Histogram::new(bounds));
    }
    m.get_mut(cc).expect("inserted")
}

#[cfg(test)]
#[path = "metrics/tests.rs"]
mod tests;
