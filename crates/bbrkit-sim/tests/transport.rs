//! Transport behaviour end to end with Reno: exactly-once delivery, SACK
//! recovery, RTO after a tail loss, determinism, bounded memory.

use bbrkit_cc::{Algorithm, Duration, Instant};
use bbrkit_sim::{
    BufferSize, FlowConfig, FlowReport, LossModel, PathConfig, SimConfig, Simulation,
};

fn path(rate_bps: u64, rtt_ms: u64, buffer: BufferSize, loss: f64) -> PathConfig {
    PathConfig::bernoulli(rate_bps, rtt_ms, buffer, loss)
}

fn finite(alg: Algorithm, size: u64) -> FlowConfig {
    FlowConfig {
        size: Some(size),
        ..FlowConfig::bulk(alg)
    }
}

/// One Reno flow of `size` bytes over `path`, for at most `secs`, seeded.
fn reno_transfer(size: u64, path: PathConfig, secs: u64, seed: u64) -> SimConfig {
    SimConfig::new(
        path,
        vec![finite(Algorithm::Reno, size)],
        Duration::from_secs(secs),
        seed,
    )
}

#[test]
fn lossless_transfer_delivers_every_byte_exactly_once() {
    let size = 3_000_001; // not a multiple of the MSS
    let cfg = reno_transfer(
        size,
        path(20_000_000, 20, BufferSize::Bytes(50_000_000), 0.0),
        30,
        1,
    );
    let mut sim = Simulation::new(cfg).unwrap();
    sim.run(&mut |_| {});
    let r = sim.report();
    let f = &r.flows[0];
    assert_eq!(f.bytes_delivered, size);
    assert_eq!(sim.receiver(0).duplicates, 0, "nothing arrived twice");
    assert_eq!((f.retransmits, f.queue_drops, f.rtos), (0, 0, 0));
    assert_eq!(f.packets_sent, size.div_ceil(1448));
    let fct = f.fct_s.expect("finished");
    // 3 MB at 20 Mbit/s is 1.25 s of wire time (with headers ~1.3 s) plus slow start.
    assert!(fct > 1.25 && fct < 3.0, "fct {fct}");
}

#[test]
fn transfer_through_overflowing_buffer_still_delivers_every_byte() {
    let size = 5_000_000;
    let cfg = reno_transfer(
        size,
        path(10_000_000, 40, BufferSize::Packets(8), 0.01),
        120,
        3,
    );
    let mut sim = Simulation::new(cfg).unwrap();
    sim.run(&mut |_| {});
    let r = sim.report();
    let f = &r.flows[0];
    println!("{f:?}");
    assert_eq!(f.bytes_delivered, size);
    assert!(
        f.queue_drops > 0 && f.random_drops > 0,
        "both kinds of loss happened"
    );
    assert!(f.retransmits >= f.queue_drops + f.random_drops);
    assert!(f.fct_s.is_some());
}

#[test]
fn single_loss_is_repaired_by_sack_fast_recovery() {
    let size = 2_000_000;
    let cfg = reno_transfer(
        size,
        path(20_000_000, 20, BufferSize::Bytes(50_000_000), 0.0),
        30,
        1,
    );
    let mut sim = Simulation::new(cfg).unwrap();
    sim.drop_segment(0, 100);
    sim.run(&mut |_| {});
    let f = &sim.report().flows[0];
    assert_eq!(f.bytes_delivered, size);
    assert_eq!(f.random_drops, 1);
    assert_eq!(f.retransmits, 1, "only the lost segment is resent");
    assert_eq!(f.recoveries, 1);
    assert_eq!(f.rtos, 0, "SACK recovery, not a timeout");
    // Reno halved its window: ssthresh is set.
    assert!(sim.sender(0).tcp.snd_ssthresh < 1000);
}

#[test]
fn several_losses_in_one_window_recover_without_timeout() {
    let size = 2_000_000;
    let cfg = reno_transfer(
        size,
        path(20_000_000, 20, BufferSize::Bytes(50_000_000), 0.0),
        30,
        1,
    );
    let mut sim = Simulation::new(cfg).unwrap();
    for seg in [200, 203, 210, 211, 250] {
        sim.drop_segment(0, seg);
    }
    sim.run(&mut |_| {});
    let f = &sim.report().flows[0];
    assert_eq!(f.bytes_delivered, size);
    assert_eq!(f.retransmits, 5);
    assert_eq!((f.recoveries, f.rtos), (1, 0));
}

/// 20 segments over 100 Mbit/s × 10 ms whose last one (no later data can
/// produce SACKs) is lost `drops` times, with or without tail-loss probes;
/// the flow's report, after checking every byte arrived.
fn tail_loss(tlp: bool, drops: usize) -> FlowReport {
    let size = 20 * 1448;
    let mut cfg = reno_transfer(
        size,
        path(100_000_000, 10, BufferSize::Bdp(2.0), 0.0),
        10,
        1,
    );
    cfg.tlp = tlp;
    let mut sim = Simulation::new(cfg).unwrap();
    for _ in 0..drops {
        sim.drop_segment(0, 19);
    }
    sim.run(&mut |_| {});
    let f = sim.report().flows[0].clone();
    assert_eq!(f.bytes_delivered, size);
    f
}

#[test]
fn tail_loss_is_repaired_by_rto() {
    // Without tail-loss probes (Linux tcp_early_retrans=0) the RTO repairs it.
    let f = tail_loss(false, 1);
    assert_eq!((f.rtos, f.retransmits), (1, 1));
    let fct = f.fct_s.unwrap();
    // RTO = srtt + max(200 ms, 4*mdev) after the last ACK: ~0.23..0.3 s.
    assert!(fct > 0.2 && fct < 0.4, "fct {fct}");
}

#[test]
fn tail_loss_is_repaired_by_a_loss_probe_after_two_rtts() {
    // The same tail loss with TLP (the default): the probe retransmits the
    // last segment 2·srtt + 2 ms after the last ACK, no RTO, and the ACK
    // that covers it ends the flow.
    let f = tail_loss(true, 1);
    assert_eq!((f.rtos, f.retransmits, f.tlps), (0, 1, Some(1)));
    let fct = f.fct_s.unwrap();
    // Two RTTs of data, 2·srtt + 2 ms of probe timeout, one RTT of repair.
    assert!(fct > 0.04 && fct < 0.08, "fct {fct}");
}

#[test]
fn a_lost_probe_is_followed_by_the_rto_retransmitting_the_head() {
    // The tail segment and the probe's copy of it are both lost: the RTO
    // retransmits the head at once (tcp_retransmit_timer), although the
    // probe's copy still counts as a retransmission in flight.
    let f = tail_loss(true, 2);
    assert_eq!((f.tlps, f.rtos, f.retransmits), (Some(1), 1, 2));
    let fct = f.fct_s.unwrap();
    assert!(fct > 0.2 && fct < 0.5, "fct {fct}");
}

#[test]
fn lost_retransmission_backs_off_the_rto() {
    // Without tail-loss probes, as in tail_loss_is_repaired_by_rto.
    let f = tail_loss(false, 2);
    assert_eq!((f.rtos, f.retransmits), (2, 2));
    // Second timeout is twice the first: total wait ~3 RTOs.
    let fct = f.fct_s.unwrap();
    assert!(fct > 0.6 && fct < 1.0, "fct {fct}");
}

fn run_with_trace(seed: u64, loss: f64) -> (String, Vec<String>) {
    let mut cfg = SimConfig::new(
        path(50_000_000, 30, BufferSize::Bdp(1.0), loss),
        vec![
            FlowConfig::bulk(Algorithm::Reno),
            FlowConfig {
                start: Duration::from_millis(300),
                ..FlowConfig::bulk(Algorithm::Reno)
            },
        ],
        Duration::from_secs(3),
        seed,
    );
    cfg.sample_interval = Some(Duration::from_millis(50));
    let mut rows = vec![];
    let r = bbrkit_sim::run(&cfg, &mut |row| rows.push(format!("{row:?}"))).unwrap();
    (format!("{r:?}"), rows)
}

#[test]
fn same_inputs_and_seed_give_identical_output() {
    let a = run_with_trace(7, 0.01);
    let b = run_with_trace(7, 0.01);
    assert_eq!(a, b);
    assert!(a.1.len() > 100);
    let c = run_with_trace(8, 0.01);
    assert_ne!(a.0, c.0, "the seed matters when there is random loss");
}

#[test]
fn memory_follows_packets_in_flight_not_run_length() {
    let cfg = SimConfig::new(
        path(100_000_000, 20, BufferSize::Bdp(1.0), 0.01),
        vec![FlowConfig::bulk(Algorithm::Reno)],
        Duration::from_secs(40),
        2,
    );
    let mut sim = Simulation::new(cfg).unwrap();
    let peak = |sim: &mut Simulation, until_s: u64| {
        let mut m = (0, 0);
        let mut t = sim.now();
        while t < Instant::from_micros(until_s * 1_000_000) {
            t += Duration::from_millis(50);
            sim.run_until(t, &mut |_| {});
            m.0 = m.0.max(sim.pending_events());
            m.1 = m.1.max(sim.packets_held());
        }
        m
    };
    let early = peak(&mut sim, 10);
    let late = peak(&mut sim, 40);
    println!("early {early:?} late {late:?}");
    // BDP + buffer is ~340 packets; holdings stay bounded by that scale.
    assert!(late.1 <= 2 * early.1.max(400), "{late:?} vs {early:?}");
    assert!(late.0 <= 64, "event heap stays tiny: {late:?}");
}

#[test]
fn random_loss_after_link_matches_binomial_bounds() {
    let p = 0.03;
    let cfg = SimConfig::new(
        path(50_000_000, 10, BufferSize::Bdp(1.0), p),
        vec![FlowConfig::bulk(Algorithm::Reno)],
        Duration::from_secs(10),
        bbrkit_cc::testing::test_seed(11),
    );
    let r = bbrkit_sim::run(&cfg, &mut |_| {}).unwrap();
    let f = &r.flows[0];
    let n = f.packets_sent - f.queue_drops;
    let mean = n as f64 * p;
    let sd = (n as f64 * p * (1.0 - p)).sqrt();
    assert!(
        (f.random_drops as f64 - mean).abs() < 5.0 * sd,
        "{} drops of {n}",
        f.random_drops
    );
}

#[test]
fn every_algorithm_delivers_a_lossy_transfer_exactly() {
    let size = 4_000_000;
    for alg in bbrkit_cc::Algorithm::ALL {
        for (seed, loss) in [(1, 0.0), (2, 0.02)] {
            let mut cfg = SimConfig::new(
                path(50_000_000, 30, BufferSize::Bdp(0.5), loss),
                vec![finite(alg, size)],
                Duration::from_secs(60),
                seed,
            );
            cfg.path.ack_loss = 0.05;
            let r = bbrkit_sim::run(&cfg, &mut |_| {}).unwrap();
            let f = &r.flows[0];
            println!("{alg} seed {seed} loss {loss}: {f:?}");
            assert_eq!(f.bytes_delivered, size, "{alg}");
            assert!(f.fct_s.is_some(), "{alg} finished");
            assert!(r.duration_s < 60.0, "the run stops when every flow is done");
        }
    }
}

#[test]
fn extra_rtt_applies_to_one_flow_only() {
    let cfg = SimConfig::new(
        path(50_000_000, 20, BufferSize::Bdp(1.0), 0.0),
        vec![
            FlowConfig::bulk(Algorithm::Bbr1),
            FlowConfig {
                extra_rtt: Duration::from_millis(60),
                ..FlowConfig::bulk(Algorithm::Bbr1)
            },
        ],
        Duration::from_secs(5),
        1,
    );
    let r = bbrkit_sim::run(&cfg, &mut |_| {}).unwrap();
    let min = |i: usize| r.flows[i].rtt_ms.unwrap().p50;
    // Base 20 ms vs 80 ms, plus the shared queue.
    assert!(
        min(1) - min(0) > 55.0 && min(1) - min(0) < 65.0,
        "{} {}",
        min(0),
        min(1)
    );
}

#[test]
fn bursty_loss_hits_in_runs() {
    let mut cfg = SimConfig::new(
        path(50_000_000, 10, BufferSize::Bdp(1.0), 0.0),
        vec![FlowConfig::bulk(Algorithm::Bbr1)],
        Duration::from_secs(10),
        4,
    );
    cfg.path.loss = LossModel::bursty(0.02, 5.0);
    let bursty = bbrkit_sim::run(&cfg, &mut |_| {}).unwrap();
    cfg.path.loss = LossModel::bernoulli(0.02);
    let indep = bbrkit_sim::run(&cfg, &mut |_| {}).unwrap();
    let (b, i) = (&bursty.flows[0], &indep.flows[0]);
    let rate = |f: &bbrkit_sim::FlowReport| f.random_drops as f64 / f.packets_sent as f64;
    assert!((rate(b) - 0.02).abs() < 0.006 && (rate(i) - 0.02).abs() < 0.004);
    // The same number of drops falls into fewer recovery episodes.
    assert!(
        b.recoveries * 2 < i.recoveries,
        "{} vs {}",
        b.recoveries,
        i.recoveries
    );
}
