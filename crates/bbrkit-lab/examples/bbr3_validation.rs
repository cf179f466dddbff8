//! Prints the tables of docs/bbr3-validation.md: bbrkit-bpf's bbr3 in the
//! lab (real kernel TCP) against bbrkit-sim's bbr3 model on the same
//! conditions, the built-in bbr (v1) beside both, and the no-impairment
//! throughput and CPU cost of bbr3 against the built-in bbr (root).
//!
//! `flock /tmp/bbrkit-root.lock cargo run --release -p bbrkit-lab --example
//! bbr3_validation [grid] [target] [sim] [--runs N] [--duration SECS] [--seeds N]`
//! (default: grid and target, 3 runs of 8 s, 5 simulator seeds). `sim` alone
//! prints the grid's simulator columns only (no root, no lab): what to re-run
//! when the model changes, since the lab's figures do not depend on it.
//!
//! Grid: 100 Mbit/s, 1 BDP drop-tail buffer, RTT 10/40/80 ms × random loss
//! 0/1/2/5 %, plus 20 ms at 0 and 5 % (the path), userspace
//! emulator (what `bbrkit lab` uses for rated links), fixed lab seed. The
//! simulator runs the same path with its rate scaled by 1500/1514 (the lab's
//! rate counts 1514-byte Ethernet frames, the simulator's 1500-byte IP
//! packets), so both carry the same packets per second. While the grid
//! runs, bbr3 is registered by this program (so its `bbr3_stats` counters
//! can be read per run) and its telemetry map is sampled every 200 ms.
//!
//! Target: `bbrkit lab`'s default no-impairment condition (split emulator,
//! no delay: both directions bridged by eBPF in the kernel, so this process
//! holds only the tester's threads), bbr and bbr3 alternating; CPU cost is
//! this process's user + system time (getrusage) per GB delivered. The
//! kernel here has no IRQ time accounting, so softirq work (the veth and
//! eBPF forwarding, TCP's receive and ACK processing) is charged to the
//! thread it interrupts: ours, except what `ksoftirqd` takes over.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bbrkit_bpf::telemetry::{self, Mode, Phase};
use bbrkit_cc::Algorithm;
use bbrkit_lab::emulator::model::LinkParams;
use bbrkit_lab::emulator::{Emulator, EmulatorKind};
use bbrkit_lab::plan::{self, Plan};
use bbrkit_lab::report::{LabReport, RunResult, median};
use bbrkit_lab::session::{self, Event, Outcome};
use bbrkit_lab::tester::{CcOn, TestSpec, run_test};
use bbrkit_lab::topology::Topology;
use bbrkit_sim::{FlowConfig, LossModel, PathConfig, SimConfig};
use bbrkit_vocab::{BufferSize, PathConditions as Condition};
use libbpf_rs::query::MapInfoIter;
use libbpf_rs::{MapCore, MapFlags, MapHandle, MapType};

const RATE: u64 = 100_000_000;
/// The simulator's rate giving the lab's packet rate (1500 vs 1514 B).
const SIM_RATE: u64 = RATE * 1500 / 1514;
const LAB_SEED: u64 = 20261201;

struct Args {
    grid: bool,
    target: bool,
    sim: bool,
    runs: usize,
    duration: Duration,
    seeds: u64,
}

fn args() -> Args {
    let mut a = Args {
        grid: false,
        target: false,
        sim: false,
        runs: 3,
        duration: Duration::from_secs(8),
        seeds: 5,
    };
    let mut it = std::env::args().skip(1);
    while let Some(s) = it.next() {
        let mut num = || {
            it.next()
                .and_then(|v| v.parse::<f64>().ok())
                .expect("a number")
        };
        match s.as_str() {
            "grid" => a.grid = true,
            "target" => a.target = true,
            "sim" => a.sim = true,
            "--runs" => a.runs = num() as usize,
            "--duration" => a.duration = Duration::from_secs_f64(num()),
            "--seeds" => a.seeds = num() as u64,
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

/// The simulator on `c`: goodput and retransmits for each seed.
fn simulate(alg: Algorithm, c: &Condition, duration: Duration, seed: u64) -> (f64, u64) {
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
    (r.flows[0].bits_per_second, r.flows[0].retransmits)
}

/// Sum over CPUs of each `bbr3_stats` counter, over every such map.
fn bbr3_stats() -> [u64; 6] {
    let mut out = [0u64; 6];
    for info in MapInfoIter::default() {
        if info.name.to_str() != Some("bbr3_stats") || info.ty != MapType::PercpuArray {
            continue;
        }
        let Ok(map) = MapHandle::from_map_id(info.id) else {
            continue;
        };
        for (i, o) in out.iter_mut().enumerate() {
            let key = (i as u32).to_ne_bytes();
            if let Ok(Some(cpus)) = map.lookup_percpu(&key, MapFlags::ANY) {
                for v in cpus {
                    *o += u64::from_ne_bytes(v[..8].try_into().unwrap());
                }
            }
        }
    }
    out
}

/// One telemetry sample of one bbr3 socket.
#[derive(Clone, Copy)]
struct Sample {
    mode: Option<Mode>,
    phase: Option<Phase>,
    inflight_hi: Option<u32>,
    bw: u64,
}

/// Samples the telemetry of every bbr3 socket every 200 ms until `stop`.
fn sampler(stop: &AtomicBool, out: &Mutex<Vec<Sample>>) {
    while !stop.load(Ordering::Relaxed) {
        if let Ok(models) = telemetry::read_kernel() {
            let mut o = out.lock().unwrap();
            o.extend(
                models
                    .iter()
                    .filter(|m| m.state.version == 3)
                    .map(|m| Sample {
                        mode: m.state.mode,
                        phase: m.state.phase,
                        inflight_hi: m.state.inflight_hi,
                        bw: m.state.bw_bits_per_second,
                    }),
            );
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// What one lab bbr3 run looked like from inside.
#[derive(Default, Clone)]
struct Diag {
    stats: [u64; 6],
    samples: usize,
    /// Share of samples in ProbeBW's DOWN/CRUISE/REFILL/UP and PROBE_RTT.
    phases: [f64; 5],
    /// Median inflight_hi (packets) where set, and the share where set.
    inflight_hi: Option<u32>,
    hi_set: f64,
    bw_median: f64,
}

fn summarize(s: &[Sample], stats: [u64; 6]) -> Diag {
    let n = s.len().max(1) as f64;
    let mut phases = [0.0; 5];
    for x in s {
        let i = match (x.mode, x.phase) {
            (Some(Mode::ProbeRtt), _) => Some(4),
            (_, Some(Phase::Down)) => Some(0),
            (_, Some(Phase::Cruise)) => Some(1),
            (_, Some(Phase::Refill)) => Some(2),
            (_, Some(Phase::Up)) => Some(3),
            _ => None,
        };
        if let Some(i) = i {
            phases[i] += 1.0 / n;
        }
    }
    let hi: Vec<f64> = s
        .iter()
        .filter_map(|x| x.inflight_hi.map(f64::from))
        .collect();
    Diag {
        stats,
        samples: s.len(),
        phases,
        hi_set: hi.len() as f64 / n,
        inflight_hi: (!hi.is_empty()).then(|| median(hi) as u32),
        bw_median: median(s.iter().map(|x| x.bw as f64).collect::<Vec<f64>>()),
    }
}

struct Cell {
    cond: Condition,
    label: String,
    sim3: Vec<(f64, u64)>,
    sim1: (f64, u64),
    lab3: Vec<RunResult>,
    lab1: Vec<RunResult>,
    diags: Vec<Diag>,
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

fn lab_median(r: &[RunResult]) -> f64 {
    median(r.iter().map(|x| x.bits_per_second).collect::<Vec<f64>>())
}

/// The lowest and highest goodput over the simulator's seeds.
fn sim_range(s: &[(f64, u64)]) -> (f64, f64) {
    let lo = s.iter().map(|x| x.0).fold(f64::INFINITY, f64::min);
    let hi = s.iter().map(|x| x.0).fold(0.0, f64::max);
    (lo, hi)
}

fn sim_median(s: &[(f64, u64)]) -> f64 {
    median(s.iter().map(|x| x.0).collect::<Vec<f64>>())
}

fn run_grid(a: &Args) {
    let conds = grid();
    eprintln!("simulating {} conditions x {} seeds", conds.len(), a.seeds);
    let mut cells: Vec<Cell> = conds.iter().map(|c| simulate_cell(a, c)).collect();

    let load_before = loadavg();
    let started = utc_now();
    let registration = bbrkit_bpf::bbr3::register(Some(&["bbr3"])).expect("register bbr3");
    let plan = Plan {
        conditions: conds.clone(),
        algorithms: vec!["bbr3".into(), "bbr".into()],
        runs: a.runs,
        duration: a.duration,
        flows: 1,
        cc_on: CcOn::Sender,
        emulator: EmulatorKind::Auto,
        seed: LAB_SEED,
        mtu: 1500,
        retries: 1,
    };
    let (report, diags) = lab_grid(&plan);
    drop(registration);
    for (cell, (res, d)) in cells.iter_mut().zip(report.conditions.iter().zip(diags)) {
        cell.lab3 = res.results[0].runs.clone();
        cell.lab1 = res.results[1].runs.clone();
        cell.diags = d;
    }
    print_grid(a, &cells, &started, &load_before);
}

/// A grid cell with its simulator runs: bbr3 with every seed, bbr1 once.
fn simulate_cell(a: &Args, c: &Condition) -> Cell {
    Cell {
        cond: *c,
        label: c.label(),
        sim3: (1..=a.seeds)
            .map(|s| simulate(Algorithm::Bbr3, c, a.duration, s))
            .collect(),
        sim1: simulate(Algorithm::Bbr1, c, a.duration, 1),
        lab3: Vec::new(),
        lab1: Vec::new(),
        diags: Vec::new(),
    }
}

/// Runs `plan` in the lab while sampling bbr3's telemetry; returns the
/// report and, per condition, the telemetry summary of each bbr3 run.
fn lab_grid(plan: &Plan) -> (LabReport, Vec<Vec<Diag>>) {
    plan::validate(plan).expect("plan");
    let topo = Topology::build("bbrkb3v", 1500, false).expect("topology");
    let kind = plan.emulator.resolve(&topo).expect("emulator");
    let stop = AtomicBool::new(false);
    let samples = Arc::new(Mutex::new(Vec::new()));
    let mut last_stats = bbr3_stats();
    let mut diags: Vec<Vec<Diag>> = vec![Vec::new(); plan.conditions.len()];
    let labels: Vec<String> = plan.conditions.iter().map(|c| c.label()).collect();
    let report = std::thread::scope(|s| {
        s.spawn(|| sampler(&stop, &samples));
        let mut on_event = |e: Event<'_>| {
            if let Event::RunDone {
                done,
                total,
                condition,
                cc,
                outcome: Outcome::Goodput(bps),
                spoiled,
                ..
            } = e
            {
                eprintln!(
                    "{done}/{total} {condition} {cc}: {} Mbit/s{} (load {})",
                    mbit(bps),
                    spoiled
                        .map(|r| format!(", spoiled: {r}"))
                        .unwrap_or_default(),
                    loadavg()
                );
                let got: Vec<Sample> = std::mem::take(&mut *samples.lock().unwrap());
                let now = bbr3_stats();
                let delta: [u64; 6] = std::array::from_fn(|i| now[i].saturating_sub(last_stats[i]));
                last_stats = now;
                if cc == "bbr3" {
                    let ci = labels.iter().position(|l| l == condition).unwrap();
                    diags[ci].push(summarize(&got, delta));
                }
            }
        };
        let r = session::run(plan, &topo, kind, &AtomicBool::new(false), &mut on_event);
        stop.store(true, Ordering::Relaxed);
        r
    })
    .expect("lab run");
    drop(topo);
    (report, diags)
}

fn print_grid(a: &Args, cells: &[Cell], started: &str, load_before: &str) {
    println!(
        "## lab bbr3 vs sim bbr3: 100 Mbit/s, 1 BDP, {} run(s) x {} s, lab seed {LAB_SEED}\n",
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
        "| condition | lab bbr3 median (runs) | sim bbr3 median (seeds 1–{}: min–max) | lab/sim | lab bbr (runs) | sim bbr1 |",
        a.seeds
    );
    println!("|---|---|---|---|---|---|");
    let mut ratios = Vec::new();
    for c in cells {
        let (l3, s3) = (lab_median(&c.lab3), sim_median(&c.sim3));
        let (lo, hi) = sim_range(&c.sim3);
        let ratio = l3 / s3;
        ratios.push((ratio, c));
        println!(
            "| {} | {} ({}) | {} ({}–{}) | {:.2} | {} ({}) | {} |",
            c.label,
            mbit(l3),
            runs_list(&c.lab3),
            mbit(s3),
            mbit(lo),
            mbit(hi),
            ratio,
            mbit(lab_median(&c.lab1)),
            runs_list(&c.lab1),
            mbit(c.sim1.0)
        );
    }
    let med = median(ratios.iter().map(|r| r.0).collect::<Vec<f64>>());
    let err = median(
        ratios
            .iter()
            .map(|r| r.0.ln().abs().exp())
            .collect::<Vec<f64>>(),
    );
    println!(
        "\nmedian lab/sim {med:.2}; median error factor max(lab/sim, sim/lab) {err:.2}; * = spoiled run\n"
    );
    ratios.sort_by(|x, y| y.0.ln().abs().total_cmp(&x.0.ln().abs()));
    println!(
        "worst points: {}\n",
        ratios
            .iter()
            .take(4)
            .map(|(r, c)| format!("{} {r:.2}", c.label))
            .collect::<Vec<_>>()
            .join("; ")
    );
    print_diag(cells);
}

fn print_diag(cells: &[Cell]) {
    println!("### inside the bbr3 runs (medians over runs)\n");
    println!(
        "| condition | retransmits lab / sim | emulator lost / buffer drops | late frames | snapshots exact/floor/missed, no-sample, TLP | DOWN/CRUISE/REFILL/UP/PROBE_RTT % | inflight_hi set % (median, pkts) | BDP pkts | model bw |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for c in cells {
        let m = |f: &dyn Fn(&RunResult) -> f64| median(c.lab3.iter().map(f).collect::<Vec<f64>>());
        let d = |f: &dyn Fn(&Diag) -> f64| median(c.diags.iter().map(f).collect::<Vec<f64>>());
        let emu = |f: fn(&bbrkit_lab::emulator::EmulatorReport) -> u64| {
            m(&|r: &RunResult| r.emulator.as_ref().map(f).unwrap_or(0) as f64)
        };
        let bdp = RATE as f64 / 8.0 * c.cond.rtt.as_secs_f64() / 1514.0;
        let stats: [f64; 6] = std::array::from_fn(|i| d(&|x: &Diag| x.stats[i] as f64));
        println!(
            "| {} | {:.0} / {:.0} | {:.0} / {:.0} | {:.0} | {:.0}/{:.0}/{:.0}, {:.0}, {:.0} | {:.0}/{:.0}/{:.0}/{:.0}/{:.0} | {:.0} ({}) | {bdp:.0} | {} |",
            c.label,
            m(&|r: &RunResult| r.retransmits as f64),
            median(c.sim3.iter().map(|x| x.1 as f64).collect::<Vec<f64>>()),
            emu(|e| e.data.lost_frames),
            emu(|e| e.data.buffer_drops),
            emu(|e| e.data.late_frames + e.reverse.late_frames),
            stats[0],
            stats[1],
            stats[2],
            stats[3],
            stats[4],
            d(&|x: &Diag| x.phases[0] * 100.0),
            d(&|x: &Diag| x.phases[1] * 100.0),
            d(&|x: &Diag| x.phases[2] * 100.0),
            d(&|x: &Diag| x.phases[3] * 100.0),
            d(&|x: &Diag| x.phases[4] * 100.0),
            d(&|x: &Diag| x.hi_set * 100.0),
            c.diags
                .iter()
                .filter_map(|x| x.inflight_hi)
                .map(|v| v.to_string())
                .collect::<Vec<_>>()
                .join("/"),
            mbit(d(&|x: &Diag| x.bw_median)),
        );
    }
    let n: usize = cells.iter().flat_map(|c| &c.diags).map(|x| x.samples).sum();
    println!("\n({n} telemetry samples of bbr3 sockets, 200 ms apart)\n");
    let cpu = |r: &[RunResult]| median(r.iter().map(|x| x.sender_cpu_s / (x.bytes as f64 / 1e9)));
    println!("sender threads' CPU per GB (s), bbr3 / bbr:");
    for c in cells {
        println!("  {}: {:.2} / {:.2}", c.label, cpu(&c.lab3), cpu(&c.lab1));
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
    let link = plan::link_params(&Condition::new(Duration::ZERO, 0.0), 1500);
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
    let spec = TestSpec {
        sample_every: Duration::from_millis(100),
        keep_off_cpu: None,
        ..TestSpec::uniform(cc, 1, CcOn::Sender, Duration::from_secs(6))
    };
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

/// The grid's simulator columns: bbr3 over the seeds, its retransmits, bbr1.
fn print_sim(a: &Args) {
    println!(
        "| condition | sim bbr3 median (seeds 1–{}: min–max) | sim bbr3 retransmits (median) | sim bbr1 |",
        a.seeds
    );
    println!("|---|---|---|---|");
    for c in grid().iter().map(|c| simulate_cell(a, c)) {
        let (lo, hi) = sim_range(&c.sim3);
        let rtx = median(c.sim3.iter().map(|x| x.1 as f64).collect::<Vec<f64>>());
        println!(
            "| {} | {} ({}–{}) | {rtx:.0} | {} |",
            c.label,
            mbit(sim_median(&c.sim3)),
            mbit(lo),
            mbit(hi),
            mbit(c.sim1.0)
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
