//! Run-time detection of what a BPF congestion control needs from this
//! kernel and process, each with its evidence or a one-line reason.
//!
//! Probes, not version numbers, wherever the kernel exposes the fact: its
//! BTF says whether `tcp_congestion_ops` can be a struct_ops, how many
//! arguments `cong_control` takes and whether struct_ops links exist. Pacing
//! writes (a verifier rule) are only visible through the kernel version.
//!
//! | feature | since | how it is detected |
//! |---|---|---|
//! | kernel BTF | 5.4 (CO-RE) | `/sys/kernel/btf/vmlinux` parses |
//! | struct_ops `tcp_congestion_ops` | 5.6 | BTF type `bpf_struct_ops_tcp_congestion_ops` |
//! | pacing writes (`sk_pacing_rate`, `sk_pacing_status`) | 6.0 | kernel version |
//! | struct_ops links (optional: else registration by map update) | 6.4 | BTF function `bpf_struct_ops_link_create` (`BPF_LINK_CREATE` of a struct_ops map) |
//! | `cong_control` with 4 arguments (`bbr3.bpf.o`, 6.10+) or 2 (`bbr3-cc2.bpf.o`, 6.0–6.9) | — | BTF: parameters of `tcp_congestion_ops.cong_control` |
//! | bpffs | — | `statfs(/sys/fs/bpf)` is `BPF_FS_MAGIC` (needed to pin only) |
//! | lockdown | — | `/sys/kernel/security/lockdown` (reported; struct_ops is allowed) |
//! | privileges | — | `CapEff` has CAP_BPF, CAP_PERFMON, CAP_NET_ADMIN (or CAP_SYS_ADMIN) |

use std::path::Path;

use libbpf_rs::btf::types::{Func, FuncProto, Ptr, Struct};
use libbpf_rs::btf::{Btf, BtfType, ReferencesType};

pub use bbrkit_vocab::bpf_features::{Feature, FeatureId, Features, Missing};

/// Kernel BTF.
pub const VMLINUX_BTF: &str = "/sys/kernel/btf/vmlinux";
/// Where bpffs is normally mounted.
pub const BPFFS: &str = "/sys/fs/bpf";
const LOCKDOWN: &str = "/sys/kernel/security/lockdown";
/// `BPF_FS_MAGIC` (include/uapi/linux/magic.h).
pub(crate) const BPF_FS_MAGIC: i64 = 0xcafe_4a11;

/// Probes this kernel and process.
pub fn detect() -> Features {
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_default();
    let btf = Btf::from_vmlinux();
    let mut features = vec![match &btf {
        Ok(_) => found(FeatureId::KernelBtf, format!("{VMLINUX_BTF} parsed")),
        Err(e) => absent(
            FeatureId::KernelBtf,
            format!("no kernel BTF ({VMLINUX_BTF}: {e})"),
        ),
    }];
    let btf = btf.ok();
    features.push(struct_ops_tcp(btf.as_ref()));
    features.push(pacing_writes(&kernel));
    features.push(struct_ops_link(btf.as_ref()));
    features.push(cong_control(btf.as_ref()));
    features.push(bpffs(Path::new(BPFFS)));
    features.push(lockdown());
    features.push(privileges(&read_cap_eff()));
    Features { kernel, features }
}

fn found(id: FeatureId, detail: String) -> Feature {
    Feature {
        id,
        present: true,
        detail,
    }
}

fn absent(id: FeatureId, detail: String) -> Feature {
    Feature {
        id,
        present: false,
        detail,
    }
}

fn no_btf(id: FeatureId) -> Feature {
    absent(id, "unknown without kernel BTF".into())
}

fn struct_ops_tcp(btf: Option<&Btf<'_>>) -> Feature {
    const TY: &str = "bpf_struct_ops_tcp_congestion_ops";
    let id = FeatureId::StructOpsTcp;
    match btf {
        None => no_btf(id),
        Some(b) if b.type_by_name::<Struct<'_>>(TY).is_some() => {
            found(id, format!("kernel BTF has struct {TY}"))
        }
        Some(_) => absent(
            id,
            format!(
                "kernel BTF has no {TY}: no BPF congestion controls (Linux < 5.6 or CONFIG_BPF_JIT off)"
            ),
        ),
    }
}

/// The kernel function behind `BPF_LINK_CREATE` for a struct_ops map
/// (kernel/bpf/bpf_struct_ops.c, added in Linux 6.4 with `BPF_F_LINK`;
/// global and called from syscall.c, so pahole always emits it). The enum
/// value `BPF_LINK_TYPE_STRUCT_OPS` is no evidence: 6.0–6.3 have it for
/// the trampoline links a map update makes internally, yet refuse a
/// struct_ops link from user space.
pub const STRUCT_OPS_LINK_CREATE: &str = "bpf_struct_ops_link_create";

fn struct_ops_link(btf: Option<&Btf<'_>>) -> Feature {
    struct_ops_link_from(btf.map(has_link_create))
}

fn has_link_create(btf: &Btf<'_>) -> bool {
    btf.type_by_name::<Func<'_>>(STRUCT_OPS_LINK_CREATE)
        .is_some()
}

/// What the running kernel's BTF says about registering a struct_ops
/// congestion control, read once per process: the loader picks the object
/// and the registration from it (never from the kernel version).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Registering {
    /// Parameters of `tcp_congestion_ops.cong_control` (`None`: no kernel
    /// BTF or no such member).
    pub cong_control_args: Option<usize>,
    /// struct_ops links exist ([`STRUCT_OPS_LINK_CREATE`]); without them a
    /// struct_ops map is registered by a map update.
    pub links: bool,
}

/// [`Registering`] of this kernel (kernel BTF parsed on the first call).
pub fn registering() -> Registering {
    static ONCE: std::sync::OnceLock<Registering> = std::sync::OnceLock::new();
    *ONCE.get_or_init(|| match Btf::from_vmlinux() {
        Ok(b) => Registering {
            cong_control_args: cong_control_params(&b),
            links: has_link_create(&b),
        },
        Err(_) => Registering {
            cong_control_args: None,
            links: false,
        },
    })
}

/// The struct_ops link verdict from whether kernel BTF has
/// [`STRUCT_OPS_LINK_CREATE`] (`None`: no kernel BTF).
fn struct_ops_link_from(link_create: Option<bool>) -> Feature {
    let id = FeatureId::StructOpsLink;
    match link_create {
        None => no_btf(id),
        Some(true) => found(
            id,
            format!("kernel BTF has function {STRUCT_OPS_LINK_CREATE}"),
        ),
        Some(false) => absent(
            id,
            format!(
                "kernel BTF has no function {STRUCT_OPS_LINK_CREATE}: no struct_ops links (Linux < 6.4); bbrkit registers by map update and pins the map"
            ),
        ),
    }
}

fn cong_control(btf: Option<&Btf<'_>>) -> Feature {
    cong_control_from(btf.map(cong_control_params))
}

/// The `cong_control` verdict from its parameter count in kernel BTF
/// (`None`: no kernel BTF; `Some(None)`: no such member): 4 takes
/// `bbr3.bpf.o`, 2 `bbr3-cc2.bpf.o` (`crate::bbr3::Variant`). Names no
/// algorithm: the refusal that quotes it names the one asked for.
fn cong_control_from(params: Option<Option<usize>>) -> Feature {
    let id = FeatureId::CongControl;
    match params {
        None => no_btf(id),
        Some(Some(4)) => found(
            id,
            "tcp_congestion_ops.cong_control(sk, ack, flag, rs): the object bbr3.bpf.o".into(),
        ),
        Some(Some(2)) => found(
            id,
            "tcp_congestion_ops.cong_control(sk, rs): the object bbr3-cc2.bpf.o".into(),
        ),
        Some(Some(n)) => absent(
            id,
            format!(
                "tcp_congestion_ops.cong_control takes {n} arguments; bbrkit's objects take 4 (Linux >= 6.10) or 2 (6.0-6.9)"
            ),
        ),
        Some(None) => absent(
            id,
            "kernel BTF has no tcp_congestion_ops.cong_control".into(),
        ),
    }
}

/// Number of parameters of `tcp_congestion_ops.cong_control`.
fn cong_control_params(btf: &Btf<'_>) -> Option<usize> {
    let ops = btf.type_by_name::<Struct<'_>>("tcp_congestion_ops")?;
    let member = ops
        .iter()
        .find(|m| m.name.is_some_and(|n| n == "cong_control"))?;
    let ty: BtfType<'_> = btf.type_by_id(member.ty)?;
    let ptr = Ptr::try_from(ty.skip_mods_and_typedefs()).ok()?;
    let proto = FuncProto::try_from(ptr.referenced_type().skip_mods_and_typedefs()).ok()?;
    Some(proto.len())
}

fn pacing_writes(release: &str) -> Feature {
    let id = FeatureId::PacingWrites;
    match kernel_version(release) {
        Some(v) if v >= (6, 0) => found(id, format!("Linux {}.{} >= 6.0", v.0, v.1)),
        Some(v) => absent(
            id,
            format!(
                "Linux {}.{} < 6.0: a BPF CA may not write sk_pacing_rate",
                v.0, v.1
            ),
        ),
        None => absent(id, format!("cannot parse kernel release {release:?}")),
    }
}

/// `(major, minor)` of a release string like `6.18.44-fc-v1045`.
pub fn kernel_version(release: &str) -> Option<(u32, u32)> {
    let mut it = release.split(|c: char| !c.is_ascii_digit());
    let major = it.next()?.parse().ok()?;
    let minor = it.next()?.parse().ok()?;
    Some((major, minor))
}

fn bpffs(path: &Path) -> Feature {
    let id = FeatureId::Bpffs;
    match statfs_type(path) {
        Ok(t) if t == BPF_FS_MAGIC => found(id, format!("bpffs mounted at {}", path.display())),
        Ok(_) => absent(
            id,
            format!(
                "{} is not bpffs (mount -t bpf bpf {0}): pinning unavailable",
                path.display()
            ),
        ),
        Err(e) => absent(id, format!("{}: {e}: pinning unavailable", path.display())),
    }
}

pub(crate) fn statfs_type(path: &Path) -> std::io::Result<i64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes())?;
    // SAFETY: `c` is a valid NUL-terminated path, `buf` a zeroed statfs the
    // kernel fills; nothing is kept past the call.
    let (rc, buf) = unsafe {
        let mut buf: libc::statfs = std::mem::zeroed();
        (libc::statfs(c.as_ptr(), &mut buf), buf)
    };
    if rc == 0 {
        #[allow(clippy::unnecessary_cast)] // f_type is i64 on x86_64, not everywhere
        Ok(buf.f_type as i64)
    } else {
        Err(std::io::Error::last_os_error())
    }
}

fn lockdown() -> Feature {
    let id = FeatureId::Lockdown;
    match std::fs::read_to_string(LOCKDOWN) {
        Ok(s) => {
            let mode = lockdown_mode(&s).unwrap_or("unknown");
            found(
                id,
                format!("lockdown {mode} ({LOCKDOWN}); struct_ops is allowed in every mode"),
            )
        }
        Err(_) => absent(id, format!("no {LOCKDOWN} (lockdown LSM not built)")),
    }
}

/// The bracketed mode of `/sys/kernel/security/lockdown`.
pub fn lockdown_mode(content: &str) -> Option<&str> {
    let start = content.find('[')? + 1;
    let end = start + content[start..].find(']')?;
    Some(&content[start..end])
}

// Capability bits (include/uapi/linux/capability.h).
const CAP_NET_ADMIN: u32 = 12;
const CAP_SYS_ADMIN: u32 = 21;
const CAP_PERFMON: u32 = 38;
const CAP_BPF: u32 = 39;

fn read_cap_eff() -> String {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("CapEff:").map(|v| v.trim().to_string()))
        })
        .unwrap_or_default()
}

/// Whether `CapEff` (hex) lets the process load a struct_ops CA: loading
/// needs CAP_BPF and CAP_PERFMON (struct_ops is a tracing-class program)
/// and registering a CA needs CAP_NET_ADMIN; CAP_SYS_ADMIN stands in for
/// the first two.
fn privileges(cap_eff_hex: &str) -> Feature {
    let id = FeatureId::Privileges;
    let Ok(caps) = u64::from_str_radix(cap_eff_hex, 16) else {
        return absent(id, "cannot read CapEff from /proc/self/status".into());
    };
    let has = |c: u32| caps & (1u64 << c) != 0;
    let sys = has(CAP_SYS_ADMIN);
    let mut missing = Vec::new();
    if !has(CAP_BPF) && !sys {
        missing.push("CAP_BPF");
    }
    if !has(CAP_PERFMON) && !sys {
        missing.push("CAP_PERFMON");
    }
    if !has(CAP_NET_ADMIN) {
        missing.push("CAP_NET_ADMIN");
    }
    if missing.is_empty() {
        found(
            id,
            format!("CapEff {cap_eff_hex} allows loading and registering"),
        )
    } else {
        absent(id, format!("missing {} (run as root)", missing.join(", ")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_parse() {
        assert_eq!(kernel_version("6.18.44-fc-v1045"), Some((6, 18)));
        assert_eq!(kernel_version("5.15.0-91-generic"), Some((5, 15)));
        assert_eq!(kernel_version("6.1"), Some((6, 1)));
        assert_eq!(kernel_version("garbage"), None);
        assert!(!pacing_writes("5.15.0").present);
        assert!(pacing_writes("6.0.1").present);
    }

    #[test]
    fn lockdown_modes() {
        assert_eq!(
            lockdown_mode("[none] integrity confidentiality\n"),
            Some("none")
        );
        assert_eq!(
            lockdown_mode("none [integrity] confidentiality"),
            Some("integrity")
        );
        assert_eq!(lockdown_mode("none"), None);
    }

    #[test]
    fn privileges_from_capeff() {
        assert!(privileges("000001ffffffffff").present); // root
        let none = privileges("0000000000000000");
        assert!(!none.present);
        assert_eq!(
            none.detail,
            "missing CAP_BPF, CAP_PERFMON, CAP_NET_ADMIN (run as root)"
        );
        // CAP_NET_ADMIN + CAP_SYS_ADMIN is enough.
        assert!(privileges(&format!("{:x}", (1u64 << 12) | (1u64 << 21))).present);
        assert!(!privileges(&format!("{:x}", 1u64 << 39)).present);
    }

    /// 6.0–6.3 (Debian 12's 6.1) have `BPF_LINK_TYPE_STRUCT_OPS` but not
    /// the link-create function: absent, with the reason; 6.4+ present;
    /// no BTF unknown.
    #[test]
    fn struct_ops_links_need_the_link_create_function() {
        let linux_6_1 = struct_ops_link_from(Some(false));
        assert!(!linux_6_1.present);
        assert!(!FeatureId::StructOpsLink.required());
        assert_eq!(
            linux_6_1.detail,
            "kernel BTF has no function bpf_struct_ops_link_create: no struct_ops links (Linux < 6.4); bbrkit registers by map update and pins the map"
        );
        let linux_6_4 = struct_ops_link_from(Some(true));
        assert!(linux_6_4.present);
        assert_eq!(
            linux_6_4.detail,
            "kernel BTF has function bpf_struct_ops_link_create"
        );
        assert!(!struct_ops_link_from(None).present);
    }

    /// 2 arguments (6.0–6.9) and 4 (6.10+) each have an object; any other
    /// count is refused without naming an algorithm (the refusal names the
    /// one asked for).
    #[test]
    fn cong_control_verdicts() {
        let old = cong_control_from(Some(Some(2)));
        assert!(old.present);
        assert_eq!(
            old.detail,
            "tcp_congestion_ops.cong_control(sk, rs): the object bbr3-cc2.bpf.o"
        );
        assert!(cong_control_from(Some(Some(4))).present);
        let odd = cong_control_from(Some(Some(3)));
        assert!(!odd.present);
        assert_eq!(
            odd.detail,
            "tcp_congestion_ops.cong_control takes 3 arguments; bbrkit's objects take 4 (Linux >= 6.10) or 2 (6.0-6.9)"
        );
        assert!(!cong_control_from(Some(None)).present);
        assert!(!cong_control_from(None).present);
    }

    /// Against this machine's kernel (Linux 6.18 with BTF): every kernel
    /// feature is there, and the cong_control probe really counts params.
    #[test]
    fn this_kernel_has_everything_bbr3_needs() {
        let f = detect();
        if !Path::new(VMLINUX_BTF).exists() {
            eprintln!("skipped: no {VMLINUX_BTF}");
            return;
        }
        let v = kernel_version(&f.kernel).expect("kernel release");
        let btf = Btf::from_vmlinux().expect("vmlinux BTF");
        let params = cong_control_params(&btf).expect("cong_control in BTF");
        assert_eq!(params == 4, v >= (6, 10), "{params} params on {v:?}");
        assert_eq!(
            registering(),
            Registering {
                cong_control_args: Some(params),
                links: v >= (6, 4)
            }
        );
        for id in [FeatureId::KernelBtf, FeatureId::StructOpsTcp] {
            assert!(f.get(id).unwrap().present, "{:?}", f.get(id));
        }
        assert_eq!(
            f.get(FeatureId::StructOpsLink).unwrap().present,
            v >= (6, 4)
        );
        assert_eq!(
            btf.type_by_name::<Func<'_>>(STRUCT_OPS_LINK_CREATE)
                .is_some(),
            v >= (6, 4)
        );
        assert_eq!(f.get(FeatureId::PacingWrites).unwrap().present, v >= (6, 0));
        // A type that does not exist is reported absent, not found.
        assert!(
            btf.type_by_name::<Struct<'_>>("bpf_struct_ops_no_such_ops")
                .is_none()
        );
    }
}
