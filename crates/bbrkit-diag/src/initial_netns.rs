//! Whether this is the initial network namespace (`init_net`): the facts
//! read once from procfs ([`read`]) and a pure judgement over them
//! ([`judge`]), so each kernel's numbers are a fixture.
//!
//! The test that holds on every kernel and in containers: a kernel thread
//! always lives in `init_net`, and kthreadd is PID 2 in the initial PID
//! namespace; when this PID namespace shows it (its `/proc/2/stat` flags
//! carry `PF_KTHREAD`), this thread is in `init_net` exactly when its
//! namespace inode is kthreadd's. PID 1 is no witness (in a container it
//! is the container's init). A fixed inode for `init_net`
//! ([`INIT_NET_INODE`]) exists only on recent kernels — 5.10, 6.1 and 6.12
//! give `init_net` an ordinary dynamic inode (`net:[4026531840]`, the first
//! one allocated) — so it only confirms, never refutes. Must never enter or
//! change a namespace.

use std::path::Path;

use crate::netns::{INIT_NET_INODE, inode_of, link_text};

/// kthreadd's PID in the initial PID namespace (the kernel's second task,
/// `kernel_init` being the first).
pub const KTHREADD_PID: u32 = 2;

/// `PF_KTHREAD` in a task's flags, field 9 of `/proc/PID/stat`
/// (include/linux/sched.h): the task is a kernel thread.
const PF_KTHREAD: u64 = 0x0020_0000;

/// A namespace inode, or why it could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Inode {
    /// The inode `stat(2)` gave.
    Read(u64),
    /// The OS error (reading another task's link needs ptrace access to it).
    Unreadable(String),
}

/// What this PID namespace shows of kthreadd.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KernelThread {
    /// PID 2 is a kernel thread; its network namespace inode.
    Seen(Inode),
    /// PID 2 is absent or a user process: a non-initial PID namespace.
    NotVisible(String),
}

/// The facts, read once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Facts {
    /// This thread's namespace inode.
    pub own: Inode,
    /// kthreadd, as this PID namespace shows it.
    pub kernel_thread: KernelThread,
}

/// The answer: `Some(true)` initial, `Some(false)` not, `None` unknown,
/// with the evidence either way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// Whether this is `init_net`.
    pub initial: Option<bool>,
    /// Why, with the numbers.
    pub evidence: String,
}

/// Reads the facts from procfs.
pub fn read() -> Facts {
    let own = match crate::netns::current() {
        Ok(i) => Inode::Read(i),
        Err(e) => Inode::Unreadable(crate::error_chain(&e)),
    };
    Facts {
        own,
        kernel_thread: read_kernel_thread(Path::new("/proc")),
    }
}

/// kthreadd as `proc` (a procfs mount) shows it.
fn read_kernel_thread(proc: &Path) -> KernelThread {
    let pid = proc.join(KTHREADD_PID.to_string());
    let stat = match std::fs::read_to_string(pid.join("stat")) {
        Ok(s) => s,
        Err(e) => {
            return KernelThread::NotVisible(format!("no PID {KTHREADD_PID} here ({e})"));
        }
    };
    match stat_flags(&stat) {
        Some(f) if f & PF_KTHREAD != 0 => {}
        _ => {
            return KernelThread::NotVisible(format!(
                "PID {KTHREADD_PID} is a user process, not kthreadd"
            ));
        }
    }
    KernelThread::Seen(match inode_of(&pid.join("ns/net")) {
        Ok(i) => Inode::Read(i),
        Err(e) => Inode::Unreadable(crate::error_chain(&e)),
    })
}

/// Field 9 (`flags`) of a `/proc/PID/stat` line; the command name (field
/// 2, in parentheses) may hold spaces, so fields count from its last `)`.
fn stat_flags(stat: &str) -> Option<u64> {
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(6)?.parse().ok()
}

/// Decides from the facts.
pub fn judge(f: &Facts) -> Verdict {
    let verdict = |initial, evidence: String| Verdict { initial, evidence };
    let own = match &f.own {
        Inode::Read(i) => *i,
        Inode::Unreadable(e) => return verdict(None, format!("own namespace unreadable: {e}")),
    };
    let me = link_text(own);
    match &f.kernel_thread {
        KernelThread::Seen(Inode::Read(k)) if *k == own => verdict(
            Some(true),
            format!("{me} is kthreadd's (PID {KTHREADD_PID}, a kernel thread: always in init_net)"),
        ),
        KernelThread::Seen(Inode::Read(k)) => verdict(
            Some(false),
            format!(
                "{me} is not kthreadd's {} (PID {KTHREADD_PID}, a kernel thread: always in init_net)",
                link_text(*k)
            ),
        ),
        _ if own == INIT_NET_INODE => {
            verdict(Some(true), format!("{me} is init_net's fixed inode"))
        }
        KernelThread::Seen(Inode::Unreadable(e)) => verdict(
            None,
            format!("{me}; kthreadd's namespace is unreadable ({e}): run as root to compare"),
        ),
        KernelThread::NotVisible(why) => verdict(
            None,
            format!(
                "{me}; {why}: a non-initial PID namespace (container) shows no kernel thread to compare with, and the inode is not init_net's fixed one (which older kernels do not have)"
            ),
        ),
    }
}

/// [`judge`] over [`read`].
pub fn detect() -> Verdict {
    judge(&read())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first dynamic namespace inode (`PROC_DYNAMIC_FIRST`, 0xF0000000):
    /// what 5.10, 6.1 and 6.12 give `init_net`.
    const FIRST_DYNAMIC: u64 = 4_026_531_840;

    fn facts(own: u64, kernel_thread: KernelThread) -> Facts {
        Facts {
            own: Inode::Read(own),
            kernel_thread,
        }
    }

    /// 5.10 / 6.1 / 6.12: init_net has a dynamic inode, kthreadd shares it.
    #[test]
    fn dynamic_inode_shared_with_kthreadd_is_initial() {
        let v = judge(&facts(
            FIRST_DYNAMIC,
            KernelThread::Seen(Inode::Read(FIRST_DYNAMIC)),
        ));
        assert_eq!(v.initial, Some(true));
        assert_eq!(
            v.evidence,
            "net:[4026531840] is kthreadd's (PID 2, a kernel thread: always in init_net)"
        );
    }

    /// 6.18: the fixed inode, shared with kthreadd; or kthreadd unreadable
    /// (not root) and the fixed inode alone.
    #[test]
    fn fixed_inode_is_initial() {
        let seen = judge(&facts(
            INIT_NET_INODE,
            KernelThread::Seen(Inode::Read(INIT_NET_INODE)),
        ));
        assert_eq!(seen.initial, Some(true));
        let unreadable = KernelThread::Seen(Inode::Unreadable("Permission denied".into()));
        let v = judge(&facts(INIT_NET_INODE, unreadable));
        assert_eq!(v.initial, Some(true));
        assert_eq!(v.evidence, "net:[4026531833] is init_net's fixed inode");
        // In a PID namespace too (`--pid` private, `--net=host`).
        let hidden = KernelThread::NotVisible("no PID 2 here".into());
        assert_eq!(judge(&facts(INIT_NET_INODE, hidden)).initial, Some(true));
    }

    /// A container sharing the host's PID namespace (`--pid=host`): a
    /// namespace other than kthreadd's, on any kernel.
    #[test]
    fn other_inode_than_kthreadd_is_not_initial() {
        for init in [FIRST_DYNAMIC, INIT_NET_INODE] {
            let v = judge(&facts(4_026_532_999, KernelThread::Seen(Inode::Read(init))));
            assert_eq!(v.initial, Some(false), "{}", v.evidence);
            assert!(
                v.evidence
                    .starts_with("net:[4026532999] is not kthreadd's net:[")
            );
        }
    }

    /// A container with its own PID namespace on an older kernel: no kernel
    /// thread, a dynamic inode — unknown, saying why, never "container"
    /// from the inode alone.
    #[test]
    fn pid_namespace_without_kthreadd_is_unknown() {
        for why in [
            "no PID 2 here (No such file or directory (os error 2))",
            "PID 2 is a user process, not kthreadd",
        ] {
            let v = judge(&facts(FIRST_DYNAMIC, KernelThread::NotVisible(why.into())));
            assert_eq!(v.initial, None);
            assert!(
                v.evidence.starts_with(&format!(
                    "net:[4026531840]; {why}: a non-initial PID namespace"
                )),
                "{}",
                v.evidence
            );
        }
        // Not root on an older kernel: kthreadd seen, its link unreadable.
        let v = judge(&facts(
            FIRST_DYNAMIC,
            KernelThread::Seen(Inode::Unreadable("Permission denied (os error 13)".into())),
        ));
        assert_eq!(v.initial, None);
        assert_eq!(
            v.evidence,
            "net:[4026531840]; kthreadd's namespace is unreadable (Permission denied (os error 13)): run as root to compare"
        );
        let v = judge(&Facts {
            own: Inode::Unreadable("gone".into()),
            kernel_thread: KernelThread::Seen(Inode::Read(FIRST_DYNAMIC)),
        });
        assert_eq!(v.initial, None);
    }

    #[test]
    fn stat_flags_counts_after_the_command_name() {
        let kthreadd = "2 (kthreadd) S 0 0 0 0 -1 2129984 0 0 0 0";
        assert_eq!(stat_flags(kthreadd), Some(2_129_984));
        assert_ne!(stat_flags(kthreadd).unwrap() & PF_KTHREAD, 0);
        let user = "2 (a b) c) S 1 2 2 0 -1 4194560 9 0";
        assert_eq!(stat_flags(user), Some(4_194_560));
        assert_eq!(stat_flags(user).unwrap() & PF_KTHREAD, 0);
        assert_eq!(stat_flags("garbage"), None);
    }

    /// A procfs tree without PID 2 (a PID namespace) and with a user
    /// process as PID 2.
    #[test]
    fn reader_tells_a_kernel_thread_from_a_user_process() {
        let dir = tempfile::tempdir().unwrap();
        assert!(
            matches!(read_kernel_thread(dir.path()), KernelThread::NotVisible(w) if w.starts_with("no PID 2 here"))
        );
        std::fs::create_dir_all(dir.path().join("2")).unwrap();
        std::fs::write(
            dir.path().join("2/stat"),
            "2 (sh) S 1 2 2 0 -1 4194560 9 0\n",
        )
        .unwrap();
        assert_eq!(
            read_kernel_thread(dir.path()),
            KernelThread::NotVisible("PID 2 is a user process, not kthreadd".into())
        );
    }

    /// This machine: the real procfs sees kthreadd (the test runs in the
    /// initial PID namespace) and the verdict is definite when root.
    #[test]
    fn this_process() {
        let f = read();
        assert!(matches!(f.own, Inode::Read(_)), "{f:?}");
        if let KernelThread::Seen(Inode::Read(_)) = f.kernel_thread {
            assert!(judge(&f).initial.is_some());
        }
    }
}
