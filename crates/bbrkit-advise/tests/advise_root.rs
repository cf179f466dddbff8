//! Root tests: `advise` inside a lab's namespaces while the lab carries
//! kernel TCP over known conditions (bbrkit-lab's topology and emulator; run
//! under `flock /tmp/bbrkit-root.lock`). The sender's view is the server
//! namespace, as on a real server; the client namespace is a host that only
//! receives.
//!
//! Tolerances (docs/advise.md): min RTT within 10 % of the configured RTT;
//! the configured loss inside the 3-sigma binomial band of the estimate
//! (`|p̂ − p| ≤ 3·sqrt(p(1−p)/n) + 0.2 %`, n = segments sent; the 0.2 %
//! covers the retransmissions an RTO adds beyond the lost segments); the
//! predicted BBR/CUBIC ratio within ×1.5 of the lab's measured ratio.

mod lab;

use std::sync::Mutex;
use std::time::Duration;

use bbrkit_advise::report::{GroupReport, Options, Report};
use bbrkit_advise::sampler::live_census;
use bbrkit_advise::{SamplePlan, SystemClock, Tracker, Verdict, analyze, sample};
use bbrkit_lab::netns::Netns;

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

const RATE: u64 = 100_000_000;

/// Samples `ns` for `secs` (every 250 ms) and analyses with `--path-rate 100mbit`.
fn advise_in(ns: &Netns, secs: f64) -> Report {
    advise_with(ns, secs, Some(RATE))
}

/// Samples `ns` for `secs` (every 250 ms) and analyses with `path_rate`
/// (`None`: unknown, the links of the namespace give its upper end).
fn advise_with(ns: &Netns, secs: f64, path_rate: Option<u64>) -> Report {
    ns.run(|| {
        let plan = SamplePlan {
            duration: Duration::from_secs_f64(secs),
            interval: Duration::from_millis(250),
            port: None,
        };
        let mut tracker = Tracker::new();
        let stats = sample(
            &plan,
            &SystemClock::start(),
            &mut live_census,
            &mut tracker,
            &mut |_, _, _| {},
        )
        .expect("sampling");
        let opts = Options {
            min_bytes: 100_000,
            path_rate_bps: path_rate,
            ..Options::default()
        };
        Ok(analyze(&tracker, stats, &opts, &bbrkit_advise::sampler::live_links).expect("analysis"))
    })
    .expect("enter the namespace")
}

fn client_group(r: &Report) -> &GroupReport {
    println!("{}", serde_json::to_string_pretty(r).unwrap());
    assert_eq!(r.groups.len(), 1, "one remote prefix: {r:#?}");
    let g = &r.groups[0];
    assert_eq!(g.connections, 1, "one flow, counted once over every census");
    g
}

#[test]
#[ignore = "needs root"]
fn lossy_cubic_path_predicts_the_lab_s_bbr_gain() {
    let _g = serial();
    let cond = lab::condition(10, 0.02, RATE);
    let (cubic, (server, client)) = lab::with_traffic(&cond, "cubic", 6.0, &[], 7, |topo| {
        std::thread::scope(|s| {
            let c = s.spawn(|| advise_in(&topo.client, 5.5));
            (advise_in(&topo.server, 5.5), c.join().unwrap())
        })
    });
    let g = client_group(&server);
    assert_eq!(g.prefix, "198.18.0.0/24");
    assert_eq!(g.cc.as_deref(), Some("cubic"));
    let rtt = g.min_rtt_ms.unwrap();
    assert!(
        (rtt - 10.0).abs() <= 1.0,
        "min RTT {rtt} ms vs 10 ms configured"
    );
    let (p, n) = (0.02, g.segments_sent as f64);
    let loss = g.loss.unwrap();
    let band = 3.0 * (p * (1.0 - p) / n).sqrt() + 0.002;
    assert!(
        (loss - p).abs() <= band,
        "loss {loss} vs {p} ± {band} (n {n})"
    );
    assert_eq!(g.advice.verdict, Verdict::EnableBbr, "{}", g.advice.reason);
    let predicted = g.prediction.as_ref().unwrap().gain.estimate;
    let (bbr, ()) = lab::with_traffic(&cond, "bbr", 4.0, &[], 8, |_| ());
    let measured = bbr.bits_per_second / cubic.bits_per_second;
    println!(
        "min RTT {rtt:.3} ms, loss {loss:.4} (n {n}), predicted BBR/CUBIC {predicted:.2}, measured {measured:.2} ({:.1} / {:.1} Mbit/s)",
        bbr.bits_per_second / 1e6,
        cubic.bits_per_second / 1e6
    );
    let off = predicted / measured;
    assert!(
        (1.0 / 1.5..=1.5).contains(&off),
        "predicted {predicted:.2} vs measured {measured:.2}"
    );
    // The client only received: its group says so.
    let c = client_group(&client);
    assert_eq!(c.prefix, "198.18.0.0/24");
    assert_eq!(
        c.advice.verdict,
        Verdict::ReceiverSide,
        "{}",
        c.advice.reason
    );
    assert_eq!(c.loss, None, "a receiver cannot see the sender's loss");
}

/// Issue 23: a server sending CUBIC through 35 ms + 1.5 % loss, capacity
/// not given. advise predicted "at least 1.6x" (the highest delivery rate
/// seen taken as the capacity) where the lab measures two orders of
/// magnitude more. Now the gain is a range up to the link's speed (the lab's
/// veth: 10 Gbit/s, simulated at 1 Gbit/s) that holds the lab's measured
/// ratio, the verdict is `enable_bbr`, and it names the trial.
#[test]
#[ignore = "needs root"]
fn unknown_capacity_gives_a_range_that_holds_the_lab_s_gain() {
    let _g = serial();
    let cond = lab::condition(35, 0.015, RATE);
    let (cubic, server) = lab::with_traffic(&cond, "cubic", 8.0, &[], 11, |topo| {
        advise_with(&topo.server, 7.5, None)
    });
    let g = client_group(&server);
    assert_eq!(g.advice.verdict, Verdict::EnableBbr, "{}", g.advice.reason);
    assert!(!g.advice.reason.contains("at least"), "{}", g.advice.reason);
    assert!(
        g.path_rate_link.is_some(),
        "the veth that reaches the client"
    );
    let range = g.gain_range.expect("a prediction");
    let high = range.high.expect("the veth reports its speed");
    let (bbr, ()) = lab::with_traffic(&cond, "bbr", 6.0, &[], 12, |_| ());
    let measured = bbr.bits_per_second / cubic.bits_per_second;
    println!(
        "gain range {:.2}..{high:.2}, measured {measured:.2} ({:.1} / {:.2} Mbit/s)",
        range.low,
        bbr.bits_per_second / 1e6,
        cubic.bits_per_second / 1e6
    );
    assert!(
        range.low / 1.5 <= measured && measured <= high * 1.5,
        "the lab's BBR/CUBIC {measured:.1} within the range {:.1}..{high:.1}",
        range.low
    );
    assert!(measured > 10.0, "two orders of magnitude, not 1.6x");
    assert_eq!(
        g.advice.measure.as_deref(),
        Some("bbrkit trial --arms cubic,bbr --prefix 198.18.0.0/24 --until-confident")
    );
}

#[test]
#[ignore = "needs root"]
fn no_loss_gives_no_gain() {
    let _g = serial();
    let cond = lab::condition(10, 0.0, RATE);
    // A receive buffer that starts large: receive-window autotuning lagging
    // behind slow start made one run rwnd-limited 49 % of the time, which
    // is another verdict's business (tested below).
    let big = [("client", "net/ipv4/tcp_rmem", "4096 8388608 67108864")];
    let (_, server) = lab::with_traffic(&cond, "cubic", 4.0, &big, 9, |topo| {
        advise_in(&topo.server, 3.5)
    });
    let g = client_group(&server);
    assert_eq!(g.advice.verdict, Verdict::NoGain, "{}", g.advice.reason);
}

#[test]
#[ignore = "needs root"]
fn small_client_receive_buffer_gives_rwnd_limited() {
    let _g = serial();
    let cond = lab::condition(10, 0.0, RATE);
    let (t, server) = lab::with_traffic(
        &cond,
        "cubic",
        4.0,
        &[("client", "net/ipv4/tcp_rmem", "4096 32768 32768")],
        10,
        |topo| advise_in(&topo.server, 3.5),
    );
    let g = client_group(&server);
    assert!(
        t.bits_per_second < 0.5 * RATE as f64,
        "the window, not the link, limits"
    );
    assert_eq!(
        g.advice.verdict,
        Verdict::RwndLimited,
        "{}",
        g.advice.reason
    );
    assert!(g.limited.unwrap().rwnd > 0.5, "{:?}", g.limited);
}

#[test]
#[ignore = "needs root"]
fn small_server_send_buffer_gives_sndbuf_limited() {
    let _g = serial();
    let cond = lab::condition(10, 0.0, RATE);
    let small = [("server", "net/ipv4/tcp_wmem", "4096 16384 16384")];
    let (t, server) = lab::with_traffic(&cond, "cubic", 4.0, &small, 13, |topo| {
        advise_in(&topo.server, 3.5)
    });
    let g = client_group(&server);
    assert!(
        t.bits_per_second < 0.5 * RATE as f64,
        "the send buffer, not the link, limits"
    );
    assert_eq!(
        g.advice.verdict,
        Verdict::SndbufLimited,
        "{}",
        g.advice.reason
    );
    assert_eq!(g.advice.action, Some("sudo bbrkit enable --tune"));
}
