//! End-to-end BBRv3/v2 runs on the synthetic path ([`crate::testing::Driver`]):
//! real sends, a drop-tail bottleneck, SACK loss detection and rate samples.
//! Each test records every state step and checks it is legal.

use std::cell::RefCell;
use std::rc::Rc;

use super::super::{Bbr3, Bbr3Params, State, StateSteps};
use crate::random::SeededRng;
use crate::testing::{Driver, LossHook, TestPath, random_loss};
use crate::time::{Duration, Instant};

/// One recorded step: when, from, to, and a snapshot at that ACK.
#[derive(Debug, Clone, Copy)]
struct Step {
    t: Instant,
    from: State,
    to: State,
    lost: u64,
}

/// Per-ACK log shared with the observer.
#[derive(Debug, Default)]
struct Log {
    steps: Vec<Step>,
    /// Max cwnd seen while in PROBE_RTT, and the probe cwnd target then.
    probe_rtt_cwnd: Vec<(u32, u32)>,
    /// (inflight_hi, inflight_lo) set at some point?
    saw_inflight_hi: bool,
    saw_inflight_lo: bool,
    /// Pacing gains seen in DOWN.
    down_gain: Option<u32>,
}

/// The default test path (10 Mbit/s, 40 ms, 100 packets) without the
/// per-ACK trace, which these tests do not read.
fn untraced() -> TestPath {
    TestPath {
        record_trace: false,
        ..TestPath::default()
    }
}

fn run(
    cfg: TestPath,
    params: Bbr3Params,
    secs: u64,
    seed: u64,
    setup: impl FnOnce(&mut Driver<Bbr3>),
) -> (Driver<Bbr3>, Rc<RefCell<Log>>) {
    run_with(cfg, params, secs, seed, None, setup)
}

fn run_with(
    cfg: TestPath,
    params: Bbr3Params,
    secs: u64,
    seed: u64,
    loss: Option<LossHook>,
    setup: impl FnOnce(&mut Driver<Bbr3>),
) -> (Driver<Bbr3>, Rc<RefCell<Log>>) {
    let log = Rc::new(RefCell::new(Log::default()));
    let l = log.clone();
    let mut d = Driver::new(cfg, move |tcp| {
        Bbr3::new(tcp, Box::new(SeededRng::new(seed, 3)), params)
    });
    if let Some(hook) = loss {
        d = d.with_loss(hook);
    }
    let mut d = d.with_observer(move |v| {
        let mut l = l.borrow_mut();
        for &(from, to) in v.cc.last_transitions() {
            assert!(
                from.is_legal_step(to),
                "illegal step {from:?} -> {to:?} at {:?}",
                v.now
            );
            l.steps.push(Step {
                t: v.now,
                from,
                to,
                lost: v.tcp.lost,
            });
        }
        if v.cc.state() == State::ProbeRtt {
            let target = v.cc.probe_rtt_cwnd(v.tcp);
            l.probe_rtt_cwnd.push((v.tcp.snd_cwnd, target));
        }
        l.saw_inflight_hi |= v.cc.inflight_hi != super::INF;
        l.saw_inflight_lo |= v.cc.inflight_lo != super::INF;
        if v.cc.state() == State::ProbeBwDown {
            l.down_gain = Some(v.cc.pacing_gain);
        }
    });
    setup(&mut d);
    d.run_for(Duration::from_secs(secs));
    (d, log)
}

/// Times at which `to` was entered.
fn entries(log: &Log, to: State) -> Vec<Instant> {
    log.steps
        .iter()
        .filter(|s| s.to == to)
        .map(|s| s.t)
        .collect()
}

fn secs(t: Instant) -> f64 {
    t.as_nanos() as f64 / 1e9
}

#[test]
fn bulk_flow_runs_startup_drain_and_the_full_probe_bw_cycle() {
    let cfg = untraced(); // 10 Mbit/s, 40 ms, 100 pkts
    let bdp = cfg.bdp_packets();
    let (d, log) = run(cfg.clone(), Bbr3Params::v3(), 12, 1, |_| {});
    let log = log.borrow();
    let first: Vec<_> = log.steps.iter().take(3).map(|s| (s.from, s.to)).collect();
    assert_eq!(
        first[..2],
        [
            (State::Startup, State::Drain),
            (State::Drain, State::ProbeBwDown)
        ],
        "{first:?}"
    );
    // STARTUP ended on the bw plateau (no loss yet), within ~10 rounds.
    let drain = log.steps[0];
    assert_eq!(drain.lost, 0, "plateau exit, not loss");
    assert!(
        secs(drain.t) < 12.0 * 0.040,
        "left STARTUP at {:.3}s",
        secs(drain.t)
    );
    // The cycle DOWN → CRUISE → REFILL → UP → DOWN shows up, in order.
    for s in [State::ProbeBwCruise, State::ProbeBwRefill, State::ProbeBwUp] {
        assert!(
            !entries(&log, s).is_empty(),
            "never entered {s:?}: {:?}",
            log.steps
        );
    }
    // REFILL lasts one round (≈ one RTT plus queueing).
    for w in log.steps.windows(2) {
        if w[0].to == State::ProbeBwRefill && w[1].from == State::ProbeBwRefill {
            let dt = w[1].t - w[0].t;
            assert!(
                dt >= Duration::from_millis(35) && dt <= Duration::from_millis(200),
                "REFILL {dt:?}"
            );
        }
    }
    // PROBE_RTT about every 5 s, at max(4, BDP/2).
    let prt = entries(&log, State::ProbeRtt);
    assert!(!prt.is_empty(), "no PROBE_RTT in 12 s");
    assert!(
        secs(prt[0]) > 5.0 && secs(prt[0]) < 5.6,
        "first PROBE_RTT at {:.3}s",
        secs(prt[0])
    );
    for (cwnd, target) in &log.probe_rtt_cwnd {
        assert!(cwnd <= target, "cwnd {cwnd} > probe_rtt target {target}");
        assert!(
            *target as u64 <= bdp / 2 + 4,
            "target {target} vs BDP {bdp}"
        );
    }
    // Utilisation: ≥ 90% of the bottleneck over the run after STARTUP.
    let delivered = d.sender.tcp.delivered as f64;
    let capacity = 12.0 * cfg.rate_bps as f64 / (8.0 * f64::from(cfg.mss));
    assert!(
        delivered / capacity > 0.9,
        "utilisation {:.3}",
        delivered / capacity
    );
}

#[test]
fn probe_rtt_lasts_200ms_plus_a_round_and_recurs_5s_later() {
    let cfg = untraced();
    let (_d, log) = run(cfg, Bbr3Params::v3(), 17, 2, |_| {});
    let log = log.borrow();
    let enter = entries(&log, State::ProbeRtt);
    let leave: Vec<Instant> = log
        .steps
        .iter()
        .filter(|s| s.from == State::ProbeRtt)
        .map(|s| s.t)
        .collect();
    assert!(enter.len() >= 2, "{enter:?}");
    for (e, l) in enter.iter().zip(&leave) {
        let held = *l - *e;
        // max(200 ms, one round) after inflight reached the target.
        assert!(
            held > Duration::from_millis(200) && held < Duration::from_millis(400),
            "held {held:?}"
        );
    }
    let gap = enter[1] - leave[0];
    assert!(
        gap > Duration::from_secs(5) && gap < Duration::from_millis(5200),
        "gap {gap:?}"
    );
}

#[test]
fn small_bdp_probes_after_reno_coexistence_rounds_large_bdp_after_2_to_3_s() {
    // BDP 33 packets: probe after ≈ min(63, BDP) rounds ≈ 1.4 s < 2 s.
    let cfg = untraced();
    let (_d, log) = run(cfg, Bbr3Params::v3(), 9, 3, |_| {});
    let log = log.borrow();
    let downs = entries(&log, State::ProbeBwDown);
    let refills = entries(&log, State::ProbeBwRefill);
    assert!(refills.len() >= 3, "{:?}", log.steps);
    for r in &refills {
        let down = downs
            .iter()
            .rev()
            .find(|d| *d < r)
            .expect("DOWN before REFILL");
        let wait = *r - *down;
        assert!(
            wait < Duration::from_secs(2),
            "Reno bound should win: {wait:?}"
        );
        assert!(
            wait > Duration::from_millis(30 * 40),
            "≈BDP rounds: {wait:?}"
        );
    }

    // 100 Mbit/s × 100 ms: BDP 833 packets, 63 rounds = 6.3 s: the
    // randomised wall-clock wait of 2–3 s decides.
    let cfg = TestPath {
        rate_bps: 100_000_000,
        base_rtt: Duration::from_millis(100),
        queue_limit: 1700,
        ..untraced()
    };
    let (_d, log) = run(cfg, Bbr3Params::v3(), 10, 4, |_| {});
    let log = log.borrow();
    let downs = entries(&log, State::ProbeBwDown);
    let refills = entries(&log, State::ProbeBwRefill);
    assert!(!refills.is_empty(), "{:?}", log.steps);
    for r in &refills {
        let down = downs
            .iter()
            .rev()
            .find(|d| *d < r)
            .expect("DOWN before REFILL");
        let wait = *r - *down;
        if log
            .steps
            .iter()
            .any(|s| s.to == State::ProbeRtt && s.t > *down && s.t < *r)
        {
            continue; // PROBE_RTT restarted the clock
        }
        assert!(
            wait > Duration::from_secs(2) && wait < Duration::from_millis(3150),
            "probe wait {wait:?}"
        );
    }
}

#[test]
fn shallow_buffer_loss_in_up_sets_inflight_hi_and_keeps_loss_low() {
    let cfg = TestPath {
        queue_limit: 10,
        ..untraced()
    };
    let (d, log) = run(cfg.clone(), Bbr3Params::v3(), 12, 5, |_| {});
    let log = log.borrow();
    assert!(log.saw_inflight_hi, "loss never bounded inflight_hi");
    let sent = d.sender.stats.packets_sent as f64;
    let lost = d.sender.tcp.lost as f64;
    assert!(lost / sent < 0.03, "loss rate {:.4}", lost / sent);
    let capacity = 12.0 * cfg.rate_bps as f64 / (8.0 * f64::from(cfg.mss));
    assert!(d.sender.tcp.delivered as f64 / capacity > 0.8);
}

#[test]
fn random_loss_below_two_percent_does_not_collapse_throughput() {
    let cfg = untraced();
    let seed = crate::testing::test_seed(0xB3);
    let hook = random_loss(0.01, seed);
    let (d, _log) = run_with(cfg.clone(), Bbr3Params::v3(), 10, 6, Some(hook), |_| {});
    let capacity = 10.0 * cfg.rate_bps as f64 / (8.0 * f64::from(cfg.mss));
    let util = d.sender.tcp.delivered as f64 / capacity;
    assert!(util > 0.7, "1% random loss: utilisation {util:.3}");
}

#[test]
fn shallow_ecn_threshold_keeps_the_queue_short() {
    let cfg = TestPath {
        rate_bps: 100_000_000,
        base_rtt: Duration::from_millis(2),
        queue_limit: 200,
        ecn_threshold: Some(10),
        ..untraced()
    };
    let (d, log) = run(cfg, Bbr3Params::v3(), 4, 7, |d| d.sender.tcp.ecn_low = true);
    let log = log.borrow();
    assert!(d.sender.cc.ecn_eligible());
    assert!(d.sender.cc.ecn_alpha() < 1.0);
    assert!(d.stats().ce_marked > 0);
    assert_eq!(
        d.stats().dropped_queue,
        0,
        "ECN, not loss, bounded the queue"
    );
    assert!(
        log.saw_inflight_hi || log.saw_inflight_lo,
        "ECN never bounded inflight"
    );
}

#[test]
fn v2_runs_the_same_cycle_with_v2alpha_gains() {
    let cfg = untraced();
    let (_d, log) = run(cfg, Bbr3Params::v2(), 8, 8, |_| {});
    let log = log.borrow();
    assert_eq!(log.steps[0].from, State::Startup);
    assert_eq!(log.down_gain, Some(192), "v2 DOWN pacing gain 0.75");
    assert!(!entries(&log, State::ProbeBwUp).is_empty());
}

/// Per-run figures for the report (printed with `--nocapture`).
#[derive(Debug, Default)]
struct Figures {
    utilisation: f64,
    loss_rate: f64,
    mean_rtt_ms: f64,
    /// Share of time in (STARTUP+DRAIN, DOWN, CRUISE, REFILL, UP, PROBE_RTT).
    share: [f64; 6],
}

fn measure(cfg: TestPath, params: Bbr3Params, secs: u64, loss: Option<LossHook>) -> Figures {
    #[derive(Default)]
    struct Acc {
        last: Option<(Instant, State)>,
        time: [u128; 6],
        rtt_sum: u128,
        rtt_n: u64,
    }
    let acc = Rc::new(RefCell::new(Acc::default()));
    let a = acc.clone();
    let mut d = Driver::new(cfg.clone(), move |tcp| {
        Bbr3::new(tcp, Box::new(SeededRng::new(9, 3)), params)
    });
    if let Some(h) = loss {
        d = d.with_loss(h);
    }
    let mut d = d.with_observer(move |v| {
        let mut a = a.borrow_mut();
        let slot = |s: State| match s {
            State::Startup | State::Drain => 0,
            State::ProbeBwDown => 1,
            State::ProbeBwCruise => 2,
            State::ProbeBwRefill => 3,
            State::ProbeBwUp => 4,
            State::ProbeRtt => 5,
        };
        if let Some((t, s)) = a.last {
            a.time[slot(s)] += (v.now - t).as_nanos();
        }
        a.last = Some((v.now, v.cc.state()));
        if let Some(r) = v.rs.rtt {
            a.rtt_sum += r.as_nanos();
            a.rtt_n += 1;
        }
    });
    d.run_for(Duration::from_secs(secs));
    let a = acc.borrow();
    let total: u128 = a.time.iter().sum::<u128>().max(1);
    let capacity = secs as f64 * cfg.rate_bps as f64 / (8.0 * f64::from(cfg.mss));
    let mut share = [0.0; 6];
    for (s, t) in share.iter_mut().zip(a.time) {
        *s = t as f64 / total as f64;
    }
    Figures {
        utilisation: d.sender.tcp.delivered as f64 / capacity,
        loss_rate: d.sender.tcp.lost as f64 / d.sender.stats.packets_sent.max(1) as f64,
        mean_rtt_ms: a.rtt_sum as f64 / a.rtt_n.max(1) as f64 / 1e6,
        share,
    }
}

#[test]
fn v2_and_v3_figures_on_four_paths() {
    let base = untraced();
    let paths: [(&str, TestPath, Option<f64>); 4] = [
        ("10M/40ms q=100 (3 BDP)", base.clone(), None),
        (
            "10M/40ms q=10 (0.3 BDP)",
            TestPath {
                queue_limit: 10,
                ..base.clone()
            },
            None,
        ),
        (
            "100M/20ms q=167 (1 BDP)",
            TestPath {
                rate_bps: 100_000_000,
                base_rtt: Duration::from_millis(20),
                queue_limit: 167,
                ..base.clone()
            },
            None,
        ),
        ("10M/40ms q=100 1% loss", base.clone(), Some(0.01)),
    ];
    println!(
        "| path | alg | utilisation | loss | mean RTT ms | startup+drain / down / cruise / refill / up / probe_rtt time |"
    );
    println!("|---|---|---|---|---|---|");
    for (name, cfg, p) in paths {
        for params in [Bbr3Params::v2(), Bbr3Params::v3()] {
            let v = params.version;
            let f = measure(cfg.clone(), params, 20, p.map(|p| random_loss(p, 0xB3)));
            let s = f.share.map(|x| format!("{:.0}%", x * 100.0)).join(" / ");
            println!(
                "| {name} | bbr{v} | {:.3} | {:.4} | {:.1} | {s} |",
                f.utilisation, f.loss_rate, f.mean_rtt_ms
            );
            // 1% random loss: 0.70 since the driver runs the one transport
            // (RACK, Linux's RTO) and rs.lost follows v3 (counted after the
            // ACK's loss marks); it was 0.80-0.84 on the old test sender.
            let floor = if p.is_some() { 0.70 } else { 0.75 };
            assert!(f.utilisation > floor, "{name} bbr{v}: {f:?}");
            if p.is_none() {
                assert!(f.loss_rate < 0.03, "{name} bbr{v}: {f:?}");
            }
            // Most of the time is spent in PROBE_BW (mostly CRUISE), and
            // PROBE_RTT costs about 200 ms per 5 s.
            assert!(
                f.share[1] + f.share[2] + f.share[3] + f.share[4] > 0.8,
                "{name} bbr{v}: {f:?}"
            );
            assert!(f.share[5] < 0.1, "{name} bbr{v}: {f:?}");
        }
    }
}

#[test]
fn on_off_app_limited_flow_restarts_from_idle_sanely() {
    use crate::testing::App;
    let cfg = TestPath {
        app: App::OnOff {
            burst: 60,
            idle: Duration::from_millis(300),
        },
        ..untraced()
    };
    let (d, log) = run(cfg, Bbr3Params::v3(), 12, 10, |_| {});
    let log = log.borrow();
    // Each cycle: ~60 packets (≈ 2 BDP at 10 Mbit/s) plus 300 ms idle.
    assert!(
        d.sender.tcp.delivered >= 60 * 20,
        "delivered {}",
        d.sender.tcp.delivered
    );
    assert!(
        d.sender.tcp.lost == 0,
        "an app-limited flow below BDP should not lose"
    );
    // Idle periods refresh min_rtt (the queue drains), so PROBE_RTT is rare.
    assert!(entries(&log, State::ProbeRtt).len() <= 2, "{:?}", log.steps);
    let st = crate::CongestionControl::status(&d.sender.cc, &d.sender.tcp);
    let bw = st.bw_bps.expect("bw estimate");
    assert!(bw > 1_000_000 && bw < 12_000_000, "bw {bw}");
}
