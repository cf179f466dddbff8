//! Prints the tables of docs/sim-validation.md from the same scenarios the
//! tests in tests/validation.rs assert on: `cargo run --release -p
//! bbrkit-sim --example validation`.

use bbrkit_cc::Algorithm;
use bbrkit_sim::validation;

fn main() {
    let seed = 1;
    bbr1_random_loss(seed);
    mathis(seed);
    aimd(seed);
    ack_clock();
    bbr1_pair(seed);
    bbr1_probe_rtt(seed);
    deep_buffer(seed);
}

fn bbr1_random_loss(seed: u64) {
    println!("### BBRv1 under random loss (100 Mbit/s, 10 ms, 1 BDP, 10 s)\n");
    println!("| loss p | goodput | (1-p)·C | goodput / (1-p)·C |");
    println!("|---|---|---|---|");
    for p in [0.0, 0.01, 0.02, 0.05] {
        let r = validation::bbr1_random_loss(p, 10, seed);
        println!(
            "| {:.0}% | {:.1} Mbit/s | {:.1} Mbit/s | {:.3} |",
            p * 100.0,
            r.goodput_bps / 1e6,
            r.ceiling_bps / 1e6,
            r.goodput_bps / r.ceiling_bps
        );
    }
}

fn mathis(seed: u64) {
    println!("\n### Reno and CUBIC vs Mathis (100 Mbit/s, 20 ms, 1 BDP, 30 s)\n");
    println!("| cc | loss p | goodput | Mathis MSS/RTT·1.22/√p | ratio |");
    println!("|---|---|---|---|---|");
    for alg in [Algorithm::Reno, Algorithm::Cubic] {
        for p in [0.005, 0.01, 0.02, 0.05] {
            let r = validation::mathis(alg, p, 30, seed);
            println!(
                "| {alg} | {}% | {:.2} Mbit/s | {:.2} Mbit/s | {:.2} |",
                p * 100.0,
                r.goodput_bps / 1e6,
                r.mathis_bps / 1e6,
                r.goodput_bps / r.mathis_bps
            );
        }
    }
}

fn aimd(seed: u64) {
    println!("\n### Why CUBIC is below Reno: effective AIMD (same runs, sampled every 1 ms)\n");
    println!(
        "| loss p | reno α / β | cubic α / β | RTTs between losses (reno / cubic) | predicted cubic/reno | simulated cubic/reno |"
    );
    println!("|---|---|---|---|---|---|");
    for p in [0.005, 0.01, 0.02, 0.05] {
        let r = validation::aimd_fit(Algorithm::Reno, p, 30, seed);
        let c = validation::aimd_fit(Algorithm::Cubic, p, 30, seed);
        println!(
            "| {}% | {:.2} / {:.2} | {:.2} / {:.2} | {:.1} / {:.1} | {:.2} | {:.2} |",
            p * 100.0,
            r.alpha,
            r.beta,
            c.alpha,
            c.beta,
            r.rtts_between_losses,
            c.rtts_between_losses,
            c.relative_rate() / r.relative_rate(),
            c.goodput_bps / r.goodput_bps
        );
    }
}

fn ack_clock() {
    println!(
        "\nController alone on an ideal ACK clock (20 ms, ACK every 2 packets), growth per RTT after a loss:\n"
    );
    println!("| cwnd at loss | cubic, 10 RTTs | cubic, 30 RTTs | reno, 10 RTTs |");
    println!("|---|---|---|---|");
    for w in [8, 12, 20, 40] {
        println!(
            "| {w} | {:.2} | {:.2} | {:.2} |",
            validation::ack_clock_growth(Algorithm::Cubic, w, 10),
            validation::ack_clock_growth(Algorithm::Cubic, w, 30),
            validation::ack_clock_growth(Algorithm::Reno, w, 10)
        );
    }
}

fn bbr1_pair(seed: u64) {
    println!("\n### Two BBRv1 flows (100 Mbit/s, 1 BDP, 30 s)\n");
    println!("| RTT | second flow starts | goodputs | shares | Jain | link util | retransmits |");
    println!("|---|---|---|---|---|---|---|");
    for (rtt, stagger) in [(10, 0), (40, 0), (20, 2)] {
        let r = validation::bbr1_pair(rtt, stagger, 30, seed);
        let g: Vec<String> = r
            .flows
            .iter()
            .map(|f| format!("{:.1}", f.bits_per_second / 1e6))
            .collect();
        let s: Vec<String> = r.flows.iter().map(|f| format!("{:.3}", f.share)).collect();
        let rx: Vec<String> = r.flows.iter().map(|f| f.retransmits.to_string()).collect();
        println!(
            "| {rtt} ms | {stagger} s | {} Mbit/s | {} | {:.4} | {:.1}% | {} |",
            g.join(" / "),
            s.join(" / "),
            r.jain_index,
            r.link.utilization * 100.0,
            rx.join(" / ")
        );
    }
}

fn bbr1_probe_rtt(seed: u64) {
    println!("\n### BBRv1 ProbeRTT (100 Mbit/s, 20 ms, 1 BDP, 45 s, sampled every 5 ms)\n");
    println!("| episode | starts at | gap to previous | lasts | min cwnd |");
    println!("|---|---|---|---|---|");
    let eps = validation::bbr1_probe_rtt(45, seed);
    let mut prev: Option<f64> = None;
    for (i, e) in eps.iter().enumerate() {
        println!(
            "| {} | {:.3} s | {} | {:.0} ms | {} |",
            i + 1,
            e.start_s,
            prev.map(|p| format!("{:.3} s", e.start_s - p))
                .unwrap_or_else(|| "-".into()),
            e.duration_s * 1e3,
            e.min_cwnd
        );
        prev = Some(e.start_s);
    }
}

fn deep_buffer(seed: u64) {
    println!("\n### Deep buffer (100 Mbit/s, 20 ms, 10 BDP = 200 ms of queue, 30 s)\n");
    println!("| cc | goodput | queue delay p50 / p99 | RTT p50 / p99 | drops |");
    println!("|---|---|---|---|---|");
    for alg in [
        Algorithm::Cubic,
        Algorithm::Reno,
        Algorithm::Bbr1,
        Algorithm::Bbr2,
        Algorithm::Bbr3,
    ] {
        let r = validation::deep_buffer(alg, 30, seed);
        let q = r.link.queue_delay_ms.unwrap();
        let rtt = r.flows[0].rtt_ms.unwrap();
        println!(
            "| {alg} | {:.1} Mbit/s | {:.1} / {:.1} ms | {:.1} / {:.1} ms | {} |",
            r.flows[0].bits_per_second / 1e6,
            q.p50,
            q.p99,
            rtt.p50,
            rtt.p99,
            r.link.drops
        );
    }
}
