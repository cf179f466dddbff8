//! The link emulator on the router: impairs the path between server and
//! client with delay, random loss, a rate with a drop-tail buffer and jitter
//! (loss and rate on the server → client data; the delay on the data too,
//! except in `split`, which puts it on the ACKs).
//!
//! Owns choosing the implementation (`auto`: kernel netem where the kernel has
//! it, else split), starting it for one run and collecting its report.
//!
//! - `userspace`: two threads, one per direction, each moving Ethernet
//!   frames between the router's two links through AF_PACKET sockets (see
//!   `forwarder`); every impairment on the data direction.
//! - `split`: loss and rate stay in the kernel on the data direction (eBPF +
//!   `tbf`, see `split`), and one forwarder thread delays the ACK direction.
//!   A TCP sender sees the same RTT either way; the data never crosses
//!   userspace, so the emulator does not cap what the kernel can carry.
//! - `netem`: the kernel qdisc impairs, the forwarder only bridges.
//!
//! Must never attach to a link outside the router namespace.

pub mod afpacket;
pub mod bpf;
pub mod ecn;
pub mod forwarder;
pub mod model;
pub mod netem;
pub mod split;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;

use serde::Serialize;

use crate::error::{LabError, Result};
use crate::topology::Topology;
use afpacket::PacketSocket;
use forwarder::{ForwardConfig, ForwarderStats, forward};
use model::{LinkModel, LinkParams};

/// Which emulator to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum EmulatorKind {
    /// Kernel netem where the kernel has it, else split where the kernel
    /// has tcx, else userspace.
    Auto,
    /// Kernel `sch_netem` on the router's egress toward the client.
    Netem,
    /// Loss and rate in the kernel (eBPF, tbf) on the data direction, delay
    /// and jitter on the ACK direction in userspace.
    Split,
    /// bbrkit's AF_PACKET forwarder, every impairment on the data direction.
    Userspace,
}

impl EmulatorKind {
    /// Resolves `Auto` (and checks `Netem`) against the kernel of `topo`.
    pub fn resolve(self, topo: &Topology) -> Result<EmulatorKind> {
        let has_netem = || netem::kernel_has_netem(topo);
        match self {
            EmulatorKind::Userspace => Ok(EmulatorKind::Userspace),
            EmulatorKind::Split => match split::kernel_supports(topo) {
                Ok(()) => Ok(EmulatorKind::Split),
                Err(why) => Err(LabError::EmulatorUnavailable(format!(
                    "the split emulator needs eBPF with tcx (Linux 6.6+): {} (use --emulator userspace)",
                    bbrkit_diag::error_chain(&why)
                ))),
            },
            EmulatorKind::Netem => {
                if has_netem()? {
                    Ok(EmulatorKind::Netem)
                } else {
                    Err(LabError::EmulatorUnavailable(
                        "this kernel has no sch_netem (use --emulator auto, split or userspace)"
                            .into(),
                    ))
                }
            }
            EmulatorKind::Auto => Ok(if has_netem()? {
                EmulatorKind::Netem
            } else if split::kernel_supports(topo).is_ok() {
                EmulatorKind::Split
            } else {
                EmulatorKind::Userspace
            }),
        }
    }
}

/// What the emulator did during one run.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct EmulatorReport {
    /// The server → client direction (loss, rate; delay except in split).
    pub data: ForwarderStats,
    /// The client → server direction (the delay in split, else untouched).
    pub reverse: ForwarderStats,
}

/// Which direction a forwarder thread serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Direction {
    Data,
    Reverse,
}

/// A running emulator; stops (and joins, and removes its kernel part) on drop.
pub struct Emulator {
    stop: Arc<AtomicBool>,
    threads: Vec<(Direction, JoinHandle<std::io::Result<ForwarderStats>>)>,
    kernel: Option<split::KernelPath>,
    cpu: Option<usize>,
}

/// Default forwarding-loop tuning for links of `mtu` bytes.
pub fn forward_config(mtu: u32) -> ForwardConfig {
    ForwardConfig {
        capacity: 32_768,
        slot_len: (mtu as usize + 14 + 4 + 63) & !63,
        spin_ns: 200_000,
        late_ns: 500_000,
        batch_ns: 20_000,
    }
}

impl Emulator {
    /// Starts the userspace emulator with `params` on the data direction and
    /// a loss process seeded with `seed`.
    pub fn start(topo: &Topology, params: LinkParams, seed: u64) -> Result<Emulator> {
        Self::start_kind(topo, EmulatorKind::Userspace, params, seed)
    }

    /// Starts the emulator of `kind` (`Netem`, `Split` or `Userspace`).
    /// With netem, the kernel qdisc on `veth-rc` impairs the data direction
    /// and the forwarder only bridges frames (without bypassing that qdisc).
    pub fn start_kind(
        topo: &Topology,
        kind: EmulatorKind,
        params: LinkParams,
        seed: u64,
    ) -> Result<Emulator> {
        match kind {
            EmulatorKind::Split => Self::start_split(topo, params, seed),
            EmulatorKind::Netem => {
                netem::configure(topo, &params, seed)?;
                Self::start_forwarders(topo, LinkParams::transparent(), false, seed)
            }
            EmulatorKind::Userspace => Self::start_forwarders(topo, params, true, seed),
            EmulatorKind::Auto => Err(LabError::Invalid("resolve the emulator kind first".into())),
        }
    }

    /// Both directions in userspace; `params` on the data direction.
    fn start_forwarders(
        topo: &Topology,
        params: LinkParams,
        bypass: bool,
        seed: u64,
    ) -> Result<Emulator> {
        let (rc, rs) = topo.router.run(|| {
            let open = |idx, name: &str| {
                PacketSocket::open(idx, bypass)
                    .map(Arc::new)
                    .map_err(|e| LabError::io(format!("AF_PACKET socket on {name}"), e))
            };
            Ok((
                open(topo.router_client_index, crate::topology::ROUTER_CLIENT_IF)?,
                open(topo.router_server_index, crate::topology::ROUTER_SERVER_IF)?,
            ))
        })?;
        let mut emu = Emulator {
            stop: Arc::new(AtomicBool::new(false)),
            threads: Vec::new(),
            kernel: None,
            cpu: None,
        };
        let cfg = forward_config(topo.mtu);
        emu.spawn(
            Direction::Data,
            (rs.clone(), rc.clone()),
            params,
            cfg,
            seed,
            None,
        )?;
        emu.spawn(
            Direction::Reverse,
            (rc, rs),
            LinkParams::transparent(),
            cfg,
            seed,
            None,
        )?;
        Ok(emu)
    }

    /// The split emulator: the data direction in the kernel; the ACK
    /// direction through a delaying forwarder (or the kernel, with no delay).
    fn start_split(topo: &Topology, params: LinkParams, seed: u64) -> Result<Emulator> {
        let delayed = !(params.delay.is_zero() && params.jitter.is_zero());
        let mut emu = Emulator {
            stop: Arc::new(AtomicBool::new(false)),
            threads: Vec::new(),
            kernel: None,
            cpu: None,
        };
        if delayed {
            let (rc, rs) = topo.router.run(|| {
                let rc = PacketSocket::open(topo.router_client_index, true)
                    .map_err(|e| LabError::io("AF_PACKET socket on veth-rc", e))?;
                let rs = PacketSocket::open_send_only(topo.router_server_index)
                    .map_err(|e| LabError::io("AF_PACKET socket on veth-rs", e))?;
                Ok((Arc::new(rc), Arc::new(rs)))
            })?;
            let ack = LinkParams {
                delay: params.delay,
                jitter: params.jitter,
                ..LinkParams::transparent()
            };
            let pin = steer(topo, true);
            emu.cpu = pin;
            emu.spawn(
                Direction::Reverse,
                (rc, rs),
                ack,
                // Never early: the data path adds only ~10 µs here, so ACKs
                // batched up to 20 µs ahead of their deadline made TCP
                // measure min_rtt 3 µs *below* the configured delay. ACKs
                // are few; each leaves when due.
                ForwardConfig {
                    batch_ns: 0,
                    ..forward_config(topo.mtu)
                },
                seed,
                pin,
            )?;
        }
        if !delayed {
            steer(topo, false);
        }
        emu.kernel = Some(split::KernelPath::install(topo, &params, !delayed)?);
        Ok(emu)
    }

    fn spawn(
        &mut self,
        dir: Direction,
        (rx, tx): (Arc<PacketSocket>, Arc<PacketSocket>),
        params: LinkParams,
        cfg: ForwardConfig,
        seed: u64,
        pin: Option<usize>,
    ) -> Result<()> {
        let stop = self.stop.clone();
        let name = match dir {
            Direction::Data => "bbrkit-emu-data",
            Direction::Reverse => "bbrkit-emu-ack",
        };
        let handle = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                if let Some(cpu) = pin {
                    let mut set = nix::sched::CpuSet::new();
                    // Best effort, like the priority.
                    if set.set(cpu).is_ok() {
                        let _ = nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &set);
                    }
                }
                raise_priority();
                let mut model = LinkModel::new(params, seed);
                forward(&rx, &tx, &mut model, cfg, &stop)
            })
            .map_err(|e| LabError::io("spawn emulator thread", e))?;
        self.threads.push((dir, handle));
        Ok(())
    }

    /// The CPU the split emulator's ACK forwarder is pinned to, if any: the
    /// traffic's senders should stay off it (see `TestSpec::keep_off_cpu`).
    pub fn forwarder_cpu(&self) -> Option<usize> {
        self.cpu
    }

    /// Stops both directions and returns what they did.
    pub fn stop(mut self) -> Result<EmulatorReport> {
        let mut rep = EmulatorReport::default();
        for (dir, stats) in self.join_all() {
            let stats = stats.map_err(|e| match dir {
                Direction::Data => LabError::io("emulator (data direction)", e),
                Direction::Reverse => LabError::io("emulator (reverse direction)", e),
            })?;
            match dir {
                Direction::Data => rep.data = stats,
                Direction::Reverse => rep.reverse = stats,
            }
        }
        if let Some(kernel) = self.kernel.take() {
            let account = kernel.finish()?;
            rep.data = account.data;
            match account.reverse {
                Some(r) => rep.reverse = r,
                None => rep.reverse.kernel_drops += account.ack_kernel_drops,
            }
        }
        Ok(rep)
    }

    fn join_all(&mut self) -> Vec<(Direction, std::io::Result<ForwarderStats>)> {
        self.stop.store(true, Ordering::Relaxed);
        self.threads
            .drain(..)
            .map(|(dir, t)| {
                let r = t
                    .join()
                    .unwrap_or_else(|_| Err(std::io::Error::other("emulator thread panicked")));
                (dir, r)
            })
            .collect()
    }
}

/// Places the split emulator's work on the CPUs with receive packet
/// steering (RPS, written through each namespace's own sysfs). Returns the
/// CPU to pin the ACK forwarder to (only when `delayed`: there is one).
///
/// A veth queues a frame on the *sending* CPU's backlog, and that shapes
/// both cases:
/// - No delay (no forwarder; eBPF bridges both directions): the server
///   transmits from two CPUs (its writer on one, its ACK processing on the
///   other), so its frames were forwarded from two backlogs and reordered —
///   1 000–3 000 needless retransmits and duplicate SACKs per
///   no-impairment run. The router's two links therefore receive on one CPU,
///   one queue per direction as on a NIC: measured 0.
/// - Delay: the forwarder's `sendmmsg` of ACKs would run the server's whole
///   ACK → transmit path in its own context and deliver the next ACKs
///   milliseconds late (at 10 ms + 2% loss: 4–12% of ACKs > 500 µs late), so
///   the server's link receives on the other CPUs (~1% late). The server's
///   ACK-clocked transmissions then start there too. Steering the router's
///   links as well was measured and rejected: its 1 000-frame backlog
///   overflowed in bursts at 10 ms, and spurious retransmissions rose.
///
/// Best effort: if sysfs cannot be mounted nothing is steered (late frames
/// are still counted).
fn steer(topo: &Topology, delayed: bool) -> Option<usize> {
    use crate::topology::{ROUTER_CLIENT_IF, ROUTER_SERVER_IF, SERVER_IF};
    let cpus: Vec<usize> = allowed_cpus().into_iter().filter(|&c| c < 64).collect();
    let pin = if delayed && cpus.len() >= 2 {
        cpus.last().copied()
    } else {
        None
    };
    let mask = |set: &mut dyn Iterator<Item = &usize>| set.fold(0u64, |m, &c| m | (1 << c));
    let (server, router) = if delayed {
        let others = mask(&mut cpus.iter().filter(|&&c| Some(c) != pin));
        (if pin.is_some() { others } else { 0 }, 0)
    } else {
        (0, mask(&mut cpus.iter().take(1)))
    };
    let rps = |ifname: &str, mask: u64| {
        (
            format!("class/net/{ifname}/queues/rx-0/rps_cpus"),
            format!("{mask:x}"),
        )
    };
    let ok = topo.server.write_sys(&[rps(SERVER_IF, server)]).is_ok()
        && topo
            .router
            .write_sys(&[rps(ROUTER_SERVER_IF, router), rps(ROUTER_CLIENT_IF, router)])
            .is_ok();
    if ok { pin } else { None }
}

/// The CPUs this process may run on.
fn allowed_cpus() -> Vec<usize> {
    match nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(0)) {
        Ok(set) => (0..nix::sched::CpuSet::count().min(64))
            .filter(|&c| set.is_set(c).unwrap_or(false))
            .collect(),
        Err(_) => Vec::new(),
    }
}

/// Real-time priority (`SCHED_FIFO`) of the emulator threads. Machines with
/// autogroup scheduling share the CPU per session, so a nice level cannot
/// keep compilers in other sessions from stalling the delay line for 100 ms;
/// a real-time thread preempts them. The data thread spins at most 200 µs
/// before a deadline and otherwise sleeps, and the kernel's real-time
/// throttling still leaves others their share if it ever runs flat out.
pub const EMULATOR_RT_PRIORITY: i32 = 10;

/// Nice level used when real-time scheduling is refused.
pub const EMULATOR_NICE: i32 = -15;

/// Gives the calling thread [`EMULATOR_RT_PRIORITY`] (best effort: falls
/// back to [`EMULATOR_NICE`], and late frames are counted either way).
fn raise_priority() {
    // SAFETY: plain syscalls on the calling thread's own id / handle.
    unsafe {
        let param = libc::sched_param {
            sched_priority: EMULATOR_RT_PRIORITY,
        };
        if libc::pthread_setschedparam(libc::pthread_self(), libc::SCHED_FIFO, &param) != 0 {
            let tid = libc::gettid();
            libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, EMULATOR_NICE);
        }
    }
}

impl Drop for Emulator {
    fn drop(&mut self) {
        self.join_all();
    }
}
