//! The estimators on recorded kernel answers (`tests/fixtures/`, recorded by
//! `examples/record.rs` in a lab: kernel CUBIC over 10 ms + 2 % loss +
//! 100 Mbit/s with an app-limited loopback pair beside it, and a client
//! whose receive buffer caps the window). Every expected value is computed
//! here from the raw `tcp_info` of the two censuses, independently of the
//! tracker.

use std::cell::Cell;
use std::collections::BTreeSet;
use std::time::Duration;

use bbrkit_advise::estimate;
use bbrkit_advise::report::Options;
use bbrkit_advise::sampler::{Clock, SamplePlan, SamplingStats};
use bbrkit_advise::track::Conn;
use bbrkit_advise::{Tracker, Verdict, analyze, sample};
use bbrkit_diag::{Socket, TcpInfo, TcpState};

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");
const CLIENT: &str = "198.18.0.1";

/// The sockets of census `i` of `case` (e.g. `lossy-server`).
fn census(case: &str, i: usize) -> Vec<Socket> {
    let mut out = Vec::new();
    for j in 0.. {
        let Ok(bytes) = std::fs::read(format!("{DIR}/{case}-s{i}-{j}.bin")) else {
            break;
        };
        bbrkit_diag::wire::parse_datagram(&bytes, "fixture", &mut |s| out.push(s)).unwrap();
    }
    assert!(!out.is_empty(), "fixture {case} census {i}");
    out
}

/// Seconds of census `i` of `case` since its first.
fn time(case: &str, i: usize) -> f64 {
    let text = std::fs::read_to_string(format!("{DIR}/sweeps.txt")).unwrap();
    text.lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .find(|f| f[0] == case && f[1] == i.to_string())
        .map(|f| f[2].parse().unwrap())
        .unwrap()
}

fn track(case: &str) -> Tracker {
    let mut t = Tracker::new();
    for i in 0..2 {
        t.begin_sweep(Duration::from_secs_f64(time(case, i)));
        for s in census(case, i) {
            t.observe(&s);
        }
        t.end_sweep();
    }
    t
}

/// The raw `tcp_info` of the socket to `remote` (`ip` or `ip:port`) in census `i`.
fn raw(case: &str, i: usize, remote: &str) -> TcpInfo {
    census(case, i)
        .into_iter()
        .find(|s| s.state != TcpState::Listen && s.remote.to_string().starts_with(remote))
        .and_then(|s| s.tcp_info)
        .unwrap_or_else(|| panic!("no socket to {remote} in {case} census {i}"))
}

fn conn<'a>(t: &'a Tracker, remote: &str) -> &'a Conn {
    t.conns()
        .find(|c| c.remote.to_string().starts_with(remote))
        .unwrap_or_else(|| panic!("no connection to {remote}"))
}

#[test]
fn connections_are_counted_once_across_censuses() {
    let t = track("lossy-server");
    let expected: BTreeSet<u64> = (0..2)
        .flat_map(|i| census("lossy-server", i))
        .filter(|s| s.tcp_info.is_some() && s.state != TcpState::Listen)
        .map(|s| s.cookie)
        .collect();
    assert_eq!(t.len(), expected.len(), "one record per cookie");
    assert!(
        t.len() >= 3,
        "the lab flow and both ends of the loopback pair"
    );
    assert!(
        t.conns().all(|c| c.samples == 2),
        "each seen in both censuses"
    );
    // The same census again, later: still one record each, counters kept.
    let mut again = track("lossy-server");
    again.begin_sweep(Duration::from_secs(10));
    for s in census("lossy-server", 1) {
        again.observe(&s);
    }
    again.end_sweep();
    assert_eq!(again.len(), t.len());
    let (a, b) = (conn(&again, CLIENT), conn(&t, CLIENT));
    assert_eq!(a.window(), b.window(), "latest counters unchanged");
    assert_eq!(a.samples, 3);
}

#[test]
fn window_starts_at_first_census_or_at_birth() {
    let (s0, s1) = (
        raw("lossy-server", 0, CLIENT),
        raw("lossy-server", 1, CLIENT),
    );
    let t = track("lossy-server");
    let w = conn(&t, CLIENT).window();
    assert_eq!(
        w.bytes_acked,
        s1.bytes_acked.unwrap() - s0.bytes_acked.unwrap(),
        "present at the first census: only what it did since"
    );
    // Not in the first census: born inside the window, everything counts.
    let mut late = Tracker::new();
    late.begin_sweep(Duration::ZERO);
    late.end_sweep();
    late.begin_sweep(Duration::from_secs(1));
    for s in census("lossy-server", 1) {
        late.observe(&s);
    }
    late.end_sweep();
    assert_eq!(
        conn(&late, CLIENT).window().bytes_acked,
        s1.bytes_acked.unwrap()
    );
}

#[test]
fn loss_is_retransmitted_over_sent_segments() {
    let (s0, s1) = (
        raw("lossy-server", 0, CLIENT),
        raw("lossy-server", 1, CLIENT),
    );
    let k = u64::from(s1.total_retrans.unwrap() - s0.total_retrans.unwrap());
    let n = u64::from(s1.data_segs_out.unwrap() - s0.data_segs_out.unwrap());
    let t = track("lossy-server");
    let l = estimate::loss([conn(&t, CLIENT)]).unwrap();
    assert_eq!(l.estimate, k as f64 / n as f64, "k {k} n {n}");
    assert!(
        l.low < 0.02 && 0.02 < l.high,
        "the configured 2 % inside the 95 % interval: {l:?} (k {k}, n {n})"
    );
    // The receiver sends only ACKs: no data segment, no loss estimate.
    let c = track("lossy-client");
    assert_eq!(estimate::loss([conn(&c, "198.18.0.2")]), None);
}

#[test]
fn limited_fractions_follow_the_kernel_timers() {
    let dt = time("rwnd-server", 1) - time("rwnd-server", 0);
    let (s0, s1) = (raw("rwnd-server", 0, CLIENT), raw("rwnd-server", 1, CLIENT));
    let rwnd_s = (s1.rwnd_limited_us.unwrap() - s0.rwnd_limited_us.unwrap()) as f64 / 1e6;
    let t = track("rwnd-server");
    let l = estimate::limited([conn(&t, CLIENT)]).unwrap();
    assert!((l.rwnd - (rwnd_s / dt).min(1.0)).abs() < 1e-9, "{l:?}");
    assert!(l.rwnd > 0.5, "window-limited most of the time: {l:?}");
    let lossy = track("lossy-server");
    let bulk = estimate::limited([conn(&lossy, CLIENT)]).unwrap();
    assert!(
        bulk.network > 0.8,
        "lossy bulk CUBIC: cwnd-limited: {bulk:?}"
    );
    let app = estimate::limited([conn(&lossy, "127.0.0.1")]).unwrap();
    assert!(app.app > 0.5, "10 kB every 50 ms: mostly idle: {app:?}");
    for x in [l, bulk, app] {
        let sum = x.rwnd + x.sndbuf + x.app + x.network;
        assert!((sum - 1.0).abs() < 1e-9, "fractions add up: {x:?}");
    }
}

#[test]
fn verdicts_on_recorded_connections() {
    let opts = Options {
        prefix_v4: 32,
        min_bytes: 100_000,
        path_rate_bps: Some(100_000_000),
        include_loopback: true,
        ..Options::default()
    };
    let verdict = |case: &str, prefix: &str| {
        let r = analyze(&track(case), SamplingStats::default(), &opts, &|_| None).unwrap();
        let g = r.groups.iter().find(|g| g.prefix == prefix).unwrap();
        (g.advice.verdict, g.advice.reason.clone())
    };
    let v = verdict("lossy-server", "198.18.0.1/32");
    assert_eq!(v.0, Verdict::EnableBbr, "{v:?}");
    let v = verdict("lossy-server", "127.0.0.1/32");
    assert_eq!(v.0, Verdict::AppLimited, "{v:?}");
    let v = verdict("lossy-server", "127.0.0.2/32");
    assert_eq!(v.0, Verdict::ReceiverSide, "{v:?}");
    let v = verdict("lossy-client", "198.18.0.2/32");
    assert_eq!(v.0, Verdict::ReceiverSide, "{v:?}");
    let v = verdict("rwnd-server", "198.18.0.1/32");
    assert_eq!(v.0, Verdict::RwndLimited, "{v:?}");
    let strict = Options {
        min_bytes: 1 << 40,
        ..opts.clone()
    };
    let r = analyze(
        &track("lossy-server"),
        SamplingStats::default(),
        &strict,
        &|_| None,
    )
    .unwrap();
    assert!(
        r.groups
            .iter()
            .all(|g| g.advice.verdict == Verdict::InsufficientData)
    );
    assert!(
        r.groups
            .iter()
            .all(|g| g.predicted_bits_per_second.is_none())
    );
    let r = analyze(
        &track("lossy-server"),
        SamplingStats::default(),
        &Options::default(),
        &|_| None,
    )
    .unwrap();
    assert!(
        r.groups.iter().all(|g| !g.prefix.starts_with("127.")),
        "loopback left out"
    );
}

/// Issue 21 item 10: advise dropped loopback connections without a word
/// (progress: 4 connections, summary: 0). The report counts what it left
/// out, and kept loopback groups are never simulated (their rate is the
/// CPU's: the prediction was 200x below what they measured).
#[test]
fn loopback_left_out_is_counted_and_never_predicted() {
    let t = track("lossy-server");
    let loopback = t.conns().filter(|c| c.remote.ip().is_loopback()).count();
    assert!(loopback >= 2, "the fixture has a loopback pair");
    let r = analyze(&t, SamplingStats::default(), &Options::default(), &|_| None).unwrap();
    assert_eq!(r.loopback_connections_left_out, loopback);
    assert_eq!(r.connections + loopback, t.len());
    let kept = Options {
        include_loopback: true,
        min_bytes: 0,
        prefix_v4: 32,
        ..Options::default()
    };
    let r = analyze(&t, SamplingStats::default(), &kept, &|_| None).unwrap();
    assert_eq!(r.loopback_connections_left_out, 0);
    let lo: Vec<_> = r
        .groups
        .iter()
        .filter(|g| g.prefix.starts_with("127."))
        .collect();
    assert!(!lo.is_empty());
    for g in lo {
        assert!(g.prediction.is_none(), "{g:?}");
        assert!(g.predicted_bits_per_second.is_none(), "{g:?}");
    }
}

/// Issue 23: a loss-limited CUBIC sender with no `--path-rate` got "BBR
/// predicted at least 1.3x faster" — the highest delivery rate seen taken
/// as the capacity, a lower bound presented as the gain. Now the gain is a
/// range up to the link's speed, and the verdict names the trial.
#[test]
fn unknown_capacity_is_a_range_up_to_the_link_speed() {
    let opts = Options {
        prefix_v4: 32,
        min_bytes: 100_000,
        ..Options::default()
    };
    let link = |a: std::net::IpAddr| {
        assert_eq!(a.to_string(), CLIENT, "looked up for the group's address");
        Some(bbrkit_diag::link::Link {
            dev: "veth-s".into(),
            bits_per_second: Some(1_000_000_000),
        })
    };
    let r = analyze(
        &track("lossy-server"),
        SamplingStats::default(),
        &opts,
        &link,
    )
    .unwrap();
    let g = r
        .groups
        .iter()
        .find(|g| g.prefix == "198.18.0.1/32")
        .unwrap();
    println!("{}", serde_json::to_string_pretty(g).unwrap());
    assert_eq!(g.advice.verdict, Verdict::EnableBbr, "{}", g.advice.reason);
    assert_eq!(g.path_rate_link.as_deref(), Some("veth-s"));
    assert_eq!(g.path_rate_high_bits_per_second, Some(1e9));
    let range = g.gain_range.unwrap();
    let high = range.high.unwrap();
    assert!(
        range.low < 2.0,
        "at the highest delivery rate seen: {range:?}"
    );
    assert!(
        high > 20.0 * range.low,
        "at 1 Gbit/s BBR keeps ~98 %: {range:?}"
    );
    let at_link = g.predicted_high_bits_per_second.unwrap();
    assert!(at_link.bbr > 0.8e9, "{at_link:?}");
    assert!(
        at_link.cubic < 20e6,
        "CUBIC stays loss-limited: {at_link:?}"
    );
    assert!(!g.advice.reason.contains("at least"), "{}", g.advice.reason);
    let says = format!(
        "{:.1}x faster at the highest delivery rate seen to {high:.1}x at veth-s's speed",
        range.low
    );
    assert!(g.advice.reason.ends_with(&says), "{}", g.advice.reason);
    assert_eq!(
        g.advice.measure.as_deref(),
        Some("bbrkit trial --arms cubic,bbr --prefix 198.18.0.1/32 --until-confident")
    );
    // No speed from the link: an open range, said so, still the trial.
    let r = analyze(
        &track("lossy-server"),
        SamplingStats::default(),
        &opts,
        &|_| {
            Some(bbrkit_diag::link::Link {
                dev: "eth0".into(),
                bits_per_second: None,
            })
        },
    )
    .unwrap();
    let g = r
        .groups
        .iter()
        .find(|g| g.prefix == "198.18.0.1/32")
        .unwrap();
    assert!(
        g.advice.reason.contains("more on a faster path"),
        "{}",
        g.advice.reason
    );
    assert_eq!(g.gain_range.unwrap().high, None);
    assert!(g.advice.measure.is_some());
}

/// A clock that jumps to whatever time it is asked to wait for.
struct FakeClock(Cell<Duration>);

impl Clock for FakeClock {
    fn now(&self) -> Duration {
        self.0.get()
    }
    fn sleep_until(&self, t: Duration) {
        if t > self.0.get() {
            self.0.set(t);
        }
    }
}

#[test]
fn sampler_takes_one_census_per_interval() {
    let plan = SamplePlan {
        duration: Duration::from_millis(1500),
        interval: Duration::from_millis(500),
        port: Some(5201),
    };
    let clock = FakeClock(Cell::new(Duration::from_secs(100)));
    let mut calls = Vec::new();
    let mut replay = |f: &bbrkit_diag::Filter, visit: &mut dyn FnMut(Socket)| {
        assert_eq!(f.port, Some(5201), "the port goes to the kernel filter");
        calls.push(clock.now());
        let i = (calls.len() - 1).min(1);
        let socks = census("lossy-server", i);
        let n = socks.len();
        socks.into_iter().for_each(&mut *visit);
        Ok(n)
    };
    let mut tracker = Tracker::new();
    let mut seen = Vec::new();
    let stats = sample(&plan, &clock, &mut replay, &mut tracker, &mut |d, n, _| {
        seen.push((d, n))
    })
    .unwrap();
    assert_eq!(stats.sweeps, 4, "at 0, 0.5, 1.0 and 1.5 s");
    assert_eq!(seen, vec![(1, 4), (2, 4), (3, 4), (4, 4)]);
    let ms: Vec<u128> = calls
        .iter()
        .map(|t| (*t - Duration::from_secs(100)).as_millis())
        .collect();
    assert_eq!(ms, vec![0, 500, 1000, 1500]);
    assert!(tracker.conns().all(|c| c.samples == 4));
    let bad = SamplePlan {
        interval: Duration::from_secs(2),
        ..plan
    };
    let mut never = |_: &bbrkit_diag::Filter, _: &mut dyn FnMut(Socket)| -> Result<usize, _> {
        panic!("no census for a plan that cannot run")
    };
    assert!(sample(&bad, &clock, &mut never, &mut tracker, &mut |_, _, _| {}).is_err());
}
