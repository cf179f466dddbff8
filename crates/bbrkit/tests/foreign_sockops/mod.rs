//! A foreign sock_ops program for root tests: a few raw instructions that
//! do what bpftune's `tcp_conn_tuner` or any other program choosing the
//! algorithm does — `bpf_setsockopt(SOL_TCP, TCP_CONGESTION, NAME)` when a
//! connection is established (active or passive) — loaded with
//! `BPF_PROG_LOAD` (no object file, no clang) and attached to a cgroup
//! with a BPF link (detached when the value is dropped) or, legacy, with
//! `BPF_PROG_ATTACH` and no flags (an exclusive attachment, detached on
//! drop too).
#![allow(dead_code)]

use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};

/// `BPF_SOCK_OPS_ACTIVE_ESTABLISHED_CB`, `..._PASSIVE_...` (uapi bpf.h).
const ACTIVE_ESTABLISHED: i32 = 4;
const PASSIVE_ESTABLISHED: i32 = 5;
/// `SOL_TCP`, `TCP_CONGESTION` (uapi tcp.h).
const SOL_TCP: i32 = 6;
const TCP_CONGESTION: i32 = 13;
/// `TCP_CA_NAME_MAX` (include/net/tcp.h): the name buffer on the stack.
const NAME_MAX: usize = 16;

/// One `struct bpf_insn`: opcode, dst (low nibble) and src (high nibble)
/// registers, offset, immediate.
#[repr(C)]
#[derive(Clone, Copy)]
struct Insn {
    code: u8,
    regs: u8,
    off: i16,
    imm: i32,
}

fn insn(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> Insn {
    Insn {
        code,
        regs: (src << 4) | dst,
        off,
        imm,
    }
}

/// The program: `if (op == ACTIVE || op == PASSIVE) bpf_setsockopt(ctx,
/// SOL_TCP, TCP_CONGESTION, name, 16); return 1;`.
fn program(cc: &str) -> Vec<Insn> {
    assert!(cc.len() < NAME_MAX);
    let mut p = vec![
        insn(0xbf, 6, 1, 0, 0),                   // r6 = r1 (ctx)
        insn(0x61, 2, 1, 0, 0),                   // r2 = ctx->op (u32 at 0)
        insn(0x15, 2, 0, 1, ACTIVE_ESTABLISHED),  // if r2 == 4 goto +1
        insn(0x55, 2, 0, 0, PASSIVE_ESTABLISHED), // if r2 != 5 goto exit (patched)
        insn(0x7a, 10, 0, -16, 0),                // *(u64 *)(r10 - 16) = 0
        insn(0x7a, 10, 0, -8, 0),                 // *(u64 *)(r10 - 8) = 0
    ];
    for (i, b) in cc.bytes().enumerate() {
        p.push(insn(0x72, 10, 0, -16 + i as i16, i32::from(b))); // *(u8 *)
    }
    p.extend([
        insn(0xbf, 1, 6, 0, 0),               // r1 = ctx
        insn(0xb7, 2, 0, 0, SOL_TCP),         // r2 = SOL_TCP
        insn(0xb7, 3, 0, 0, TCP_CONGESTION),  // r3 = TCP_CONGESTION
        insn(0xbf, 4, 10, 0, 0),              // r4 = r10
        insn(0x07, 4, 0, 0, -16),             // r4 += -16
        insn(0xb7, 5, 0, 0, NAME_MAX as i32), // r5 = 16
        insn(0x85, 0, 0, 0, libbpf_sys::BPF_FUNC_setsockopt as i32),
    ]);
    let exit = p.len();
    p[3].off = (exit - 4) as i16;
    p.extend([insn(0xb7, 0, 0, 0, 1), insn(0x95, 0, 0, 0, 0)]); // return 1
    p
}

/// A loaded foreign program attached to a cgroup; detached on drop.
pub struct Foreign {
    prog: OwnedFd,
    link: Option<OwnedFd>,
    cgroup: PathBuf,
    /// Its name (`foreign_<cc>`).
    pub name: String,
}

impl Foreign {
    fn load(cc: &str) -> (OwnedFd, String) {
        let insns = program(cc);
        let name = format!("foreign_{cc}");
        let cname = CString::new(name.clone()).unwrap();
        let license = CString::new("GPL").unwrap();
        // SAFETY: the name and license are NUL-terminated strings that
        // outlive the call; `insns` holds `len` instructions laid out as
        // `struct bpf_insn` (8 bytes, repr(C)); NULL options are allowed.
        let fd = unsafe {
            libbpf_sys::bpf_prog_load(
                libbpf_sys::BPF_PROG_TYPE_SOCK_OPS,
                cname.as_ptr(),
                license.as_ptr(),
                insns.as_ptr().cast(),
                insns.len() as _,
                std::ptr::null_mut(),
            )
        };
        assert!(
            fd >= 0,
            "load {name}: {}",
            std::io::Error::from_raw_os_error(-fd)
        );
        // SAFETY: a new fd that nothing else owns.
        (unsafe { OwnedFd::from_raw_fd(fd) }, name)
    }

    /// Loads a program setting `cc` and attaches it to `cgroup` with a link
    /// (after the programs already attached there).
    pub fn attach(cgroup: &Path, cc: &str) -> Foreign {
        let (prog, name) = Foreign::load(cc);
        let dir = std::fs::File::open(cgroup).unwrap();
        // SAFETY: both fds are open; NULL options are allowed.
        let fd = unsafe {
            libbpf_sys::bpf_link_create(
                prog.as_raw_fd(),
                dir.as_raw_fd(),
                libbpf_sys::BPF_CGROUP_SOCK_OPS,
                std::ptr::null(),
            )
        };
        assert!(
            fd >= 0,
            "link {name}: {}",
            std::io::Error::from_raw_os_error(-fd)
        );
        Foreign {
            prog,
            // SAFETY: a new fd that nothing else owns.
            link: Some(unsafe { OwnedFd::from_raw_fd(fd) }),
            cgroup: cgroup.to_path_buf(),
            name,
        }
    }

    /// Loads a program setting `cc` and attaches it to `cgroup` the legacy
    /// way, exclusively (`BPF_PROG_ATTACH`, no flags): no other program can
    /// be attached to that cgroup while it is.
    pub fn attach_exclusive(cgroup: &Path, cc: &str) -> Foreign {
        let (prog, name) = Foreign::load(cc);
        let dir = std::fs::File::open(cgroup).unwrap();
        // SAFETY: both fds are open.
        let rc = unsafe {
            libbpf_sys::bpf_prog_attach(
                prog.as_raw_fd(),
                dir.as_raw_fd(),
                libbpf_sys::BPF_CGROUP_SOCK_OPS,
                0,
            )
        };
        assert!(
            rc == 0,
            "attach {name}: {}",
            std::io::Error::from_raw_os_error(-rc)
        );
        Foreign {
            prog,
            link: None,
            cgroup: cgroup.to_path_buf(),
            name,
        }
    }
}

impl Drop for Foreign {
    fn drop(&mut self) {
        if self.link.take().is_none()
            && let Ok(dir) = std::fs::File::open(&self.cgroup)
        {
            // SAFETY: both fds are open.
            unsafe {
                libbpf_sys::bpf_prog_detach2(
                    self.prog.as_raw_fd(),
                    dir.as_raw_fd(),
                    libbpf_sys::BPF_CGROUP_SOCK_OPS,
                );
            }
        }
    }
}
