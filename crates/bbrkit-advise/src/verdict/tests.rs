use super::*;
use crate::estimate::{Interval, Limited};
use crate::predict::{AtLinkSpeed, PerAlgorithm, Predicted};
use bbrkit_cc::Duration;
use bbrkit_diag::link::Link;

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
        address: "192.0.2.7".parse().unwrap(),
        loopback: false,
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
        at_link_speed: None,
    }
}

/// A path of 100 Mbit/s: given, or (`link`) the lower end of an unknown
/// capacity reached through `link`.
fn path(link: Option<Link>) -> PathGuess {
    PathGuess {
        rate_bps: 100_000_000,
        rate_source: if link.is_some() {
            RateSource::HighestDeliveryRate
        } else {
            RateSource::Given
        },
        link,
        rtt: Duration::from_millis(10),
        loss: interval(0.02, 0.017, 0.023),
        queue_loss: false,
    }
}

fn decide_on(g: &Group, p: Option<&Prediction>, path: &PathGuess, min_bytes: u64) -> Advice {
    decide(
        g,
        &Basis {
            path: Some(path),
            prediction: p,
            min_bytes,
            port: None,
        },
    )
}

#[test]
fn order_of_the_rules() {
    let big = prediction(interval(10.0, 8.0, 12.0));
    let net = limited(0.0, 0.0, 0.01);
    let given = path(None);
    let v = |g: &Group, p: Option<&Prediction>| decide_on(g, p, &given, 1_000_000).verdict;
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
        decide_on(&g, None, &given, 0).action,
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
    let a = decide_on(&g, Some(&wide), &path(None), 0);
    assert_eq!(a.verdict, Verdict::NoGain, "{}", a.reason);
    assert!(a.reason.contains("lower bound 1.10x"), "{}", a.reason);
    assert_eq!((a.action, a.measure), (None, None));
    let sure = prediction(interval(1.5, 1.2, 1.9));
    let a = decide_on(&g, Some(&sure), &path(None), 0);
    assert_eq!(a.verdict, Verdict::EnableBbr);
    assert!(
        a.reason
            .ends_with("BBR predicted 1.5x faster (range 1.2-1.9x)"),
        "{}",
        a.reason
    );
    assert_eq!(a.action, Some("sudo bbrkit enable"));
    let mut capped = sure.clone();
    capped.simulated_bits_per_second = 50_000_000;
    let a = decide_on(&g, Some(&capped), &path(None), 0);
    assert!(a.reason.contains("at least 1.5x"), "{}", a.reason);
    let mut queue = g.clone();
    queue.mean_srtt_us = Some(15_000.0);
    let a = decide_on(
        &queue,
        Some(&prediction(interval(1.0, 1.0, 1.0))),
        &path(None),
        0,
    );
    assert!(
        a.reason
            .starts_with("it fills a queue (mean RTT 15.0 ms over min 10.0 ms)"),
        "{}",
        a.reason
    );
}

fn eth0(bits_per_second: Option<u64>) -> Option<Link> {
    Some(Link {
        dev: "eth0".into(),
        bits_per_second,
    })
}

fn at_eth0(gain: f64) -> AtLinkSpeed {
    AtLinkSpeed {
        link: "eth0".into(),
        link_bits_per_second: 1_000_000_000,
        simulated_bits_per_second: 1_000_000_000,
        simulated_s: 3.0,
        bits_per_second: Predicted {
            cubic: 5e6,
            bbr: gain * 5e6,
            bbr3: gain * 5e6,
        },
        baseline_bits_per_second: 5e6,
        gain,
        gain_bbr3: gain,
        runs: 3,
    }
}

/// Issue 23: with the capacity unknown, the gain is a range up to the
/// link's speed — never "at least 1.6x" alone — and `enable_bbr` names the
/// trial that measures it.
#[test]
fn an_unknown_capacity_gives_a_range_and_the_trial() {
    let g = group(9_000_000, 0, limited(0.0, 0.0, 0.0), "cubic");
    let mut p = prediction(interval(1.6, 1.5, 1.9));
    p.at_link_speed = Some(at_eth0(160.0));
    let a = decide_on(&g, Some(&p), &path(eth0(Some(1_000_000_000))), 0);
    assert_eq!(a.verdict, Verdict::EnableBbr);
    assert!(
        a.reason.ends_with(
            "BBR predicted 1.6x faster at the highest delivery rate seen to 160.0x at eth0's speed"
        ),
        "{}",
        a.reason
    );
    assert!(!a.reason.contains("at least"), "{}", a.reason);
    assert_eq!(
        a.measure.as_deref(),
        Some("bbrkit trial --arms cubic,bbr --prefix 192.0.2.0/24 --until-confident")
    );
    // The link reports no speed: open-ended, said so.
    let mut open = p.clone();
    open.at_link_speed = None;
    let a = decide_on(&g, Some(&open), &path(eth0(None)), 0);
    assert_eq!(a.verdict, Verdict::EnableBbr);
    assert!(
        a.reason.ends_with(
            "1.6x faster at the highest delivery rate seen and more on a faster path (eth0 reports no speed)"
        ),
        "{}",
        a.reason
    );
}

/// A gain below the threshold at the capacity's lower end: random loss
/// (no queue) on a path whose link is much faster means the flow does not
/// fill the path — `enable_bbr` with the range; with no link speed the
/// data cannot decide — `insufficient_data` with the trial, not `no_gain`.
#[test]
fn the_gain_over_the_whole_capacity_range_decides() {
    let g = group(9_000_000, 0, limited(0.0, 0.0, 0.0), "cubic");
    let mut p = prediction(interval(1.05, 1.0, 1.1));
    p.at_link_speed = Some(at_eth0(40.0));
    let fast = path(eth0(Some(1_000_000_000)));
    let a = decide_on(&g, Some(&p), &fast, 0);
    assert_eq!(a.verdict, Verdict::EnableBbr, "{}", a.reason);
    assert!(
        a.reason.ends_with(
            "BBR predicted 1.1x faster at the highest delivery rate seen to 40.0x at eth0's speed"
        ),
        "{}",
        a.reason
    );
    // A queue: the losses are its own overflow, the path is full.
    let queued = PathGuess {
        queue_loss: true,
        ..fast.clone()
    };
    assert_eq!(decide_on(&g, Some(&p), &queued, 0).verdict, Verdict::NoGain);
    // At the link's speed too little: no gain, nothing to measure.
    p.at_link_speed = Some(at_eth0(1.1));
    let a = decide_on(&g, Some(&p), &fast, 0);
    assert_eq!((a.verdict, a.measure), (Verdict::NoGain, None));
    // The link reports no speed: undecided, with the trial.
    p.at_link_speed = None;
    let a = decide(
        &g,
        &Basis {
            path: Some(&path(eth0(None))),
            prediction: Some(&p),
            min_bytes: 0,
            port: Some(443),
        },
    );
    assert_eq!(a.verdict, Verdict::InsufficientData, "{}", a.reason);
    assert!(
        a.reason.ends_with(
            "capacity unknown: BBR predicted 1.1x cubic at the highest delivery rate seen and more on a faster path (eth0 reports no speed); give --path-rate, or measure it"
        ),
        "{}",
        a.reason
    );
    assert_eq!(
        a.measure.as_deref(),
        Some("bbrkit trial --arms cubic,bbr --prefix 192.0.2.0/24 --port 443 --until-confident")
    );
    // The capacity given: the lower bound of the gain alone decides.
    assert_eq!(
        decide_on(&g, Some(&p), &path(None), 0).verdict,
        Verdict::NoGain
    );
}

/// Issue 21 item 10: a loopback group (kept with `--include-loopback`) is
/// not predicted — its rate is the CPU's, 200x what a simulated link gives.
#[test]
fn loopback_is_not_a_network_path() {
    let mut g = group(9_000_000, 0, limited(0.0, 0.0, 0.0), "cubic");
    g.loopback = true;
    let a = decide_on(&g, None, &path(None), 0);
    assert_eq!(a.verdict, Verdict::NoGain);
    assert!(a.reason.starts_with("loopback:"), "{}", a.reason);
}
