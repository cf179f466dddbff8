//! Property tests: every algorithm ([`Algorithm::ALL`]) driven by random
//! sequences of sends, deliveries (in order, reordered or SACKed), drops,
//! ECN echoes, RTOs (also spurious ones), undo of spurious recoveries and
//! idle periods, through the one transport ([`bbrkit_cc::transport::Sender`],
//! the code `bbrkit-sim` runs; its pacing and RACK reordering timers fire
//! when due). After every transport call the invariants below are checked.
//!
//! Invariants:
//! * no panic and no arithmetic overflow (tests build with overflow checks);
//! * cwnd ≥ 1 always; for BBR cwnd ≥ 4 after an ACK that delivered data in
//!   the Open/Disorder states (Linux `bbr_cwnd_min_target`; in Recovery,
//!   packet conservation and in Loss the RTO window may be lower);
//! * ssthresh ≥ 2 once set (Reno/CUBIC);
//! * BBR: pacing rate > 0 whenever the bandwidth estimate is > 0. (It can
//!   be 0 before that, as in Linux: after an RTO (cwnd 1) a first RTT
//!   sample of many seconds makes `bbr_init_pacing_rate_from_rtt` compute
//!   `cwnd·BW_UNIT/rtt_us` = 0; the kernel then sends unpaced, and so does
//!   the transport);
//! * BBRv1's packet-timed round count (`rtt_cnt`) never decreases;
//! * the state machine only takes legal transitions: Reno/CUBIC are in
//!   `slow_start`/`congestion_avoidance`; BBRv1 moves only along
//!   [`bbr1::OBSERVABLE_TRANSITIONS`]; BBRv2/v3 report each step in
//!   `last_transitions`, each must be [`bbr3::StateSteps::is_legal_step`] and
//!   end in the reported state;
//! * transport accounting stays consistent (lost/SACKed/retransmitted ≤ outstanding).
//!
//! Seeds: proptest prints the minimal failing case (it includes the
//! controller's RNG seed) and saves it in `tests/properties.proptest-regressions`,
//! which is replayed first on every run. Each property prints its
//! generator's seed (a fresh one per run); `BBRKIT_TEST_SEED=<n>` replays
//! it. `PROPTEST_CASES=<n>` changes the number of cases (default 256 per
//! algorithm here).

use bbrkit_cc::bbr1::{self, Mode};
use bbrkit_cc::bbr3::{State, StateSteps};
use bbrkit_cc::transport::{AckOutcome, DataPacket, Receiver, Sender, SenderConfig};
use bbrkit_cc::{Algorithm, AnyController, CaState, CongestionControl, Instant, SeededRng, Tcp};
use proptest::prelude::*;
use std::time::Duration;

/// One step of the random scenario.
#[derive(Debug, Clone)]
enum Op {
    /// Send up to n packets (as cwnd allows).
    Send(u8),
    /// After `ms`, deliver the next n packets in the network; with `reorder`
    /// the first of them is held back (delivered later, after a hole).
    Deliver {
        n: u8,
        ms: u16,
        reorder: bool,
        ce: bool,
    },
    /// The next n packets in the network are lost.
    Drop(u8),
    /// The retransmission timer fires now (spurious if packets are still
    /// in the network).
    Rto,
    /// The current (or next) recovery episode turns out spurious: it ends
    /// with `undo_cwnd` (Linux `tcp_try_undo_recovery`/`_loss`).
    Undo,
    /// Nothing happens for `ms` (up to 12 s: long enough for ProbeRTT and
    /// CUBIC's idle epoch shift), then the RTO fires if it is due.
    Idle(u16),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (1u8..16).prop_map(Op::Send),
        6 => (1u8..8, 0u16..60, any::<bool>(), prop::bool::weighted(0.1))
            .prop_map(|(n, ms, reorder, ce)| Op::Deliver { n, ms, reorder, ce }),
        1 => (1u8..4).prop_map(Op::Drop),
        1 => Just(Op::Rto),
        1 => Just(Op::Undo),
        1 => (0u16..12_000).prop_map(Op::Idle),
    ]
}

struct Harness {
    alg: Algorithm,
    sender: Sender<AnyController>,
    receiver: Receiver,
    net: std::collections::VecDeque<DataPacket>,
    held: Option<DataPacket>,
    out: Vec<DataPacket>,
    now: Instant,
    round: u64,
    round_end: u64,
    bbr1_round: u32,
    state: &'static str,
    seen: std::collections::BTreeSet<String>,
}

const MSS: u32 = 1448;

impl Harness {
    fn new(alg: Algorithm, seed: u64, ecn: bool) -> Self {
        let mut tcp = Tcp::new(Instant::ZERO, MSS);
        tcp.ecn_enabled = ecn;
        tcp.ecn_low = ecn;
        // No tail-loss probes: a probe retransmits a packet not marked lost
        // (retrans_out may then exceed lost_out, as in Linux), which the
        // scoreboard invariant below excludes.
        let cfg = SenderConfig {
            app_writes: true,
            tlp: false,
            ..SenderConfig::bulk(MSS)
        };
        let sender = Sender::with_tcp(0, cfg, tcp, |t| {
            alg.build(t, Box::new(SeededRng::new(seed, 0)))
        });
        let state = sender.cc.status(&sender.tcp).state;
        Harness {
            alg,
            sender,
            receiver: Receiver::new(0, Duration::from_millis(40)).with_ack_every(1),
            net: Default::default(),
            held: None,
            out: Vec::new(),
            now: Instant::ZERO,
            round: 0,
            round_end: 0,
            bbr1_round: 0,
            state,
            seen: Default::default(),
        }
    }

    fn is_bbr(&self) -> bool {
        matches!(
            self.alg,
            Algorithm::Bbr1 | Algorithm::Bbr2 | Algorithm::Bbr3
        )
    }

    /// What the transport sent goes into the network.
    fn flush(&mut self) {
        self.net.extend(self.out.drain(..));
    }

    /// The pacing and reordering timers fire when due.
    fn timers(&mut self) -> Result<(), TestCaseError> {
        let now = self.now;
        if self.sender.pace_deadline.is_some_and(|t| t <= now) {
            self.sender.on_pace_timer(now, &mut self.out);
            self.flush();
            self.check(false)?;
        }
        if self.sender.reo_deadline.is_some_and(|t| t <= now) {
            self.sender.on_reo_timer(now, &mut self.out);
            self.flush();
            self.check(false)?;
        }
        Ok(())
    }

    fn rto(&mut self) -> Result<(), TestCaseError> {
        self.sender.on_rto(self.now, &mut self.out);
        self.flush();
        self.check(false)
    }

    fn acked(&mut self, o: &AckOutcome) {
        if o.rs.delivered.is_some() && o.rs.prior_delivered >= self.round_end {
            self.round += 1;
            self.round_end = self.sender.tcp.delivered;
        }
    }

    fn run(&mut self, op: &Op) -> Result<(), TestCaseError> {
        self.timers()?;
        match *op {
            Op::Send(n) => {
                self.sender.write(u64::from(n));
                self.sender.try_send(self.now, &mut self.out);
                self.flush();
                self.check(false)?;
            }
            Op::Deliver { n, ms, reorder, ce } => {
                self.now += Duration::from_millis(u64::from(ms) + 1);
                self.timers()?;
                let mut arrived = Vec::new();
                if reorder && self.held.is_none() {
                    self.held = self.net.pop_front();
                }
                for _ in 0..n {
                    match self.net.pop_front() {
                        Some(p) => arrived.push(p),
                        None => break,
                    }
                }
                if arrived.is_empty() {
                    // Only the held-back packet is left: it arrives now.
                    arrived.extend(self.held.take());
                }
                for mut p in arrived {
                    p.ce = ce;
                    let Some(ack) = self.receiver.on_data(self.now, &p, |_| MSS) else {
                        continue;
                    };
                    let o = self.sender.on_ack(self.now, &ack, &mut self.out);
                    self.acked(&o);
                    self.flush();
                    self.check(o.delivered > 0)?;
                }
            }
            Op::Drop(n) => {
                for _ in 0..n {
                    self.net.pop_front();
                }
            }
            Op::Rto => self.rto()?,
            Op::Undo => self.sender.mark_spurious(),
            Op::Idle(ms) => {
                self.now += Duration::from_millis(u64::from(ms));
                self.timers()?;
                if self.sender.rto_deadline.is_some_and(|t| t <= self.now) {
                    self.rto()?;
                }
            }
        }
        Ok(())
    }

    fn check(&mut self, delivered: bool) -> Result<(), TestCaseError> {
        let tcp = &self.sender.tcp;
        let alg = self.alg;
        prop_assert!(tcp.snd_cwnd >= 1, "{alg}: cwnd 0");
        prop_assert!(
            tcp.lost_out + tcp.sacked_out <= tcp.packets_out,
            "{alg}: scoreboard {tcp:?}"
        );
        prop_assert!(
            tcp.retrans_out <= tcp.lost_out,
            "{alg}: retrans_out > lost_out"
        );
        if self.is_bbr() {
            let bw = self.sender.cc.status(tcp).bw_bps.unwrap_or(0);
            prop_assert!(
                bw == 0 || tcp.pacing_rate > 0,
                "{alg}: bw {bw} bit/s but no pacing rate"
            );
            if delivered && matches!(tcp.ca_state, CaState::Open | CaState::Disorder) {
                prop_assert!(
                    tcp.snd_cwnd >= 4,
                    "{alg}: cwnd {} < 4 in {:?}",
                    tcp.snd_cwnd,
                    tcp.ca_state
                );
            }
        } else {
            prop_assert!(
                tcp.snd_ssthresh >= 2,
                "{alg}: ssthresh {}",
                tcp.snd_ssthresh
            );
        }
        let state = self.sender.cc.status(tcp).state;
        let (from, to) = (self.state, state);
        match &self.sender.cc {
            AnyController::Reno(_) | AnyController::Cubic(_) => {
                prop_assert!(
                    matches!(to, "slow_start" | "congestion_avoidance"),
                    "{alg}: state {to}"
                );
            }
            AnyController::Bbr1(b) => {
                prop_assert!(
                    b.round_count() >= self.bbr1_round,
                    "bbr1: rtt_cnt went back"
                );
                self.bbr1_round = b.round_count();
                let (f, t) = (mode(from), mode(to));
                prop_assert!(
                    f == t || bbr1::OBSERVABLE_TRANSITIONS.contains(&(f, t)),
                    "bbr1: illegal {from} -> {to}"
                );
            }
            AnyController::Bbr3(b) => {
                let steps = b.last_transitions();
                for &(f, t) in steps {
                    prop_assert!(f.is_legal_step(t), "{alg}: illegal step {f:?} -> {t:?}");
                    // A state passed through within one ACK was reached too.
                    self.seen.insert(t.name().to_string());
                }
                let (f, t) = (state3(from), state3(to));
                if let Some(&(_, last)) = steps.last() {
                    prop_assert_eq!(last, t, "{}: last step does not end in the state", alg);
                }
                prop_assert!(
                    f == t || f.can_reach(t),
                    "{alg}: {from} -> {to} unreachable"
                );
            }
        }
        self.state = to;
        self.seen.insert(to.to_string());
        self.seen.insert(format!("{:?}", tcp.ca_state));
        Ok(())
    }
}

fn mode(name: &str) -> Mode {
    match name {
        "startup" => Mode::Startup,
        "drain" => Mode::Drain,
        "probe_bw" => Mode::ProbeBw,
        "probe_rtt" => Mode::ProbeRtt,
        other => panic!("unknown bbr1 state {other}"),
    }
}

fn state3(name: &str) -> State {
    *State::ALL
        .iter()
        .find(|s| s.name() == name)
        .unwrap_or_else(|| panic!("unknown bbr3 state {name}"))
}

fn run_case(alg: Algorithm, seed: u64, ecn: bool, ops: &[Op]) -> Result<(), TestCaseError> {
    let mut h = Harness::new(alg, seed, ecn);
    for op in ops {
        h.run(op)?;
    }
    // Drain the network: everything still in flight arrives, the transport
    // must end consistent (nothing lost for ever after RTOs) and send what
    // the application wrote.
    for _ in 0..20_000 {
        if h.sender.tcp.packets_out == 0 && h.sender.unsent_segs() == 0 {
            break;
        }
        h.run(&Op::Deliver {
            n: 8,
            ms: 10,
            reorder: false,
            ce: false,
        })?;
        if h.net.is_empty() && h.held.is_none() && h.sender.pace_deadline.is_none() {
            h.run(&Op::Rto)?;
        }
    }
    prop_assert_eq!(h.sender.tcp.packets_out, 0, "{}: could not drain", alg);
    Ok(())
}

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: std::env::var("PROPTEST_CASES")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(256),
        max_shrink_iters: 2000,
        // BBRKIT_TEST_SEED fixes the generator; else a fresh seed, printed.
        rng_seed: proptest::test_runner::RngSeed::Fixed(bbrkit_cc::testing::fresh_test_seed()),
        ..ProptestConfig::default()
    }
}

macro_rules! algorithm_property {
    ($name:ident, $alg:expr) => {
        proptest! {
            #![proptest_config(config())]
            #[test]
            fn $name(seed in any::<u64>(), ecn in any::<bool>(), ops in prop::collection::vec(op(), 1..400)) {
                run_case($alg, seed, ecn, &ops)?;
            }
        }
    };
}

algorithm_property!(reno_invariants, Algorithm::Reno);
algorithm_property!(cubic_invariants, Algorithm::Cubic);
algorithm_property!(bbr1_invariants, Algorithm::Bbr1);
algorithm_property!(bbr2_invariants, Algorithm::Bbr2);
algorithm_property!(bbr3_invariants, Algorithm::Bbr3);

/// The states of BBRv2 and BBRv3 (one state machine).
const BBR2_STATES: &[&str] = &[
    "startup",
    "drain",
    "probe_bw_down",
    "probe_bw_cruise",
    "probe_bw_refill",
    "probe_bw_up",
    "probe_rtt",
];

/// The generator is not vacuous: over a fixed set of generated cases each
/// algorithm visits all of its states and every loss-recovery state.
#[test]
fn random_cases_visit_every_state() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::{RngAlgorithm, TestRng, TestRunner};
    let expect: [(Algorithm, &[&str]); 5] = [
        (Algorithm::Reno, &["slow_start", "congestion_avoidance"]),
        (Algorithm::Cubic, &["slow_start", "congestion_avoidance"]),
        (
            Algorithm::Bbr1,
            &["startup", "drain", "probe_bw", "probe_rtt"],
        ),
        (Algorithm::Bbr2, BBR2_STATES),
        (Algorithm::Bbr3, BBR2_STATES),
    ];
    for (alg, states) in expect {
        let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &[7; 32]);
        let mut runner = TestRunner::new_with_rng(ProptestConfig::default(), rng);
        let strategy = (
            any::<u64>(),
            any::<bool>(),
            prop::collection::vec(op(), 1..400),
        );
        let mut seen = std::collections::BTreeSet::new();
        let (mut undos, mut rtos) = (0, 0);
        for _ in 0..200 {
            let (seed, ecn, ops) = strategy.new_tree(&mut runner).unwrap().current();
            let mut h = Harness::new(alg, seed, ecn);
            for op in &ops {
                h.run(op).unwrap();
            }
            undos += h.sender.stats.undos;
            rtos += h.sender.stats.rtos;
            seen.extend(h.seen);
        }
        assert!(undos > 0 && rtos > 0, "{alg}: undos {undos}, RTOs {rtos}");
        for s in states
            .iter()
            .chain(&["Open", "Disorder", "Recovery", "Loss", "Cwr"])
        {
            assert!(seen.contains(*s), "{alg}: never reached {s}; saw {seen:?}");
        }
    }
}

#[test]
fn every_algorithm_is_covered() {
    // If an algorithm is added to Algorithm::ALL, add a property above.
    assert_eq!(Algorithm::ALL.len(), 5);
}

mod sampler_and_filter {
    //! Properties of the shared parts on their own.
    use bbrkit_cc::filter::MinMax;
    use bbrkit_cc::testing::{Driver, TestPath, random_loss};
    use bbrkit_cc::{Algorithm, Duration};
    use proptest::prelude::*;
    use std::cell::Cell;
    use std::rc::Rc;

    proptest! {
        #![proptest_config(super::config())]

        /// On a path without ACK compression (constant delay, FIFO, every
        /// ACK delivered), no valid delivery-rate sample exceeds the
        /// bottleneck rate, whatever the loss, buffer, ACK policy and
        /// controller: max(send phase, ACK phase) holds the estimate down.
        #[test]
        fn delivery_rate_never_exceeds_the_bottleneck(
            alg in prop::sample::select(Algorithm::ALL.to_vec()),
            mbit in 1u64..200,
            rtt_ms in 1u64..200,
            queue in 2usize..300,
            loss_permille in 0u32..50,
            ack_every in 1u32..=2,
            seed in any::<u64>(),
        ) {
            let cfg = TestPath {
                rate_bps: mbit * 1_000_000,
                base_rtt: Duration::from_millis(rtt_ms),
                queue_limit: queue,
                ack_every,
                record_trace: false,
                ..TestPath::default()
            };
            // The path serializes a packet in a whole number of ns.
            let pkt_per_s = 1e9 / cfg.serialization().as_nanos() as f64;
            let worst = Rc::new(Cell::new(0.0f64));
            let w2 = worst.clone();
            let mut d = Driver::with_algorithm(cfg, alg, seed)
                .with_loss(random_loss(f64::from(loss_permille) / 1000.0, seed))
                .with_observer(move |v| {
                    if let Some(r) = v.rs.delivery_rate_pps() {
                        w2.set(w2.get().max(r));
                    }
                });
            d.run_for(Duration::from_millis(20 * rtt_ms + 500));
            prop_assert!(
                worst.get() <= pkt_per_s * (1.0 + 1e-9),
                "{alg}: sample {:.1} pkt/s > bottleneck {:.1} pkt/s", worst.get(), pkt_per_s
            );
        }

        /// Nichols' filter never reports more than the exact windowed max,
        /// always reports a value seen inside the window, never less than
        /// the newest sample; a new maximum is reported at once.
        #[test]
        fn windowed_max_is_a_recent_sample_bounded_by_the_exact_max(
            steps in prop::collection::vec((0u32..4, any::<u16>()), 1..300),
            win in 1u32..20,
        ) {
            let mut f = MinMax::<u32, u32>::default();
            let mut hist: Vec<(u32, u32)> = Vec::new();
            let mut t = 0u32;
            for (dt, v) in steps {
                t += dt;
                let v = u32::from(v);
                hist.push((t, v));
                let got = f.running_max(win, t, v);
                let window: Vec<u32> = hist.iter().filter(|&&(ts, _)| t - ts <= win).map(|&(_, x)| x).collect();
                prop_assert!(got <= *window.iter().max().unwrap());
                prop_assert!(got >= v);
                prop_assert!(window.contains(&got), "{got} not in window {window:?}");
            }
        }
    }
}
