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
//!  loopback (no network path) ─────────────────────────────────▶ no_gain
//!  already on BBR ─────────────────────────────────────────────▶ no_gain
//!  predicted gain, lower bound ≥ GAIN (at the capacity's lower
//!  end when it is unknown), or capacity unknown, random loss
//!  (no queue) and the gain at the link's speed ≥ GAIN ──────────▶ enable_bbr
//!  capacity unknown, random loss, the link reports no speed ───▶ insufficient_data
//!  otherwise (no loss, or loss from its own queue) ────────────▶ no_gain
//! ```
//!
//! A gain is never stated as a lower bound alone: with an unknown capacity
//! the reason gives the range up to the link's speed, or says it is open.
//! `enable_bbr`, and a gain the data cannot decide, name the `bbrkit trial`
//! command that measures it on the group's own traffic. Must never decide on
//! a number the group does not have: without the prediction there is no
//! `enable_bbr`.

use serde::Serialize;

use crate::group::Group;
use crate::predict::{PathGuess, Prediction, QUEUE_RTT_RATIO, RateSource};
use bbrkit_vocab::format::{bytes, pct};

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
    /// The `bbrkit trial` command that would measure the gain, if any.
    pub measure: Option<String>,
}

fn advice(verdict: Verdict, reason: String) -> Advice {
    Advice {
        verdict,
        reason,
        action: verdict.action(),
        measure: None,
    }
}

/// What a group's verdict is decided on besides the group itself.
#[derive(Debug, Clone, Copy)]
pub struct Basis<'a> {
    /// The path it was simulated on (`None`: no prediction).
    pub path: Option<&'a PathGuess>,
    /// Its prediction.
    pub prediction: Option<&'a Prediction>,
    /// `--min-bytes`.
    pub min_bytes: u64,
    /// `--port`, for the trial command.
    pub port: Option<u16>,
}

/// The trial that measures BBR against the group's algorithm on its own
/// traffic (the `bbrkit trial` flags: `--arms A,B`, `--prefix`, `--port`,
/// `--until-confident`).
pub fn trial_command(g: &Group, port: Option<u16>) -> String {
    let cc = g.main_cc.as_deref().unwrap_or("cubic");
    let port = port.map(|p| format!(" --port {p}")).unwrap_or_default();
    format!(
        "bbrkit trial --arms {cc},bbr --prefix {}{port} --until-confident",
        g.prefix
    )
}

/// Decides for `g` on `basis`.
pub fn decide(g: &Group, basis: &Basis<'_>) -> Advice {
    let (pred, min_bytes) = (basis.prediction, basis.min_bytes);
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
    if g.loopback {
        return advice(
            Verdict::NoGain,
            "loopback: these connections never leave this host, so no network path limits them and the algorithm changes nothing here (no prediction)".into(),
        );
    }
    let cc = g.main_cc.as_deref().unwrap_or("unknown");
    if cc.starts_with("bbr") {
        return advice(Verdict::NoGain, format!("already on {cc}"));
    }
    match (pred, basis.path) {
        (Some(p), Some(path)) if g.loss.is_some() => {
            let mut a = network(g, p, path, cc);
            if a.verdict != Verdict::NoGain {
                a.measure = Some(trial_command(g, basis.port));
            }
            a
        }
        _ => advice(
            Verdict::InsufficientData,
            format!(
                "no prediction: no loss or RTT estimate, or not among the {} largest groups simulated",
                crate::predict::MAX_PREDICTIONS
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
/// bound clears [`GAIN`]; `insufficient_data` when the capacity is unknown
/// and only its upper end (or an open one) would clear it; else `no_gain`.
fn network(g: &Group, p: &Prediction, path: &PathGuess, cc: &str) -> Advice {
    let Some(loss) = g.loss else {
        return advice(Verdict::InsufficientData, "no loss estimate".into());
    };
    let loss_text = format!(
        "loss {} [{}, {}]",
        pct(loss.estimate),
        pct(loss.low),
        pct(loss.high)
    );
    let unknown = path.rate_source == RateSource::HighestDeliveryRate;
    // Loss without a queue is random loss on a path the flow does not fill:
    // its capacity is above what the flow reached.
    let random = loss.low > 0.0 && !path.queue_loss;
    let at_link = p.at_link_speed.as_ref().map(|a| a.gain);
    if p.gain.low >= GAIN || (unknown && random && at_link.is_some_and(|g| g >= GAIN)) {
        let gain = if unknown {
            range(p, path, "faster")
        } else {
            let bound = if p.simulated_bits_per_second < path.rate_bps {
                "at least "
            } else {
                ""
            };
            format!(
                "{bound}{:.1}x faster (range {:.1}-{:.1}x)",
                p.gain.estimate, p.gain.low, p.gain.high
            )
        };
        return advice(
            Verdict::EnableBbr,
            format!("{loss_text} limits {cc}: BBR predicted {gain}"),
        );
    }
    let open = path
        .link
        .as_ref()
        .is_none_or(|l| l.bits_per_second.is_none());
    if unknown && random && open {
        return advice(
            Verdict::InsufficientData,
            format!(
                "{loss_text}, capacity unknown: BBR predicted {}; give --path-rate, or measure it",
                range(p, path, cc)
            ),
        );
    }
    let why = match (g.mean_srtt_us, g.min_rtt_us) {
        (Some(s), Some(m)) if s > QUEUE_RTT_RATIO * f64::from(m) => format!(
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

/// The gain over an unknown capacity, as a range, relative to `what`
/// (`faster`, or the baseline's name): `1.6x faster at the highest delivery
/// rate seen to 160.0x at eth0's speed`, or open-ended when the link
/// reports no speed.
fn range(p: &Prediction, path: &PathGuess, what: &str) -> String {
    let low = format!(
        "{:.1}x {what} at the highest delivery rate seen",
        p.gain.estimate
    );
    match (&p.at_link_speed, &path.link) {
        (Some(at), _) => {
            let capped = if at.simulated_bits_per_second < at.link_bits_per_second {
                ", simulated at the simulator's cap"
            } else {
                ""
            };
            format!("{low} to {:.1}x at {}'s speed{capped}", at.gain, at.link)
        }
        (None, Some(l)) if l.bits_per_second.is_some() => format!(
            "{low} (range {:.1}-{:.1}x), which {} is no faster than",
            p.gain.low, p.gain.high, l.dev
        ),
        (None, l) => format!(
            "{low} and more on a faster path ({})",
            l.as_ref()
                .map_or("no interface was found for it".to_string(), |l| format!(
                    "{} reports no speed",
                    l.dev
                ))
        ),
    }
}

#[cfg(test)]
#[path = "verdict/tests.rs"]
mod tests;
