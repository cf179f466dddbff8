//! `bbrkit conns`: live TCP connections with their congestion-control
//! algorithm, cwnd, RTT, pacing and delivery rate (like `ss -tin`), a summary
//! by algorithm first.
//!
//! Owns the flags and the human table. The report — census, summary,
//! interpretation of kernel values, the JSON schema — is
//! `bbrkit_diag::conns`'; the model state of BPF sockets comes from the
//! telemetry join behind `bbrkit_host::bpf` (none in a build without the
//! cargo feature `bpf`, whose `conns_model_none.rs` renders nothing).
//! Never changes anything.

use anyhow::Context as _;
use bbrkit_diag::StateSet;
use bbrkit_diag::conns::{self, Query, Report, SocketRow, SummaryRow};
use bbrkit_host::bpf::Model;

use crate::units::{pct, rate};
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
    #[arg(long, value_name = "S", default_value = "connected")]
    pub state: StateSet,
}

/// Runs `bbrkit conns`.
pub fn run(args: Args, global: Global) -> anyhow::Result<Outcome> {
    let query = Query {
        cc: args.cc,
        port: args.port,
        states: args.state,
    };
    let report = match conns::take(
        &query,
        &bbrkit_host::bpf::telemetry(),
        &bbrkit_host::bpf::policies(),
    ) {
        Err(e @ bbrkit_diag::DiagError::UnknownAlgorithm { .. }) => return Err(e.into()),
        r => r.context("taking the socket census")?,
    };
    crate::print_report(global, &report, render)?;
    Ok(Outcome::Ok)
}

fn ms(v: Option<f64>) -> String {
    v.map_or("-".into(), |v| format!("{v:.3}"))
}

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map_or("-".into(), |v| v.to_string())
}

fn bits(v: Option<u64>) -> String {
    v.map_or("-".into(), |b| rate(b as f64))
}

/// The human output: the summary table, then one row (and a detail line) per socket.
pub fn render(r: &Report<Model>) -> String {
    let mut o = format!(
        "{:<10} {:>7} {:>13} {:>17} {:>15} {:>8}\n",
        "ALGORITHM", "SOCKETS", "MEDIAN RTT ms", "MEDIAN MINRTT ms", "DELIVERY TOTAL", "RETRANS"
    );
    for s in &r.summary {
        o.push_str(&summary_line(s));
    }
    let app_limited: usize = r.summary.iter().map(|s| s.delivery_rate_app_limited).sum();
    if app_limited > 0 {
        o.push_str(&format!(
            "DELIVERY TOTAL leaves out {app_limited} app-limited rate(s), marked * below: they measured the application, not the path\n"
        ));
    }
    o.push_str(&policy_table(r));
    if r.sockets.is_empty() {
        o.push_str("\nno matching TCP sockets\n");
        return o;
    }
    let w = r
        .sockets
        .iter()
        .map(|s| s.local.to_string().len().max(s.remote.to_string().len()))
        .max()
        .unwrap_or(0);
    o.push_str(&format!(
        "\n{:<12} {:<w$} {:<w$} {:<6} {:>6} {:>14} {:>9} {:>13} {:>13} {:>9}\n",
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
    for s in &r.sockets {
        o.push_str(&socket_line(s, w));
    }
    if let Some(note) = &r.bpf_model_note {
        o.push_str(&format!("\nnote: {note}\n"));
    }
    if let Some(note) = &r.policy_note {
        o.push_str(&format!("\nnote: {note}\n"));
    }
    o
}

fn summary_line(s: &SummaryRow) -> String {
    let total = (s.delivery_rate_samples > 0)
        .then_some(s.delivery_rate_total_bits_per_second)
        .map_or("-".into(), |b| rate(b as f64));
    format!(
        "{:<10} {:>7} {:>13} {:>17} {:>15} {:>8}\n",
        s.cc.as_deref().unwrap_or("-"),
        s.sockets,
        ms(s.median_rtt_ms),
        ms(s.median_min_rtt_ms),
        total,
        s.retrans_ratio.map_or("-".into(), pct)
    )
}

/// One socket's row and detail line; a listener's shows dashes (its
/// `tcp_info` holds no path measurements).
fn socket_line(s: &SocketRow<Model>, w: usize) -> String {
    let path = s.measures_a_path();
    let rtt = s
        .rtt_ms
        .filter(|_| path)
        .map(|r| format!("{}/{}", ms(Some(r)), ms(s.rttvar_ms)));
    let delivery = s.delivery_rate_bits_per_second.filter(|_| path).map(|b| {
        let app = b > 0 && s.delivery_rate_app_limited == Some(true);
        let mark = if app { "*" } else { "" };
        format!("{}{mark}", rate(b as f64))
    });
    let retrans = path.then(|| format!("{}/{}", opt(s.retrans_current), opt(s.retrans_total)));
    let mut line = format!(
        "{:<12} {:<w$} {:<w$} {:<6} {:>6} {:>14} {:>9} {:>13} {:>13} {:>9}\n",
        s.state.to_string(),
        s.local.to_string(),
        s.remote.to_string(),
        s.cc.as_deref().unwrap_or("-"),
        opt(s.cwnd.filter(|_| path)),
        rtt.unwrap_or("-".into()),
        ms(s.min_rtt_ms.filter(|_| path)),
        bits(s.pacing_rate_bits_per_second.filter(|_| path)),
        delivery.unwrap_or("-".into()),
        retrans.unwrap_or("-".into()),
    );
    if path {
        line.push_str(&detail_line(s));
    }
    line
}

fn detail_line(s: &SocketRow<Model>) -> String {
    let mut parts = vec![
        format!("bytes_sent:{}", opt(s.bytes_sent)),
        format!("bytes_acked:{}", opt(s.bytes_acked)),
        format!("bytes_retrans:{}", opt(s.bytes_retrans)),
    ];
    let share = |r: Option<f64>| r.map_or("-".into(), pct);
    if let Some(busy) = s.busy_us.filter(|&b| b > 0) {
        parts.push(format!("busy:{}ms", busy / 1000));
        parts.push(format!("rwnd_limited:{}", share(s.rwnd_limited_ratio)));
        parts.push(format!("sndbuf_limited:{}", share(s.sndbuf_limited_ratio)));
    }
    if let Some(b) = &s.bbr {
        parts.push(format!(
            "bbr{}:(bw:{},mrtt:{}ms,pacing_gain:{:.3},cwnd_gain:{:.3})",
            b.version,
            rate(b.bw_bits_per_second as f64),
            ms(Some(b.min_rtt_ms)),
            b.pacing_gain,
            b.cwnd_gain
        ));
    }
    if let Some(m) = &s.bpf_model {
        parts.push(model::detail(m));
    }
    if let Some(p) = &s.policy {
        parts.push(rule_part(p));
    }
    format!("    {}\n", parts.join(" "))
}

#[path = "conns_policy.rs"]
mod policy;
use policy::{policy_table, rule_part};

#[cfg_attr(feature = "bpf", path = "conns_model.rs")]
#[cfg_attr(not(feature = "bpf"), path = "conns_model_none.rs")]
mod model;

#[cfg(test)]
#[path = "conns_tests.rs"]
mod tests;
