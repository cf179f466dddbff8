//! The kernel half of the split emulator: two tiny eBPF programs attached
//! with tcx (Linux 6.6+) in the router namespace.
//!
//! ```text
//!  data  (veth-rs ingress):  seen += 1
//!                            if prandom_u32() < loss·2³²: lost += 1, DROP
//!                            else REDIRECT to veth-rc egress; with a tbf there (--rate):
//!                            CLONE to it and DROP the original (see `clone_to`)
//!  bridge (veth-rc ingress): REDIRECT to veth-rs egress  (only when the ACK path has no delay)
//! ```
//!
//! Owns the hand-assembled bytecode (a dozen instructions each, so no BPF
//! toolchain or loader crate is needed), loading it with `bpf(BPF_PROG_LOAD)`,
//! the two-counter array map the data program updates, and the tcx links.
//! A link is a file descriptor: dropping it detaches the program, so nothing
//! outlives the emulator even if the namespace were to. Must only attach to
//! links of the router namespace (callers run it on a thread inside it).
//!
//! Loss is decided per frame by the kernel's per-CPU PRNG, so unlike the
//! userspace emulator it is not reproducible from `--seed`; the topology
//! turns offloads off, so a frame is one MTU-sized packet.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

// bpf(2) commands and types (include/uapi/linux/bpf.h).
const BPF_MAP_CREATE: libc::c_long = 0;
const BPF_MAP_LOOKUP_ELEM: libc::c_long = 1;
const BPF_PROG_LOAD: libc::c_long = 5;
const BPF_PROG_GET_FD_BY_ID: libc::c_long = 13;
const BPF_LINK_CREATE: libc::c_long = 28;
const BPF_MAP_TYPE_ARRAY: u32 = 2;
const BPF_PROG_TYPE_SCHED_CLS: u32 = 3;
const BPF_TCX_INGRESS: u32 = 46;

// Helper function ids (`enum bpf_func_id` order, include/uapi/linux/bpf.h).
const FN_MAP_LOOKUP_ELEM: i32 = 1;
const FN_GET_PRANDOM_U32: i32 = 7;
const FN_CLONE_REDIRECT: i32 = 13;
const FN_REDIRECT: i32 = 23;

/// tcx verdict: drop the frame (`TC_ACT_SHOT`).
const TCX_DROP: i32 = 2;

/// Index of "frames the data program saw" in the counter map.
const SEEN: u32 = 0;
/// Index of "frames the data program dropped" in the counter map.
const LOST: u32 = 1;

/// One `struct bpf_insn`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C)]
pub struct Insn {
    code: u8,
    regs: u8,
    off: i16,
    imm: i32,
}

const fn insn(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> Insn {
    Insn {
        code,
        regs: dst | (src << 4),
        off,
        imm,
    }
}

// Opcodes used below (class | op | source).
const MOV64_IMM: u8 = 0x07 | 0xb0; // BPF_ALU64 | BPF_MOV | BPF_K
const MOV64_REG: u8 = 0x07 | 0xb0 | 0x08; // BPF_ALU64 | BPF_MOV | BPF_X
const ADD64_IMM: u8 = 0x07; // BPF_ALU64 | BPF_ADD | BPF_K
const LD_IMM64: u8 = 0x18; // BPF_LD | BPF_DW | BPF_IMM (two slots)
const ST_W_IMM: u8 = 0x62; // BPF_ST | BPF_MEM | BPF_W
const ATOMIC_ADD_DW: u8 = 0xdb; // BPF_STX | BPF_ATOMIC | BPF_DW, imm = BPF_ADD
const JEQ_IMM: u8 = 0x15; // BPF_JMP | BPF_JEQ | BPF_K
const JLT_REG: u8 = 0xad; // BPF_JMP | BPF_JLT | BPF_X (unsigned, 64 bit)
const CALL: u8 = 0x85;
const EXIT: u8 = 0x95;
/// `src_reg` of an `LD_IMM64` whose immediate is a map file descriptor.
const PSEUDO_MAP_FD: u8 = 1;

fn ld_imm64(dst: u8, src: u8, value: u64) -> [Insn; 2] {
    [
        insn(LD_IMM64, dst, src, 0, value as u32 as i32),
        insn(0, 0, 0, 0, (value >> 32) as u32 as i32),
    ]
}

/// `counters[index] += 1` (r1–r5 and r0 clobbered).
fn count(map_fd: i32, index: u32) -> Vec<Insn> {
    let mut p = Vec::new();
    p.push(insn(ST_W_IMM, 10, 0, -4, index as i32)); // *(u32 *)(fp - 4) = index
    p.extend(ld_imm64(1, PSEUDO_MAP_FD, map_fd as u32 as u64));
    p.push(insn(MOV64_REG, 2, 10, 0, 0));
    p.push(insn(ADD64_IMM, 2, 0, 0, -4)); // r2 = &key
    p.push(insn(CALL, 0, 0, 0, FN_MAP_LOOKUP_ELEM));
    p.push(insn(JEQ_IMM, 0, 0, 2, 0)); // no element (cannot happen): skip
    p.push(insn(MOV64_IMM, 1, 0, 0, 1));
    p.push(insn(ATOMIC_ADD_DW, 0, 1, 0, 0)); // lock *(u64 *)(r0 + 0) += r1
    p
}

/// `return bpf_redirect(ifindex, 0)` — to the egress of `ifindex`.
///
/// Why not `bpf_redirect_peer` (straight into the far namespace, skipping
/// the peer's receive backlog): tried and measured. Without a delay it was
/// faster (no impairment 4.5–5.3 → 4.9–7.0 Gbit/s; BBR at 2 % loss
/// 2.4–2.95 → 3.0–3.5), but at 10 ms the far end's receive work then runs
/// inside the server link's backlog pass, and that backlog overflowed ten
/// times as often (BBR, no loss: 1 466 → 20 762 frames in three runs, every
/// run spoiled). And the frames are addressed to the far end's MAC, so the
/// router's link marks them `PACKET_OTHERHOST`; only Linux 6.15 (commit
/// c43272299488, backported to stable kernels in May 2025) resets that in
/// the hand-off, so on older tcx kernels the far end would drop them all.
fn redirect(ifindex: u32) -> Vec<Insn> {
    vec![
        insn(MOV64_IMM, 1, 0, 0, ifindex as i32),
        insn(MOV64_IMM, 2, 0, 0, 0),
        insn(CALL, 0, 0, 0, FN_REDIRECT),
        insn(EXIT, 0, 0, 0, 0),
    ]
}

/// `bpf_clone_redirect(ctx, ifindex, 0)` (ctx saved in r6), then drop
/// the original.
///
/// Why a clone: an skb keeps its sending socket across veths and a tcx
/// redirect (`skb_scrub_packet` stopped orphaning it in commit 9c4c325252c5,
/// "skbuff: preserve sock reference when scrubbing the skb", 2019), so a
/// frame waiting in the router's `tbf` would still count against the
/// server's socket, and TCP Small Queues would hold the "remote" bottleneck
/// queue to about 1 ms of data. A clone has no owner: the original is freed
/// here, as a real router's queue would be invisible to the sender.
fn clone_to(ifindex: u32) -> Vec<Insn> {
    vec![
        insn(MOV64_REG, 1, 6, 0, 0),
        insn(MOV64_IMM, 2, 0, 0, ifindex as i32),
        insn(MOV64_IMM, 3, 0, 0, 0),
        insn(CALL, 0, 0, 0, FN_CLONE_REDIRECT),
        insn(MOV64_IMM, 0, 0, 0, TCX_DROP),
        insn(EXIT, 0, 0, 0, 0),
    ]
}

/// The loss threshold for probability `loss`: a frame is dropped when a
/// uniform `u32` is below it (so `1.0` drops all, `0.0` none).
pub fn loss_threshold(loss: f64) -> u64 {
    (loss.clamp(0.0, 1.0) * 4_294_967_296.0).round() as u64
}

/// The data program: count, drop with probability `threshold / 2³²`, else
/// forward to the egress of `to_ifindex`: as an unowned clone when
/// `queued` (a `tbf` there holds frames; see `clone_to`), else the frame
/// itself (it crosses without waiting, as on a plain veth, and a clone
/// would cost ~15% of the no-impairment throughput on 2 cores).
pub fn data_program(map_fd: i32, threshold: u64, to_ifindex: u32, queued: bool) -> Vec<Insn> {
    let mut p = vec![insn(MOV64_REG, 6, 1, 0, 0)]; // r6 = ctx (callee-saved)
    p.extend(count(map_fd, SEEN));
    let forward = if queued {
        clone_to(to_ifindex)
    } else {
        redirect(to_ifindex)
    };
    if threshold > 0 {
        let drop = {
            let mut d = count(map_fd, LOST);
            d.push(insn(MOV64_IMM, 0, 0, 0, TCX_DROP));
            d.push(insn(EXIT, 0, 0, 0, 0));
            d
        };
        p.push(insn(CALL, 0, 0, 0, FN_GET_PRANDOM_U32));
        p.extend(ld_imm64(1, 0, threshold));
        p.push(insn(JLT_REG, 0, 1, forward.len() as i16, 0));
        p.extend(forward);
        p.extend(drop);
    } else {
        p.extend(forward);
    }
    p
}

/// The bridge program: redirect every frame to the egress of `to_ifindex`.
pub fn bridge_program(to_ifindex: u32) -> Vec<Insn> {
    redirect(to_ifindex)
}

fn sys_bpf(cmd: libc::c_long, attr: &mut [u64; 20]) -> io::Result<i32> {
    // SAFETY: `attr` is a zero-padded `union bpf_attr` of 160 bytes that the
    // kernel reads (and for lookups writes through the pointers it holds).
    let rc = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            cmd,
            attr.as_mut_ptr(),
            std::mem::size_of_val(attr),
        )
    };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc as i32)
    }
}

fn owned(fd: i32) -> OwnedFd {
    // SAFETY: `fd` was just returned by bpf(2) and is owned by nobody else.
    unsafe { OwnedFd::from_raw_fd(fd) }
}

/// An array map of two `u64` counters (`seen`, `lost`).
pub struct Counters {
    fd: OwnedFd,
}

impl Counters {
    /// Creates the map.
    pub fn create() -> io::Result<Counters> {
        let mut attr = [0u64; 20];
        // map_type, key_size, value_size, max_entries
        attr[0] = BPF_MAP_TYPE_ARRAY as u64 | (4u64 << 32);
        attr[1] = 8 | (2u64 << 32);
        Ok(Counters {
            fd: owned(sys_bpf(BPF_MAP_CREATE, &mut attr)?),
        })
    }

    /// The map's file descriptor (for [`data_program`]).
    pub fn raw_fd(&self) -> i32 {
        self.fd.as_raw_fd()
    }

    fn get(&self, index: u32) -> io::Result<u64> {
        let key = index;
        let mut value = 0u64;
        let mut attr = [0u64; 20];
        // map_fd, (pad), key pointer, value pointer
        attr[0] = self.fd.as_raw_fd() as u32 as u64;
        attr[1] = &key as *const u32 as u64;
        attr[2] = &mut value as *mut u64 as u64;
        sys_bpf(BPF_MAP_LOOKUP_ELEM, &mut attr)?;
        Ok(value)
    }

    /// Frames the data program saw and dropped so far.
    pub fn read(&self) -> io::Result<(u64, u64)> {
        Ok((self.get(SEEN)?, self.get(LOST)?))
    }
}

/// Loads `insns` as a tc (tcx) program named `name`. The verifier's log is
/// only asked for (by loading again) when the kernel refuses the program.
pub fn load(name: &str, insns: &[Insn]) -> io::Result<OwnedFd> {
    match load_with_log(name, insns, &mut []) {
        Ok(fd) => Ok(fd),
        Err(e) => {
            let mut log = vec![0u8; 16 * 1024];
            let _ = load_with_log(name, insns, &mut log);
            let end = log.iter().position(|&b| b == 0).unwrap_or(0);
            let text = String::from_utf8_lossy(&log[..end]);
            let last = text.lines().rev().take(3).collect::<Vec<_>>().join(" / ");
            Err(io::Error::new(
                e.kind(),
                format!("load eBPF program {name}: {e}; verifier: {last}"),
            ))
        }
    }
}

fn load_with_log(name: &str, insns: &[Insn], log: &mut [u8]) -> io::Result<OwnedFd> {
    let license = c"GPL";
    let mut attr = [0u64; 20];
    attr[0] = BPF_PROG_TYPE_SCHED_CLS as u64 | ((insns.len() as u64) << 32);
    attr[1] = insns.as_ptr() as u64;
    attr[2] = license.as_ptr() as u64;
    if !log.is_empty() {
        attr[3] = 1 | ((log.len() as u64) << 32); // log_level 1, log_size
        attr[4] = log.as_mut_ptr() as u64;
    }
    // attr[5]: kern_version, prog_flags; attr[6..8]: prog_name[16]
    let mut prog_name = [0u8; 16];
    for (d, s) in prog_name.iter_mut().zip(name.bytes().take(15)) {
        *d = s;
    }
    attr[6] = u64::from_ne_bytes(prog_name[..8].try_into().expect("8 bytes"));
    attr[7] = u64::from_ne_bytes(prog_name[8..].try_into().expect("8 bytes"));
    sys_bpf(BPF_PROG_LOAD, &mut attr).map(owned)
}

/// Attaches `prog` to the ingress of `ifindex` (in the calling thread's
/// namespace) with tcx; the program stays attached while the returned link
/// descriptor is open.
pub fn attach_ingress(prog: &OwnedFd, ifindex: u32) -> io::Result<OwnedFd> {
    let mut attr = [0u64; 20];
    // prog_fd, target_ifindex, attach_type, flags
    attr[0] = prog.as_raw_fd() as u32 as u64 | ((ifindex as u64) << 32);
    attr[1] = BPF_TCX_INGRESS as u64;
    Ok(owned(sys_bpf(BPF_LINK_CREATE, &mut attr)?))
}

/// Ids of the eBPF programs process `pid` holds through a program or link
/// descriptor (`prog_id:` in `/proc/PID/fdinfo`), for leak checks that look
/// only at what one lab loaded: the split emulator holds its programs'
/// descriptors for as long as they are attached. Needs root for another
/// user's process.
pub fn programs_held_by(pid: u32) -> io::Result<Vec<u32>> {
    let mut ids = Vec::new();
    for fd in std::fs::read_dir(format!("/proc/{pid}/fdinfo"))? {
        // A descriptor closed since the listing has no fdinfo any more.
        let Ok(info) = std::fs::read_to_string(fd?.path()) else {
            continue;
        };
        let id = info
            .lines()
            .find_map(|l| l.strip_prefix("prog_id:"))
            .and_then(|v| v.trim().parse().ok());
        if let Some(id) = id.filter(|i| !ids.contains(i)) {
            ids.push(id);
        }
    }
    Ok(ids)
}

/// Whether the eBPF program `id` is still loaded (ids are not reused until
/// the 31-bit counter wraps). Needs root.
pub fn program_loaded(id: u32) -> io::Result<bool> {
    let mut attr = [0u64; 20];
    attr[0] = id as u64; // prog_id
    match sys_bpf(BPF_PROG_GET_FD_BY_ID, &mut attr) {
        Ok(fd) => {
            drop(owned(fd));
            Ok(true)
        }
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(false),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds_cover_the_whole_range() {
        assert_eq!(loss_threshold(0.0), 0);
        assert_eq!(loss_threshold(1.0), 1 << 32, "1.0 drops every u32");
        assert_eq!(loss_threshold(0.5), 1 << 31);
        assert_eq!(loss_threshold(0.02), 85_899_346);
        assert_eq!(loss_threshold(-1.0), 0);
    }

    #[test]
    fn jump_skips_exactly_the_forward_block() {
        let p = data_program(7, loss_threshold(0.02), 3, true);
        let jlt = p.iter().position(|i| i.code == JLT_REG).expect("a JLT");
        let target = jlt + 1 + p[jlt].off as usize;
        // The forward block is the six instructions after the jump and ends
        // in EXIT; the target is the start of the drop block (a counter
        // update that stores its key first).
        assert_eq!(p[target - 1].code, EXIT);
        assert_eq!(target - jlt - 1, 6);
        assert_eq!(p[jlt + 1].regs, 1 | (6 << 4), "r1 = ctx from r6");
        assert_eq!(p[jlt + 4].imm, FN_CLONE_REDIRECT);
        assert_eq!(p[target].code, ST_W_IMM);
        assert_eq!(p[target].imm, LOST as i32);
        let last = p.len() - 2;
        assert_eq!((p[last].code, p[last].imm), (MOV64_IMM, TCX_DROP));
    }

    #[test]
    fn lossless_program_never_calls_the_prng() {
        let p = data_program(7, 0, 3, true);
        assert!(
            !p.iter()
                .any(|i| i.code == CALL && i.imm == FN_GET_PRANDOM_U32)
        );
        assert!(
            p.iter()
                .any(|i| i.code == CALL && i.imm == FN_CLONE_REDIRECT)
        );
        assert_eq!(p[0], insn(MOV64_REG, 6, 1, 0, 0), "ctx saved first");
        assert_eq!(bridge_program(3)[2].imm, FN_REDIRECT);
        let plain = data_program(7, 0, 3, false);
        assert!(plain.iter().any(|i| i.code == CALL && i.imm == FN_REDIRECT));
        assert!(
            !plain
                .iter()
                .any(|i| i.imm == FN_CLONE_REDIRECT && i.code == CALL)
        );
        let q = data_program(7, loss_threshold(0.01), 3, true);
        assert!(
            q.iter()
                .any(|i| i.code == CALL && i.imm == FN_GET_PRANDOM_U32)
        );
    }

    #[test]
    fn map_fd_is_a_pseudo_immediate() {
        let p = data_program(42, 0, 3, false);
        let ld = p.iter().find(|i| i.code == LD_IMM64).expect("ld_imm64");
        assert_eq!((ld.regs >> 4, ld.imm), (PSEUDO_MAP_FD, 42));
    }
}
