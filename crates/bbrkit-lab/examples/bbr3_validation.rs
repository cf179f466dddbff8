//! Prints the tables of docs/bbr3-validation.md: bbrkit-bpf's bbr3 in the
//! lab (real kernel TCP) against bbrkit-sim's bbr3 model on the same
//! conditions, run by run with paired seeds and with the model's event
//! counters side by side, the built-in bbr (v1) beside both; and the
//! no-impairment throughput and CPU cost of bbr3 against the built-in bbr.
//!
//! `cargo run --release -p bbrkit-lab --example bbr3_validation
//! [grid] [target] [sim] [--runs N] [--duration SECS] [--lock FILE]` (default:
//! grid and target, 5 runs of 8 s; root for grid and target). `sim` alone
//! prints the grid's simulator columns (no root, no lab). `--lock FILE`
//! holds an flock on FILE around each condition's lab runs (the machine's
//! lab lock), so other users of the machine interleave between conditions.
//!
//! Grid: 100 Mbit/s, 1 BDP drop-tail buffer, RTT 10/40/80 ms × random loss
//! 0/1/2/5 %, plus 20 ms at 0 and 5 % (the path), userspace
//! emulator (what `bbrkit lab` uses for rated links). Every lab run has its
//! own loss seed (the runner's per-run seed, printed); the simulator runs
//! the same path once per lab run with that run's seed, rate scaled by
//! 1500/1514 (the lab's rate counts 1514-byte Ethernet frames, the
//! simulator's 1500-byte IP packets), so both carry the same packets per
//! second. While a condition runs, bbr3 is registered by this program and
//! the sender's socket is read through sock_diag every 100 ms (its model and
//! counters from its own sk_storage); a run's counters are the last reading
//! before the socket closed (at most 100 ms of events short).
//!
//! Target: `bbrkit lab`'s default no-impairment condition (split emulator,
//! no delay: both directions bridged by eBPF in the kernel, so this process
//! holds only the tester's threads), bbr and bbr3 alternating; CPU cost is
//! this process's user + system time (getrusage) per GB delivered. The
//! kernel here has no IRQ time accounting, so softirq work (the veth and
//! eBPF forwarding, TCP's receive and ACK processing) is charged to the
//! thread it interrupts: ours, except what `ksoftirqd` takes over.

use std::collections::HashMap;
use std::fs::File;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bbrkit_bpf::telemetry::{RawCounters, StorageMaps, Telemetry};
use bbrkit_cc::Algorithm;
use bbrkit_cc::bbr3::Counters;
use bbrkit_lab::emulator::model::LinkParams;
use bbrkit_lab::emulator::{Emulator, EmulatorKind};
use bbrkit_lab::plan::{self, Plan};
use bbrkit_lab::report::{RunResult, median};
use bbrkit_lab::session::{self, Event, Outcome};
use bbrkit_lab::tester::{CcOn, TestSpec, run_test};
use bbrkit_lab::topology::Topology;
use bbrkit_sim::{FlowConfig, LossModel, PathConfig, SimConfig};
use bbrkit_vocab::{BufferSize, PathConditions as Condition};

const RATE: u64 = 100_000_000;
/// The simulator's rate giving the lab's packet rate (1500 vs 1514 B).
const SIM_RATE: u64 = RATE * 1500 / 1514;
/// Base of the lab's loss seeds; condition `i` uses base + i << 40 and the
/// runner derives one seed per run from it.
const LAB_SEED: u64 = 20261201;

struct Args {
    grid: bool,
    target: bool,
    sim: bool,
    runs: usize,
    duration: Duration,
    lock: Option<String>,
}

fn args() -> Args {
    let mut a = Args {
        grid: false,
        target: false,
        sim: false,
        runs: 5,
        duration: Duration::from_secs(8),
        lock: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(s) = it.next() {
        let mut val = || it.next().expect("a value");
        match s.as_str() {
            "grid" => a.grid = true,
            "target" => a.target = true,
            "sim" => a.sim = true,
            "--runs" => a.runs = val().parse().expect("--runs N"),
            "--duration" => a.duration = Duration::from_secs_f64(val().parse().expect("SECS")),
            "--lock" => a.lock = Some(val()),
            other => panic!("unknown argument {other}"),
        }
    }
    if !a.grid && !a.target && !a.sim {
        a.grid = true;
        a.target = true;
    }
    a
}

fn cond(rtt_ms: u64, loss: f64) -> Condition {
    Condition {
        rtt: Duration::from_millis(rtt_ms),
        jitter: Duration::ZERO,
        loss,
        rate_bps: Some(RATE),
        buffer: BufferSize::Bdp(1.0),
    }
}

fn grid() -> Vec<Condition> {
    let mut g = Vec::new();
    for rtt in [10, 40, 80] {
        for loss in [0.0, 0.01, 0.02, 0.05] {
            g.push(cond(rtt, loss));
        }
    }
    g.push(cond(20, 0.0));
    g.push(cond(20, 0.05));
    g
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

fn utc_now() -> String {
    let t = nix::time::clock_gettime(nix::time::ClockId::CLOCK_REALTIME).unwrap();
    let s = t.tv_sec() % 86_400;
    format!("{:02}:{:02}:{:02} UTC", s / 3600, s / 60 % 60, s % 60)
}

/// One simulated run.
struct SimRun {
    bps: f64,
    retransmits: u64,
    counters: Option<Counters>,
}

/// The simulator on `c` with `seed`.
fn simulate(alg: Algorithm, c: &Condition, duration: Duration, seed: u64) -> SimRun {
    let path = PathConfig {
        rate_bps: SIM_RATE,
        rtt: bbrkit_cc::Duration::from_secs_f64(c.rtt.as_secs_f64()),
        buffer: BufferSize::Bdp(1.0),
        loss: LossModel::bernoulli(c.loss),
        ack_loss: 0.0,
    };
    let cfg = SimConfig::new(
        path,
        vec![FlowConfig::bulk(alg)],
        bbrkit_cc::Duration::from_secs_f64(duration.as_secs_f64()),
        seed,
    );
    let r = bbrkit_sim::run(&cfg, &mut |_| {}).expect("valid sim config");
    let f = &r.flows[0];
    SimRun {
        bps: f.bits_per_second,
        retransmits: f.retransmits,
        counters: f.bbr_counters.clone(),
    }
}

/// The counters both implementations keep, as f64 per run, by name.
const COUNTERS: [&str; 10] = [
    "rounds",
    "refills",
    "ups",
    "probe rounds",
    "too-high hits",
    "hi at hit",
    "lo cuts",
    "loss events",
    "lost pkts",
    "probe_rtt",
];

fn lab_counters(c: &RawCounters) -> [f64; 10] {
    let hits = c.too_high_hits();
    [
        c.rounds.into(),
        c.refills.into(),
        c.ups.into(),
        c.probe_rounds.into(),
        hits.into(),
        if hits > 0 {
            c.hi_at_hit_sum as f64 / f64::from(hits)
        } else {
            f64::NAN
        },
        c.lo_cuts.into(),
        c.loss_events.into(),
        f64::from(c.lost_in_ack) + f64::from(c.lost_between) + f64::from(c.lost_rto),
        c.probe_rtts.into(),
    ]
}

fn sim_counters(c: &Counters) -> [f64; 10] {
    let hits = c.too_high_ack + c.too_high_lost + c.too_high_tlp;
    let hi = &c.hi_at_hit;
    [
        c.rounds as f64,
        c.refills as f64,
        c.ups as f64,
        c.probe_rounds as f64,
        hits as f64,
        if hi.is_empty() {
            f64::NAN
        } else {
            hi.iter().map(|&v| f64::from(v)).sum::<f64>() / hi.len() as f64
        },
        c.lo_cuts as f64,
        c.loss_events as f64,
        c.lost as f64,
        c.probe_rtts as f64,
    ]
}

/// One lab bbr3 run seen from inside: the sender's last telemetry.
#[derive(Clone)]
struct Inside {
    counters: RawCounters,
    /// Hits by path: ACK sample, lost packet, TLP.
    hits: [u32; 3],
    /// Lost by path: in the ACK, between ACKs, at RTOs.
    lost: [u32; 3],
    snapshots: [u32; 3],
}

struct Cell {
    cond: Condition,
    label: String,
    lab3: Vec<RunResult>,
    lab1: Vec<RunResult>,
    inside: Vec<Inside>,
    /// bbr3 in the simulator, one run per lab bbr3 run, with its seed.
    sim3: Vec<SimRun>,
    sim1: SimRun,
}

fn mbit(v: f64) -> String {
    format!("{:.1}", v / 1e6)
}

fn runs_list(r: &[RunResult]) -> String {
    r.iter()
        .map(|x| {
            format!(
                "{}{}",
                mbit(x.bits_per_second),
                if x.spoiled { "*" } else { "" }
            )
        })
        .collect::<Vec<_>>()
        .join(" / ")
}

fn med(v: impl Iterator<Item = f64>) -> f64 {
    median(v.filter(|x| x.is_finite()).collect::<Vec<f64>>())
}

/// The error factor of a lab/sim ratio: max(lab/sim, sim/lab).
fn factor(ratio: f64) -> f64 {
    ratio.ln().abs().exp()
}

/// An exclusive flock on `path` (the machine's lab lock), held while the
/// value lives.
fn lab_lock(path: &str) -> nix::fcntl::Flock<File> {
    let f = File::create(path).expect("lock file");
    nix::fcntl::Flock::lock(f, nix::fcntl::FlockArg::LockExclusive)
        .map_err(|(_, e)| e)
        .expect("flock")
}

fn run_grid(a: &Args) {
    let conds = grid();
    let load_before = loadavg();
    let started = utc_now();
    let topo = Topology::build("bbrkb3v", 1500, false).expect("topology");
    let mut cells = Vec::new();
    for (i, c) in conds.iter().enumerate() {
        let plan = Plan {
            conditions: vec![*c],
            algorithms: vec!["bbr3".into(), "bbr".into()],
            runs: a.runs,
            duration: a.duration,
            flows: 1,
            cc_on: CcOn::Sender,
            emulator: EmulatorKind::Auto,
            seed: LAB_SEED + ((i as u64) << 40),
            mtu: 1500,
            retries: 1,
            ecn_threshold: None,
        };
        // bbr3 registered for this condition only, under the lab lock: the
        // name is global, so other users of the machine see it only then.
        let lock = a.lock.as_deref().map(lab_lock);
        let registration = bbrkit_bpf::bbr3::register(Some(&["bbr3"])).expect("register bbr3");
        let maps = StorageMaps::of(registration.loaded()).expect("bbr3's storage map");
        let (lab3, lab1, inside) = lab_cell(&plan, &topo, &maps);
        drop(maps);
        drop(registration);
        drop(lock);
        eprintln!(
            "simulating {} with the lab's {} seeds",
            c.label(),
            lab3.len()
        );
        let sim3 = lab3
            .iter()
            .map(|r| simulate(Algorithm::Bbr3, c, a.duration, r.seed))
            .collect();
        cells.push(Cell {
            cond: *c,
            label: c.label(),
            lab3,
            lab1,
            inside,
            sim3,
            sim1: simulate(Algorithm::Bbr1, c, a.duration, 1),
        });
    }
    drop(topo);
    print_grid(a, &cells, &started, &load_before);
    print_counters(a, &cells);
    print_inside(&cells);
}

/// Runs one condition's plan, reading the bbr3 sender's telemetry every
/// 100 ms; returns the bbr3 runs, the bbr runs and each bbr3 run's last
/// telemetry.
fn lab_cell(
    plan: &Plan,
    topo: &Topology,
    maps: &StorageMaps,
) -> (Vec<RunResult>, Vec<RunResult>, Vec<Inside>) {
    plan::validate(plan).expect("plan");
    let kind = plan.emulator.resolve(topo).expect("emulator");
    let stop = AtomicBool::new(false);
    let latest: Mutex<HashMap<u64, Telemetry>> = Mutex::new(HashMap::new());
    let mut inside = Vec::new();
    let report = std::thread::scope(|s| {
        s.spawn(|| sampler(topo, maps, &stop, &latest));
        let mut on_event = |e: Event<'_>| {
            if let Event::RunDone {
                done,
                total,
                condition,
                cc,
                run,
                outcome: Outcome::Goodput(bps),
                spoiled,
            } = e
            {
                eprintln!(
                    "{done}/{total} {condition} {cc} run {run}: {} Mbit/s{} (load {})",
                    mbit(bps),
                    spoiled
                        .map(|r| format!(", spoiled: {r}"))
                        .unwrap_or_default(),
                    loadavg()
                );
                let seen = std::mem::take(&mut *latest.lock().unwrap());
                if cc == "bbr3" {
                    let t = seen
                        .into_values()
                        .max_by_key(|t| t.counters.acks)
                        .expect("bbr3 telemetry");
                    inside.push(inside_of(&t.counters));
                }
            }
        };
        let r = session::run(plan, topo, kind, &AtomicBool::new(false), &mut on_event);
        stop.store(true, Ordering::Relaxed);
        r
    })
    .expect("lab run");
    let res = &report.conditions[0].results;
    (res[0].runs.clone(), res[1].runs.clone(), inside)
}

fn inside_of(c: &RawCounters) -> Inside {
    Inside {
        counters: *c,
        hits: [c.too_high_ack, c.too_high_lost, c.too_high_tlp],
        lost: [c.lost_in_ack, c.lost_between, c.lost_rto],
        snapshots: [c.tx_exact, c.tx_floor, c.tx_miss],
    }
}

/// Reads every bbr3 socket of the sender's namespace every 100 ms: the
/// census asks for their storage values.
fn sampler(
    topo: &Topology,
    maps: &StorageMaps,
    stop: &AtomicBool,
    out: &Mutex<HashMap<u64, Telemetry>>,
) {
    let mut filter = bbrkit_diag::Filter {
        cc: Some("bbr3".into()),
        ..bbrkit_diag::Filter::default()
    };
    maps.ask(&mut filter);
    while !stop.load(Ordering::Relaxed) {
        if let Ok(socks) = topo
            .server
            .run(|| Ok(bbrkit_diag::census(&filter).unwrap_or_default()))
        {
            let mut o = out.lock().unwrap();
            for s in &socks {
                if let Some(Ok(t)) = maps.telemetry(s) {
                    o.insert(s.cookie, t);
                }
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn print_grid(a: &Args, cells: &[Cell], started: &str, load_before: &str) {
    println!(
        "## lab bbr3 vs sim bbr3: 100 Mbit/s, 1 BDP, {} run(s) x {} s, one loss seed per run, the simulator with each run's seed\n",
        a.runs,
        a.duration.as_secs_f64()
    );
    println!(
        "started {started}, load average {load_before} before, {} after ({}); bbr3 object {} bytes, FNV-1a {:016x}\n",
        loadavg(),
        utc_now(),
        bbrkit_bpf::bbr3::object_bytes().len(),
        fnv(bbrkit_bpf::bbr3::object_bytes())
    );
    println!(
        "| condition | lab bbr3 median (runs) | sim bbr3 median (paired runs) | lab/sim | lab bbr (runs) | sim bbr1 |"
    );
    println!("|---|---|---|---|---|---|");
    let mut ratios = Vec::new();
    for c in cells {
        let l3 = med(c.lab3.iter().map(|x| x.bits_per_second));
        let s3 = med(c.sim3.iter().map(|x| x.bps));
        let sims = c
            .sim3
            .iter()
            .map(|x| mbit(x.bps))
            .collect::<Vec<_>>()
            .join(" / ");
        ratios.push((l3 / s3, c.label.clone()));
        println!(
            "| {} | {} ({}) | {} ({sims}) | {:.2} | {} ({}) | {} |",
            c.label,
            mbit(l3),
            runs_list(&c.lab3),
            mbit(s3),
            l3 / s3,
            mbit(med(c.lab1.iter().map(|x| x.bits_per_second))),
            runs_list(&c.lab1),
            mbit(c.sim1.bps)
        );
    }
    let m = median(ratios.iter().map(|r| r.0).collect::<Vec<f64>>());
    let err = median(ratios.iter().map(|r| factor(r.0)).collect::<Vec<f64>>());
    let within = ratios.iter().filter(|r| factor(r.0) <= 1.5).count();
    println!(
        "\nmedian lab/sim {m:.2}; median error factor max(lab/sim, sim/lab) {err:.2}; {within} of {} cells within x1.5; * = spoiled run\n",
        ratios.len()
    );
    ratios.sort_by(|x, y| factor(y.0).total_cmp(&factor(x.0)));
    println!(
        "worst cells: {}\n",
        ratios
            .iter()
            .take(4)
            .map(|(r, l)| format!("{l} {r:.2}"))
            .collect::<Vec<_>>()
            .join("; ")
    );
    println!(
        "lab seeds: {}\n",
        cells
            .iter()
            .map(|c| format!(
                "{}: {}",
                c.label,
                c.lab3
                    .iter()
                    .map(|r| r.seed.to_string())
                    .collect::<Vec<_>>()
                    .join(",")
            ))
            .collect::<Vec<_>>()
            .join("; ")
    );
}

/// The model's events per run, lab (the BPF object's per-socket counters)
/// against the simulator (bbrkit-cc's), medians over the paired runs.
fn print_counters(a: &Args, cells: &[Cell]) {
    println!(
        "### model events per {} s run, lab / sim (medians over the runs)\n",
        a.duration.as_secs_f64()
    );
    println!("| condition | {} |", COUNTERS.join(" | "));
    println!("|---|{}", "---|".repeat(COUNTERS.len()));
    for c in cells {
        let lab: Vec<[f64; 10]> = c.inside.iter().map(|x| lab_counters(&x.counters)).collect();
        let sim: Vec<[f64; 10]> = c
            .sim3
            .iter()
            .filter_map(|x| x.counters.as_ref())
            .map(sim_counters)
            .collect();
        let cols: Vec<String> = (0..COUNTERS.len())
            .map(|i| {
                let (l, s) = (med(lab.iter().map(|v| v[i])), med(sim.iter().map(|v| v[i])));
                format!("{} / {}", show(l), show(s))
            })
            .collect();
        println!("| {} | {} |", c.label, cols.join(" | "));
    }
    println!();
}

fn show(v: f64) -> String {
    if v.is_nan() {
        "-".into()
    } else {
        format!("{v:.0}")
    }
}

/// What only the lab has: hits and losses by path, the send snapshots,
/// the emulator's view.
fn print_inside(cells: &[Cell]) {
    println!("### inside the lab bbr3 runs (medians over the runs)\n");
    println!(
        "| condition | retransmits lab / sim | emulator lost / buffer drops | late frames | too-high hits ack/lost/tlp | lost in ACK / between ACKs / RTO | snapshots exact/floor/missed | BDP pkts |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for c in cells {
        let m = |f: &dyn Fn(&RunResult) -> f64| med(c.lab3.iter().map(f));
        let d = |f: &dyn Fn(&Inside) -> f64| med(c.inside.iter().map(f));
        let emu = |f: fn(&bbrkit_lab::emulator::EmulatorReport) -> u64| {
            m(&|r: &RunResult| r.emulator.as_ref().map(f).unwrap_or(0) as f64)
        };
        let bdp = RATE as f64 / 8.0 * c.cond.rtt.as_secs_f64() / 1514.0;
        let tri = |f: &dyn Fn(&Inside) -> [u32; 3]| {
            (0..3)
                .map(|i| format!("{:.0}", d(&|x: &Inside| f64::from(f(x)[i]))))
                .collect::<Vec<_>>()
                .join("/")
        };
        println!(
            "| {} | {:.0} / {:.0} | {:.0} / {:.0} | {:.0} | {} | {} | {} | {bdp:.0} |",
            c.label,
            m(&|r: &RunResult| r.retransmits as f64),
            med(c.sim3.iter().map(|x| x.retransmits as f64)),
            emu(|e| e.data.lost_frames),
            emu(|e| e.data.buffer_drops),
            emu(|e| e.data.late_frames + e.reverse.late_frames),
            tri(&|x: &Inside| x.hits),
            tri(&|x: &Inside| x.lost),
            tri(&|x: &Inside| x.snapshots),
        );
    }
    println!();
}

fn fnv(b: &[u8]) -> u64 {
    b.iter().fold(0xcbf29ce484222325u64, |h, &x| {
        (h ^ u64::from(x)).wrapping_mul(0x100000001b3)
    })
}

/// User + system CPU seconds of this process (every thread).
fn rusage_s() -> f64 {
    // SAFETY: getrusage writes one `struct rusage` into the zeroed value we
    // own; RUSAGE_SELF is always valid.
    let u = unsafe {
        let mut u: libc::rusage = std::mem::zeroed();
        assert_eq!(libc::getrusage(libc::RUSAGE_SELF, &mut u), 0);
        u
    };
    let t = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
    t(u.ru_utime) + t(u.ru_stime)
}

/// One run of the no-impairment section.
struct TargetRun {
    cc: &'static str,
    bps: f64,
    cpu_per_gb: f64,
    retransmits: u64,
}

/// `bbrkit lab`'s default no-impairment condition, bbr and bbr3
/// alternating, with this process's CPU time per run.
fn run_target(a: &Args) {
    let runs = a.runs.max(5);
    let load_before = loadavg();
    let started = utc_now();
    let ccs = bbrkit_lab::bpf_cc::register_missing(&["bbr3".into()]).expect("register bbr3");
    let topo = Topology::build("bbrkb3t", 1500, false).expect("topology");
    let link = plan::link_params(&Condition::new(Duration::ZERO, 0.0), 1500, None);
    let mut rows: Vec<TargetRun> = Vec::new();
    for run in 0..runs {
        for cc in ["bbr", "bbr3"] {
            rows.push(target_run(&topo, link, cc, run as u64));
        }
    }
    drop(topo);
    drop(ccs);
    print_target(&rows, runs, &started, &load_before);
}

/// One 6 s run of `cc` on a fresh split emulator (loss seed `seed`).
fn target_run(topo: &Topology, link: LinkParams, cc: &'static str, seed: u64) -> TargetRun {
    let emu = Emulator::start_kind(topo, EmulatorKind::Split, link, seed).unwrap();
    let spec = TestSpec::uniform(cc, 1, CcOn::Sender, Duration::from_secs(6));
    let before = rusage_s();
    let r = run_test(topo, &spec, &AtomicBool::new(false)).expect("run");
    let cpu = rusage_s() - before;
    let rep = emu.stop().unwrap();
    let drops = rep.data.kernel_drops + rep.reverse.kernel_drops;
    eprintln!(
        "{cc}: {:.2} Gbit/s, {cpu:.2} CPU s, {:.3} s/GB, {} retransmits, {drops} kernel drops (load {})",
        r.bits_per_second / 1e9,
        cpu / (r.bytes as f64 / 1e9),
        r.retransmits,
        loadavg()
    );
    TargetRun {
        cc,
        bps: r.bits_per_second,
        cpu_per_gb: cpu / (r.bytes as f64 / 1e9),
        retransmits: r.retransmits,
    }
}

/// The no-impairment section's table.
fn print_target(rows: &[TargetRun], runs: usize, started: &str, load_before: &str) {
    println!(
        "## no impairment (bbrkit lab's default), split emulator, {runs} runs x 6 s, bbr and bbr3 alternating\n"
    );
    println!(
        "started {started}, load average {load_before} before, {} after ({})\n",
        loadavg(),
        utc_now()
    );
    println!(
        "| cc | throughput median (runs), Gbit/s | CPU s per GB median (runs) | retransmits (runs) |"
    );
    println!("|---|---|---|---|");
    let mut med = Vec::new();
    for cc in ["bbr", "bbr3"] {
        let mine: Vec<&TargetRun> = rows.iter().filter(|r| r.cc == cc).collect();
        let list = |f: &dyn Fn(&TargetRun) -> String| {
            mine.iter().map(|r| f(r)).collect::<Vec<_>>().join(" / ")
        };
        let t = median(mine.iter().map(|r| r.bps).collect::<Vec<f64>>());
        let c = median(mine.iter().map(|r| r.cpu_per_gb).collect::<Vec<f64>>());
        med.push((t, c));
        println!(
            "| {cc} | {:.2} ({}) | {c:.3} ({}) | {} |",
            t / 1e9,
            list(&|r| format!("{:.2}", r.bps / 1e9)),
            list(&|r| format!("{:.3}", r.cpu_per_gb)),
            list(&|r| r.retransmits.to_string())
        );
    }
    println!(
        "\nbbr3 / bbr: throughput {:.2}, CPU per GB {:.2}\n",
        med[1].0 / med[0].0,
        med[1].1 / med[0].1
    );
}

/// The grid's simulator columns: bbr3 over seeds 1..=runs, its
/// retransmits, bbr1.
fn print_sim(a: &Args) {
    println!(
        "| condition | sim bbr3 median (seeds 1–{}) | sim bbr3 retransmits (median) | sim bbr1 |",
        a.runs
    );
    println!("|---|---|---|---|");
    for c in grid() {
        let runs: Vec<SimRun> = (1..=a.runs as u64)
            .map(|s| simulate(Algorithm::Bbr3, &c, a.duration, s))
            .collect();
        println!(
            "| {} | {} ({}) | {:.0} | {} |",
            c.label(),
            mbit(med(runs.iter().map(|x| x.bps))),
            runs.iter()
                .map(|x| mbit(x.bps))
                .collect::<Vec<_>>()
                .join(" / "),
            med(runs.iter().map(|x| x.retransmits as f64)),
            mbit(simulate(Algorithm::Bbr1, &c, a.duration, 1).bps)
        );
    }
}

fn main() {
    let a = args();
    if a.sim {
        print_sim(&a);
    }
    if a.grid || a.target {
        bbrkit_lab::require_root().expect("root");
    }
    if a.grid {
        run_grid(&a);
    }
    if a.target {
        run_target(&a);
    }
}
