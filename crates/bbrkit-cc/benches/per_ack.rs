//! Per-ACK cost of each congestion controller (target ≤ 100 ns per ACK).
//!
//! `per_ack/<alg>` measures the controller alone: what Linux calls per ACK
//! (`pkts_acked`, then `cong_control` for BBR, or `cong_avoid` +
//! `tcp_update_pacing_rate` for Reno/CUBIC), replaying the ACKs of a
//! recorded run (100 Mbit/s, 20 ms, 0.1 % random loss, 3 s through the
//! test driver) with the transport's fields restored from the recording
//! before each call. Throughput is reported in ACKs (elements) per second;
//! `per_ack/replay_only` is the replay's own cost, to subtract.
//!
//! `transport/<alg>` measures the whole transport (`bbrkit_cc::transport`,
//! the code `bbrkit-sim` runs) on the test path for comparison
//! (scoreboard, RTT, rate sampler, loss marking, controller, path events):
//! a 1 s run, throughput in ACKs.
//!
//! Run: `cargo bench -p bbrkit-cc --bench per_ack -- --quick`

use bbrkit_cc::rate::RateSample;
use bbrkit_cc::testing::{Driver, TestPath, random_loss};
use bbrkit_cc::{
    AckSample, Algorithm, AnyController, CaState, CongestionControl, Instant, SeededRng, Tcp,
};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use std::cell::RefCell;
use std::hint::black_box;
use std::rc::Rc;
use std::time::Duration;

/// The transport state and rate sample one ACK handed to the controller.
#[derive(Clone)]
struct Rec {
    tcp: Tcp,
    rs: RateSample,
}

fn cfg() -> TestPath {
    TestPath {
        rate_bps: 100_000_000,
        base_rtt: Duration::from_millis(20),
        queue_limit: 250,
        record_trace: false,
        ..TestPath::default()
    }
}

fn record(alg: Algorithm) -> Vec<Rec> {
    let recs = Rc::new(RefCell::new(Vec::new()));
    let r2 = recs.clone();
    let mut d = Driver::with_algorithm(cfg(), alg, 1)
        .with_loss(random_loss(0.001, 2))
        .with_observer(move |v| {
            r2.borrow_mut().push(Rec {
                tcp: v.tcp.clone(),
                rs: *v.rs,
            })
        });
    d.run_for(Duration::from_secs(3));
    drop(d);
    Rc::try_unwrap(recs).ok().unwrap().into_inner()
}

/// Replays `recs` lap after lap; each lap shifts time and counters forward
/// so the controller never sees time go backwards.
struct Replay {
    recs: Vec<Rec>,
    i: usize,
    lap_ns: u64,
    lap_delivered: u64,
    lap: u64,
    tcp: Tcp,
    cc: AnyController,
}

impl Replay {
    fn new(alg: Algorithm) -> Self {
        let recs = record(alg);
        let last = recs.last().unwrap();
        let lap_ns = last.tcp.now.as_nanos() + 1_000_000;
        let lap_delivered = last.tcp.delivered + 1;
        let mut tcp = Tcp::new(Instant::ZERO, 1500);
        let cc = alg.build(&mut tcp, Box::new(SeededRng::new(1, 0)));
        Replay {
            recs,
            i: 0,
            lap_ns,
            lap_delivered,
            lap: 0,
            tcp,
            cc,
        }
    }

    #[inline]
    fn ack(&mut self, call_controller: bool) {
        let r = &self.recs[self.i];
        let (dt, dd) = (self.lap * self.lap_ns, self.lap * self.lap_delivered);
        let shift = |t: Instant| Instant::from_nanos(t.as_nanos() + dt);
        // Restore what the transport owns; keep what the controller writes
        // (cwnd, ssthresh, cwnd_cnt, pacing_rate).
        let t = &mut self.tcp;
        t.now = shift(r.tcp.now);
        t.delivered = r.tcp.delivered + dd;
        t.delivered_time = shift(r.tcp.delivered_time);
        t.lost = r.tcp.lost;
        t.packets_out = r.tcp.packets_out;
        t.sacked_out = r.tcp.sacked_out;
        t.lost_out = r.tcp.lost_out;
        t.retrans_out = r.tcp.retrans_out;
        t.srtt = r.tcp.srtt;
        t.min_rtt = r.tcp.min_rtt;
        t.ca_state = r.tcp.ca_state;
        t.is_cwnd_limited = r.tcp.is_cwnd_limited;
        t.app_limited = r.tcp.app_limited;
        let mut rs = r.rs;
        rs.prior_delivered += dd;
        rs.prior_time = rs.prior_time.map(shift);
        let sample = AckSample {
            pkts_acked: rs.acked_sacked,
            rtt: rs.rtt,
            in_flight: rs.prior_in_flight,
        };
        if !call_controller {
            black_box((&t, &rs, &sample));
        } else if self.cc.has_cong_control() {
            self.cc.pkts_acked(t, &sample);
            self.cc.cong_control(t, &rs);
        } else {
            self.cc.pkts_acked(t, &sample);
            if matches!(t.ca_state, CaState::Open | CaState::Disorder) {
                self.cc.cong_avoid(t, 0, rs.acked_sacked);
                bbrkit_cc::pacing::tcp_update_pacing_rate(t);
            }
        }
        self.i += 1;
        if self.i == self.recs.len() {
            self.i = 0;
            self.lap += 1;
        }
    }
}

const BATCH: u64 = 1000;

fn per_ack(c: &mut Criterion) {
    let mut g = c.benchmark_group("per_ack");
    g.throughput(Throughput::Elements(BATCH));
    // The replay's own cost (restoring the transport fields), to subtract.
    let mut r = Replay::new(Algorithm::Reno);
    g.bench_function("replay_only", |b| {
        b.iter(|| {
            for _ in 0..BATCH {
                r.ack(false);
            }
            black_box(r.tcp.snd_cwnd)
        })
    });
    for alg in Algorithm::ALL {
        let mut r = Replay::new(alg);
        g.bench_function(alg.name(), |b| {
            b.iter(|| {
                for _ in 0..BATCH {
                    r.ack(true);
                }
                black_box(r.tcp.snd_cwnd)
            })
        });
    }
    g.finish();
}

fn transport(c: &mut Criterion) {
    let mut g = c.benchmark_group("transport");
    g.sample_size(10);
    for alg in Algorithm::ALL {
        let acks = {
            let mut d = Driver::with_algorithm(cfg(), alg, 1);
            d.run_for(Duration::from_secs(1));
            d.sender.tcp.delivered
        };
        g.throughput(Throughput::Elements(acks));
        g.bench_function(alg.name(), |b| {
            b.iter(|| {
                let mut d = Driver::with_algorithm(cfg(), alg, 1);
                d.run_for(Duration::from_secs(1));
                black_box(d.sender.tcp.delivered)
            })
        });
    }
    g.finish();
}

criterion_group!(benches, per_ack, transport);
criterion_main!(benches);
