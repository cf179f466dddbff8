//! The kernel path of the split emulator: the data direction never leaves
//! the kernel.
//!
//! ```text
//!  server ──▶ veth-rs ─[tcx: count, random loss, redirect]─▶ veth-rc ─[tbf: rate, drop-tail]─▶ client
//!  server ◀── veth-rs ◀─[userspace forwarder: delay ± jitter]── veth-rc ◀── client   (delay > 0)
//!  server ◀── veth-rs ◀─[tcx: redirect]──────────────────────── veth-rc ◀── client   (no delay)
//! ```
//!
//! Why: on a 2-core machine, copying every data frame through userspace
//! halves what the kernel can carry (3.6–3.8 vs 7.6–8.2 Gbit/s). Loss and the
//! bottleneck need no userspace (eBPF, `tbf`); only delay does, and a TCP
//! sender cannot tell a delay on its data from the same delay on its ACKs:
//! it sees the same ACK stream at the same times (the receiver's behaviour is
//! unchanged, just shifted in time). So the delay moves to the ACK path,
//! which carries a frame per one or two data frames and a few percent of the
//! bytes. This is the one deviation from "impair the router's egress toward
//! the receiver" (see docs/lab.md, "split emulator").
//!
//! Owns installing and removing the programs and the `tbf`, and reading the
//! counters of the links the traffic crosses. Must only attach to and
//! configure `veth-rs`/`veth-rc` of the router namespace (the end
//! namespaces' links are only read); every tcx link is a file descriptor,
//! so dropping this detaches it.

use std::os::fd::OwnedFd;

use crate::error::{LabError, Result};
use crate::netlink::{Rtnl, push_nla};
use crate::netns::Netns;
use crate::topology::{CLIENT_IF, ROUTER_CLIENT_IF, ROUTER_SERVER_IF, SERVER_IF, Topology};

use super::bpf::{self, Counters};
use super::forwarder::ForwarderStats;
use super::model::LinkParams;

// tbf attributes (include/uapi/linux/pkt_sched.h).
const TCA_TBF_PARMS: u16 = 1;
const TCA_TBF_RATE64: u16 = 4;
const TCA_TBF_BURST: u16 = 6;
/// `tc_ratespec.linklayer`: Ethernet (no rate table needed).
const TC_LINKLAYER_ETHERNET: u8 = 1;

/// Token bucket depth, in time at the configured rate: it must cover a late
/// qdisc-watchdog wake-up (50–150 µs on these VMs) or the bucket overflows
/// while the timer is late and the link runs below its rate.
pub const TBF_BURST_NS: u64 = 400_000;

/// The `TCA_OPTIONS` payload of a `tbf` for `rate_bps` (Ethernet frame
/// bits), a drop-tail queue of `limit` bytes and a bucket of `burst` bytes.
pub fn tbf_options(rate_bps: u64, limit: u32, burst: u32) -> Vec<u8> {
    let bytes_per_s = rate_bps / 8;
    let mut out = Vec::new();
    let mut nla = |kind: u16, value: &[u8]| push_nla(&mut out, kind, value);
    // struct tc_ratespec { cell_log u8, linklayer u8, overhead u16,
    //                      cell_align i16, mpu u16, rate u32 }
    let ratespec = |rate: u32| {
        let mut r = vec![0u8, TC_LINKLAYER_ETHERNET, 0, 0, 0, 0, 0, 0];
        r.extend_from_slice(&rate.to_ne_bytes());
        r
    };
    // struct tc_tbf_qopt { rate, peakrate, limit, buffer, mtu }
    let mut qopt = ratespec(bytes_per_s.min(u32::MAX as u64) as u32);
    qopt.extend(ratespec(0));
    for v in [limit, 0, 0] {
        qopt.extend_from_slice(&v.to_ne_bytes());
    }
    nla(TCA_TBF_PARMS, &qopt);
    if bytes_per_s >= u32::MAX as u64 {
        nla(TCA_TBF_RATE64, &bytes_per_s.to_ne_bytes());
    }
    nla(TCA_TBF_BURST, &burst.to_ne_bytes());
    out
}

/// The bucket for `rate_bps` with frames of `frame` bytes: [`TBF_BURST_NS`]
/// of sending, at least two frames.
pub fn tbf_burst(rate_bps: u64, frame: u64) -> u32 {
    let by_time = (rate_bps as u128 * TBF_BURST_NS as u128 / 8 / 1_000_000_000) as u64;
    by_time.max(2 * frame).min(u32::MAX as u64) as u32
}

/// One link's transmit counters, from its namespace's `/proc/net/dev`.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct DevCounters {
    tx_bytes: u64,
    tx_packets: u64,
    /// A veth counts a frame its peer's receive backlog refused (that CPU
    /// fell `netdev_max_backlog`, 1 000 frames, behind) as a transmit drop.
    tx_dropped: u64,
}

impl DevCounters {
    /// What was counted since `start`.
    fn since(&self, start: &DevCounters) -> DevCounters {
        DevCounters {
            tx_bytes: self.tx_bytes.saturating_sub(start.tx_bytes),
            tx_packets: self.tx_packets.saturating_sub(start.tx_packets),
            tx_dropped: self.tx_dropped.saturating_sub(start.tx_dropped),
        }
    }
}

/// Counters of `names`, from one read of the calling thread's namespace's
/// `/proc/net/dev`.
fn dev_counters<const N: usize>(names: [&str; N]) -> Result<[DevCounters; N]> {
    let path = "/proc/thread-self/net/dev";
    let text =
        std::fs::read_to_string(path).map_err(|e| LabError::io(format!("read {path}"), e))?;
    let mut out = [DevCounters::default(); N];
    for (slot, name) in out.iter_mut().zip(names) {
        *slot = parse_dev(&text, name).ok_or_else(|| {
            LabError::io(
                format!("{name} in {path}"),
                std::io::ErrorKind::NotFound.into(),
            )
        })?;
    }
    Ok(out)
}

/// The counters of every link the traffic crosses, in the order server,
/// router toward the client, router toward the server, client.
fn path_counters(server: &Netns, router: &Netns, client: &Netns) -> Result<[DevCounters; 4]> {
    let [s] = server.run(|| dev_counters([SERVER_IF]))?;
    let [rc, rs] = router.run(|| dev_counters([ROUTER_CLIENT_IF, ROUTER_SERVER_IF]))?;
    let [c] = client.run(|| dev_counters([CLIENT_IF]))?;
    Ok([s, rc, rs, c])
}

fn parse_dev(text: &str, name: &str) -> Option<DevCounters> {
    text.lines().find_map(|line| {
        let (dev, rest) = line.split_once(':')?;
        if dev.trim() != name {
            return None;
        }
        let f: Vec<u64> = rest
            .split_whitespace()
            .filter_map(|x| x.parse().ok())
            .collect();
        Some(DevCounters {
            tx_bytes: *f.get(8)?,
            tx_packets: *f.get(9)?,
            tx_dropped: *f.get(11)?,
        })
    })
}

/// Whether this kernel can run the split emulator: loads the bridge program
/// and attaches it with tcx to the router's `veth-rc` for a moment (Linux
/// 6.6+, `CONFIG_NET_XGRESS`, `bpf()` allowed). The error says why not.
pub fn kernel_supports(topo: &Topology) -> Result<()> {
    let (rc, rs) = (topo.router_client_index, topo.router_server_index);
    topo.router.run(|| {
        let prog = bpf::load("bbrkit_probe", &bpf::bridge_program(rs))
            .map_err(|e| LabError::io("load an eBPF program", e))?;
        let link =
            bpf::attach_ingress(&prog, rc).map_err(|e| LabError::io("attach it with tcx", e))?;
        drop(link);
        Ok(())
    })
}

/// The installed kernel path; removed on drop.
pub struct KernelPath {
    counters: Counters,
    links: Vec<OwnedFd>,
    tbf_on: Option<u32>,
    /// [`path_counters`] at install.
    start: [DevCounters; 4],
    bridged: bool,
    /// A second handle to the router namespace (to read the counters and
    /// remove the tbf, also on drop).
    router: Netns,
    /// Second handles to the end namespaces, to read their links' counters.
    server: Netns,
    client: Netns,
}

/// What [`KernelPath::finish`] accounts for.
pub struct KernelAccount {
    /// The data direction.
    pub data: ForwarderStats,
    /// The ACK direction, when eBPF bridged it.
    pub reverse: Option<ForwarderStats>,
    /// ACKs the kernel dropped on the lab's links (receive backlogs full);
    /// already in `reverse` when bridged.
    pub ack_kernel_drops: u64,
}

impl KernelPath {
    /// Installs loss (and with a rate, `tbf`) on the data direction of
    /// `topo`; with `bridge_reverse`, also forwards the ACK direction in the
    /// kernel (no userspace at all).
    pub fn install(
        topo: &Topology,
        params: &LinkParams,
        bridge_reverse: bool,
    ) -> Result<KernelPath> {
        let (rc, rs) = (topo.router_client_index, topo.router_server_index);
        let frame = topo.mtu as u64 + 14;
        let start = path_counters(&topo.server, &topo.router, &topo.client)?;
        topo.router.run(|| {
            let bpf_err = |what: &str, e: std::io::Error| LabError::io(what.to_string(), e);
            let counters = Counters::create().map_err(|e| bpf_err("create eBPF map", e))?;
            let mut path = KernelPath {
                counters,
                links: Vec::new(),
                tbf_on: None,
                start,
                bridged: bridge_reverse,
                router: topo.router.try_clone()?,
                server: topo.server.try_clone()?,
                client: topo.client.try_clone()?,
            };
            if let Some(rate) = params.rate_bps {
                let limit = params
                    .buffer_bytes
                    .unwrap_or(u32::MAX as u64)
                    .min(u32::MAX as u64);
                let mut nl = Rtnl::open()?;
                nl.root_qdisc(
                    rc,
                    "tbf",
                    tbf_options(rate, limit as u32, tbf_burst(rate, frame)),
                    true,
                )?;
                path.tbf_on = Some(rc);
            }
            let threshold = bpf::loss_threshold(params.loss);
            let data = bpf::load(
                "bbrkit_data",
                &bpf::data_program(path.counters.raw_fd(), threshold, rc, path.tbf_on.is_some()),
            )
            .map_err(|e| bpf_err("load the data-direction program", e))?;
            path.links.push(
                bpf::attach_ingress(&data, rs)
                    .map_err(|e| bpf_err("attach to veth-rs (tcx)", e))?,
            );
            if bridge_reverse {
                let back = bpf::load("bbrkit_bridge", &bpf::bridge_program(rs))
                    .map_err(|e| bpf_err("load the ACK-direction program", e))?;
                path.links.push(
                    bpf::attach_ingress(&back, rc)
                        .map_err(|e| bpf_err("attach to veth-rc (tcx)", e))?,
                );
            }
            Ok(path)
        })
    }

    /// Removes the programs and the `tbf` and returns the account (see
    /// `account`).
    pub fn finish(mut self) -> Result<KernelAccount> {
        self.links.clear();
        let (seen, lost) = self
            .counters
            .read()
            .map_err(|e| LabError::io("read eBPF counters", e))?;
        let now = path_counters(&self.server, &self.router, &self.client)?;
        let links = std::array::from_fn(|i| now[i].since(&self.start[i]));
        let account = account(seen, lost, links, self.bridged);
        if let Some(idx) = self.tbf_on.take() {
            self.router.run(|| Rtnl::open()?.delete_root_qdisc(idx))?;
        }
        Ok(account)
    }
}

/// The account of one run from the data program's counters (`seen`,
/// `lost`) and what `[veth-s, veth-rc, veth-rs, veth-c]` counted meanwhile,
/// with the ACKs `bridged` by eBPF or not.
///
/// Data frames leave the router by `veth-rc`'s transmit side. The kernel
/// dropped (`kernel_drops`) those `veth-s` could not hand to the router
/// (before the eBPF counter) and those `veth-rc` could not hand to the
/// client; neither is the emulated link, and `buffer_drops` is what is
/// left: frames `tbf` dropped. ACKs are lost to the kernel on `veth-c`'s
/// way into the router and, when bridged, on `veth-rs`'s into the server.
/// (A frame of the ACK forwarder's that `veth-s`'s backlog refuses is a
/// transmit drop on `veth-rs` too, but fails the forwarder's `sendmmsg`
/// with `ENOBUFS`, and the forwarder sends it again: not a loss.)
fn account(seen: u64, lost: u64, [s, rc, rs, c]: [DevCounters; 4], bridged: bool) -> KernelAccount {
    let data = ForwarderStats {
        frames_in: seen,
        frames_out: rc.tx_packets,
        bytes_out: rc.tx_bytes,
        lost_frames: lost,
        buffer_drops: seen
            .saturating_sub(lost)
            .saturating_sub(rc.tx_packets)
            .saturating_sub(rc.tx_dropped),
        kernel_drops: s.tx_dropped + rc.tx_dropped,
        ..Default::default()
    };
    let ack_kernel_drops = c.tx_dropped + if bridged { rs.tx_dropped } else { 0 };
    let reverse = bridged.then(|| ForwarderStats {
        frames_in: rs.tx_packets + rs.tx_dropped,
        frames_out: rs.tx_packets,
        bytes_out: rs.tx_bytes,
        kernel_drops: ack_kernel_drops,
        ..Default::default()
    });
    KernelAccount {
        data,
        reverse,
        ack_kernel_drops,
    }
}

impl Drop for KernelPath {
    fn drop(&mut self) {
        // Dropping `links` detaches the programs; the tbf needs a netlink
        // request inside the router namespace (best effort: the namespace
        // and its links die with the lab anyway).
        self.links.clear();
        if let Some(idx) = self.tbf_on.take() {
            let _ = self.router.run(|| Rtnl::open()?.delete_root_qdisc(idx));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tbf_options_layout() {
        let o = tbf_options(1_000_000_000, 1_250_000, 50_000);
        // PARMS (4 + 36), BURST (4 + 4).
        assert_eq!(o.len(), 40 + 8);
        assert_eq!(u16::from_ne_bytes([o[0], o[1]]), 40);
        assert_eq!(u16::from_ne_bytes([o[2], o[3]]), TCA_TBF_PARMS);
        assert_eq!(o[5], TC_LINKLAYER_ETHERNET, "rate.linklayer");
        assert_eq!(
            u32::from_ne_bytes(o[12..16].try_into().unwrap()),
            125_000_000
        );
        assert_eq!(
            u32::from_ne_bytes(o[28..32].try_into().unwrap()),
            1_250_000,
            "limit"
        );
        assert_eq!(u16::from_ne_bytes([o[42], o[43]]), TCA_TBF_BURST);
        assert_eq!(u32::from_ne_bytes(o[44..48].try_into().unwrap()), 50_000);
        let fast = tbf_options(40_000_000_000, 1, 1);
        assert_eq!(fast.len(), 40 + 12 + 8, "RATE64 above 4 GB/s");
    }

    #[test]
    fn burst_covers_a_late_timer_and_two_frames() {
        assert_eq!(tbf_burst(1_000_000_000, 1514), 50_000);
        assert_eq!(tbf_burst(10_000_000, 1514), 3028);
    }

    #[test]
    fn account_separates_the_links_drops_from_the_kernels() {
        let dev = |tx_packets, tx_bytes, tx_dropped| DevCounters {
            tx_packets,
            tx_bytes,
            tx_dropped,
        };
        // veth-s: 3 data frames its peer's backlog refused; veth-rc: 90
        // delivered, 2 refused by the client's backlog; veth-rs: 40 ACKs
        // out, 4 refused; veth-c: 1 ACK refused.
        let (s, rc, rs, c) = (
            dev(40, 40 * 66, 3),
            dev(90, 90 * 1514, 2),
            dev(40, 40 * 66, 4),
            dev(0, 0, 1),
        );
        let a = account(100, 5, [s, rc, rs, c], false);
        let d = &a.data;
        assert_eq!((d.frames_in, d.lost_frames), (100, 5));
        assert_eq!((d.frames_out, d.bytes_out), (90, 90 * 1514));
        // The tbf dropped 100 - 5 - 90 - 2.
        assert_eq!((d.buffer_drops, d.kernel_drops), (3, 3 + 2));
        // The forwarder resends what veth-rs could not hand on.
        assert_eq!(a.ack_kernel_drops, 1);
        assert!(a.reverse.is_none(), "the forwarder accounts for the ACKs");
        // Bridged: the program's redirect cannot resend.
        let a = account(100, 5, [s, rc, rs, c], true);
        let r = a.reverse.expect("bridged");
        assert_eq!((r.frames_in, r.frames_out, r.bytes_out), (44, 40, 40 * 66));
        assert_eq!((r.kernel_drops, a.ack_kernel_drops), (1 + 4, 1 + 4));
    }

    #[test]
    fn proc_net_dev_fields() {
        let text = "Inter-|   Receive                                                |  Transmit\n \
            face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n    \
            lo:       0       0    0    0    0     0          0         0        0       0    0    0    0     0       0          0\n\
            veth-rc: 100 2 0 0 0 0 0 0 3000 4 0 7 0 0 0 0\n";
        assert_eq!(
            parse_dev(text, "veth-rc"),
            Some(DevCounters {
                tx_bytes: 3000,
                tx_packets: 4,
                tx_dropped: 7
            })
        );
        assert_eq!(parse_dev(text, "veth-rs"), None);
    }
}
