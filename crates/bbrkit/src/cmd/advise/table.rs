//! `bbrkit advise`'s table: the header (sampling, what was left out, the
//! capacity), one row per group largest first, and under each its reason,
//! the predicted gains (up to the link's speed when the capacity is
//! unknown), the command that acts on it and the trial that measures it.

use std::time::Duration;

use bbrkit_advise::predict::Predicted;
use bbrkit_advise::report::{GroupReport, Report};

use super::Args;
use crate::units::{bytes, pct, rate};

fn opt(v: Option<String>) -> String {
    v.unwrap_or_else(|| "-".into())
}

/// `n word`, with an `s` unless `n` is 1.
fn count(n: usize, word: &str) -> String {
    format!("{n} {word}{}", if n == 1 { "" } else { "s" })
}

fn header(r: &Report, args: &Args, analysis_s: f64) -> String {
    let s = &r.sampling;
    let capacity = match args.path_rate {
        Some(p) => format!("capacity {} (--path-rate)", rate(p as f64)),
        None => "capacity unknown: predictions span the highest delivery rate seen per group up to the speed of the interface that reaches it (give --path-rate)".into(),
    };
    let loopback = match r.loopback_connections_left_out {
        0 => String::new(),
        n => format!(
            " (and {} to loopback addresses, left out: they never cross a network; --include-loopback keeps them)",
            count(n, "connection")
        ),
    };
    format!(
        "bbrkit advise: {} censuses over {:.1} s (every {}), {}{loopback}, census {:.1} ms mean / {:.1} ms max (up to {}), analysis {:.2} s\n{capacity}\n\n",
        s.sweeps,
        s.elapsed_s,
        humantime(args.interval),
        count(r.connections, "connection"),
        s.mean_census_ms,
        s.max_census_ms,
        count(s.max_sockets, "socket"),
        analysis_s,
    )
}

fn humantime(d: Duration) -> String {
    if d.as_secs_f64() >= 1.0 {
        format!("{} s", d.as_secs_f64())
    } else {
        format!("{} ms", d.as_secs_f64() * 1e3)
    }
}

fn row(g: &GroupReport) -> Vec<String> {
    let loss = g.loss.map(|l| {
        let [lo, hi] = g.loss_interval.unwrap_or([l, l]);
        format!("{} [{}, {}]", pct(l), pct(lo), pct(hi))
    });
    let limited = g
        .limited
        .map(|l| format!("{}/{}/{}", pct(l.rwnd), pct(l.sndbuf), pct(l.app)));
    let predicted = g.predicted_bits_per_second.map(|low| predicted(g, &low));
    vec![
        g.prefix.clone(),
        g.connections.to_string(),
        bytes(g.bytes_sent),
        bytes(g.bytes_received),
        opt(g.min_rtt_ms.map(|m| format!("{m:.2}"))),
        opt(loss),
        opt(g.throughput_bits_per_second.map(rate)),
        opt(g.cc.clone()),
        opt(limited),
        opt(predicted),
        g.advice.verdict.name().to_string(),
    ]
}

/// The predicted rates: one value when the capacity is given, else the
/// range up to the link's speed (`7.9 Mbit/s..986.1 Mbit/s`), or open
/// (`>=7.9 Mbit/s`) when the link reports no speed.
fn predicted(g: &GroupReport, low: &Predicted) -> String {
    let given = g.path_rate_link.is_none();
    let cell = |lo: f64, hi: Option<f64>| match hi {
        _ if given => rate(lo),
        Some(hi) => format!("{}..{}", rate(lo), rate(hi)),
        None => format!(">={}", rate(lo)),
    };
    let high = g.predicted_high_bits_per_second;
    format!(
        "{} / {} / {}",
        cell(low.cubic, high.map(|h| h.cubic)),
        cell(low.bbr, high.map(|h| h.bbr)),
        cell(low.bbr3, high.map(|h| h.bbr3))
    )
}

const HEAD: [&str; 11] = [
    "PREFIX",
    "CONNS",
    "SENT",
    "RECEIVED",
    "MIN RTT ms",
    "LOSS [95%]",
    "THROUGHPUT",
    "CC",
    "RWND/SNDBUF/APP",
    "PREDICTED CUBIC / BBR / BBR3",
    "VERDICT",
];

/// The table (groups largest first), each group followed by its reason and
/// the command that acts on it.
pub fn render(r: &Report, args: &Args, analysis_s: f64) -> String {
    let mut out = header(r, args, analysis_s);
    if r.groups.is_empty() {
        out.push_str("no TCP connections to remote hosts were seen");
        if r.loopback_connections_left_out > 0 {
            out.push_str(&format!(
                " ({} to loopback addresses left out)",
                count(r.loopback_connections_left_out, "connection")
            ));
        }
        out.push('\n');
        return out;
    }
    let rows: Vec<Vec<String>> = r.groups.iter().map(row).collect();
    let widths: Vec<usize> = (0..HEAD.len())
        .map(|i| {
            rows.iter()
                .map(|r| r[i].chars().count())
                .chain([HEAD[i].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |cells: &[String]| {
        let parts: Vec<String> = cells
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        parts.join("  ").trim_end().to_string() + "\n"
    };
    out.push_str(&line(&HEAD.map(String::from)));
    for (g, cells) in r.groups.iter().zip(&rows) {
        out.push_str(&line(cells));
        out.push_str(&format!(
            "    {}: {}\n",
            g.advice.verdict.name(),
            g.advice.reason
        ));
        if let Some(p) = &g.prediction {
            out.push_str(&format!(
                "    gain over {}: bbr {:.2}x [{:.2}, {:.2}], bbr3 {:.2}x [{:.2}, {:.2}] ({} runs of {:.1} s simulated){}\n",
                p.baseline,
                p.gain.estimate,
                p.gain.low,
                p.gain.high,
                p.gain_bbr3.estimate,
                p.gain_bbr3.low,
                p.gain_bbr3.high,
                p.runs,
                p.simulated_s,
                g.achieved_over_predicted
                    .map(|x| format!("; achieved {x:.2}x the predicted {}", p.baseline))
                    .unwrap_or_default()
            ));
        }
        if let Some(at) = g.prediction.as_ref().and_then(|p| p.at_link_speed.as_ref()) {
            out.push_str(&format!(
                "    at {}'s speed ({}, simulated at {}): cubic {}, bbr {}, bbr3 {}; gain bbr {:.2}x, bbr3 {:.2}x ({} runs of {:.1} s simulated)\n",
                at.link,
                rate(at.link_bits_per_second as f64),
                rate(at.simulated_bits_per_second as f64),
                rate(at.bits_per_second.cubic),
                rate(at.bits_per_second.bbr),
                rate(at.bits_per_second.bbr3),
                at.gain,
                at.gain_bbr3,
                at.runs,
                at.simulated_s
            ));
        }
        out.push_str(&format!(
            "    do: {}\n",
            g.advice.action.unwrap_or("nothing on this host")
        ));
        if let Some(m) = &g.advice.measure {
            out.push_str(&format!("    measure: {m}\n"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use bbrkit_advise::SamplingStats;

    /// Issue 21 item 12: "up to 1 sockets".
    #[test]
    fn counts_are_spelled_in_the_singular_and_plural() {
        let args = Args {
            duration: Duration::from_secs(10),
            interval: Duration::from_secs(1),
            port: None,
            min_bytes: 1_000_000,
            path_rate: None,
            prefix_v4: 24,
            prefix_v6: 48,
            include_loopback: false,
        };
        let report = |connections, sockets| Report {
            sampling: SamplingStats {
                sweeps: 11,
                max_sockets: sockets,
                ..SamplingStats::default()
            },
            connections,
            loopback_connections_left_out: 0,
            groups: Vec::new(),
        };
        let one = render(&report(1, 1), &args, 0.0);
        assert!(one.contains(", 1 connection, "), "{one}");
        assert!(one.contains("(up to 1 socket)"), "{one}");
        let two = render(&report(2, 2), &args, 0.0);
        assert!(two.contains(", 2 connections, "), "{two}");
        assert!(two.contains("(up to 2 sockets)"), "{two}");
    }
}
