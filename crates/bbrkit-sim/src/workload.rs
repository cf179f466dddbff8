//! Request/response workloads in the simulator, the counterpart of `bbrkit
//! lab --workload`: `clients` closed-loop clients on one bottleneck, each
//! fetching one object at a time (sizes from a [`WorkloadSpec`]), and the
//! flow completion time (FCT) of every request, reported per transfer-size
//! class in the JSON shape the lab prints.
//!
//! ```text
//!  client i: request ──rtt/2──► server starts the object ──► last byte at the client
//!            (new connection: +1 RTT of handshake first)      FCT = last byte − request
//!            next request at once (until the run's end; in-flight ones may
//!            finish during the drain)
//! ```
//!
//! Each request is a fresh connection in slow start (`Simulation::
//! restart_flow`), also with keep-alive, which then only saves the
//! handshake: Linux keeps a reused connection's window unless it idled
//! longer than an RTO (`tcp_slow_start_after_idle`), so keep-alive FCTs of
//! back-to-back requests are an upper bound here. Random stream 3 draws the
//! sizes; request `k` of client `i` runs its controller on stream
//! `1000 + i + (k << 20)`. Must never read a clock: deterministic for a seed.

use std::collections::BTreeMap;

use bbrkit_cc::{Algorithm, Duration, Instant, Random, SeededRng};
use bbrkit_vocab::{ClassFct, SizeClass, WorkloadSpec, fct_by_class};
use serde::Serialize;

use crate::config::{ConfigError, FlowConfig, PathConfig, SimConfig};
use crate::sim::Simulation;

/// One workload run: one algorithm on one path.
#[derive(Debug, Clone, PartialEq)]
pub struct Workload {
    /// The bottleneck path.
    pub path: PathConfig,
    /// Every connection's algorithm.
    pub algorithm: Algorithm,
    /// Object sizes.
    pub objects: WorkloadSpec,
    /// Concurrent clients.
    pub clients: usize,
    /// Reuse each client's connection (no handshake per request).
    pub keepalive: bool,
    /// How long new requests start.
    pub duration: Duration,
    /// How long requests in flight at the end may still finish.
    pub drain: Duration,
    /// Seed of every random stream.
    pub seed: u64,
}

/// What one algorithm's clients got, in the shape of the lab's result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WorkloadResult {
    /// Algorithm.
    pub cc: &'static str,
    /// Completed requests.
    pub requests: u64,
    /// Failed requests (none in the simulator: kept for the shared shape).
    pub failed: u64,
    /// Requests still in flight when the drain ended.
    pub unfinished: u64,
    /// Retransmissions over every connection.
    pub retransmits: u64,
    /// Per size class (only classes with a completed request).
    pub classes: BTreeMap<SizeClass, ClassFct>,
    /// Every completed request: (bytes, ms) (not in JSON).
    #[serde(skip)]
    pub fct: Vec<(u64, f64)>,
    /// Events processed (a cost measure).
    pub events: u64,
}

/// A client between requests.
struct Client {
    /// When its current request was issued.
    issued: Instant,
    /// Requests it issued so far.
    count: u64,
    /// Still issuing (else done: its last request completed after the end).
    active: bool,
}

/// Runs the workload `w`.
pub fn run_workload(w: &Workload) -> Result<WorkloadResult, ConfigError> {
    if w.clients == 0 {
        return Err(ConfigError::NoFlows);
    }
    let mut sizes = SeededRng::new(w.seed, 3);
    let mut draw = || {
        let u = f64::from(sizes.next_u32()) / 4_294_967_296.0;
        w.objects.object_bytes(u)
    };
    // Server-side start after the request is issued: the request's one-way
    // trip, and a handshake round trip first on a new connection.
    let lead = if w.keepalive {
        w.path.rtt / 2
    } else {
        w.path.rtt + w.path.rtt / 2
    };
    let flow = |at: Instant, bytes: u64| FlowConfig {
        algorithm: w.algorithm,
        start: at - Instant::ZERO + lead,
        size: Some(bytes.max(1)),
        extra_rtt: Duration::ZERO,
    };
    let flows = (0..w.clients)
        .map(|_| flow(Instant::ZERO, draw()))
        .collect();
    let end = Instant::ZERO + w.duration;
    let hard = end + w.drain;
    let cfg = SimConfig::new(w.path.clone(), flows, hard - Instant::ZERO, w.seed);
    let mut sim = Simulation::new(cfg)?;
    let mut clients: Vec<Client> = (0..w.clients)
        .map(|_| Client {
            issued: Instant::ZERO,
            count: 1,
            active: true,
        })
        .collect();
    let mut out = WorkloadResult {
        cc: w.algorithm.name(),
        requests: 0,
        failed: 0,
        unfinished: 0,
        retransmits: 0,
        classes: BTreeMap::new(),
        fct: Vec::new(),
        events: 0,
    };
    // Completions are noticed within `step`, always before the next
    // request's server-side start (`lead` is at least half an RTT).
    let step = (w.path.rtt / 8).max(Duration::from_micros(10));
    let mut now = Instant::ZERO;
    while now < hard && clients.iter().any(|c| c.active) {
        now = (now + step).min(hard);
        sim.run_until(now, &mut |_| {});
        for (i, c) in clients.iter_mut().enumerate().filter(|(_, c)| c.active) {
            let Some(done) = sim.completed_at(i as u32) else {
                continue;
            };
            let bytes = sim.flow_size(i as u32).unwrap_or(0);
            out.fct.push((bytes, (done - c.issued).as_secs_f64() * 1e3));
            if done >= end {
                c.active = false;
                continue;
            }
            c.issued = done;
            let stream = 1000 + i as u64 + (c.count << 20);
            c.count += 1;
            out.retransmits += sim.restart_flow(i as u32, flow(done, draw()), stream);
        }
    }
    for (i, _) in clients.iter().enumerate().filter(|(_, c)| c.active) {
        out.unfinished += 1;
        out.retransmits += sim.sender(i as u32).stats.retransmits;
    }
    let report = sim.report();
    out.events = report.events;
    out.requests = out.fct.len() as u64;
    out.classes = fct_by_class(&out.fct);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::BufferSize;

    fn w(algorithm: Algorithm, objects: WorkloadSpec, loss: f64, keepalive: bool) -> Workload {
        Workload {
            path: PathConfig::bernoulli(100_000_000, 50, BufferSize::Bdp(1.0), loss),
            algorithm,
            objects,
            clients: 4,
            keepalive,
            duration: Duration::from_secs(3),
            drain: Duration::from_secs(3),
            seed: 7,
        }
    }

    #[test]
    fn short_objects_take_two_round_trips_whatever_the_algorithm() {
        let ten_kb = WorkloadSpec::Fixed(10_000);
        let cubic = run_workload(&w(Algorithm::Cubic, ten_kb, 0.0, false)).unwrap();
        let bbr = run_workload(&w(Algorithm::Bbr1, ten_kb, 0.0, false)).unwrap();
        for r in [&cubic, &bbr] {
            let c = &r.classes[&SizeClass::Under100Kb];
            // Handshake, then request and reply: 2 RTTs of 50 ms and the
            // reply's serialisation; 3 s of 4 clients is about 60 requests.
            assert!(c.fct_ms.p50 >= 100.0 && c.fct_ms.p50 < 105.0, "{c:?}");
            assert!(c.requests >= 50, "{c:?}");
            assert_eq!(r.unfinished, 0);
        }
        let ratio = bbr.classes[&SizeClass::Under100Kb].fct_ms.p99
            / cubic.classes[&SizeClass::Under100Kb].fct_ms.p99;
        assert!((ratio - 1.0).abs() < 0.2, "{ratio}");
        let keep = run_workload(&w(Algorithm::Cubic, ten_kb, 0.0, true)).unwrap();
        let saved = cubic.classes[&SizeClass::Under100Kb].fct_ms.p50
            - keep.classes[&SizeClass::Under100Kb].fct_ms.p50;
        assert!(
            (saved - 50.0).abs() < 1.0,
            "keep-alive saves the handshake: {saved}"
        );
    }

    #[test]
    fn large_objects_over_loss_finish_sooner_with_bbr_and_runs_repeat() {
        let four_mb = WorkloadSpec::Fixed(4_000_000);
        let long = |a| Workload {
            duration: Duration::from_secs(10),
            drain: Duration::from_secs(30),
            ..w(a, four_mb, 0.01, false)
        };
        let cubic = run_workload(&long(Algorithm::Cubic)).unwrap();
        let bbr = run_workload(&long(Algorithm::Bbr1)).unwrap();
        let p99 = |r: &WorkloadResult| r.classes[&SizeClass::To10Mb].fct_ms.p99;
        assert!(p99(&bbr) < p99(&cubic), "{} vs {}", p99(&bbr), p99(&cubic));
        assert!(bbr.retransmits > 0);
        assert_eq!(
            bbr,
            run_workload(&long(Algorithm::Bbr1)).unwrap(),
            "same seed, same result"
        );
    }
}
