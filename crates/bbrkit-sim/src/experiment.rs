//! Experiments: a plan (algorithms × loss conditions on one path, each
//! algorithm alone or all competing), the ready-made presets of the seed
//! articles, the expansion of a plan into simulator runs, the goodput ratio
//! of each algorithm to the first, and running independent runs on all
//! cores. The library side of `bbrkit sim`, as `bbrkit-lab`'s runner is of
//! `bbrkit lab`. Must never parse flags, print or touch files.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use bbrkit_cc::{Algorithm, Duration};
use bbrkit_vocab::WorkloadSpec;

use crate::config::{BufferSize, ConfigError, FlowConfig, PathConfig, SimConfig};
use crate::loss::LossModel;
use crate::report::RunReport;
use crate::sim::run;
use crate::workload::{Workload, WorkloadResult, run_workload};

/// Ready-made scenarios from the seed articles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Preset {
    /// The seed experiment: CUBIC vs BBRv1, 1 Gbit/s, 10 ms, loss 0, 2%, 5%.
    Seed,
    /// CUBIC and BBRv1 sharing 100 Mbit/s, 40 ms, 1 BDP buffer, 30 s.
    Fairness,
    /// CUBIC vs BBRv1 alone on 100 Mbit/s, 20 ms, with a 10 BDP buffer, 30 s.
    Bufferbloat,
}

impl Preset {
    /// The preset's plan (every other setting at [`Plan::default`]).
    pub fn plan(self) -> Plan {
        let d = Plan::default();
        match self {
            Preset::Seed => Plan {
                path: PathConfig {
                    rate_bps: 1_000_000_000,
                    ..d.path.clone()
                },
                losses: vec![0.0, 0.02, 0.05],
                ..d
            },
            Preset::Fairness => Plan {
                path: PathConfig {
                    rtt: Duration::from_millis(40),
                    ..d.path.clone()
                },
                duration: Duration::from_secs(30),
                compete: true,
                ..d
            },
            Preset::Bufferbloat => Plan {
                path: PathConfig {
                    rtt: Duration::from_millis(20),
                    buffer: BufferSize::Bdp(10.0),
                    ..d.path.clone()
                },
                duration: Duration::from_secs(30),
                ..d
            },
        }
    }
}

/// An experiment: which algorithms, on which path, under which losses.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// The algorithms, in order (a name may repeat when competing).
    pub algorithms: Vec<Algorithm>,
    /// The path; its `loss` is replaced by each of `losses` in turn.
    pub path: PathConfig,
    /// Data-path loss probabilities, one condition each.
    pub losses: Vec<f64>,
    /// Mean loss burst length in packets (1 = Bernoulli).
    pub loss_burst: f64,
    /// Simulated time per run.
    pub duration: Duration,
    /// All flows share the bottleneck at once (else each runs alone).
    pub compete: bool,
    /// Per-flow start times (one per algorithm).
    pub starts: Vec<Duration>,
    /// Per-flow sizes in bytes (`None` = bulk).
    pub sizes: Vec<Option<u64>>,
    /// Per-flow extra RTT.
    pub extra_rtt: Vec<Duration>,
    /// Receive window, bytes.
    pub rwnd: Option<u64>,
    /// CE-marking threshold of the bottleneck queue (ECN), if any.
    pub ecn_threshold: Option<BufferSize>,
    /// Pace Reno/CUBIC (as with fq).
    pub pace_loss_based: bool,
    /// Tail loss probes.
    pub tlp: bool,
    /// Seed of every random stream.
    pub seed: u64,
}

impl Default for Plan {
    /// CUBIC vs BBRv1, each alone on 100 Mbit/s, 10 ms, 1 BDP, no loss, 10 s.
    fn default() -> Self {
        Plan {
            algorithms: vec![Algorithm::Cubic, Algorithm::Bbr1],
            path: PathConfig {
                rate_bps: 100_000_000,
                rtt: Duration::from_millis(10),
                buffer: BufferSize::Bdp(1.0),
                loss: LossModel::None,
                ack_loss: 0.0,
            },
            losses: vec![0.0],
            loss_burst: 1.0,
            duration: Duration::from_secs(10),
            compete: false,
            starts: vec![Duration::ZERO; 2],
            sizes: vec![None; 2],
            extra_rtt: vec![Duration::ZERO; 2],
            rwnd: None,
            ecn_threshold: None,
            pace_loss_based: false,
            tlp: true,
            seed: 1,
        }
    }
}

impl Plan {
    fn flow(&self, i: usize) -> FlowConfig {
        let or = |v: &[Duration]| v.get(i).copied().unwrap_or(Duration::ZERO);
        FlowConfig {
            algorithm: self.algorithms[i],
            start: or(&self.starts),
            size: self.sizes.get(i).copied().flatten(),
            extra_rtt: or(&self.extra_rtt),
        }
    }

    /// The runs, in order: for each loss condition, one run with every flow
    /// (competing) or one per algorithm (alone). Each is validated;
    /// `sample_interval` turns the time series on.
    pub fn configs(
        &self,
        sample_interval: Option<Duration>,
    ) -> Result<Vec<(f64, SimConfig)>, ConfigError> {
        let n = self.algorithms.len();
        let mut out = Vec::new();
        for &loss in &self.losses {
            let mut path = self.path.clone();
            path.loss = LossModel::bursty(loss, self.loss_burst);
            let groups: Vec<Vec<FlowConfig>> = if self.compete {
                vec![(0..n).map(|i| self.flow(i)).collect()]
            } else {
                (0..n).map(|i| vec![self.flow(i)]).collect()
            };
            for flows in groups {
                let mut cfg = SimConfig::new(path.clone(), flows, self.duration, self.seed);
                cfg.pace_loss_based = self.pace_loss_based;
                cfg.rwnd = self.rwnd;
                cfg.ecn_threshold = self.ecn_threshold;
                cfg.tlp = self.tlp;
                cfg.sample_interval = sample_interval;
                cfg.validate()?;
                out.push((loss, cfg));
            }
        }
        Ok(out)
    }

    /// The request/response workloads of the plan: for each loss
    /// condition, one per algorithm (its path, duration and seed; new
    /// requests for `duration`, a drain of as long again, at most 60 s).
    pub fn workloads(
        &self,
        objects: WorkloadSpec,
        clients: usize,
        keepalive: bool,
    ) -> Vec<(f64, Workload)> {
        let mut out = Vec::new();
        for &loss in &self.losses {
            let mut path = self.path.clone();
            path.loss = LossModel::bursty(loss, self.loss_burst);
            for &algorithm in &self.algorithms {
                out.push((
                    loss,
                    Workload {
                        path: path.clone(),
                        algorithm,
                        objects,
                        clients,
                        keepalive,
                        duration: self.duration,
                        drain: self.duration.min(Duration::from_secs(60)),
                        seed: self.seed,
                    },
                ));
            }
        }
        out
    }

    /// Alone mode: each run's goodput relative to the first algorithm's on
    /// the same condition (`reports` in [`Plan::configs`] order).
    pub fn set_ratios(&self, reports: &mut [RunReport]) {
        if self.compete {
            return;
        }
        for chunk in reports.chunks_mut(self.algorithms.len().max(1)) {
            let base = chunk[0].flows[0].bits_per_second;
            for r in chunk.iter_mut() {
                let f = &mut r.flows[0];
                f.ratio = (base > 0.0).then(|| f.bits_per_second / base);
            }
        }
    }
}

/// Why a batch of runs failed.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// A configuration was invalid.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// A simulation thread panicked (a simulator bug).
    #[error("a simulation thread panicked")]
    Panicked,
}

/// Runs independent configurations on all cores; results in input order
/// (each run is deterministic on its own, so threads do not change output).
pub fn run_parallel(configs: &[SimConfig]) -> Result<Vec<RunReport>, RunError> {
    parallel_map(configs, |cfg| run(cfg, &mut |_| {}))
}

/// Runs independent request/response workloads on all cores; results in
/// input order.
pub fn run_workloads(workloads: &[Workload]) -> Result<Vec<WorkloadResult>, RunError> {
    parallel_map(workloads, run_workload)
}

/// `f` of every item on all cores; results in input order.
fn parallel_map<T: Sync, R: Send + Clone>(
    items: &[T],
    f: impl Fn(&T) -> Result<R, ConfigError> + Sync,
) -> Result<Vec<R>, RunError> {
    let configs = items;
    let workers = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(configs.len())
        .max(1);
    let next = AtomicUsize::new(0);
    let mut results: Vec<Option<R>> = vec![None; configs.len()];
    let slots = Mutex::new(&mut results);
    let mut first_err = None;
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                s.spawn(|| -> Result<(), ConfigError> {
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(cfg) = configs.get(i) else {
                            return Ok(());
                        };
                        let r = f(cfg)?;
                        slots.lock().expect("no panics while holding")[i] = Some(r);
                    }
                })
            })
            .collect();
        for h in handles {
            let r = match h.join() {
                Ok(r) => r.map_err(RunError::from),
                Err(_) => Err(RunError::Panicked),
            };
            if let Err(e) = r {
                first_err.get_or_insert(e);
            }
        }
    });
    if let Some(e) = first_err {
        return Err(e);
    }
    Ok(results
        .into_iter()
        .map(|r| r.expect("every run finished"))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_are_the_documented_scenarios() {
        let s = Preset::Seed.plan();
        assert_eq!(s.path.rate_bps, 1_000_000_000);
        assert_eq!(s.losses, vec![0.0, 0.02, 0.05]);
        assert_eq!(s.algorithms, vec![Algorithm::Cubic, Algorithm::Bbr1]);
        let f = Preset::Fairness.plan();
        assert!(f.compete);
        assert_eq!(
            (f.path.rtt, f.duration),
            (Duration::from_millis(40), Duration::from_secs(30))
        );
        let b = Preset::Bufferbloat.plan();
        assert_eq!(b.path.buffer, BufferSize::Bdp(10.0));
    }

    #[test]
    fn plan_expands_conditions_times_algorithms_and_runs_in_order() {
        let plan = Plan {
            losses: vec![0.0, 0.01],
            duration: Duration::from_millis(500),
            ..Plan::default()
        };
        let configs = plan.configs(None).unwrap();
        // alone: 2 conditions × 2 algorithms.
        assert_eq!(configs.len(), 4);
        assert_eq!(configs[1].1.flows[0].algorithm, Algorithm::Bbr1);
        assert_eq!(configs[2].0, 0.01);
        let only: Vec<SimConfig> = configs.into_iter().map(|(_, c)| c).collect();
        let mut reports = run_parallel(&only).unwrap();
        plan.set_ratios(&mut reports);
        assert_eq!(reports[0].flows[0].ratio, Some(1.0));
        let serial: Vec<RunReport> = only.iter().map(|c| run(c, &mut |_| {}).unwrap()).collect();
        let mut serial = serial;
        plan.set_ratios(&mut serial);
        assert_eq!(reports, serial, "threads do not change the results");
        let compete = Plan {
            compete: true,
            ..plan
        };
        assert_eq!(compete.configs(None).unwrap().len(), 2);
    }
}
