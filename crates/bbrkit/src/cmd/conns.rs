//! `bbrkit conns`: live TCP connections with their congestion-control
//! algorithm, cwnd, RTT, pacing and delivery rate (like `ss -tin`), a summary
//! by algorithm first.
//!
//! Owns the flags, the human table and the JSON document (SI units in keys:
//! `rtt_ms`, `bits_per_second`, ratios 0..1). The census and statistics live in
//! `bbrkit-diag`; this module only renders them. Never changes anything.

use anyhow::Context as _;
use bbrkit_bpf::telemetry::ModelState;
use bbrkit_diag::summary::{self, AlgoSummary};
use bbrkit_diag::{BbrInfo, Family, Filter, Socket, StateSet, TcpInfo, TcpState};
use serde::Serialize;

use crate::cmd::bpf_model::{self, BpfModels};
use crate::{Global, Outcome};

/// Arguments of `bbrkit conns`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Only sockets using this congestion-control algorithm (e.g. bbr, cubic).
    #[arg(long, value_name = "NAME")]
    pub cc: Option<String>,
    /// Only sockets whose local or remote port is N.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub port: Option<u16>,
    /// States to show: `connected` (default: all but LISTEN, TIME_WAIT,
    /// SYN_RECV, NEW_SYN_RECV, CLOSE), `all`, or a comma list such as
    /// `established,listen`.
    #[arg(long, value_name = "S", default_value = "connected", value_parser = parse_states)]
    pub state: StateSet,
}

/// Parses `--state`.
pub fn parse_states(text: &str) -> Result<StateSet, String> {
    match text.trim().to_ascii_lowercase().as_str() {
        "all" => return Ok(StateSet::ALL),
        "connected" => return Ok(StateSet::connected()),
        _ => {}
    }
    let mut set = StateSet::empty();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let st: TcpState = part.parse().map_err(|_| {
            let names: Vec<String> = TcpState::all()
                .map(|s| s.name().to_ascii_lowercase().replace('_', "-"))
                .collect();
            format!(
                "unknown TCP state '{part}' (expected all, connected, or a comma list of: {})",
                names.join(", ")
            )
        })?;
        set = set.with(st);
    }
    if set == StateSet::empty() {
        return Err("empty state list".into());
    }
    Ok(set)
}

/// Refuses a `--cc` that no socket can have: a name the kernel has not
/// registered (a typo such as `bbr2`). Skipped when the list cannot be read.
fn check_cc(cc: &str, available: Option<&str>) -> anyhow::Result<()> {
    let Some(available) = available else {
        return Ok(());
    };
    if available
        .split_whitespace()
        .any(|a| a.eq_ignore_ascii_case(cc))
    {
        return Ok(());
    }
    anyhow::bail!(
        "--cc {cc}: no such congestion-control algorithm on this kernel (available: {})",
        available.split_whitespace().collect::<Vec<_>>().join(", ")
    )
}

/// Runs `bbrkit conns`.
pub fn run(args: Args, global: Global) -> anyhow::Result<Outcome> {
    if let Some(cc) = &args.cc {
        check_cc(
            cc,
            bbrkit_diag::algorithms::available()
                .ok()
                .map(|a| a.join(" "))
                .as_deref(),
        )?;
    }
    let filter = Filter {
        states: args.state,
        port: args.port,
        cc: args.cc.clone(),
        ..Filter::default()
    };
    let socks = bbrkit_diag::census(&filter).context("taking the socket census")?;
    let sums = summary::by_algorithm(&socks);
    let models = BpfModels::read(&socks);
    if global.json {
        crate::print_json(&document(&args, &sums, &socks, &models))?;
    } else {
        crate::emit(&render(&sums, &socks, &models))?;
    }
    Ok(Outcome::Ok)
}

fn us_to_ms(us: impl Into<f64>) -> f64 {
    us.into() / 1000.0
}

fn bits(bytes_per_second: u64) -> u64 {
    bytes_per_second.saturating_mul(8)
}

const CA_STATES: [&str; 5] = ["open", "disorder", "cwr", "recovery", "loss"];

/// The JSON document: `filter`, `summary` (one entry per algorithm), `sockets`.
#[derive(Debug, Serialize)]
pub struct Document {
    filter: FilterJson,
    summary: Vec<SummaryJson>,
    sockets: Vec<SocketJson>,
    /// Why a BPF-CA socket has no `bpf_model` (e.g. not root), else null.
    bpf_model_note: Option<String>,
}

#[derive(Debug, Serialize)]
struct FilterJson {
    cc: Option<String>,
    port: Option<u16>,
    states: Vec<String>,
}

#[derive(Debug, Serialize)]
struct SummaryJson {
    cc: Option<String>,
    sockets: usize,
    rtt_samples: usize,
    median_rtt_ms: Option<f64>,
    median_min_rtt_ms: Option<f64>,
    delivery_rate_total_bits_per_second: u64,
    bytes_sent: u64,
    bytes_retrans: u64,
    retrans_segments_total: u64,
    retrans_ratio: Option<f64>,
}

/// One socket. Keys are always present; `null` means the kernel did not say
/// (no `tcp_info` for TIME_WAIT and request sockets, or an older kernel).
#[derive(Debug, Serialize)]
struct SocketJson {
    state: String,
    cc: Option<String>,
    family: &'static str,
    local: String,
    remote: String,
    uid: u32,
    inode: u32,
    recv_queue_bytes: u32,
    send_queue_bytes: u32,
    ca_state: Option<&'static str>,
    cwnd: Option<u32>,
    ssthresh: Option<u32>,
    mss_bytes: Option<u32>,
    rtt_ms: Option<f64>,
    rttvar_ms: Option<f64>,
    min_rtt_ms: Option<f64>,
    rto_ms: Option<f64>,
    pacing_rate_bits_per_second: Option<u64>,
    delivery_rate_bits_per_second: Option<u64>,
    delivery_rate_app_limited: Option<bool>,
    unacked: Option<u32>,
    lost: Option<u32>,
    retrans_current: Option<u32>,
    retrans_total: Option<u32>,
    bytes_sent: Option<u64>,
    bytes_acked: Option<u64>,
    bytes_received: Option<u64>,
    bytes_retrans: Option<u64>,
    retrans_ratio: Option<f64>,
    busy_s: Option<f64>,
    rwnd_limited_ratio: Option<f64>,
    sndbuf_limited_ratio: Option<f64>,
    tcp_info_bytes: Option<usize>,
    bbr: Option<BbrJson>,
    /// Model state of a BPF congestion control (bbr3) from its telemetry map.
    bpf_model: Option<ModelState>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    warnings: Vec<String>,
}

#[derive(Debug, Serialize)]
struct BbrJson {
    version: u8,
    bw_bits_per_second: u64,
    min_rtt_ms: f64,
    pacing_gain: f64,
    cwnd_gain: f64,
    v3: Option<BbrV3Json>,
}

#[derive(Debug, Serialize)]
struct BbrV3Json {
    bw_hi_bits_per_second: u64,
    bw_lo_bits_per_second: u64,
    mode: u8,
    phase: u8,
    inflight_lo: u32,
    inflight_hi: u32,
    extra_acked: u32,
}

/// Builds the `--json` document.
pub fn document(
    args: &Args,
    sums: &[AlgoSummary],
    socks: &[Socket],
    models: &BpfModels,
) -> Document {
    Document {
        filter: FilterJson {
            cc: args.cc.clone(),
            port: args.port,
            states: TcpState::all()
                .filter(|s| args.state.contains(*s))
                .map(|s| s.to_string())
                .collect(),
        },
        summary: sums.iter().map(summary_json).collect(),
        sockets: socks
            .iter()
            .map(|s| socket_json(s, models.get(s).cloned()))
            .collect(),
        bpf_model_note: models.note.clone(),
    }
}

fn summary_json(s: &AlgoSummary) -> SummaryJson {
    SummaryJson {
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
    }
}

fn socket_json(s: &Socket, bpf_model: Option<ModelState>) -> SocketJson {
    let t = s.tcp_info.as_ref();
    let f = |g: fn(&TcpInfo) -> Option<u32>| t.and_then(g);
    let f64_ = |g: fn(&TcpInfo) -> Option<u64>| t.and_then(g);
    SocketJson {
        state: s.state.to_string(),
        cc: s.cc.clone(),
        family: match s.family {
            Family::V4 => "ipv4",
            Family::V6 => "ipv6",
        },
        local: s.local.to_string(),
        remote: s.remote.to_string(),
        uid: s.uid,
        inode: s.inode,
        recv_queue_bytes: s.recv_queue,
        send_queue_bytes: s.send_queue,
        ca_state: t
            .and_then(|t| t.ca_state)
            .map(|c| CA_STATES.get(usize::from(c)).copied().unwrap_or("unknown")),
        cwnd: f(|t| t.snd_cwnd),
        ssthresh: f(|t| t.snd_ssthresh.filter(|&v| v < 0x7fff_ffff)),
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
        rwnd_limited_ratio: t.and_then(TcpInfo::rwnd_limited_ratio),
        sndbuf_limited_ratio: t.and_then(TcpInfo::sndbuf_limited_ratio),
        tcp_info_bytes: t.map(|t| t.len),
        bbr: s.bbr.as_ref().map(bbr_json),
        bpf_model,
        warnings: s.warnings.clone(),
    }
}

fn bbr_json(b: &BbrInfo) -> BbrJson {
    BbrJson {
        version: b.version(),
        bw_bits_per_second: bits(b.bw_bytes_per_second),
        min_rtt_ms: us_to_ms(b.min_rtt_us),
        pacing_gain: b.pacing_gain(),
        cwnd_gain: b.cwnd_gain(),
        v3: b.v3.map(|m| BbrV3Json {
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

/// [`crate::units::rate`] of bytes per second, without the space (a
/// column): `12.0Gbit/s`.
fn rate(bytes_per_second: u64) -> String {
    crate::units::rate(bits(bytes_per_second) as f64).replace(' ', "")
}

fn ms(us: Option<f64>) -> String {
    us.map_or("-".into(), |v| format!("{:.3}", v / 1000.0))
}

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map_or("-".into(), |v| v.to_string())
}

fn pct(r: Option<f64>) -> String {
    r.map_or("-".into(), |r| format!("{:.2}%", r * 100.0))
}

/// The human output: the summary table, then one row (and a detail line) per socket.
pub fn render(sums: &[AlgoSummary], socks: &[Socket], models: &BpfModels) -> String {
    let mut o = String::new();
    o.push_str(&format!(
        "{:<10} {:>7} {:>13} {:>17} {:>15} {:>8}\n",
        "ALGORITHM", "SOCKETS", "MEDIAN RTT ms", "MEDIAN MINRTT ms", "DELIVERY TOTAL", "RETRANS"
    ));
    for s in sums {
        o.push_str(&format!(
            "{:<10} {:>7} {:>13} {:>17} {:>15} {:>8}\n",
            s.cc.as_deref().unwrap_or("-"),
            s.sockets,
            ms(s.median_rtt_us),
            ms(s.median_min_rtt_us),
            rate(s.delivery_rate_total),
            pct(s.retrans_ratio())
        ));
    }
    if socks.is_empty() {
        o.push_str("\nno matching TCP sockets\n");
        return o;
    }
    let w = socks
        .iter()
        .map(|s| s.local.to_string().len().max(s.remote.to_string().len()))
        .max()
        .unwrap_or(0);
    o.push_str(&format!(
        "\n{:<12} {:<w$} {:<w$} {:<6} {:>6} {:>14} {:>9} {:>12} {:>12} {:>9}\n",
        "STATE",
        "LOCAL",
        "REMOTE",
        "CC",
        "CWND",
        "RTT/VAR ms",
        "MINRTT ms",
        "PACING",
        "DELIVERY",
        "RETRANS"
    ));
    for s in socks {
        // A listener's tcp_info holds no path measurements: show dashes.
        let t = s.tcp_info.as_ref().filter(|_| s.state != TcpState::Listen);
        let rtt = t.and_then(|t| {
            Some(format!(
                "{}/{}",
                ms(Some(t.rtt_sample_us()?.into())),
                ms(t.rttvar_us.map(f64::from))
            ))
        });
        o.push_str(&format!(
            "{:<12} {:<w$} {:<w$} {:<6} {:>6} {:>14} {:>9} {:>12} {:>12} {:>9}\n",
            s.state.to_string(),
            s.local.to_string(),
            s.remote.to_string(),
            s.cc.as_deref().unwrap_or("-"),
            opt(t.and_then(|t| t.snd_cwnd)),
            rtt.unwrap_or("-".into()),
            ms(t.and_then(|t| t.min_rtt_sample_us()).map(f64::from)),
            t.and_then(|t| t.pacing_rate_limited())
                .map_or("-".into(), rate),
            t.and_then(|t| t.delivery_rate).map_or("-".into(), rate),
            t.map_or("-".into(), |t| format!(
                "{}/{}",
                opt(t.retrans),
                opt(t.total_retrans)
            )),
        ));
        if let Some(detail) = t.map(|t| detail_line(t, s.bbr.as_ref(), models.get(s))) {
            o.push_str(&detail);
        }
    }
    if let Some(note) = &models.note {
        o.push_str(&format!("\nnote: {note}\n"));
    }
    o
}

fn detail_line(t: &TcpInfo, bbr: Option<&BbrInfo>, model: Option<&ModelState>) -> String {
    let mut parts = vec![
        format!("bytes_sent:{}", opt(t.bytes_sent)),
        format!("bytes_acked:{}", opt(t.bytes_acked)),
        format!("bytes_retrans:{}", opt(t.bytes_retrans)),
    ];
    if let Some(busy) = t.busy_time_us.filter(|&b| b > 0) {
        parts.push(format!("busy:{}ms", busy / 1000));
        parts.push(format!("rwnd_limited:{}", pct(t.rwnd_limited_ratio())));
        parts.push(format!("sndbuf_limited:{}", pct(t.sndbuf_limited_ratio())));
    }
    if let Some(b) = bbr {
        parts.push(format!(
            "bbr{}:(bw:{},mrtt:{}ms,pacing_gain:{:.3},cwnd_gain:{:.3})",
            b.version(),
            rate(b.bw_bytes_per_second),
            ms(Some(b.min_rtt_us.into())),
            b.pacing_gain(),
            b.cwnd_gain()
        ));
    }
    if let Some(m) = model {
        parts.push(bpf_model::detail(m, rate));
    }
    format!("    {}\n", parts.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_flag() {
        assert_eq!(parse_states("all").unwrap(), StateSet::ALL);
        assert_eq!(parse_states("connected").unwrap(), StateSet::connected());
        let s = parse_states("established,LISTEN").unwrap();
        assert!(s.contains(TcpState::Established) && s.contains(TcpState::Listen));
        assert!(!s.contains(TcpState::TimeWait));
        assert!(
            parse_states("nope")
                .unwrap_err()
                .contains("unknown TCP state 'nope'")
        );
        assert!(parse_states(",").is_err());
    }

    /// A BBR socket whose kernel sent a `tcp_info` of `info_len` bytes and a
    /// `tcp_bbr_info` of `bbr` bytes.
    fn bbr_socket(info_len: usize, bbr: &[u8]) -> Socket {
        let mut t = vec![0u8; info_len];
        let mut put = |off: usize, v: &[u8]| {
            if off + v.len() <= t.len() {
                t[off..off + v.len()].copy_from_slice(v);
            }
        };
        put(68, &2000u32.to_ne_bytes()); // rtt 2 ms
        put(80, &42u32.to_ne_bytes()); // cwnd
        put(160, &1_000_000u64.to_ne_bytes()); // delivery rate, B/s
        put(200, &4000u64.to_ne_bytes()); // bytes_sent
        put(208, &1000u64.to_ne_bytes()); // bytes_retrans
        Socket {
            tcp_info: Some(TcpInfo::parse(&t)),
            bbr: Some(BbrInfo::parse(bbr).unwrap()),
            ..bbrkit_diag::testing::socket(
                Some("bbr"),
                "10.0.0.1:443".parse().unwrap(),
                "10.0.0.2:50000".parse().unwrap(),
            )
        }
    }

    fn bbr_v3_bytes() -> Vec<u8> {
        let mut b = Vec::new();
        for v in [125_000u32, 0, 1500, 320, 512, 250_000, 0, 100_000, 0] {
            b.extend_from_slice(&v.to_ne_bytes());
        }
        b.extend_from_slice(&[2, 5, 0, 3]); // PROBE_BW, BBR_PHASE_PROBE_BW_DOWN, unused, version 3
        for v in [7u32, 9, 2] {
            b.extend_from_slice(&v.to_ne_bytes());
        }
        b
    }

    #[test]
    fn json_and_table_of_v1_and_v3_bbr_sockets() {
        let v1 = bbr_socket(248, &bbr_v3_bytes()[..20]);
        let j = serde_json::to_value(socket_json(&v1, None)).unwrap();
        assert_eq!(j["rtt_ms"], 2.0);
        assert_eq!(j["cwnd"], 42);
        assert_eq!(j["delivery_rate_bits_per_second"], 8_000_000);
        assert_eq!(j["retrans_ratio"], 0.25);
        assert_eq!(j["bbr"]["version"], 1);
        assert_eq!(j["bbr"]["bw_bits_per_second"], 1_000_000);
        assert_eq!(j["bbr"]["min_rtt_ms"], 1.5);
        assert_eq!(j["bbr"]["pacing_gain"], 1.25);
        assert_eq!(j["bbr"]["cwnd_gain"], 2.0);
        assert!(j["bbr"]["v3"].is_null());

        let v3 = bbr_socket(248, &bbr_v3_bytes());
        let j = serde_json::to_value(socket_json(&v3, None)).unwrap();
        assert_eq!(j["bbr"]["version"], 3);
        let m = &j["bbr"]["v3"];
        assert_eq!(m["bw_hi_bits_per_second"], 2_000_000);
        assert_eq!(m["bw_lo_bits_per_second"], 800_000);
        assert_eq!((&m["mode"], &m["phase"]), (&2.into(), &5.into()));
        assert_eq!(
            (&m["inflight_lo"], &m["inflight_hi"], &m["extra_acked"]),
            (&7.into(), &9.into(), &2.into())
        );
        let text = render(
            &summary::by_algorithm(&[v1.clone(), v3.clone()]),
            &[v1, v3],
            &BpfModels::default(),
        );
        assert!(
            text.contains("bbr1:(bw:1.0Mbit/s,mrtt:1.500ms,pacing_gain:1.250"),
            "{text}"
        );
        assert!(text.contains("bbr3:(bw:1.0Mbit/s"), "{text}");
        let row = text.lines().find(|l| l.starts_with("bbr ")).unwrap();
        let cols: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(cols, ["bbr", "2", "2.000", "-", "16.0Mbit/s", "25.00%"]);
    }

    /// A bbr3 (BPF) socket: no BBR info from sock_diag, its model state
    /// joined from the telemetry map.
    #[test]
    fn json_and_table_of_a_bpf_bbr3_socket() {
        let mut s = bbr_socket(248, &bbr_v3_bytes()[..20]);
        s.cc = Some("bbr3".into());
        s.bbr = None;
        let raw = bbrkit_bpf::telemetry::RawState {
            bw_bps: 95_000_000,
            max_bw_bps: 96_000_000,
            bw_lo_bps: u64::MAX,
            min_rtt_us: 20_250,
            inflight_hi: 300,
            inflight_lo: u32::MAX,
            pacing_gain: 256,
            cwnd_gain: 512,
            cwnd: 42,
            mode: 2,
            phase: 1,
            version: 3,
            ..Default::default()
        };
        let state = ModelState::from(&raw);
        let models = BpfModels::with([((s.local, s.remote), state.clone())], None);
        let j = serde_json::to_value(socket_json(&s, models.get(&s).cloned())).unwrap();
        let m = &j["bpf_model"];
        assert!(j["bbr"].is_null());
        assert_eq!(
            (&m["mode"], &m["phase"]),
            (&"probe_bw".into(), &"cruise".into())
        );
        assert_eq!(m["bw_bits_per_second"], 95_000_000);
        assert_eq!(m["min_rtt_ms"], 20.25);
        assert_eq!(
            (&m["inflight_hi"], &m["inflight_lo"]),
            (&300.into(), &serde_json::Value::Null)
        );
        assert_eq!(
            (&m["pacing_gain"], &m["cwnd_gain"]),
            (&1.0.into(), &2.0.into())
        );
        let text = render(
            &summary::by_algorithm(std::slice::from_ref(&s)),
            &[s.clone()],
            &models,
        );
        assert!(
            text.contains("bbr3:(mode:probe_bw/cruise,bw:95.0Mbit/s,mrtt:20.250ms,inflight_hi:300,inflight_lo:-,pacing_gain:1.000,cwnd_gain:2.000)"),
            "{text}"
        );
        let unread = BpfModels::with([], Some("no bbr3 model state: reading the BPF map bbr3_telemetry needs root (CAP_SYS_ADMIN)".into()));
        let text = render(
            &summary::by_algorithm(std::slice::from_ref(&s)),
            &[s],
            &unread,
        );
        assert!(text.ends_with("\nnote: no bbr3 model state: reading the BPF map bbr3_telemetry needs root (CAP_SYS_ADMIN)\n"), "{text}");
    }

    #[test]
    fn older_kernel_fields_are_null_not_zero() {
        // A 4.x-era 104-byte tcp_info: no pacing, delivery rate, bytes or busy time.
        let s = bbr_socket(104, &bbr_v3_bytes()[..20]);
        let j = serde_json::to_value(socket_json(&s, None)).unwrap();
        assert_eq!(j["tcp_info_bytes"], 104);
        assert_eq!(j["cwnd"], 42);
        for k in [
            "pacing_rate_bits_per_second",
            "delivery_rate_bits_per_second",
            "bytes_sent",
            "bytes_retrans",
            "retrans_ratio",
            "busy_s",
            "rwnd_limited_ratio",
            "min_rtt_ms",
        ] {
            assert!(j[k].is_null(), "{k}: {}", j[k]);
        }
        let text = render(
            &summary::by_algorithm(std::slice::from_ref(&s)),
            &[s],
            &BpfModels::default(),
        );
        assert!(
            text.contains("bytes_sent:- bytes_acked:- bytes_retrans:-"),
            "{text}"
        );
    }

    #[test]
    fn cc_flag_must_name_a_registered_algorithm() {
        let avail = Some("reno bbr cubic\n");
        assert!(check_cc("bbr", avail).is_ok());
        assert!(check_cc("CUBIC", avail).is_ok());
        let e = check_cc("bbr2", avail).unwrap_err().to_string();
        assert_eq!(
            e,
            "--cc bbr2: no such congestion-control algorithm on this kernel (available: reno, bbr, cubic)"
        );
        assert!(
            check_cc("anything", None).is_ok(),
            "unreadable list: no check"
        );
    }

    #[test]
    fn human_rates() {
        assert_eq!(rate(0), "0bit/s");
        assert_eq!(rate(125_000), "1.0Mbit/s");
        assert_eq!(rate(1_500_000_000), "12.0Gbit/s");
        assert_eq!(rate(250_000_000), "2.00Gbit/s");
    }
}
