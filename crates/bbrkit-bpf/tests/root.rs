//! Registration lifetimes against the real kernel: register and unregister,
//! SIGKILL of an unpinned registration, a pin that outlives its process, a
//! refused load. Root only. Pins live in a bpffs mounted in a private mount
//! namespace of the test, never in the host's bpffs.
//!
//! The tests hold while bbrkit runs elsewhere on the host (a lab with
//! `--cc bbr3`): a congestion-control name is global, so a test that needs
//! its own registration waits until nobody holds the name (a lab that
//! starts meanwhile joins the test's registration, as labs share one), and
//! each leak check looks only at the ids of the programs, maps and links
//! the test or its child created (`bbrkit_bpf::objects`).
//!
//! The processes are `examples/register` (built by `cargo test`).

#[path = "ours/mod.rs"]
mod ours;

use std::io::{BufRead, BufReader};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use bbrkit_bpf::objects::Objects;
use bbrkit_bpf::status::{self, Holder};
use bbrkit_bpf::{BpfError, Loaded, ObjectSource, Registration, bbr3, pin, share};
use ours::{Ours, assert_nothing_left};

/// One test at a time inside this binary (the name `bbr3` is global, and
/// the refused-load test counts this process's BPF descriptors).
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

/// How long a test waits for a name that someone else has registered (a
/// lab running beside the tests holds bbr3 for its run) to be free. A name
/// held longer (say, pinned by `bbrkit enable`) skips the test, with a
/// message: tests never touch another user's registration.
const FREE_WITHIN: Duration = Duration::from_secs(120);

fn available(name: &str) -> bool {
    bbrkit_diag::algorithms::is_available(name).unwrap()
}

fn algorithms() -> Vec<String> {
    bbr3::algorithms().expect("embedded object")
}

/// Registers `only` (all when `None`) from the embedded object as this
/// test's own, waiting while another user holds a name (`None`, with a
/// message, when it stays taken for [`FREE_WITHIN`]).
fn register_own(only: Option<&[&str]>) -> Option<Registration> {
    let until = Instant::now() + FREE_WITHIN;
    loop {
        match bbr3::register(only) {
            Ok(r) => return Some(r),
            Err(BpfError::Register { map, source })
                if source.kind() == libbpf_rs::ErrorKind::AlreadyExists =>
            {
                if Instant::now() >= until {
                    eprintln!("skipped: {map} stayed registered by someone else");
                    return None;
                }
            }
            Err(e) => panic!("register the embedded object: {e}"),
        }
        std::thread::sleep(Duration::from_millis(20));
    }
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

/// Runs `register ARGS` (in `mntns` when given) until it prints a line
/// that starts with `ready`; returns it with the ids of what it created
/// (its `objects` line). While another user holds a name it asks for (the
/// registrar exits before `ready`), tries again for up to [`FREE_WITHIN`];
/// `None`, with a message, after that.
fn spawn(args: &[&str], mntns: Option<&OwnedFd>, ready: &str) -> Option<(Child, Objects)> {
    let until = Instant::now() + FREE_WITHIN;
    loop {
        if let Some(started) = try_spawn(args, mntns, ready) {
            return Some(started);
        }
        let taken = algorithms().iter().any(|a| available(a));
        assert!(taken, "register {args:?} exited before '{ready}'");
        if Instant::now() >= until {
            eprintln!("skipped: bbrkit-bpf's names stayed registered by someone else");
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn try_spawn(args: &[&str], mntns: Option<&OwnedFd>, ready: &str) -> Option<(Child, Objects)> {
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
    let mut objects = None;
    loop {
        line.clear();
        if out.read_line(&mut line).unwrap() == 0 {
            child.wait().unwrap();
            return None;
        }
        if let Some(json) = line.strip_prefix("objects ") {
            objects = Some(serde_json::from_str(json).expect("the objects line"));
        }
        if line.starts_with(ready) {
            break;
        }
    }
    // Keep draining so the child never blocks on a full pipe.
    std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
    Some((child, objects.expect("an objects line before ready")))
}

#[test]
#[ignore = "needs root"]
fn registers_appears_and_unregisters_leaving_nothing() {
    let _g = serial();
    let Some(reg) = register_own(None) else {
        return;
    };
    let ours = Ours::new(Objects::of_registration(&reg));
    for a in algorithms() {
        assert!(available(&a), "{a} not in tcp_available_congestion_control");
    }
    let st = status::ca_status("bbr3");
    assert!(st.registered);
    match st.holder {
        Some(Holder::Link { link_id, .. }) => assert!(ours.objects.links.contains(&link_id)),
        _ => panic!("bbr3 is not held by our link: {st:?}"),
    }
    // Maps of earlier runs may linger (their connections still live); ours
    // is registered, so it is not among them.
    assert!(
        st.lingering.iter().all(|m| !ours.objects.maps.contains(m)),
        "{st:?}"
    );
    // One link per algorithm, programs, and all of them alive.
    let o = &ours.objects;
    assert_eq!(o.links.len(), algorithms().len(), "{o:?}");
    assert!(!o.programs.is_empty() && !o.maps.is_empty(), "{o:?}");
    assert_eq!(&o.alive(), o);
    drop(reg);
    assert_nothing_left(&ours);
}

/// The kernel counts references to a struct_ops link: a second user that
/// joins (its own fd, `BPF_LINK_GET_FD_BY_ID`) keeps the name registered
/// after the first one lets go, and the name goes with the last reference.
/// Also across processes: a joiner outlives a registrar killed by SIGKILL.
#[test]
#[ignore = "needs root"]
fn a_joined_registration_lives_until_the_last_holder_lets_go() {
    let _g = serial();
    let Some(first) = register_own(Some(&["bbr3"])) else {
        return;
    };
    let ours = Ours::new(Objects::of_registration(&first));
    let st = status::ca_status("bbr3");
    assert!(
        matches!(st.holder, Some(Holder::Link { bbrkit: true, link_id, .. }) if ours.objects.links == [link_id]),
        "bbrkit's own programs are recognised: {st:?}"
    );
    let second = share::hold(&["bbr3"]).expect("join");
    assert_eq!(second.joined.len(), 1, "{second:?}");
    assert_eq!([second.joined[0].link_id], *ours.objects.links);
    assert!(second.registration.is_none(), "{second:?}");
    drop(first);
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        available("bbr3") && ours.objects.alive().links == ours.objects.links,
        "the registrar's exit ended a joined registration"
    );
    // Connections made now still get bbr3.
    let s = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    s.set_tcp_congestion(b"bbr3")
        .expect("bbr3 usable while joined");
    drop(s);
    drop(second);
    assert_nothing_left(&ours);

    // The same across processes, with SIGKILL of the registrar.
    let Some((mut child, theirs)) = spawn(
        &["--embedded", "--only", "bbr3", "--seconds", "60"],
        None,
        "registered struct_ops bbr3",
    ) else {
        return;
    };
    let theirs = Ours::new(theirs);
    let joined = share::hold(&["bbr3"]).expect("join the child's registration");
    assert_eq!(joined.joined.len(), 1);
    assert_eq!([joined.joined[0].link_id], *theirs.objects.links);
    child.kill().unwrap();
    child.wait().unwrap();
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        available("bbr3") && theirs.objects.alive().links == theirs.objects.links,
        "SIGKILL of the registrar ended a joined registration"
    );
    drop(joined);
    assert_nothing_left(&theirs);
}

/// The embedded object passes this kernel's verifier (loaded, not
/// registered: runs even while someone else has bbr3 registered), with its
/// per-socket storage map and no other per-socket map.
#[test]
#[ignore = "needs root"]
fn the_embedded_object_loads_with_its_storage_map() {
    let _g = serial();
    let loaded = bbr3::load(None).expect("load the embedded object");
    let maps = bbrkit_bpf::telemetry::StorageMaps::of(&loaded).expect("storage map");
    assert!(!maps.is_empty());
    let kinds: Vec<_> = loaded
        .object()
        .maps()
        .map(|m| libbpf_rs::MapCore::map_type(&m))
        .collect();
    assert!(!kinds.contains(&libbpf_rs::MapType::LruHash), "{kinds:?}");
    // The verifier's work per program (docs/bpf.md quotes it).
    let ids: Vec<u32> = loaded
        .object()
        .progs()
        .filter_map(|p| libbpf_rs::Program::id_from_fd(std::os::fd::AsFd::as_fd(&p)).ok())
        .collect();
    for p in libbpf_rs::query::ProgInfoIter::default().filter(|p| ids.contains(&p.id)) {
        println!(
            "{:16} {:7} instructions verified",
            p.name.to_string_lossy(),
            p.verified_insns
        );
    }
}

/// lo up in the calling thread's (new) network namespace.
fn lo_up() {
    // SAFETY: ioctls on a fresh datagram socket with an ifreq naming "lo".
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_DGRAM, 0);
        let mut ifr: libc::ifreq = std::mem::zeroed();
        for (d, s) in ifr.ifr_name.iter_mut().zip(b"lo\0") {
            *d = *s as libc::c_char;
        }
        assert_eq!(libc::ioctl(fd, libc::SIOCGIFFLAGS, &mut ifr), 0);
        ifr.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
        assert_eq!(libc::ioctl(fd, libc::SIOCSIFFLAGS, &ifr), 0);
        libc::close(fd);
    }
}

/// bbr2 (google v2alpha's logic) registers through the same API as bbr3,
/// carries a real connection (in a throwaway network namespace), reports
/// its model through sock_diag as version 2, and unregisters leaving
/// nothing.
#[test]
#[ignore = "needs root"]
fn bbr2_registers_carries_a_connection_and_unregisters() {
    let _g = serial();
    let Some(reg) = register_own(Some(&["bbr2"])) else {
        return;
    };
    let ours = Ours::new(Objects::of_registration(&reg));
    assert_eq!(reg.algorithms().collect::<Vec<_>>(), ["bbr2"]);
    assert!(available("bbr2"));
    let maps = bbrkit_bpf::telemetry::StorageMaps::of(reg.loaded()).expect("storage map");
    let mut filter = bbrkit_diag::Filter {
        cc: Some("bbr2".into()),
        ..bbrkit_diag::Filter::default()
    };
    maps.ask(&mut filter);
    let (socks, sent) = std::thread::scope(|s| {
        s.spawn(|| {
            // SAFETY: CLONE_NEWNET affects this thread only.
            assert_eq!(unsafe { libc::unshare(libc::CLONE_NEWNET) }, 0);
            lo_up();
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let mut c = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
            socket2::SockRef::from(&c)
                .set_tcp_congestion(b"bbr2")
                .expect("TCP_CONGESTION bbr2");
            let (mut peer, _) = l.accept().unwrap();
            let reader =
                std::thread::spawn(move || std::io::copy(&mut peer, &mut std::io::sink()).unwrap());
            let chunk = vec![1u8; 1 << 20];
            for _ in 0..64 {
                std::io::Write::write_all(&mut c, &chunk).unwrap();
            }
            let socks = bbrkit_diag::census(&filter).expect("census");
            drop(c);
            (socks, reader.join().unwrap())
        })
        .join()
        .unwrap()
    });
    assert_eq!(sent, 64 << 20);
    let sender = socks
        .iter()
        .find(|s| {
            s.cc.as_deref() == Some("bbr2") && s.send_queue > 0
                || s.cc.as_deref() == Some("bbr2")
                    && s.tcp_info.as_ref().and_then(|t| t.bytes_acked) > Some(1_000_000)
        })
        .unwrap_or_else(|| panic!("no bbr2 sender: {socks:?}"));
    let t = maps
        .telemetry(sender)
        .expect("the sender's storage")
        .expect("decode");
    assert_eq!(t.model.version, 2, "{t:?}");
    assert!(t.counters.acks > 0 && t.counters.rounds > 0, "{t:?}");
    drop(maps);
    drop(reg);
    assert_nothing_left(&ours);
}

#[test]
#[ignore = "needs root"]
fn sigkill_of_an_unpinned_registration_leaves_nothing() {
    let _g = serial();
    let Some((mut child, theirs)) = spawn(
        &["--embedded", "--seconds", "60"],
        None,
        "registered struct_ops bbr3",
    ) else {
        return;
    };
    let theirs = Ours::new(theirs);
    assert!(available("bbr3"));
    assert_eq!(theirs.objects.links.len(), algorithms().len());
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    assert_nothing_left(&theirs);
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
    let ns = private_bpffs();
    let Some((mut child, theirs)) = spawn(
        &["--embedded", "--only", "bbr3", "--pin"],
        Some(&ns),
        "pinned",
    ) else {
        return;
    };
    let theirs = Ours::new(theirs);
    assert!(child.wait().unwrap().success());
    // The process is gone; the pin holds the registration.
    std::thread::sleep(Duration::from_millis(200));
    assert!(
        available("bbr3"),
        "the pinned registration ended with its process"
    );
    assert_eq!(theirs.objects.links.len(), 1, "{:?}", theirs.objects);
    assert_eq!(theirs.objects.alive().links, theirs.objects.links);
    let mut unpin = Command::new(example());
    unpin.args(["--unpin", "bbr3"]).stdout(Stdio::piped());
    let fd = ns.as_raw_fd();
    // SAFETY: as in `try_spawn`: setns in the forked child before exec.
    unsafe {
        unpin.pre_exec(move || {
            if libc::setns(fd, libc::CLONE_NEWNS) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let out = unpin.output().expect("run register --unpin");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{said}");
    assert!(said.contains("unpinned bbr3: pin removed"), "{said}");
    drop(ns);
    assert_nothing_left(&theirs);
}

/// Linux < 6.4 has no struct_ops links: there bbrkit registers by map
/// update and pins the map. The same path on this kernel (the maps created
/// without `BPF_F_LINK`): the registration is no link's, outlives its
/// process through the map pin, and unpin deletes the element (the name
/// goes) and removes the pin, leaving nothing.
#[test]
#[ignore = "needs root"]
fn without_links_a_pinned_map_registers_and_unpin_unregisters() {
    let _g = serial();
    let ns = private_bpffs();
    let Some((mut child, theirs)) = spawn(
        &["--embedded", "--only", "bbr3", "--no-links", "--pin"],
        Some(&ns),
        "pinned /sys/fs/bpf/bbrkit/bbr3/map",
    ) else {
        return;
    };
    let theirs = Ours::new(theirs);
    assert!(child.wait().unwrap().success());
    std::thread::sleep(Duration::from_millis(200));
    assert!(
        available("bbr3"),
        "the pinned map's registration ended with its process"
    );
    assert!(theirs.objects.links.is_empty(), "{:?}", theirs.objects);
    // (the pin is in the private bpffs: from here a plain map holds it)
    assert!(
        matches!(
            bbrkit_bpf::status::ca_status("bbr3").holder,
            Some(bbrkit_bpf::status::Holder::Map { .. })
        ),
        "{:?}",
        bbrkit_bpf::status::ca_status("bbr3")
    );
    let mut unpin = Command::new(example());
    unpin.args(["--unpin", "bbr3"]).stdout(Stdio::piped());
    let fd = ns.as_raw_fd();
    // SAFETY: as in `try_spawn`: setns in the forked child before exec.
    unsafe {
        unpin.pre_exec(move || {
            if libc::setns(fd, libc::CLONE_NEWNS) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let out = unpin.output().expect("run register --unpin");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{said}");
    assert!(said.contains("unpinned bbr3: pin removed"), "{said}");
    assert!(!available("bbr3"), "still registered after unpin");
    drop(ns);
    assert_nothing_left(&theirs);
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
    // What this process holds before: a failed load that left anything
    // would hold it through a descriptor (nothing is pinned).
    let before = Objects::held_by(std::process::id());
    let pins = pin::pinned();
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
    assert_eq!(Objects::held_by(std::process::id()), before);
    assert_eq!(pin::pinned(), pins);
}
