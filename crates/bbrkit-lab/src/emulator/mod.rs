//! The link emulator on the router: impairs the server → client direction
//! (delay, random loss, rate with a drop-tail buffer, jitter) and passes the
//! client → server direction (ACKs) untouched.
//!
//! Owns choosing the implementation (`auto`: kernel netem where the kernel has
//! it, else userspace), starting it for one run and collecting its report.
//! The userspace emulator is two threads, one per direction, each moving
//! Ethernet frames between the router's two links through AF_PACKET sockets
//! (see `forwarder`). Must never attach to a link outside the router namespace.

pub mod afpacket;
pub mod forwarder;
pub mod model;
pub mod netem;

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
    /// Kernel netem where the kernel has it, else userspace.
    Auto,
    /// Kernel `sch_netem` on the router's egress toward the client.
    Netem,
    /// bbrkit's AF_PACKET forwarder.
    Userspace,
}

impl EmulatorKind {
    /// Resolves `Auto` (and checks `Netem`) against the kernel of `topo`.
    pub fn resolve(self, topo: &Topology) -> Result<EmulatorKind> {
        let has_netem = || netem::kernel_has_netem(topo);
        match self {
            EmulatorKind::Userspace => Ok(EmulatorKind::Userspace),
            EmulatorKind::Netem => {
                if has_netem()? {
                    Ok(EmulatorKind::Netem)
                } else {
                    Err(LabError::EmulatorUnavailable(
                        "this kernel has no sch_netem (use --emulator userspace or auto)".into(),
                    ))
                }
            }
            EmulatorKind::Auto => Ok(if has_netem()? {
                EmulatorKind::Netem
            } else {
                EmulatorKind::Userspace
            }),
        }
    }
}

/// What the emulator did during one run.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct EmulatorReport {
    /// The impaired server → client direction.
    pub data: ForwarderStats,
    /// The untouched client → server direction.
    pub reverse: ForwarderStats,
}

/// A running userspace emulator; stops (and joins) on drop.
pub struct Emulator {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<std::io::Result<ForwarderStats>>>,
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

    /// Starts the emulator of `kind` (`Netem` or `Userspace`). With netem,
    /// the kernel qdisc on `veth-rc` impairs the data direction and the
    /// forwarder only bridges frames (without bypassing that qdisc).
    pub fn start_kind(
        topo: &Topology,
        kind: EmulatorKind,
        params: LinkParams,
        seed: u64,
    ) -> Result<Emulator> {
        let netem = kind == EmulatorKind::Netem;
        let params = if netem {
            netem::configure(topo, &params, seed)?;
            LinkParams::transparent()
        } else {
            params
        };
        let (rc, rs) = topo.router.run(|| {
            let open = |idx, name: &str| {
                PacketSocket::open(idx, !netem)
                    .map(Arc::new)
                    .map_err(|e| LabError::io(format!("AF_PACKET socket on {name}"), e))
            };
            Ok((
                open(topo.router_client_index, crate::topology::ROUTER_CLIENT_IF)?,
                open(topo.router_server_index, crate::topology::ROUTER_SERVER_IF)?,
            ))
        })?;
        let stop = Arc::new(AtomicBool::new(false));
        let cfg = forward_config(topo.mtu);
        let mut threads = Vec::new();
        for (rx, tx, params, name) in [
            (rs.clone(), rc.clone(), params, "bbrkit-emu-data"),
            (rc, rs, LinkParams::transparent(), "bbrkit-emu-ack"),
        ] {
            let stop = stop.clone();
            let handle = std::thread::Builder::new()
                .name(name.into())
                .spawn(move || {
                    raise_priority();
                    let mut model = LinkModel::new(params, seed);
                    forward(&rx, &tx, &mut model, cfg, &stop)
                })
                .map_err(|e| LabError::io("spawn emulator thread", e))?;
            threads.push(handle);
        }
        Ok(Emulator { stop, threads })
    }

    /// Stops both directions and returns what they did.
    pub fn stop(mut self) -> Result<EmulatorReport> {
        let mut stats = self.join_all();
        let reverse = stats.pop().unwrap_or(Ok(Default::default()));
        let data = stats.pop().unwrap_or(Ok(Default::default()));
        Ok(EmulatorReport {
            data: data.map_err(|e| LabError::io("emulator (data direction)", e))?,
            reverse: reverse.map_err(|e| LabError::io("emulator (reverse direction)", e))?,
        })
    }

    fn join_all(&mut self) -> Vec<std::io::Result<ForwarderStats>> {
        self.stop.store(true, Ordering::Relaxed);
        self.threads
            .drain(..)
            .map(|t| {
                t.join()
                    .unwrap_or_else(|_| Err(std::io::Error::other("emulator thread panicked")))
            })
            .collect()
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
