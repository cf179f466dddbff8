//! `doctor`'s fixture tests, one per finding, on a [`crate::MemoryHost`]
//! with files under a temporary root (`crate::testing`): no live host
//! state is read. Each starts from a quiet host (only the `no_fq` note)
//! and adds the one condition its finding is about.

use super::namespaces::netns_entry;
use super::*;
use crate::algorithm::Holding;
use crate::host::{Established, LabLeftover, Traffic, interface, loopback_bytes};
use crate::netns::Namespace;
use crate::routes::CcRoute;
use crate::testing::{DEBIAN, Fixture, SYSTEMD};
use crate::unit::{BootRecord, BootRegistration};
use crate::{KEY_CC, KEY_QDISC};

/// A host doctor has nothing to say about but the kernel's missing fq.
fn quiet(files: &[(&str, &str)]) -> Fixture {
    let mut f = Fixture::new(&[DEBIAN, files].concat());
    f.live().set(KEY_QDISC, "fq_codel");
    f
}

fn run(f: &Fixture) -> DoctorReport {
    let snap = f.snap();
    let image = crate::image::load(&snap.root).unwrap();
    judge(&snap, image.as_ref())
}

/// The findings other than the quiet host's `no_fq`.
fn new(f: &Fixture) -> Vec<Finding> {
    run(f)
        .findings
        .into_iter()
        .filter(|x| x.id != FindingId::NoFq)
        .collect()
}

fn ids(found: &[Finding]) -> Vec<FindingId> {
    found.iter().map(|x| x.id).collect()
}

fn one(f: &Fixture, id: FindingId) -> Finding {
    let found = new(f);
    assert_eq!(ids(&found), [id], "{found:#?}");
    found.into_iter().next().unwrap()
}

/// The finding `id` among others.
fn find(f: &Fixture, id: FindingId) -> Finding {
    let found = new(f);
    found
        .iter()
        .find(|x| x.id == id)
        .cloned()
        .unwrap_or_else(|| panic!("no {id}: {found:#?}"))
}

#[test]
fn a_quiet_host_has_only_the_no_fq_note() {
    let f = quiet(&[]);
    let r = run(&f);
    assert_eq!(ids(&r.findings), [FindingId::NoFq]);
    assert!(!r.problem, "an info finding is not a problem");
    assert!(r.findings[0].evidence[0].contains("CONFIG_NET_SCH_FQ is not set"));
}

#[test]
fn no_bbr() {
    let mut f = quiet(&[]);
    f.live().proc_config = Some("# CONFIG_TCP_CONG_BBR is not set\n".into());
    f.live().available_cc.retain(|c| c != "bbr");
    let x = one(&f, FindingId::NoBbr);
    assert_eq!(x.level, Level::Error);
    assert!(
        x.evidence[0].ends_with("CONFIG_TCP_CONG_BBR is not set"),
        "{x:?}"
    );
}

#[test]
fn boot_override_and_overridden_file() {
    let f = quiet(&[
        (
            "etc/sysctl.d/99-zz-bbrkit.conf",
            "net.ipv4.tcp_congestion_control = bbr\n",
        ),
        (
            "etc/sysctl.conf",
            "#\nnet.ipv4.tcp_congestion_control = cubic\n",
        ),
        (
            "usr/lib/sysctl.d/60-vendor.conf",
            "net.ipv4.tcp_congestion_control = reno\n",
        ),
    ]);
    let found = new(&f);
    let o: Vec<&Finding> = found
        .iter()
        .filter(|x| x.id == FindingId::BootOverride)
        .collect();
    assert_eq!(o.len(), 1, "{found:#?}");
    let ev = f.redact(&o[0].evidence[0]);
    assert_eq!(
        ev,
        "sysctl --system applies net.ipv4.tcp_congestion_control = cubic from $ROOT/etc/sysctl.conf:2 after $ROOT/etc/sysctl.d/99-zz-bbrkit.conf (bbr)"
    );
    assert!(
        o[0].fix.starts_with("remove or change line 2 of"),
        "{}",
        o[0].fix
    );
    let ov = found
        .iter()
        .find(|x| x.id == FindingId::OverriddenFile)
        .unwrap();
    assert!(
        ov.title.contains(
            "60-vendor.conf sets net.ipv4.tcp_congestion_control = reno but loses at boot"
        )
    );
    assert_eq!(ov.level, Level::Info);
}

#[test]
fn not_persisted_without_a_file_and_lost_to_another_file() {
    let mut f = quiet(&[]);
    f.live().set(KEY_CC, "bbr");
    let x = one(&f, FindingId::NotPersisted);
    assert_eq!(
        x.title,
        "runtime net.ipv4.tcp_congestion_control = bbr is not persisted: no sysctl file sets it (kernel default cubic)"
    );
    assert_eq!(
        x.fix.split(" writes it to ").next(),
        Some("`bbrkit enable --cc bbr`")
    );

    f.write(
        "etc/sysctl.d/60-cc.conf",
        "net.ipv4.tcp_congestion_control = reno\n",
    );
    let x = one(&f, FindingId::NotPersisted);
    assert!(f.redact(&x.title).starts_with(
        "runtime net.ipv4.tcp_congestion_control = bbr is lost on reboot: boot applies $ROOT/etc/sysctl.d/60-cc.conf (reno)"
    ));
    assert!(
        x.fix
            .starts_with("persist it: `bbrkit enable --cc bbr` (or change"),
        "{}",
        x.fix
    );
}

#[test]
fn runtime_differs_from_bbrkits_file() {
    let mut f = quiet(&[(
        "etc/sysctl.d/99-zz-bbrkit.conf",
        "net.ipv4.tcp_congestion_control = bbr\n",
    )]);
    f.live().set(KEY_CC, "reno");
    let x = one(&f, FindingId::RuntimeDiffers);
    assert_eq!(
        x.title,
        "runtime net.ipv4.tcp_congestion_control = reno differs from bbrkit's file (bbr)"
    );
}

#[test]
fn edited_file() {
    let mut f = quiet(&[]);
    f.live().set(KEY_CC, "bbr");
    let mut o = crate::enable::Options::new("bbr");
    o.qdisc = crate::enable::QdiscChoice::Keep;
    crate::enable::run(&mut f.host, &o).unwrap();
    assert!(new(&f).is_empty(), "{:#?}", new(&f));
    let file = f.root().bbrkit_file();
    let text = std::fs::read_to_string(&file).unwrap() + "net.ipv4.tcp_ecn = 1\n";
    std::fs::write(&file, text).unwrap();
    let x = one(&f, FindingId::EditedFile);
    assert_eq!(x.level, Level::Info);
    assert!(
        f.redact(&x.evidence[0])
            .ends_with("99-zz-bbrkit.conf: +net.ipv4.tcp_ecn = 1"),
        "{x:?}"
    );
}

#[test]
fn tuned_reapplying_is_info_and_not_reapplying_is_a_warning_naming_its_keys() {
    let f = quiet(&[("etc/tuned/active_profile", "balanced\n")]);
    assert_eq!(one(&f, FindingId::Tuned).level, Level::Info);
    let f = quiet(&[
        ("etc/tuned/active_profile", "throughput\n"),
        ("etc/tuned/tuned-main.conf", "reapply_sysctl\t= 0\n"),
        (
            "usr/lib/tuned/throughput/tuned.conf",
            "[main]\nsummary=x\n[sysctl]\n# net.ipv4.tcp_rmem=1 2 3\nnet.ipv4.tcp_rmem=4096 87380 16777216\nnet.ipv4.ip_forward=1\n[vm]\nnet.ipv4.tcp_wmem=9\n",
        ),
    ]);
    let x = one(&f, FindingId::Tuned);
    assert_eq!(x.level, Level::Warning, "a tab before = still parses");
    let hits: Vec<&String> = x
        .evidence
        .iter()
        .filter(|e| e.contains("tuned.conf"))
        .collect();
    assert_eq!(hits.len(), 1, "{:?}", x.evidence);
    assert!(
        hits[0].ends_with(":5: net.ipv4.tcp_rmem=4096 87380 16777216"),
        "{hits:?}"
    );
}

#[test]
fn image_files_name_cloud_init_ufw_and_rc_local_lines() {
    let f = quiet(&[
        (
            "etc/cloud/cloud.cfg.d/90-net.cfg",
            "write_files:\n  - content: net.core.default_qdisc=fq_codel\n",
        ),
        (
            "etc/ufw/sysctl.conf",
            "net/ipv4/tcp_congestion_control=cubic\n",
        ),
        (
            "etc/rc.local",
            "#!/bin/sh\n# sysctl -w net.ipv4.tcp_congestion_control=bbr\nsysctl -w net/ipv4/tcp_notsent_lowat=16384\n",
        ),
    ]);
    let x = one(&f, FindingId::ImageFiles);
    let ev = x.evidence.join("\n");
    for want in ["90-net.cfg:2", "ufw/sysctl.conf:1", "rc.local:3"] {
        assert!(ev.contains(want), "{ev}");
    }
    assert_eq!(x.evidence.len(), 3, "comments are not hits: {ev}");
}

#[test]
fn stale_interface_qdisc() {
    let mut f = quiet(&[]);
    f.live().interfaces = Ok(vec![interface(2, "eth0", "pfifo_fast", &[])]);
    let x = one(&f, FindingId::StaleInterfaceQdisc);
    assert_eq!(
        x.evidence,
        ["eth0: root pfifo_fast 0: while net.core.default_qdisc = fq_codel"]
    );
}

#[test]
fn container_netns_container_and_hints() {
    let mut f = quiet(&[]);
    f.live().in_container_netns();
    let x = one(&f, FindingId::ContainerNetns);
    assert_eq!(x.level, Level::Info);
    assert_eq!(
        x.evidence[1], "net.core.default_qdisc does not exist here",
        "{x:?}"
    );
    // The evidence is what the snapshot read, never assumed.
    f.live().set("net.core.default_qdisc", "fq");
    let x = find(&f, FindingId::ContainerNetns);
    assert_eq!(x.evidence[1], "net.core.default_qdisc = fq here");
    // Unknown (a PID namespace on an older kernel): no container finding.
    let mut f = quiet(&[]);
    f.live().environment.initial_netns = None;
    assert!(!new(&f).iter().any(|x| x.id == FindingId::ContainerNetns));
    let mut f = quiet(&[]);
    f.live().environment.container = Some("docker".into());
    f.live().environment.container_evidence = vec!["PID 1 environment has container=docker".into()];
    assert!(one(&f, FindingId::Container).title.contains("(docker)"));
    let mut f = quiet(&[]);
    f.live().environment.container_evidence = vec!["/proc/1/cgroup mentions docker".into()];
    one(&f, FindingId::ContainerHints);
}

#[test]
fn netns_old_cc_and_an_unregistered_default_there() {
    let mut f = quiet(&[]);
    f.live().namespaces = vec![Namespace {
        inode: 4026532300,
        found_at: "pid 42 (nginx)".into(),
        cc: Some("reno".into()),
    }];
    let x = one(&f, FindingId::NetnsOldCc);
    assert_eq!(
        x.evidence,
        ["net:[4026532300] pid 42 (nginx) defaults to reno"]
    );
    let n = Namespace {
        inode: 4026532300,
        found_at: "pid 42 (nginx)".into(),
        cc: Some("bbr3".into()),
    };
    let e = netns_entry(&n, &["reno".to_string(), "bbr".to_string()]);
    assert!(
        e.starts_with("net:[4026532300] pid 42 (nginx) defaults to bbr3 (no longer registered"),
        "{e}"
    );
}

#[test]
fn not_allowed_is_info_on_the_host_and_a_warning_in_a_namespace() {
    let mut f = quiet(&[]);
    f.live().allowed_cc = vec!["reno".into(), "cubic".into()];
    let x = one(&f, FindingId::NotAllowed);
    assert_eq!(x.level, Level::Info);
    assert!(
        x.title
            .starts_with("bbr is not in net.ipv4.tcp_allowed_congestion_control")
    );
    f.live().in_container_netns();
    let found = new(&f);
    let x = found
        .iter()
        .find(|x| x.id == FindingId::NotAllowed)
        .unwrap();
    assert_eq!(x.level, Level::Warning);
    assert!(x.title.contains("EPERM"), "{x:?}");
}

fn sock(local: &str, cc: &str) -> Established {
    Established {
        local: local.into(),
        remote: "10.0.0.2:50000".into(),
        cc: Some(cc.into()),
        cookie: 0,
    }
}

#[test]
fn old_connections() {
    let mut f = quiet(&[]);
    f.live().sockets = Ok(vec![
        sock("10.0.0.1:443", "reno"),
        sock("10.0.0.1:22", "cubic"),
    ]);
    let x = one(&f, FindingId::OldConnections);
    assert_eq!(
        x.title,
        "1 established connection(s) not on the default cubic"
    );
    assert_eq!(x.evidence, ["10.0.0.1:443 -> 10.0.0.2:50000 uses reno"]);
}

#[test]
fn route_congctl_is_a_warning_when_it_differs() {
    let mut f = quiet(&[]);
    f.live().routes = Ok(vec![CcRoute {
        destination: "10.9.0.0/16".into(),
        table: 254,
        oif: Some(2),
        cc: "reno".into(),
    }]);
    let x = one(&f, FindingId::RouteCongctl);
    assert_eq!(x.level, Level::Warning);
    assert_eq!(x.evidence, ["10.9.0.0/16 table 254 dev #2 congctl reno"]);
}

#[test]
fn mostly_receives_subtracts_loopback() {
    let mut f = quiet(&[]);
    f.live().traffic = Some(Traffic {
        in_octets: 900_000_000,
        out_octets: 10_000_000,
        loopback: Some((100_000, 100_000)),
        tcp_segs: Some((700_000, 300_000)),
    });
    let x = one(&f, FindingId::MostlyReceives);
    assert!(
        x.evidence[0].starts_with("IP bytes received 899900000, sent 9900000"),
        "{x:?}"
    );
    assert!(x.evidence[2].contains("InSegs=700000 OutSegs=300000"));
    // All of it loopback: nothing to say.
    f.live().traffic.as_mut().unwrap().loopback = Some((899_000_000, 9_000_000));
    assert!(new(&f).is_empty());
    assert!(receive_finding(1_000, 0).is_none());
    let dev = "Inter-|   Receive\n face |bytes packets|bytes\n    lo: 1000 10 0 0 0 0 0 0 2000 20 0 0 0 0 0 0\n";
    assert_eq!(loopback_bytes(dev), Some((1000, 2000)));
}

/// Issue 21.11: namespaces a killed lab left are noticed.
#[test]
fn lab_leftovers() {
    let mut f = quiet(&[]);
    f.live().lab_leftovers = vec![LabLeftover {
        path: "/run/netns/bbrk4242-client".into(),
        pid: 4242,
    }];
    let x = one(&f, FindingId::LabLeftovers);
    assert_eq!(x.level, Level::Warning);
    assert_eq!(
        x.evidence,
        ["/run/netns/bbrk4242-client: its lab (pid 4242) no longer runs"]
    );
    assert!(
        x.fix.starts_with("`bbrkit lab --cleanup` removes them"),
        "{}",
        x.fix
    );
}

fn install_unit(f: &Fixture, exe: &str) {
    let unit = crate::unit::render("bbr3", std::path::Path::new(exe)).unwrap();
    f.write("etc/systemd/system/bbrkit-bbr3.service", &unit);
    f.write(
        "etc/systemd/system/sysinit.target.wants/bbrkit-bbr3.service",
        "@link:/etc/systemd/system/bbrkit-bbr3.service",
    );
}

#[test]
fn bpf_default_without_unit_with_and_without_systemd() {
    let sets = (
        "etc/sysctl.d/60-bbr3.conf",
        "# by hand\nnet.ipv4.tcp_congestion_control = bbr3\n",
    );
    // (the runtime default that file would replace at boot is named too)
    let f = quiet(&[SYSTEMD, &[sets]].concat());
    let x = find(&f, FindingId::BpfDefaultWithoutUnit);
    let ev = x.evidence.join("\n");
    assert!(
        ev.contains("60-bbr3.conf:2 sets net.ipv4.tcp_congestion_control = bbr3"),
        "{ev}"
    );
    assert!(ev.contains("bbrkit-bbr3.service is not installed"), "{ev}");
    assert!(x.fix.contains("bbrkit enable --cc bbr3"), "{}", x.fix);
    let f = quiet(&[sets]);
    install_unit(&f, "/usr/bin/true");
    let x = find(&f, FindingId::BpfDefaultWithoutUnit);
    assert!(x.fix.contains("does not boot with systemd"), "{}", x.fix);
}

#[test]
fn bpf_boot_not_run_and_failed() {
    let f = quiet(SYSTEMD);
    install_unit(&f, "/usr/bin/true");
    let x = one(&f, FindingId::BpfBootNotRun);
    assert!(
        x.title
            .contains("is enabled but has not registered bbr3 this boot")
    );
    let rec = BootRecord {
        cc: "bbr3".into(),
        boot_id: f.host.live.boot_id.clone(),
        ok: false,
        registration: BootRegistration::Failed,
        default_set: None,
        steps: vec!["net.ipv4.tcp_congestion_control left at cubic".into()],
        error: Some("bbr3: registration failed: the kernel's verifier refused BPF program bbr3_cong_control of bbr3: R2 invalid mem access 'scalar'".into()),
        verifier_log_tail: Some("12: (61) r3 = *(u32 *)(r2 +0)\nR2 invalid mem access 'scalar'\n".into()),
    };
    f.write(
        "run/bbrkit/bbr3.boot.json",
        &serde_json::to_string(&rec).unwrap(),
    );
    let x = one(&f, FindingId::BpfBootFailed);
    assert_eq!(x.level, Level::Error);
    let ev = x.evidence.join("\n");
    assert!(
        ev.contains("verifier log (last line): R2 invalid mem access 'scalar'"),
        "{ev}"
    );
    assert!(
        ev.contains("(registration failed)") && ev.contains("left at cubic"),
        "{ev}"
    );
    assert!(x.fix.contains("systemctl restart bbrkit-bbr3.service"));
}

/// Issue 21.2: a unit whose binary is gone is named.
#[test]
fn bpf_unit_binary_missing() {
    let mut f = quiet(SYSTEMD);
    install_unit(&f, "/nonexistent/target/release/bbrkit");
    f.live().register("bbr3", Holding::Pin);
    let x = one(&f, FindingId::BpfUnitBinaryMissing);
    assert!(
        x.title
            .contains("runs /nonexistent/target/release/bbrkit, which does not exist")
    );
    assert!(x.fix.contains("/usr/local/lib/bbrkit/bbrkit"), "{}", x.fix);
    f.write("nonexistent/target/release/bbrkit", "ELF");
    assert!(
        new(&f).is_empty(),
        "under the root it exists: {:#?}",
        new(&f)
    );
}

#[test]
fn bpf_foreign_but_not_a_running_lab() {
    let mut f = quiet(&[]);
    f.live().register("bbr3", Holding::Other);
    let x = one(&f, FindingId::BpfForeign);
    assert!(x.evidence[0].contains("held by a process"), "{x:?}");
    assert!(x.fix.contains("never takes it over"));
    f.live()
        .register("bbr3", Holding::BbrkitLink { link_id: 9 });
    assert!(new(&f).is_empty(), "a lab's registration is bbrkit's own");
}

#[test]
fn bpf_stuck_connections_and_default_unregistered() {
    let mut f = quiet(&[]);
    f.live().set(KEY_CC, "bbr3");
    f.live().registration_mut("bbr3").lingering_maps = vec![42];
    f.live().sockets = Ok(vec![sock("10.0.0.1:443", "bbr3")]);
    let found = new(&f);
    let want = [
        FindingId::BpfDefaultUnregistered,
        FindingId::NotPersisted,
        FindingId::BpfStuckConnections,
    ];
    assert_eq!(ids(&found), want, "{found:#?}");
    let stuck = &found[2];
    assert_eq!(
        stuck.evidence[0],
        "10.0.0.1:443 -> 10.0.0.2:50000 uses bbr3 (not registered)"
    );
    assert!(stuck.evidence[1].contains("[42]"));
    assert!(found[0].fix.contains("bbrkit boot --cc bbr3"));
}

#[test]
fn findings_are_worst_first() {
    let mut f = quiet(&[("etc/tuned/active_profile", "balanced\n")]);
    f.live().proc_config = Some("# CONFIG_TCP_CONG_BBR is not set\n".into());
    f.live().available_cc.retain(|c| c != "bbr");
    f.live().set(KEY_CC, "reno");
    let r = run(&f);
    assert!(
        r.findings.windows(2).all(|w| w[0].level >= w[1].level),
        "{r:#?}"
    );
    assert!(r.problem);
}

/// A host with several pitfalls at once: the whole report pinned
/// (`cargo insta review` after an intended change).
#[test]
fn report_of_a_host_with_pitfalls() {
    let mut f = quiet(&[
        (
            "etc/sysctl.d/99-zz-bbrkit.conf",
            "net.ipv4.tcp_congestion_control = bbr\n",
        ),
        (
            "etc/sysctl.conf",
            "net.ipv4.tcp_congestion_control = cubic\n",
        ),
        ("etc/tuned/active_profile", "balanced\n"),
    ]);
    f.live().set(KEY_CC, "bbr");
    f.live().sockets = Ok(vec![sock("10.0.0.1:443", "cubic")]);
    f.live().lab_leftovers = vec![LabLeftover {
        path: "/run/netns/bbrk4242-server".into(),
        pid: 4242,
    }];
    let r = run(&f);
    insta::assert_snapshot!(f.redact(&serde_json::to_string_pretty(&r).unwrap()));
}
