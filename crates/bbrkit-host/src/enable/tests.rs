//! Fixture tests of `enable`'s plan and apply on a [`MemoryHost`]
//! (`crate::testing`): no live host state is read or changed.

use std::path::{Path, PathBuf};

use super::*;
use crate::algorithm::Holding;
use crate::change::{Change, UndoMode};
use crate::image::{Prior, Recorded};
use crate::testing::{DEBIAN, Fixture, SYSTEMD};
use crate::{Host, KEY_CC, rollback, verify};

fn opts(cc: &str) -> Options {
    Options {
        exe: Some(PathBuf::from("/proc/self/exe")),
        ..Options::new(cc)
    }
}

fn plan_of(f: &mut Fixture, o: &Options) -> Result<Plan, crate::HostError> {
    let snap = f.snap();
    let image = crate::image::load(&snap.root).unwrap();
    let exe = o.exe.clone().unwrap();
    plan(&snap, image.as_ref(), o, &mut f.host, &exe)
}

fn enable(f: &mut Fixture, o: &Options) -> EnableReport {
    let p = plan_of(f, o).unwrap();
    let image = crate::image::load(f.root()).unwrap();
    apply(&mut f.host, image, p).unwrap()
}

fn key<'a>(r: &'a EnableReport, k: &str) -> &'a KeyResult {
    r.keys.iter().find(|x| x.key == k).unwrap()
}

#[test]
fn plan_writes_nothing_and_apply_records_before_writing() {
    let mut f = Fixture::new(&[]);
    let o = Options {
        no_apply: true,
        qdisc: QdiscChoice::Keep,
        ..opts("reno")
    };
    let p = plan_of(&mut f, &o).unwrap();
    assert_eq!(
        std::fs::read_dir(f.root().base()).unwrap().count(),
        0,
        "plan wrote"
    );
    assert!(
        matches!(&p.changes[..], [Change::File(_)]),
        "{:?}",
        p.changes
    );
    let root = f.root().clone();
    assert_eq!(
        p.created_dirs,
        ["etc", "etc/sysctl.d", "var", "var/lib", "var/lib/bbrkit"].map(|d| root.path(d))
    );
    // The dry run is the plan, with no changes.
    let dry = plan_of(
        &mut f,
        &Options {
            dry_run: true,
            ..o.clone()
        },
    )
    .unwrap();
    assert!(dry.changes.is_empty() && dry.report.changed && dry.report.dry_run);
    assert_eq!(dry.report.content, p.report.content);

    let r = apply(&mut f.host, None, p).unwrap();
    assert!(r.changed && !r.problem);
    assert_eq!(
        std::fs::read_to_string(root.bbrkit_file()).unwrap(),
        r.content
    );
    let image = crate::image::load(&root).unwrap().unwrap();
    assert!(matches!(
        &image.changes[..],
        [Recorded::File { prior: Prior::Absent, wrote, .. }] if wrote.len() == 1
    ));
    assert_eq!(image.created_dirs.len(), 5);
    assert_eq!(
        f.host.sysctl(KEY_CC).as_deref(),
        Some("cubic"),
        "--no-apply sets nothing"
    );
    // Planned again: nothing to change, no changes.
    let again = plan_of(&mut f, &o).unwrap();
    assert!(again.changes.is_empty() && !again.report.changed);
}

#[test]
fn enable_sets_the_runtime_and_records_the_prior_value() {
    let mut f = Fixture::new(DEBIAN);
    let r = enable(&mut f, &opts("bbr"));
    assert_eq!(key(&r, KEY_CC).runtime, RuntimeStatus::Set);
    assert_eq!(key(&r, KEY_CC).detail, "cubic -> bbr (read back)");
    assert_eq!(f.host.sysctl(KEY_CC).as_deref(), Some("bbr"));
    let image = crate::image::load(f.root()).unwrap().unwrap();
    assert!(image.changes.contains(&Recorded::Sysctl {
        key: KEY_CC.into(),
        prior: Some("cubic".into())
    }));
    assert!(r.notes[0].starts_with("kernel has no fq"), "{:?}", r.notes);
}

/// Issue 21.5: `--tune` raises, never lowers; each line says kept or
/// raised with the value found (field by field for multi-value keys).
#[test]
fn tune_raises_never_lowers_and_says_kept_or_raised() {
    let mut f = Fixture::new(DEBIAN);
    f.live()
        .set("net.ipv4.tcp_rmem", "4096 131072 6291456")
        .set("net.core.rmem_max", "134217728")
        .set("net.ipv4.tcp_notsent_lowat", "16384")
        .set("net.ipv4.tcp_mtu_probing", "2");
    let r = enable(
        &mut f,
        &Options {
            tune: true,
            ..opts("bbr")
        },
    );
    let rmem = key(&r, "net.ipv4.tcp_rmem");
    assert_eq!(
        rmem.value, "4096 131072 33554432",
        "field 2 kept, field 3 raised"
    );
    assert_eq!(rmem.runtime, RuntimeStatus::Raised);
    assert_eq!(
        rmem.detail,
        "found 4096 131072 6291456 -> 4096 131072 33554432 (read back)"
    );
    for (k, v) in [
        ("net.core.rmem_max", "134217728"),
        ("net.ipv4.tcp_notsent_lowat", "16384"),
        ("net.ipv4.tcp_mtu_probing", "2"),
    ] {
        let kr = key(&r, k);
        assert_eq!(
            (kr.runtime, kr.value.as_str()),
            (RuntimeStatus::Kept, v),
            "{kr:?}"
        );
        assert!(
            kr.detail
                .starts_with(&format!("found {v}: kept, never lowered")),
            "{kr:?}"
        );
        assert_eq!(f.host.sysctl(k).as_deref(), Some(v), "{k} lowered");
    }
    assert_eq!(key(&r, "net.ipv4.tcp_wmem").runtime, RuntimeStatus::Raised);
    assert_eq!(
        key(&r, "net.ipv4.tcp_slow_start_after_idle").runtime,
        RuntimeStatus::Set
    );
    // The file persists what was kept, so boot does not lower it either.
    assert!(
        r.content.contains("\nnet.core.rmem_max = 134217728\n"),
        "{}",
        r.content
    );
    assert!(
        r.content
            .contains("\nnet.ipv4.tcp_rmem = 4096 131072 33554432\n")
    );
    // A second run finds everything in place.
    let again = plan_of(
        &mut f,
        &Options {
            tune: true,
            ..opts("bbr")
        },
    )
    .unwrap();
    assert!(!again.report.changed, "{:?}", again.report.keys);
}

/// Issue 21.1: an operator's edit of bbrkit's own file is never replaced.
#[test]
fn an_edited_file_blocks_enable_and_says_so() {
    let mut f = Fixture::new(DEBIAN);
    enable(&mut f, &opts("bbr"));
    let file = f.root().bbrkit_file();
    let mut text = std::fs::read_to_string(&file).unwrap();
    text.push_str("net.ipv4.tcp_ecn = 1\n");
    std::fs::write(&file, &text).unwrap();
    let r = enable(
        &mut f,
        &Options {
            tune: true,
            ..opts("bbr")
        },
    );
    assert!(r.blocked && r.problem && !r.changed, "{r:?}");
    assert_eq!(r.edited.len(), 1);
    assert_eq!(r.edited[0].added, ["net.ipv4.tcp_ecn = 1"]);
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        text,
        "the edit was replaced"
    );
    let wmem = key(&r, "net.ipv4.tcp_wmem");
    assert_eq!(wmem.runtime, RuntimeStatus::Skipped);
    assert!(wmem.detail.contains("was edited"), "{wmem:?}");
    // Removed by the operator: enable writes it again.
    std::fs::remove_file(&file).unwrap();
    let r = enable(&mut f, &opts("bbr"));
    assert!(!r.blocked && r.changed && file.exists());
}

/// Issue 21.12: each default qdisc explains itself; a run that does not
/// write bbrkit's file says what *would* apply at boot.
#[test]
fn fq_codel_explains_itself_and_a_blocked_run_says_would_apply() {
    let mut f = Fixture::new(DEBIAN);
    let p = plan_of(
        &mut f,
        &Options {
            qdisc: QdiscChoice::FqCodel,
            dry_run: true,
            ..opts("bbr")
        },
    )
    .unwrap();
    let q = key(&p.report, crate::KEY_QDISC);
    assert!(
        q.rationale
            .starts_with("fq_codel for qdiscs created from now on (fq_codel keeps")
    );
    assert!(!q.rationale.contains("fq gives BBR"), "{}", q.rationale);

    f.write(
        "etc/sysctl.conf",
        "net.ipv4.tcp_congestion_control = cubic\n",
    );
    let r = plan_of(&mut f, &opts("bbr")).unwrap().report;
    assert!(r.blocked);
    let lines = f.redact(&r.boot_lines().join("\n"));
    assert!(
        lines.contains("systemd-sysctl would apply $ROOT/etc/sysctl.d/99-zz-bbrkit.conf:6 (bbr)"),
        "{lines}"
    );
    assert!(
        lines.contains("sysctl --system applies /etc/sysctl.conf:1 (cubic)  <- overrides bbrkit")
            || lines.contains(
                "sysctl --system applies $ROOT/etc/sysctl.conf:1 (cubic)  <- overrides bbrkit"
            ),
        "{lines}"
    );
}

/// A bbr3 host: systemd, and the registration state `holding`.
fn bbr3_host(holding: Holding) -> Fixture {
    let mut f = Fixture::new(&[DEBIAN, SYSTEMD].concat());
    f.live().register("bbr3", holding);
    f
}

/// Issue 21.2: the unit runs an installed binary, never a build tree.
#[test]
fn the_bbr3_unit_runs_an_installed_copy_or_the_package_binary() {
    let mut f = bbr3_host(Holding::None);
    let build = f.root().path("home/me/bbrkit/target/release/bbrkit");
    f.write("home/me/bbrkit/target/release/bbrkit", "ELF bbrkit");
    let o = Options {
        exe: Some(build.clone()),
        ..opts("bbr3")
    };
    let r = enable(&mut f, &o);
    let unit =
        std::fs::read_to_string(f.root().path("etc/systemd/system/bbrkit-bbr3.service")).unwrap();
    assert!(
        unit.contains("\nExecStart=/usr/local/lib/bbrkit/bbrkit boot --cc bbr3\n"),
        "{unit}"
    );
    let copy = f.root().path("usr/local/lib/bbrkit/bbrkit");
    assert_eq!(std::fs::read(&copy).unwrap(), b"ELF bbrkit");
    let b = r.bpf.as_ref().unwrap();
    assert_eq!(b.unit[0].action, UnitFileAction::Install);
    assert!(
        b.unit[0]
            .detail
            .starts_with(&format!("a copy of {}", build.display()))
    );
    assert_eq!(b.registration, RegistrationStep::Registered);
    // Rollback removes the copy with the other files.
    let rb = crate::rollback::run(&mut f.host, Default::default()).unwrap();
    assert!(!rb.problem && !copy.exists(), "{rb:?}");

    // Run as the package's binary: the unit runs it, nothing is copied.
    let mut f = bbr3_host(Holding::None);
    f.write("usr/bin/bbrkit", "ELF packaged");
    let o = Options {
        exe: Some(f.root().path("usr/bin/bbrkit")),
        ..opts("bbr3")
    };
    let r = enable(&mut f, &o);
    let unit =
        std::fs::read_to_string(f.root().path("etc/systemd/system/bbrkit-bbr3.service")).unwrap();
    assert!(
        unit.contains("\nExecStart=/usr/bin/bbrkit boot --cc bbr3\n"),
        "{unit}"
    );
    assert!(!f.root().path("usr/local/lib/bbrkit").exists());
    assert!(
        r.bpf
            .unwrap()
            .unit
            .iter()
            .all(|u| u.action != UnitFileAction::Install)
    );
}

#[test]
fn a_binary_bbrkit_did_not_install_is_never_replaced() {
    let mut f = bbr3_host(Holding::None);
    f.write("usr/local/lib/bbrkit/bbrkit", "someone else's");
    let e = plan_of(&mut f, &opts("bbr3")).unwrap_err().to_string();
    assert!(
        e.contains("usr/local/lib/bbrkit/bbrkit: exists and bbrkit did not install it"),
        "{e}"
    );
}

/// Issue 21.3: bbr3 registered by a running bbrkit lab is pinned (shared),
/// not refused; another loader's registration is refused.
#[test]
fn a_labs_registration_is_adopted_and_a_foreign_one_refused() {
    let mut f = bbr3_host(Holding::BbrkitLink { link_id: 9 });
    f.live().trial_load = Err(crate::algorithm::RegisterFailure {
        reason: "no trial load needed".into(),
        verifier_log: None,
    });
    let r = enable(&mut f, &opts("bbr3"));
    let b = r.bpf.as_ref().unwrap();
    assert_eq!(b.registration, RegistrationStep::Adopted, "{r:?}");
    assert!(f.host.live.pinned.contains(&"bbr3".to_string()));
    assert!(r.bpf_lines()[0].starts_with("bpf: pinned the running lab's registration of bbr3"));

    let mut f = bbr3_host(Holding::Other);
    let e = plan_of(&mut f, &opts("bbr3")).unwrap_err().to_string();
    assert!(
        e.starts_with("--cc bbr3: bbr3 is registered by struct_ops link 7"),
        "{e}"
    );
    assert!(
        e.ends_with("bbrkit does not take over a name it did not register"),
        "{e}"
    );
}

#[test]
fn bbr3_is_refused_without_systemd_or_a_requirement() {
    let mut f = Fixture::new(DEBIAN);
    let e = plan_of(&mut f, &opts("bbr3")).unwrap_err().to_string();
    assert!(
        e.contains("run/systemd/system does not exist (not booted with systemd)")
            && e.ends_with(
                "without systemd run `bbrkit boot --cc bbr3` at every boot: OpenRC: a line in /etc/local.d/bbrkit.start (chmod +x) and `rc-update add local default`; sysvinit: a line in /etc/rc.local (before its `exit 0`) (docs/host.md)"
            ),
        "{e}"
    );
    let mut f = bbr3_host(Holding::None);
    f.live().bpf_features.features[5].present = false;
    f.live().bpf_features.features[5].detail = "/sys/fs/bpf is not bpffs".into();
    let e = plan_of(&mut f, &opts("bbr3")).unwrap_err().to_string();
    assert!(e.starts_with("--cc bbr3: /sys/fs/bpf is not bpffs"), "{e}");
    let mut f = bbr3_host(Holding::None);
    f.live().trial_load = Err(crate::algorithm::RegisterFailure {
        reason: "the kernel's verifier refused BPF program x".into(),
        verifier_log: None,
    });
    let e = plan_of(&mut f, &opts("bbr3")).unwrap_err().to_string();
    assert_eq!(e, "--cc bbr3: the kernel's verifier refused BPF program x");
}

/// In a non-initial namespace a BPF default the kernel would refuse with
/// EPERM (and keep a reference) is never written; checked after the
/// registration, which adds bbr3 to the allowed list.
#[test]
fn a_bpf_default_is_written_only_where_the_kernel_allows_it() {
    let mut f = bbr3_host(Holding::None);
    f.live().in_container_netns();
    f.live().allowed_cc = vec!["reno".into()];
    let r = enable(&mut f, &opts("bbr3"));
    let k = key(&r, KEY_CC);
    assert_eq!(k.runtime, RuntimeStatus::NotPermitted, "{k:?}");
    assert!(
        k.detail
            .contains("not written (the kernel would answer EPERM"),
        "{k:?}"
    );
    assert!(r.problem);
    assert_eq!(f.host.sysctl(KEY_CC).as_deref(), Some("cubic"));
}

#[test]
fn an_algorithm_the_host_does_not_offer_is_a_usage_error() {
    let mut f = Fixture::new(DEBIAN);
    let e = plan_of(&mut f, &opts("nosuch")).unwrap_err().to_string();
    assert_eq!(
        e,
        "unknown congestion control \"nosuch\": this kernel offers reno bbr cubic; bbrkit's BPF: bbr3 bbr2"
    );
    f.live().in_container_netns();
    f.live().allowed_cc = vec!["reno".into(), "cubic".into()];
    let e = plan_of(&mut f, &opts("bbr")).unwrap_err().to_string();
    assert!(
        e.starts_with("bbr is not in net.ipv4.tcp_allowed_congestion_control"),
        "{e}"
    );
}

#[test]
fn stale_interfaces_are_recreated_once_the_default_is_in_effect() {
    let mut f = Fixture::new(DEBIAN);
    f.live().proc_config = Some("CONFIG_TCP_CONG_BBR=y\nCONFIG_NET_SCH_FQ=y\n".into());
    f.live().set(crate::KEY_QDISC, "pfifo_fast");
    f.live().interfaces = Ok(vec![
        crate::host::interface(1, "lo", "noqueue", &[]),
        crate::host::interface(2, "eth0", "pfifo_fast", &[]),
        crate::host::interface(3, "eth1", "mq", &["pfifo_fast", "pfifo_fast"]),
    ]);
    let mut refused = Fixture::new(DEBIAN);
    refused.host.live = f.host.live.clone();
    // The kernel refuses fq as the default (ENOENT): nothing is re-created.
    let r = enable(&mut refused, &opts("bbr"));
    let q = key(&r, crate::KEY_QDISC);
    assert_eq!(q.runtime, RuntimeStatus::NoKernelSupport, "{q:?}");
    let actions: Vec<InterfaceVerb> = r.interfaces.iter().map(|i| i.action).collect();
    use InterfaceVerb::*;
    assert_eq!(actions, [Noqueue, UnchangedDefault, UnchangedDefault]);
    assert!(
        r.interfaces[1]
            .detail
            .contains("default qdisc is not fq: nothing to re-create")
    );

    // The kernel takes it: the two kernel defaults are re-created (mq-aware).
    f.live().qdisc_kinds.push("fq".into());
    let dry = plan_of(
        &mut f,
        &Options {
            dry_run: true,
            ..opts("bbr")
        },
    )
    .unwrap();
    let actions: Vec<InterfaceVerb> = dry.report.interfaces.iter().map(|i| i.action).collect();
    assert_eq!(actions, [Noqueue, WouldRecreate, WouldRecreate]);
    let r = enable(&mut f, &opts("bbr"));
    let actions: Vec<InterfaceVerb> = r.interfaces.iter().map(|i| i.action).collect();
    assert_eq!(actions, [Noqueue, Recreated, Recreated], "{r:?}");
    assert_eq!(
        r.interfaces[2].detail,
        "root qdisc re-created: now mq 0: (leaves: fq x2)"
    );
    let image = crate::image::load(f.root()).unwrap().unwrap();
    assert!(image.changes.contains(&Recorded::Interface {
        name: "eth1".into(),
        root: "mq".into(),
        leaves: vec!["pfifo_fast".into(), "pfifo_fast".into()]
    }));
    // Rollback re-creates them under the restored default.
    let rb = crate::rollback::run(&mut f.host, Default::default()).unwrap();
    assert!(!rb.problem, "{rb:?}");
    assert_eq!(
        rb.interfaces[0].detail,
        "root re-created from default_qdisc pfifo_fast"
    );
    let eth1 = &f.host.live.interfaces.as_ref().unwrap()[2];
    assert_eq!(eth1.leaves, ["pfifo_fast", "pfifo_fast"]);
}

#[test]
fn the_plan_records_every_change_before_making_it() {
    let mut f = bbr3_host(Holding::None);
    let o = Options {
        exe: Some(PathBuf::from("/proc/self/exe")),
        ..opts("bbr3")
    };
    let p = plan_of(&mut f, &o).unwrap();
    let kinds: Vec<&str> = p
        .changes
        .iter()
        .map(|c| match c {
            Change::BpfRegistration(_) => "bpf",
            Change::File(w) if w.path.ends_with("bbrkit") => "binary",
            Change::File(w) if w.path.ends_with("99-zz-bbrkit.conf") => "sysctl.d",
            Change::File(_) => "unit",
            Change::Symlink(_) => "wants",
            Change::Sysctl(_) => "sysctl",
            Change::Qdiscs(_) => "qdiscs",
            Change::Policy(_) => "policy",
            Change::LoadModule(_) => "load",
            Change::Retire(_) => "retire",
            Change::Remove(_) => "remove",
        })
        .collect();
    assert_eq!(
        kinds,
        ["bpf", "binary", "unit", "wants", "sysctl.d", "sysctl"]
    );
    assert!(
        p.created_dirs
            .iter()
            .any(|d| d.ends_with("etc/systemd/system/sysinit.target.wants"))
    );
    assert!(
        !Path::new(&f.root().path("usr/local/lib/bbrkit/bbrkit")).exists(),
        "planning wrote"
    );
    assert!(f.host.live.pinned.is_empty(), "planning registered");
}

/// Issue 33.9: `enable --cc bbr2` after `enable --cc bbr3` unregisters
/// bbr3 and removes its boot unit (bbrkit registered both for the earlier
/// default); rollback still restores the state before bbrkit. A policy
/// naming bbr3 keeps it.
#[test]
fn switching_bbr3_to_bbr2_retires_bbr3_and_its_unit() {
    let mut f = bbr3_host(Holding::None);
    let before: Vec<_> = walk(f.root().base());
    let o = |cc: &str, dry_run| Options {
        exe: Some(PathBuf::from("/proc/self/exe")),
        dry_run,
        ..opts(cc)
    };
    enable(&mut f, &o("bbr3", false));
    let unit3 = f.root().path("etc/systemd/system/bbrkit-bbr3.service");
    let wants3 = f
        .root()
        .path("etc/systemd/system/sysinit.target.wants/bbrkit-bbr3.service");
    assert!(unit3.exists() && f.host.live.pinned == ["bbr3"]);

    let dry = enable(&mut f, &o("bbr2", true));
    assert_eq!(dry.retire.len(), 1);
    let line = &dry.retire_lines()[0];
    assert!(
        line.starts_with("bpf: would unregister bbr3 (remove pin /sys/fs/bpf/bbrkit/bbr3/link) and remove its boot unit ")
            && line.ends_with("bbrkit registered it for an earlier default, which this one replaces (rollback restores the state before bbrkit)"),
        "{line}"
    );
    assert!(
        f.host.live.pinned == ["bbr3"] && unit3.exists(),
        "a dry run changes nothing"
    );

    let r = enable(&mut f, &o("bbr2", false));
    assert!(!r.problem, "{r:?}");
    assert!(
        r.retire[0]
            .done
            .starts_with("unregistered (pin /sys/fs/bpf/bbrkit/bbr3/link removed"),
        "{:?}",
        r.retire
    );
    assert_eq!(f.host.live.pinned, ["bbr2"]);
    assert!(!f.host.available_cc().contains(&"bbr3".to_string()));
    assert!(
        std::fs::symlink_metadata(&unit3).is_err() && std::fs::symlink_metadata(&wants3).is_err()
    );
    assert!(
        f.root()
            .path("etc/systemd/system/bbrkit-bbr2.service")
            .exists()
    );
    assert_eq!(f.host.sysctl(KEY_CC).as_deref(), Some("bbr2"));
    assert!(verify::run(&f.host, None).unwrap().ok);

    let rb = rollback::run(&mut f.host, UndoMode::default()).unwrap();
    assert!(!rb.problem, "{rb:?}");
    assert!(f.host.live.pinned.is_empty());
    assert_eq!(walk(f.root().base()), before, "files as before bbrkit");
    assert_eq!(f.host.sysctl(KEY_CC).as_deref(), Some("cubic"));
}

/// A policy naming bbr3 keeps it registered across a switch of the default.
#[test]
fn a_policy_naming_the_old_algorithm_keeps_it() {
    let mut f = bbr3_host(Holding::None);
    let o = |cc: &str| Options {
        exe: Some(PathBuf::from("/proc/self/exe")),
        ..opts(cc)
    };
    enable(&mut f, &o("bbr3"));
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("p.toml");
    std::fs::write(&file, "[[rule]]\nlocal_port = [443]\ncc = \"bbr3\"\n").unwrap();
    let p = Options {
        policy: Some(PolicyOptions { file, cgroup: None }),
        ..o("bbr3")
    };
    enable(&mut f, &p);
    let r = enable(&mut f, &o("bbr2"));
    assert!(r.retire.is_empty(), "{:?}", r.retire);
    assert!(f.host.live.pinned.contains(&"bbr3".to_string()));
}

fn walk(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() && !p.is_symlink() {
                stack.push(p.clone());
            }
            out.push((p.clone(), std::fs::read(&p).unwrap_or_default()));
        }
    }
    out.sort();
    out
}
