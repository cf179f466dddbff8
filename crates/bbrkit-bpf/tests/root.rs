//! Registration lifetimes against the real kernel: register and unregister,
//! SIGKILL of an unpinned registration, a pin that outlives its process, a
//! refused load. Root only; run under `flock /tmp/bbrkit-root.lock` since
//! a congestion-control name is global. Pins live in a bpffs mounted in a
//! private mount namespace of the test, never in the host's bpffs.
//!
//! The processes are `examples/register` (built by `cargo test`).

use std::io::{BufRead, BufReader};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::Duration;

use bbrkit_bpf::status::{self, Holder, Leftovers};
use bbrkit_bpf::{BpfError, Loaded, ObjectSource, bbr3, pin};

/// One test at a time inside this binary (the name `bbr3` is global).
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

fn available(name: &str) -> bool {
    bbrkit_diag::algorithms::is_available(name).unwrap()
}

fn algorithms() -> Vec<String> {
    bbr3::algorithms().expect("embedded object")
}

/// Asserts that no bbr3 program, map, link or pin is left and no name of
/// the object registered, waiting up to 5 s (the kernel frees maps and
/// links asynchronously after a process dies).
fn assert_nothing_left(before: &Leftovers) {
    let algos = algorithms();
    let names: Vec<&str> = algos.iter().map(String::as_str).collect();
    let left = status::leftovers_after(before, bbr3::PREFIX, &names, Duration::from_secs(5));
    assert!(left.is_empty(), "left behind: {left:?}");
    for a in &algos {
        assert!(!available(a), "{a} still registered");
    }
}

/// The bbr3 objects that exist before a test (say, maps still used by
/// connections of an earlier run), or `None` (skip, with a message) when
/// bbr3 is registered by someone else: tests never touch that.
fn precondition() -> Option<Leftovers> {
    if available("bbr3") {
        eprintln!("skipped: bbr3 is already registered on this host");
        return None;
    }
    Some(status::leftovers(bbr3::PREFIX, &["bbr3", "bbr2"]))
}

fn example() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let p = exe
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("examples/register");
    assert!(
        p.exists(),
        "{} missing: run through `cargo test` (it builds the examples)",
        p.display()
    );
    p
}

/// Runs `register ARGS` (in `mntns` when given) and waits for a line that
/// starts with `ready`.
fn spawn(args: &[&str], mntns: Option<&OwnedFd>, ready: &str) -> Child {
    let mut cmd = Command::new(example());
    cmd.args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    if let Some(ns) = mntns {
        let fd = ns.as_raw_fd();
        // SAFETY: runs in the forked child before exec; setns is
        // async-signal-safe and touches nothing but the child's namespace.
        unsafe {
            cmd.pre_exec(move || {
                if libc::setns(fd, libc::CLONE_NEWNS) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    let mut child = cmd.spawn().expect("spawn register");
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    loop {
        line.clear();
        assert!(
            out.read_line(&mut line).unwrap() > 0,
            "register exited before '{ready}'"
        );
        if line.starts_with(ready) {
            break;
        }
    }
    // Keep draining so the child never blocks on a full pipe.
    std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
    child
}

#[test]
#[ignore = "needs root"]
fn registers_appears_and_unregisters_leaving_nothing() {
    let _g = serial();
    let Some(before) = precondition() else {
        return;
    };
    let reg = bbr3::register(None).expect("register the embedded object");
    for a in algorithms() {
        assert!(available(&a), "{a} not in tcp_available_congestion_control");
    }
    let st = status::ca_status("bbr3");
    assert!(st.registered);
    assert!(matches!(st.holder, Some(Holder::Link { .. })), "{st:?}");
    // Maps of earlier runs may linger (their connections still live); ours
    // is registered, so it is not among them.
    let earlier = |id: &u32| before.maps.iter().any(|(m, _)| m == id);
    assert!(st.lingering.iter().all(earlier), "{st:?}");
    let left = status::leftovers(bbr3::PREFIX, &["bbr3", "bbr2"]);
    assert!(
        !left.programs.is_empty() && !left.links.is_empty(),
        "{left:?}"
    );
    drop(reg);
    assert_nothing_left(&before);
}

#[test]
#[ignore = "needs root"]
fn sigkill_of_an_unpinned_registration_leaves_nothing() {
    let _g = serial();
    let Some(before) = precondition() else {
        return;
    };
    let mut child = spawn(
        &["--embedded", "--seconds", "60"],
        None,
        "registered struct_ops bbr3",
    );
    assert!(available("bbr3"));
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    assert_nothing_left(&before);
}

/// A private mount namespace with its own bpffs at /sys/fs/bpf, held by an
/// fd (its first process, `sleep`, is gone once we hold it).
fn private_bpffs() -> OwnedFd {
    let mut cmd = Command::new("sleep");
    cmd.arg("30").stdout(Stdio::null());
    // SAFETY: runs in the forked child before exec; only raw syscalls on
    // the child's own (new) mount namespace, no allocation.
    unsafe {
        cmd.pre_exec(|| {
            let none = std::ptr::null();
            if libc::unshare(libc::CLONE_NEWNS) != 0
                || libc::mount(
                    none,
                    c"/".as_ptr(),
                    none,
                    libc::MS_REC | libc::MS_PRIVATE,
                    none.cast(),
                ) != 0
                || libc::mount(
                    c"bpf".as_ptr(),
                    c"/sys/fs/bpf".as_ptr(),
                    c"bpf".as_ptr(),
                    0,
                    none.cast(),
                ) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = cmd.spawn().expect("spawn the mount-namespace holder");
    std::thread::sleep(Duration::from_millis(100));
    let ns = std::fs::File::open(format!("/proc/{}/ns/mnt", child.id())).expect("open mnt ns");
    child.kill().unwrap();
    child.wait().unwrap();
    ns.into()
}

#[test]
#[ignore = "needs root"]
fn a_pin_outlives_its_process_and_unpin_unregisters() {
    let _g = serial();
    let Some(before) = precondition() else {
        return;
    };
    let ns = private_bpffs();
    let mut child = spawn(
        &["--embedded", "--only", "bbr3", "--pin"],
        Some(&ns),
        "pinned",
    );
    assert!(child.wait().unwrap().success());
    // The process is gone; the pin holds the registration.
    std::thread::sleep(Duration::from_millis(200));
    assert!(
        available("bbr3"),
        "the pinned registration ended with its process"
    );
    let left = status::leftovers(bbr3::PREFIX, &["bbr3"]);
    assert_eq!(left.links.len(), 1, "{left:?}");
    let mut unpin = spawn(
        &["--unpin", "bbr3"],
        Some(&ns),
        "unpinned bbr3: link removed",
    );
    assert!(unpin.wait().unwrap().success());
    drop(ns);
    assert_nothing_left(&before);
}

/// Offset and size of the first section whose name starts with `prefix`
/// in a little-endian ELF64 image.
fn elf_section(elf: &[u8], prefix: &str) -> Option<(usize, usize)> {
    let u16_at = |o: usize| u16::from_le_bytes([elf[o], elf[o + 1]]) as usize;
    let u32_at = |o: usize| u32::from_le_bytes(elf[o..o + 4].try_into().unwrap()) as usize;
    let u64_at = |o: usize| u64::from_le_bytes(elf[o..o + 8].try_into().unwrap()) as usize;
    let (shoff, shentsize, shnum, shstrndx) =
        (u64_at(0x28), u16_at(0x3a), u16_at(0x3c), u16_at(0x3e));
    let sh = |i: usize| shoff + i * shentsize;
    let strtab = u64_at(sh(shstrndx) + 0x18);
    (0..shnum).find_map(|i| {
        let name_at = strtab + u32_at(sh(i));
        let end = name_at + elf[name_at..].iter().position(|&b| b == 0)?;
        let name = std::str::from_utf8(&elf[name_at..end]).ok()?;
        let (off, size) = (u64_at(sh(i) + 0x18), u64_at(sh(i) + 0x20));
        (name.starts_with(prefix) && size >= 8).then_some((off, size))
    })
}

#[test]
#[ignore = "needs root"]
fn a_refused_load_is_a_typed_error_with_the_verifier_log_and_leaves_nothing() {
    let _g = serial();
    let Some(before) = precondition() else {
        return;
    };
    let mut elf = bbr3::object_bytes().to_vec();
    let (off, _) = elf_section(&elf, "struct_ops").expect("a struct_ops code section");
    // First instruction of the section's first program: an opcode that
    // does not exist (0xff), so the verifier refuses it.
    elf[off..off + 8].copy_from_slice(&[0xff, 0, 0, 0, 0, 0, 0, 0]);
    let err = Loaded::load(ObjectSource::Memory {
        name: "bbr3_bad",
        bytes: &elf,
    })
    .expect_err("the verifier must refuse an unknown opcode");
    match &err {
        BpfError::Refused {
            program,
            reason,
            log,
            ..
        } => {
            assert!(program.starts_with("bbr3"), "{program}");
            assert!(reason.contains("unknown opcode ff"), "{reason}");
            assert!(log.contains(reason.as_str()), "{log}");
        }
        other => panic!("expected Refused, got {other:?}"),
    }
    assert!(err.to_string().contains("verifier refused"), "{err}");
    assert_nothing_left(&before);
    assert!(pin::pinned().is_empty());
}
