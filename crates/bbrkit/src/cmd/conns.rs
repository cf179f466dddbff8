//! `bbrkit conns`: live TCP connections with their congestion-control
//! algorithm, cwnd, RTT, pacing and delivery rate (like `ss -tin`), a summary
//! by algorithm first.
//!
//! Owns the flags, the human table and the JSON document (SI units in keys:
//! `rtt_ms`, `bits_per_second`, ratios 0..1). The census and statistics live in
//! `bbrkit-diag`; this module only renders them. Never changes anything.

use anyhow::Context as _;
use bbrkit_diag::summary::{self, AlgoSummary};
use bbrkit_diag::{BbrInfo, Filter, Socket, StateSet, TcpInfo, TcpState};
use serde_json::{Value, json};

use crate::{Global, Outcome};

/// Arguments of `bbrkit conns`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Only sockets using this congestion-control algorithm (e.g. bbr, cubic).
    #[arg(long, value_name = "NAME")]
    pub cc: Option<String>,
    /// Only sockets whose local or remote port is N.
    #[arg(long, value_name = "N")]
    pub port: Option<u16>,
    /// States to show: `connected` (default: all but LISTEN, TIME_WAIT,
    /// SYN_RECV, CLOSE), `all`, or a comma list such as `established,listen`.
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
        let st: TcpState = part
            .parse()
            .map_err(|e: bbrkit_diag::DiagError| format!("{e}, all, connected"))?;
        set = set.with(st);
    }
    if set == StateSet::empty() {
        return Err("empty state list".into());
    }
    Ok(set)
}

/// Runs `bbrkit conns`.
pub fn run(args: Args, global: Global) -> anyhow::Result<Outcome> {
    let filter = Filter {
        states: args.state,
        port: args.port,
        cc: args.cc.clone(),
        ..Filter::default()
    };
    let socks = bbrkit_diag::census(&filter).context("taking the socket census")?;
    let sums = summary::by_algorithm(&socks);
    if global.json {
        crate::print_json(&document(&args, &sums, &socks))?;
    } else {
        print!("{}", render(&sums, &socks));
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
pub fn document(args: &Args, sums: &[AlgoSummary], socks: &[Socket]) -> Value {
    let states: Vec<String> = TcpState::all()
        .filter(|s| args.state.contains(*s))
        .map(|s| s.to_string())
        .collect();
    json!({
        "filter": { "cc": args.cc, "port": args.port, "states": states },
        "summary": sums.iter().map(summary_json).collect::<Vec<_>>(),
        "sockets": socks.iter().map(socket_json).collect::<Vec<_>>(),
    })
}

fn summary_json(s: &AlgoSummary) -> Value {
    json!({
        "cc": s.cc,
        "sockets": s.sockets,
        "rtt_samples": s.rtt_samples,
        "median_rtt_ms": s.median_rtt_us.map(us_to_ms),
        "median_min_rtt_ms": s.median_min_rtt_us.map(us_to_ms),
        "delivery_rate_total_bits_per_second": bits(s.delivery_rate_total),
        "bytes_sent": s.bytes_sent,
        "bytes_retrans": s.bytes_retrans,
        "retrans_segments_total": s.total_retrans,
        "retrans_ratio": s.retrans_ratio(),
    })
}

fn socket_json(s: &Socket) -> Value {
    let mut v = json!({
        "state": s.state.to_string(),
        "family": match s.family { bbrkit_diag::Family::V4 => "ipv4", bbrkit_diag::Family::V6 => "ipv6" },
        "local": s.local.to_string(),
        "remote": s.remote.to_string(),
        "cc": s.cc,
        "uid": s.uid,
        "inode": s.inode,
        "recv_queue_bytes": s.recv_queue,
        "send_queue_bytes": s.send_queue,
    });
    let obj = v.as_object_mut().expect("object");
    if let Some(t) = &s.tcp_info {
        for (k, val) in tcp_info_json(t).as_object().expect("object") {
            obj.insert(k.clone(), val.clone());
        }
    }
    obj.insert("bbr".into(), s.bbr.as_ref().map_or(Value::Null, bbr_json));
    if !s.warnings.is_empty() {
        obj.insert("warnings".into(), json!(s.warnings));
    }
    v
}

fn tcp_info_json(t: &TcpInfo) -> Value {
    json!({
        "tcp_info_bytes": t.len,
        "ca_state": t.ca_state.map(|c| CA_STATES.get(usize::from(c)).copied().unwrap_or("unknown")),
        "cwnd": t.snd_cwnd,
        "ssthresh": t.snd_ssthresh.filter(|&v| v < 0x7fff_ffff),
        "mss_bytes": t.snd_mss,
        "rtt_ms": t.rtt_sample_us().map(us_to_ms),
        "rttvar_ms": t.rtt_sample_us().and(t.rttvar_us).map(us_to_ms),
        "min_rtt_ms": t.min_rtt_sample_us().map(us_to_ms),
        "rto_ms": t.rto_us.map(us_to_ms),
        "pacing_rate_bits_per_second": t.pacing_rate_limited().map(bits),
        "delivery_rate_bits_per_second": t.delivery_rate.map(bits),
        "delivery_rate_app_limited": t.delivery_rate_app_limited,
        "unacked": t.unacked,
        "lost": t.lost,
        "retrans_current": t.retrans,
        "retrans_total": t.total_retrans,
        "bytes_sent": t.bytes_sent,
        "bytes_acked": t.bytes_acked,
        "bytes_received": t.bytes_received,
        "bytes_retrans": t.bytes_retrans,
        "retrans_ratio": t.retrans_ratio(),
        "busy_s": t.busy_time_us.map(|v| v as f64 / 1e6),
        "rwnd_limited_ratio": t.rwnd_limited_ratio(),
        "sndbuf_limited_ratio": t.sndbuf_limited_ratio(),
    })
}

fn bbr_json(b: &BbrInfo) -> Value {
    json!({
        "version": b.version(),
        "bw_bits_per_second": bits(b.bw_bytes_per_second),
        "min_rtt_ms": us_to_ms(b.min_rtt_us),
        "pacing_gain": b.pacing_gain(),
        "cwnd_gain": b.cwnd_gain(),
        "v3": b.v3.map(|m| json!({
            "bw_hi_bits_per_second": bits(m.bw_hi),
            "bw_lo_bits_per_second": bits(m.bw_lo),
            "mode": m.mode,
            "phase": m.phase,
            "inflight_lo": m.inflight_lo,
            "inflight_hi": m.inflight_hi,
            "extra_acked": m.extra_acked,
        })),
    })
}

/// Human rate: `12.3Gbit/s` from bytes per second.
fn rate(bytes_per_second: u64) -> String {
    let b = bits(bytes_per_second) as f64;
    for (scale, unit) in [(1e9, "Gbit/s"), (1e6, "Mbit/s"), (1e3, "kbit/s")] {
        if b >= scale {
            return format!("{:.1}{unit}", b / scale);
        }
    }
    format!("{b:.0}bit/s")
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
pub fn render(sums: &[AlgoSummary], socks: &[Socket]) -> String {
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
        let t = s.tcp_info.as_ref();
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
        if let Some(detail) = t.map(|t| detail_line(t, s.bbr.as_ref())) {
            o.push_str(&detail);
        }
    }
    o
}

fn detail_line(t: &TcpInfo, bbr: Option<&BbrInfo>) -> String {
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

    #[test]
    fn human_rates() {
        assert_eq!(rate(0), "0bit/s");
        assert_eq!(rate(125_000), "1.0Mbit/s");
        assert_eq!(rate(1_500_000_000), "12.0Gbit/s");
    }
}
