//! One verdict per group, its one-line reason, and the one command that acts
//! on it.
//!
//! Owns the decision, in this order (the first that applies wins):
//!
//! ```text
//!  too few bytes (< --min-bytes) or no loss estimate ─────────▶ insufficient_data
//!  received more than it sent ─────────────────────────────────▶ receiver_side
//!  the largest share of the observed time is a limit other
//!  than the network: receive window / send buffer / app idle ──▶ rwnd_limited | sndbuf_limited | app_limited
//!  already on BBR ─────────────────────────────────────────────▶ no_gain
//!  predicted gain, lower bound ≥ GAIN ─────────────────────────▶ enable_bbr
//!  otherwise (no loss, or loss from its own queue) ────────────▶ no_gain
//! ```
//!
//! Must never decide on a number the group does not have: without the
//! prediction there is no `enable_bbr`.

use serde::Serialize;

use crate::group::Group;
use crate::predict::Prediction;

/// BBR must be predicted at least this much faster (lower bound of the
/// interval) to be worth enabling: below it, the gain is within what the
/// simulator's agreement with the kernel (median ×1.04, worst ×1.2 over 18
/// conditions) can promise.
pub const GAIN: f64 = 1.2;

/// What to do about a group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Loss-limited loss-based sender: BBR would be faster.
    EnableBbr,
    /// No predicted gain (no loss, loss from its own queue, or already BBR).
    NoGain,
    /// This host mostly receives from them: the sender's algorithm matters.
    ReceiverSide,
    /// The peers' receive windows are the limit.
    RwndLimited,
    /// This host's send buffers are the limit.
    SndbufLimited,
    /// The application had nothing to send most of the time.
    AppLimited,
    /// Too little data to say.
    InsufficientData,
}

impl Verdict {
    /// The JSON / table name.
    pub fn name(self) -> &'static str {
        match self {
            Verdict::EnableBbr => "enable_bbr",
            Verdict::NoGain => "no_gain",
            Verdict::ReceiverSide => "receiver_side",
            Verdict::RwndLimited => "rwnd_limited",
            Verdict::SndbufLimited => "sndbuf_limited",
            Verdict::AppLimited => "app_limited",
            Verdict::InsufficientData => "insufficient_data",
        }
    }

    /// The one command that acts on it (`None`: nothing to do on this host).
    pub fn action(self) -> Option<&'static str> {
        match self {
            Verdict::EnableBbr => Some("sudo bbrkit enable"),
            Verdict::SndbufLimited => Some("sudo bbrkit enable --tune"),
            _ => None,
        }
    }
}

/// A verdict and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Advice {
    /// The verdict.
    pub verdict: Verdict,
    /// One line: the evidence.
    pub reason: String,
    /// The command that acts on it, if any.
    pub action: Option<&'static str>,
}

fn advice(verdict: Verdict, reason: String) -> Advice {
    Advice {
        verdict,
        reason,
        action: verdict.action(),
    }
}

fn bytes(b: u64) -> String {
    match b {
        0..1_000 => format!("{b} B"),
        1_000..1_000_000 => format!("{:.1} kB", b as f64 / 1e3),
        1_000_000..1_000_000_000 => format!("{:.1} MB", b as f64 / 1e6),
        _ => format!("{:.2} GB", b as f64 / 1e9),
    }
}

fn pct(x: f64) -> String {
    if x < 0.001 {
        format!("{:.3}%", x * 100.0)
    } else {
        format!("{:.1}%", x * 100.0)
    }
}

/// Decides for `g`; `pred` is its prediction (`None` when there is none),
/// `lower_bound` whether it is one (capacity assumed from delivery rates,
/// or capped for the simulator), `min_bytes` the `--min-bytes` threshold.
pub fn decide(g: &Group, pred: Option<&Prediction>, lower_bound: bool, min_bytes: u64) -> Advice {
    let moved = g.bytes_sent + g.bytes_received;
    if moved < min_bytes {
        return advice(
            Verdict::InsufficientData,
            format!(
                "{} moved, below --min-bytes {}",
                bytes(moved),
                bytes(min_bytes)
            ),
        );
    }
    if g.bytes_received > g.bytes_sent {
        return advice(
            Verdict::ReceiverSide,
            format!(
                "this host received {} and sent {}: BBR acts on the sender, enable it there",
                bytes(g.bytes_received),
                bytes(g.bytes_sent)
            ),
        );
    }
    if let Some(a) = limit(g) {
        return a;
    }
    let cc = g.main_cc.as_deref().unwrap_or("unknown");
    if cc.starts_with("bbr") {
        return advice(Verdict::NoGain, format!("already on {cc}"));
    }
    match pred {
        Some(p) if g.loss.is_some() => network(g, p, cc, lower_bound),
        _ => advice(
            Verdict::InsufficientData,
            format!(
                "no prediction: no loss or RTT estimate, or not among the {} largest groups simulated",
                crate::report::MAX_PREDICTIONS
            ),
        ),
    }
}

/// The limit other than the network that took the largest share of the
/// time, when it took more than the network did.
fn limit(g: &Group) -> Option<Advice> {
    let l = g.limited?;
    let limits = [
        (
            l.rwnd,
            Verdict::RwndLimited,
            "limited by the peers' receive window: the fix is on the client (its tcp_rmem / window), not here",
        ),
        (
            l.sndbuf,
            Verdict::SndbufLimited,
            "limited by this host's send buffer: raise tcp_wmem",
        ),
        (
            l.app,
            Verdict::AppLimited,
            "idle: the application had nothing to send; a faster algorithm cannot help",
        ),
    ];
    let (share, verdict, why) = limits.into_iter().max_by(|a, b| a.0.total_cmp(&b.0))?;
    (share > l.network).then(|| advice(verdict, format!("{} of the time {why}", pct(share))))
}

/// A network-limited, loss-based group: `enable_bbr` when the gain's lower
/// bound clears [`GAIN`], else `no_gain` with the reason.
fn network(g: &Group, p: &Prediction, cc: &str, lower_bound: bool) -> Advice {
    let Some(loss) = g.loss else {
        return advice(Verdict::InsufficientData, "no loss estimate".into());
    };
    let loss_text = format!(
        "loss {} [{}, {}]",
        pct(loss.estimate),
        pct(loss.low),
        pct(loss.high)
    );
    if p.gain.low >= GAIN {
        let bound = if lower_bound { "at least " } else { "" };
        return advice(
            Verdict::EnableBbr,
            format!(
                "{loss_text} limits {cc}: BBR predicted {bound}{:.1}x faster (range {:.1}-{:.1}x)",
                p.gain.estimate, p.gain.low, p.gain.high
            ),
        );
    }
    let why = match (g.mean_srtt_us, g.min_rtt_us) {
        (Some(s), Some(m)) if s > crate::predict::QUEUE_RTT_RATIO * f64::from(m) => format!(
            "it fills a queue (mean RTT {:.1} ms over min {:.1} ms), so its {loss_text} is congestion it causes, not random loss",
            s / 1e3,
            f64::from(m) / 1e3
        ),
        _ => loss_text,
    };
    advice(
        Verdict::NoGain,
        format!(
            "{why}: BBR predicted {:.2}x {cc} (lower bound {:.2}x, needs {GAIN}x)",
            p.gain.estimate, p.gain.low
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::estimate::{Interval, Limited};
    use crate::predict::PerAlgorithm;

    fn interval(estimate: f64, low: f64, high: f64) -> Interval {
        Interval {
            low,
            estimate,
            high,
        }
    }

    fn group(sent: u64, received: u64, limited: Option<Limited>, cc: &str) -> Group {
        Group {
            prefix: "192.0.2.0/24".into(),
            connections: 3,
            bytes_sent: sent,
            bytes_received: received,
            segments_sent: 10_000,
            segments_retransmitted: 200,
            min_rtt_us: Some(10_000),
            mean_srtt_us: Some(10_200.0),
            loss: Some(interval(0.02, 0.017, 0.023)),
            limited,
            throughput_bits_per_second: Some(8e6),
            max_delivery_rate_bits_per_second: Some(20e6),
            cc: [(cc.to_string(), 3)].into(),
            main_cc: Some(cc.into()),
        }
    }

    fn limited(rwnd: f64, sndbuf: f64, app: f64) -> Option<Limited> {
        Some(Limited {
            rwnd,
            sndbuf,
            app,
            network: 1.0 - rwnd - sndbuf - app,
            observed_s: 30.0,
        })
    }

    fn prediction(gain: Interval) -> Prediction {
        let x = interval(1e6, 1e6, 1e6);
        Prediction {
            bits_per_second: PerAlgorithm {
                cubic: x,
                bbr: x,
                bbr3: x,
            },
            baseline: "cubic",
            baseline_bits_per_second: x,
            gain,
            gain_bbr3: gain,
            simulated_s: 3.0,
            simulated_bits_per_second: 100_000_000,
            runs: 9,
        }
    }

    #[test]
    fn order_of_the_rules() {
        let big = prediction(interval(10.0, 8.0, 12.0));
        let net = limited(0.0, 0.0, 0.01);
        let v = |g: &Group, p: Option<&Prediction>| decide(g, p, false, 1_000_000).verdict;
        assert_eq!(
            v(&group(10, 10, net, "cubic"), Some(&big)),
            Verdict::InsufficientData
        );
        assert_eq!(
            v(&group(1, 5_000_000, net, "cubic"), Some(&big)),
            Verdict::ReceiverSide
        );
        let g = group(9_000_000, 0, limited(0.6, 0.0, 0.0), "cubic");
        assert_eq!(
            v(&g, Some(&big)),
            Verdict::RwndLimited,
            "a limit beats the loss"
        );
        let g = group(9_000_000, 0, limited(0.1, 0.5, 0.2), "cubic");
        assert_eq!(v(&g, Some(&big)), Verdict::SndbufLimited);
        assert_eq!(
            decide(&g, None, false, 0).action,
            Some("sudo bbrkit enable --tune")
        );
        let g = group(9_000_000, 0, limited(0.0, 0.0, 0.7), "cubic");
        assert_eq!(v(&g, Some(&big)), Verdict::AppLimited);
        let g = group(9_000_000, 0, limited(0.3, 0.0, 0.0), "cubic");
        assert_eq!(
            v(&g, Some(&big)),
            Verdict::EnableBbr,
            "the network took 70 %"
        );
        assert_eq!(
            v(&group(9_000_000, 0, net, "bbr"), Some(&big)),
            Verdict::NoGain
        );
        assert_eq!(
            v(&group(9_000_000, 0, net, "cubic"), None),
            Verdict::InsufficientData
        );
        assert_eq!(
            v(&group(9_000_000, 0, None, "cubic"), Some(&big)),
            Verdict::EnableBbr
        );
    }

    #[test]
    fn enable_bbr_needs_the_lower_bound_of_the_gain() {
        let g = group(9_000_000, 0, limited(0.0, 0.0, 0.0), "cubic");
        let wide = prediction(interval(1.5, 1.1, 1.9));
        let a = decide(&g, Some(&wide), false, 0);
        assert_eq!(a.verdict, Verdict::NoGain, "{}", a.reason);
        assert!(a.reason.contains("lower bound 1.10x"), "{}", a.reason);
        assert_eq!(a.action, None);
        let sure = prediction(interval(1.5, 1.2, 1.9));
        let a = decide(&g, Some(&sure), true, 0);
        assert_eq!(a.verdict, Verdict::EnableBbr);
        assert!(a.reason.contains("at least 1.5x"), "{}", a.reason);
        assert_eq!(a.action, Some("sudo bbrkit enable"));
        let mut queue = g.clone();
        queue.mean_srtt_us = Some(15_000.0);
        let a = decide(&queue, Some(&prediction(interval(1.0, 1.0, 1.0))), false, 0);
        assert!(
            a.reason
                .starts_with("it fills a queue (mean RTT 15.0 ms over min 10.0 ms)"),
            "{}",
            a.reason
        );
    }
}
