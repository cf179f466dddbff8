//! `rollback`'s fixture tests on a [`crate::MemoryHost`] with files under
//! a temporary root: byte-for-byte restores (also of version 1 images the
//! bbrkit before the change model wrote), an operator's edit kept, the
//! `--dry-run` and `--no-apply` modes, a BPF registration's pins.

use std::collections::BTreeMap;
use std::path::Path;

use super::*;
use crate::algorithm::Holding;
use crate::enable::Options;
use crate::outcome::ActionKind;
use crate::testing::{DEBIAN, Fixture, SYSTEMD};
use crate::{Host, KEY_CC};

/// Every file and symlink under `dir` with its bytes or target.
fn files(dir: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            let rel = p.strip_prefix(dir).unwrap().display().to_string();
            let m = std::fs::symlink_metadata(&p).unwrap();
            if m.file_type().is_symlink() {
                out.insert(
                    rel,
                    format!("-> {}", std::fs::read_link(&p).unwrap().display()),
                );
            } else if m.is_dir() {
                out.insert(rel, "dir".into());
                stack.push(p);
            } else {
                out.insert(
                    rel,
                    String::from_utf8_lossy(&std::fs::read(&p).unwrap()).into_owned(),
                );
            }
        }
    }
    out
}

fn undo(f: &mut Fixture, mode: UndoMode) -> RollbackReport {
    run(&mut f.host, mode).unwrap()
}

#[test]
fn nothing_to_roll_back() {
    let mut f = Fixture::new(DEBIAN);
    let before = files(f.root().base());
    let r = undo(&mut f, UndoMode::default());
    assert!(r.nothing_to_roll_back && !r.problem);
    assert_eq!(files(f.root().base()), before);
}

#[test]
fn enable_then_rollback_is_byte_for_byte() {
    let mut f = Fixture::new(DEBIAN);
    f.write(
        "etc/sysctl.d/99-zz-bbrkit.conf",
        "# hand-written earlier\nnet.ipv4.tcp_congestion_control = reno\n",
    );
    let before = files(f.root().base());
    let runtime = f.host.live.sysctls.clone();
    crate::enable::run(
        &mut f.host,
        &Options {
            tune: true,
            ..Options::new("bbr")
        },
    )
    .unwrap();
    assert_ne!(files(f.root().base()), before);
    let dry = undo(
        &mut f,
        UndoMode {
            dry_run: true,
            no_apply: false,
        },
    );
    assert_eq!(dry.files[0].action, ActionKind::WouldRestore);
    assert_eq!(dry.files[0].detail, "62 bytes as before");
    let r = undo(&mut f, UndoMode::default());
    assert!(!r.problem, "{r:#?}");
    assert_eq!(r.files[0].action, ActionKind::Restored);
    assert_eq!(files(f.root().base()), before, "not byte for byte");
    assert_eq!(f.host.live.sysctls, runtime, "runtime not restored");
}

#[test]
fn no_apply_restores_files_only() {
    let mut f = Fixture::new(DEBIAN);
    crate::enable::run(&mut f.host, &Options::new("bbr")).unwrap();
    let r = undo(
        &mut f,
        UndoMode {
            dry_run: false,
            no_apply: true,
        },
    );
    assert_eq!(r.runtime[0].action, ActionKind::Skipped);
    assert_eq!(r.runtime[0].detail, "--no-apply: stays bbr until reboot");
    assert_eq!(f.host.sysctl(KEY_CC).as_deref(), Some("bbr"));
    assert!(!f.root().bbrkit_file().exists());
}

/// An image version 1 (bbrkit before the change model) rolls back byte
/// for byte: the `enable --tune` an old bbrkit made, as it left the root.
#[test]
fn a_version_1_image_rolls_back_byte_for_byte() {
    let mut f = Fixture::new(DEBIAN);
    let before = files(f.root().base());
    f.live().set(KEY_CC, "bbr");
    for (k, v) in [
        ("net.ipv4.tcp_rmem", "4096 87380 33554432"),
        ("net.ipv4.tcp_wmem", "4096 65536 33554432"),
        ("net.ipv4.tcp_notsent_lowat", "131072"),
        ("net.ipv4.tcp_mtu_probing", "1"),
        ("net.ipv4.tcp_slow_start_after_idle", "0"),
    ] {
        f.live().set(k, v);
    }
    f.write(
        "etc/sysctl.d/99-zz-bbrkit.conf",
        include_str!("../tests/fixtures/v1-tune-99-zz-bbrkit.conf"),
    );
    f.write(
        "var/lib/bbrkit/before-image.json",
        include_str!("../tests/fixtures/v1-before-image-tune.json"),
    );
    let r = undo(&mut f, UndoMode::default());
    assert!(!r.problem, "{r:#?}");
    assert_eq!(files(f.root().base()), before, "not byte for byte");
    let priors = [
        (KEY_CC, "reno"),
        ("net.ipv4.tcp_rmem", "4096 131072 33554432"),
        ("net.ipv4.tcp_wmem", "4096 16384 4194304"),
        ("net.ipv4.tcp_notsent_lowat", "4294967295"),
        ("net.ipv4.tcp_mtu_probing", "0"),
        ("net.ipv4.tcp_slow_start_after_idle", "1"),
    ];
    for (k, v) in priors {
        assert_eq!(f.host.sysctl(k).as_deref(), Some(v), "{k}");
    }
}

/// The bbr3 `enable` of an old bbrkit: unit, its symlink, the sysctl file
/// and the pin go; the default comes back.
#[test]
fn a_version_1_bbr3_image_unregisters_and_removes_the_unit() {
    let mut f = Fixture::new(&[DEBIAN, SYSTEMD].concat());
    let before = files(f.root().base());
    f.live().register("bbr3", Holding::Pin);
    f.live().set(KEY_CC, "bbr3");
    f.write("etc/systemd/system/bbrkit-bbr3.service", "[Unit]\n");
    f.write(
        "etc/systemd/system/sysinit.target.wants/bbrkit-bbr3.service",
        "@link:/etc/systemd/system/bbrkit-bbr3.service",
    );
    f.write(
        "etc/sysctl.d/99-zz-bbrkit.conf",
        "-net.ipv4.tcp_congestion_control = bbr3\n",
    );
    f.write(
        "var/lib/bbrkit/before-image.json",
        include_str!("../tests/fixtures/v1-before-image-bbr3.json"),
    );
    let r = undo(&mut f, UndoMode::default());
    assert!(!r.problem, "{r:#?}");
    assert_eq!(r.bpf[0].action, ActionKind::Unregistered);
    assert!(!f.host.live.pinned.contains(&"bbr3".to_string()));
    assert_eq!(f.host.sysctl(KEY_CC).as_deref(), Some("reno"));
    assert_eq!(files(f.root().base()), before, "not byte for byte");
}

/// Issue 21.1: rollback keeps an operator's edit of bbrkit's own file,
/// says so, and finishes once the operator has moved it.
#[test]
fn rollback_keeps_an_edited_file_and_finishes_later() {
    let mut f = Fixture::new(DEBIAN);
    let before = files(f.root().base());
    crate::enable::run(&mut f.host, &Options::new("bbr")).unwrap();
    let file = f.root().bbrkit_file();
    let edited = std::fs::read_to_string(&file).unwrap() + "net.ipv4.tcp_ecn = 1\n";
    std::fs::write(&file, &edited).unwrap();
    let r = undo(&mut f, UndoMode::default());
    assert!(r.problem, "an incomplete rollback is a problem");
    assert_eq!(r.files[0].action, ActionKind::Kept);
    assert!(
        r.files[0]
            .detail
            .starts_with("edited since bbrkit wrote it (+net.ipv4.tcp_ecn = 1)"),
        "{:?}",
        r.files[0]
    );
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        edited,
        "the edit was lost"
    );
    assert_eq!(
        f.host.sysctl(KEY_CC).as_deref(),
        Some("cubic"),
        "the runtime is restored"
    );
    assert!(
        f.root().state_file().exists(),
        "the image is kept for another try"
    );
    // The operator moves the line and deletes bbrkit's file.
    std::fs::remove_file(&file).unwrap();
    let r = undo(&mut f, UndoMode::default());
    assert!(!r.problem, "{r:#?}");
    assert_eq!(r.files[0].action, ActionKind::Unchanged);
    assert_eq!(files(f.root().base()), before);
}

#[test]
fn an_interface_from_an_older_default_is_recreated_under_a_momentary_one_or_kept() {
    let mut f = Fixture::new(DEBIAN);
    f.live().interfaces = Ok(vec![crate::host::interface(2, "eth0", "fq", &[])]);
    f.live().set(crate::KEY_QDISC, "fq");
    f.live().qdisc_kinds.push("fq".into());
    let image = r#"{"version": 2, "created_dirs": [], "changes": [
            {"kind": "interface", "name": "eth0", "root": "pfifo_fast", "leaves": []}]}"#;
    let mut refused = Fixture::new(DEBIAN);
    refused.host.live = f.host.live.clone();
    refused.live().qdisc_kinds.retain(|k| k != "pfifo_fast");
    refused.write("var/lib/bbrkit/before-image.json", image);
    let r = undo(&mut refused, UndoMode::default());
    assert_eq!(r.interfaces[0].action, ActionKind::Kept, "{r:#?}");
    assert!(
        r.interfaces[0]
            .detail
            .contains("the kernel refuses pfifo_fast as default_qdisc")
    );

    f.write(
        "var/lib/bbrkit/before-image.json",
        r#"{"version": 2, "created_dirs": [], "changes": [
            {"kind": "interface", "name": "eth0", "root": "pfifo_fast", "leaves": []},
            {"kind": "interface", "name": "gone0", "root": "pfifo_fast", "leaves": []}]}"#,
    );
    let r = undo(&mut f, UndoMode::default());
    assert_eq!(r.interfaces[0].action, ActionKind::Restored, "{r:#?}");
    assert!(
        r.interfaces[0]
            .detail
            .contains("momentary default_qdisc pfifo_fast")
    );
    assert_eq!(
        f.host.sysctl(crate::KEY_QDISC).as_deref(),
        Some("fq"),
        "default put back"
    );
    assert_eq!(
        (r.interfaces[1].action, r.interfaces[1].detail.as_str()),
        (ActionKind::Skipped, "interface no longer exists")
    );
}
