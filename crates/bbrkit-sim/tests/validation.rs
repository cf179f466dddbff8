//! The validation table of docs/sim-validation.md as assertions with
//! tolerances: BBRv1 under random loss, Reno/CUBIC vs the Mathis model, two
//! BBRv1 flows sharing, ProbeRTT every 10 s, CUBIC vs BBR in a deep buffer.
//! Scenarios are fixed-seed (seed printed) and deterministic.

use bbrkit_cc::Algorithm;
use bbrkit_sim::validation;

const SEED: u64 = 1;

#[test]
fn bbr1_keeps_90_percent_of_capacity_under_random_loss() {
    println!("seed {SEED}");
    for p in [0.01, 0.02, 0.05] {
        let row = validation::bbr1_random_loss(p, 10, SEED);
        println!("{row:?}");
        assert!(
            row.goodput_bps >= 0.9 * row.ceiling_bps,
            "p={p}: {:.1} Mbit/s < 90% of {:.1}",
            row.goodput_bps / 1e6,
            row.ceiling_bps / 1e6
        );
    }
}

#[test]
fn reno_and_cubic_follow_mathis_within_factor_two() {
    println!("seed {SEED}");
    for alg in [Algorithm::Reno, Algorithm::Cubic] {
        for p in [0.005, 0.01, 0.02, 0.05] {
            let row = validation::mathis(alg, p, 30, SEED);
            let ratio = row.goodput_bps / row.mathis_bps;
            println!("{alg} p={p}: ratio {ratio:.2}");
            assert!(
                (0.5..=2.0).contains(&ratio),
                "{alg} p={p}: {:.2} Mbit/s vs Mathis {:.2}",
                row.goodput_bps / 1e6,
                row.mathis_bps / 1e6
            );
        }
    }
}

#[test]
fn two_bbr1_flows_share_fairly() {
    println!("seed {SEED}");
    for (rtt_ms, stagger_s) in [(10, 0), (40, 0), (20, 2)] {
        let r = validation::bbr1_pair(rtt_ms, stagger_s, 30, SEED);
        let shares: Vec<f64> = r.flows.iter().map(|f| f.share).collect();
        println!(
            "rtt {rtt_ms} ms, stagger {stagger_s} s: shares {shares:?} jain {}",
            r.jain_index
        );
        assert!(r.jain_index >= 0.95, "Jain {}", r.jain_index);
        assert!(shares.iter().all(|s| (0.4..=0.6).contains(s)), "{shares:?}");
        assert!(r.link.utilization > 0.9);
    }
}

#[test]
fn bbr1_probe_rtt_dips_every_ten_seconds() {
    println!("seed {SEED}");
    let eps = validation::bbr1_probe_rtt(45, SEED);
    println!("{eps:#?}");
    assert!(eps.len() >= 4, "4 episodes in 45 s, got {}", eps.len());
    for e in &eps {
        assert_eq!(e.min_cwnd, 4, "cwnd dips to 4 packets");
        // 200 ms plus about one RTT (20 ms) before the exit check passes.
        assert!((0.19..=0.30).contains(&e.duration_s), "{e:?}");
    }
    assert!(
        (10.0..=11.0).contains(&eps[0].start_s),
        "first at {}",
        eps[0].start_s
    );
    for w in eps.windows(2) {
        let gap = w[1].start_s - w[0].start_s;
        assert!((10.0..=10.6).contains(&gap), "gap {gap}");
    }
}

#[test]
fn cubic_fills_a_deep_buffer_and_bbr1_does_not() {
    println!("seed {SEED}");
    let cubic = validation::deep_buffer(Algorithm::Cubic, 30, SEED);
    let bbr = validation::deep_buffer(Algorithm::Bbr1, 30, SEED);
    let q = |r: &bbrkit_sim::RunReport| r.link.queue_delay_ms.unwrap();
    println!("cubic queue {:?}, bbr1 queue {:?}", q(&cubic), q(&bbr));
    // The buffer holds 200 ms; CUBIC keeps it mostly full.
    assert!(q(&cubic).p50 > 100.0, "cubic {:?}", q(&cubic));
    // BBRv1 keeps at most about one BDP queued (cwnd gain 2): < 1 RTT.
    assert!(
        q(&bbr).p50 < 10.0 && q(&bbr).p99 < 20.0,
        "bbr1 {:?}",
        q(&bbr)
    );
    let rtt = |r: &bbrkit_sim::RunReport| r.flows[0].rtt_ms.unwrap();
    assert!(rtt(&cubic).p50 > 5.0 * rtt(&bbr).p50 / 1.2);
    // Both still fill the link.
    for r in [&cubic, &bbr] {
        assert!(r.flows[0].bits_per_second > 0.9e8, "{:?}", r.flows[0]);
    }
}

/// Why CUBIC gets 10–20 % less than Reno in the Mathis runs (sim-validation
/// §2): in theory CUBIC's Reno-friendly region (α = 0.53, β = 0.7) has
/// Reno's average; Linux's version of it does not at small windows, and the
/// simulator reproduces exactly that.
#[test]
fn cubic_below_reno_is_the_controllers_reno_estimate_not_the_transport() {
    println!("seed {SEED}");
    // 1. The controller alone on an ideal ACK clock, 10 RTTs after a loss
    //    (about the time between losses at 1 % loss here): Linux's
    //    `bictcp_update` restarts its Reno estimate at cwnd with no credit,
    //    adds 1 per 15/8·cwnd ACKed and cwnd follows a round later, so CUBIC
    //    gains ~0.4 packet/RTT where α = 0.53 is the design; Reno gains ~0.9.
    for w in [8, 12, 20] {
        let cubic = validation::ack_clock_growth(Algorithm::Cubic, w, 10);
        let reno = validation::ack_clock_growth(Algorithm::Reno, w, 10);
        println!("loss at cwnd {w}: cubic {cubic:.2}/RTT, reno {reno:.2}/RTT");
        assert!((0.3..=0.45).contains(&cubic), "cubic {cubic}");
        assert!((0.8..=1.0).contains(&reno), "reno {reno}");
    }
    // 2. In the simulator the flows show the same effective α and β, and the
    //    goodput ratio is what AIMD theory predicts from them.
    for p in [0.01, 0.02] {
        let reno = validation::aimd_fit(Algorithm::Reno, p, 30, SEED);
        let cubic = validation::aimd_fit(Algorithm::Cubic, p, 30, SEED);
        let predicted = cubic.relative_rate() / reno.relative_rate();
        let simulated = cubic.goodput_bps / reno.goodput_bps;
        println!(
            "p={p}: {reno:?}\n       {cubic:?}\n       predicted {predicted:.3} simulated {simulated:.3}"
        );
        assert!(
            (0.35..=0.5).contains(&cubic.alpha),
            "cubic α {}",
            cubic.alpha
        );
        assert!((0.6..=0.7).contains(&cubic.beta), "cubic β {}", cubic.beta);
        assert!((0.8..=1.0).contains(&reno.alpha), "reno α {}", reno.alpha);
        assert!((0.45..=0.5).contains(&reno.beta), "reno β {}", reno.beta);
        assert!(simulated < 0.95, "CUBIC below Reno: {simulated}");
        assert!(
            (simulated - predicted).abs() <= 0.05,
            "{simulated} vs {predicted}"
        );
    }
}
