//! `verify`'s fixture tests, one per check outcome, on a
//! [`crate::MemoryHost`] with files under a temporary root: no live host
//! state is read.

use super::*;
use crate::algorithm::Holding;
use crate::host::{Established, interface};
use crate::qdisc::Class;
use crate::testing::{BBR3_DEFAULT, DEBIAN, Fixture, SYSTEMD};
use crate::unit::{BootRecord, BootRegistration};
use crate::{HostError, KEY_QDISC};

fn report(f: &Fixture, cc: Option<&str>) -> VerifyReport {
    judge(&f.snap(), cc).unwrap()
}

/// The check measuring `key`.
fn check(f: &Fixture, cc: Option<&str>, key: &str) -> Check {
    let r = report(f, cc);
    r.checks
        .into_iter()
        .find(|c| c.key == key)
        .unwrap_or_else(|| panic!("no check {key}"))
}

fn enabled_bbr() -> Fixture {
    let mut f = Fixture::new(
        &[
            DEBIAN,
            &[(
                "etc/sysctl.d/99-zz-bbrkit.conf",
                "net.ipv4.tcp_congestion_control = bbr\n",
            )],
        ]
        .concat(),
    );
    f.live().set(KEY_CC, "bbr");
    f
}

#[test]
fn an_enabled_host_passes_every_check() {
    let f = enabled_bbr();
    let r = report(&f, None);
    assert!(r.ok, "{:#?}", r.checks);
    assert_eq!(r.expected_cc, "bbr", "from bbrkit's file");
    let names: Vec<CheckName> = r.checks.iter().map(|c| c.name).collect();
    use CheckName::*;
    assert_eq!(names, [Sysctl, Available, Sockets, Qdisc, Boot, Boot]);
    let lines: Vec<String> = r.checks.iter().map(|c| f.redact(&c.line())).collect();
    assert_eq!(
        lines[0],
        "ok   net.ipv4.tcp_congestion_control=bbr (/proc/sys of this network namespace)"
    );
    assert_eq!(
        lines[4],
        "ok   boot.systemd=$ROOT/etc/sysctl.d/99-zz-bbrkit.conf:1 (systemd-sysctl sets bbr)"
    );
}

/// Issue 21.7: an algorithm the host does not offer is a usage error.
#[test]
fn an_unknown_algorithm_is_a_usage_error_not_a_failed_check() {
    let f = enabled_bbr();
    let e = judge(&f.snap(), Some("bogus")).unwrap_err();
    assert!(matches!(e, HostError::UnknownCc { .. }), "{e:?}");
    assert_eq!(
        e.to_string(),
        "unknown congestion control \"bogus\": this kernel offers reno bbr cubic; bbrkit's BPF: bbr3 bbr2"
    );
    assert!(
        judge(&f.snap(), Some("bbr3")).is_ok(),
        "bbrkit's BPF bbr3 is offered"
    );
}

#[test]
fn sysctl_and_available_fail_for_another_algorithm() {
    let f = enabled_bbr();
    let c = check(&f, Some("reno"), KEY_CC);
    assert!(!c.ok);
    assert_eq!(
        c.line(),
        "FAIL net.ipv4.tcp_congestion_control=bbr expected=reno (/proc/sys of this network namespace)"
    );
    let a = check(&f, None, "tcp_available_congestion_control");
    assert!(a.ok && a.detail.starts_with("bbr built in: "), "{a:?}");
    let a = check(&f, Some("bbr3"), "tcp_available_congestion_control");
    assert!(!a.ok && a.detail == "not registered", "{a:?}");
}

#[test]
fn sockets_pass_fail_and_unreadable() {
    let mut f = enabled_bbr();
    let c = check(&f, None, "established_not_bbr");
    assert!(
        c.ok && c
            .detail
            .ends_with("no established TCP sockets in this network namespace")
    );
    f.live().sockets = Ok(vec![Established {
        local: "127.0.0.1:36812".into(),
        remote: "127.0.0.1:7000".into(),
        cc: Some("reno".into()),
        cookie: 0,
    }]);
    let r = report(&f, None);
    let c = r
        .checks
        .iter()
        .find(|c| c.name == CheckName::Sockets)
        .unwrap();
    assert!(!c.ok && c.value == "1", "{c:?}");
    assert!(
        c.detail
            .contains("still on the old algorithm: 127.0.0.1:36812->127.0.0.1:7000 reno")
    );
    assert_eq!(r.old_sockets.len(), 1);
    f.live().sockets = Err("Operation not permitted".into());
    let c = check(&f, None, "established_sockets");
    assert!(!c.ok && c.value == "unreadable", "{c:?}");
    assert!(
        c.detail.ends_with("sock_diag: Operation not permitted"),
        "{c:?}"
    );
}

#[test]
fn default_qdisc_check_passes_when_the_kernel_lacks_it() {
    let mut f = enabled_bbr();
    f.write(
        "etc/sysctl.d/99-zz-bbrkit.conf",
        "net.ipv4.tcp_congestion_control = bbr\nnet.core.default_qdisc = fq\n",
    );
    let c = check(&f, None, KEY_QDISC);
    assert!(
        c.ok && c.detail == "kernel has no fq: BBR paces internally (Linux >= 4.13)",
        "{c:?}"
    );
    f.live().proc_config = Some("CONFIG_TCP_CONG_BBR=y\nCONFIG_NET_SCH_FQ=y\n".into());
    let c = check(&f, None, KEY_QDISC);
    assert!(
        !c.ok && c.value == "pfifo_fast" && c.expected == "fq",
        "{c:?}"
    );
}

#[test]
fn every_kind_of_root_qdisc() {
    let mut f = enabled_bbr();
    let mut shaped = interface(3, "eth1", "htb", &[]);
    shaped.class = Class::Deliberate;
    let mut down = interface(4, "eth2", "noop", &[]);
    down.up = false;
    f.live().interfaces = Ok(vec![
        interface(1, "lo", "noqueue", &[]),
        interface(2, "eth0", "pfifo_fast", &[]),
        shaped,
        down,
        interface(5, "eth3", "fq_codel", &[]),
    ]);
    let r = report(&f, None);
    let q: Vec<(bool, &str)> = r
        .checks
        .iter()
        .filter(|c| c.name == CheckName::Qdisc)
        .map(|c| (c.ok, c.detail.as_str()))
        .collect();
    assert_eq!(q[0], (true, "virtual device, no queue"));
    assert_eq!(
        q[1],
        (
            true,
            "pfifo_fast 0:; kernel has no fq: BBR paces internally (Linux >= 4.13)"
        )
    );
    assert_eq!(q[2], (true, "htb 0:: attached on purpose, left alone"));
    assert_eq!(q[3], (true, "down, gets the default when up"));
    assert_eq!(
        q[4],
        (
            false,
            "fq_codel 0:: created before default_qdisc changed; `bbrkit enable` re-creates it"
        )
    );
    f.live().in_container_netns();
    let c = check(&f, None, "qdisc.eth3");
    assert!(
        c.ok && c.detail.starts_with("default qdisc belongs to the host"),
        "{c:?}"
    );
    f.live().interfaces = Err("Operation not permitted".into());
    let c = check(&f, None, "qdisc");
    assert!(!c.ok && c.value == "unreadable", "{c:?}");
}

#[test]
fn boot_checks_name_the_file_that_wins() {
    let f = enabled_bbr();
    f.write(
        "etc/sysctl.conf",
        "net.ipv4.tcp_congestion_control = cubic\n",
    );
    let c = check(&f, None, "boot.procps");
    assert!(!c.ok, "{c:?}");
    assert!(f.redact(&c.detail).starts_with("sysctl --system applies net.ipv4.tcp_congestion_control = cubic from $ROOT/etc/sysctl.conf:1 last"), "{c:?}");
    assert!(check(&f, None, "boot.systemd").ok);
    let f = Fixture::new(DEBIAN);
    let c = check(&f, Some("cubic"), "boot.systemd");
    assert!(c.ok && c.value == "(no file)", "{c:?}");
    assert_eq!(
        c.detail,
        "no file sets it: kernel default CONFIG_DEFAULT_TCP_CONG=cubic"
    );
    assert!(!check(&f, Some("bbr"), "boot.systemd").ok);
}

fn bbr3_enabled(holding: Holding) -> Fixture {
    let mut f = Fixture::new(&[DEBIAN, SYSTEMD, BBR3_DEFAULT].concat());
    let unit =
        crate::unit::render("bbr3", std::path::Path::new("/usr/local/lib/bbrkit/bbrkit")).unwrap();
    f.write("etc/systemd/system/bbrkit-bbr3.service", &unit);
    f.write(
        "etc/systemd/system/sysinit.target.wants/bbrkit-bbr3.service",
        "@link:/etc/systemd/system/bbrkit-bbr3.service",
    );
    f.write("usr/local/lib/bbrkit/bbrkit", "ELF");
    f.live().register("bbr3", holding);
    f.live().set(KEY_CC, "bbr3");
    f
}

#[test]
fn bbr3_registration_checks() {
    let f = bbr3_enabled(Holding::Pin);
    let r = report(&f, None);
    assert!(r.ok, "{:#?}", r.checks);
    let c = check(&f, None, "bpf.bbr3");
    assert_eq!(
        c.line(),
        "ok   bpf.bbr3=bbrkit (holder: bbrkit's pinned link /sys/fs/bpf/bbrkit/bbr3/link)"
    );
    let f = bbr3_enabled(Holding::None);
    let c = check(&f, None, "bpf.bbr3");
    assert!(!c.ok && c.value == "not registered", "{c:?}");
    let f = bbr3_enabled(Holding::Other);
    assert_eq!(check(&f, None, "bpf.bbr3").value, "other");
    let f = bbr3_enabled(Holding::BbrkitLink { link_id: 9 });
    let c = check(&f, None, "bpf.bbr3");
    assert!(
        !c.ok && c.detail.contains("(a running lab), not pinned"),
        "{c:?}"
    );
}

#[test]
fn bbr3_unit_checks() {
    let f = bbr3_enabled(Holding::Pin);
    let c = check(&f, None, "unit.bbrkit-bbr3.service");
    assert!(
        c.ok && c
            .detail
            .contains("runs `/usr/local/lib/bbrkit/bbrkit boot --cc bbr3`"),
        "{c:?}"
    );
    std::fs::remove_file(f.root().path("usr/local/lib/bbrkit/bbrkit")).unwrap();
    let c = check(&f, None, "unit.bbrkit-bbr3.service");
    assert_eq!(
        c.value,
        "ExecStart's /usr/local/lib/bbrkit/bbrkit does not exist"
    );
    std::fs::remove_file(
        f.root()
            .path("etc/systemd/system/sysinit.target.wants/bbrkit-bbr3.service"),
    )
    .unwrap();
    assert_eq!(
        check(&f, None, "unit.bbrkit-bbr3.service").value,
        "not enabled"
    );
    f.write(
        "etc/systemd/system/bbrkit-bbr3.service",
        "[Service]\nExecStart=/bin/true\n",
    );
    let c = check(&f, None, "unit.bbrkit-bbr3.service");
    assert!(c.detail.starts_with("not enabled; not ordered After=systemd-sysctl.service; ExecStart does not run `bbrkit boot --cc bbr3`"), "{c:?}");
    f.write("etc/systemd/system/bbrkit-bbr3.service", "@link:/dev/null");
    assert_eq!(check(&f, None, "unit.bbrkit-bbr3.service").value, "masked");
    std::fs::remove_file(f.root().path("etc/systemd/system/bbrkit-bbr3.service")).unwrap();
    std::fs::remove_dir_all(f.root().path("run/systemd")).unwrap();
    let c = check(&f, None, "unit.bbrkit-bbr3.service");
    assert!(
        c.value
            .ends_with("does not exist (not booted with systemd)"),
        "{c:?}"
    );
    assert!(c.detail.contains("not installed"), "{c:?}");
}

#[test]
fn boot_run_of_this_boot_only() {
    let f = bbr3_enabled(Holding::Pin);
    let rec = |boot: &str, ok: bool| BootRecord {
        cc: "bbr3".into(),
        boot_id: Some(boot.into()),
        ok,
        registration: BootRegistration::Registered,
        default_set: None,
        steps: vec!["bbr3: registered".into()],
        error: (!ok).then(|| "bbr3: registration failed: x".into()),
        verifier_log_tail: None,
    };
    let this = f.host.live.boot_id.clone().unwrap();
    f.write(
        "run/bbrkit/bbr3.boot.json",
        &serde_json::to_string(&rec("earlier", false)).unwrap(),
    );
    assert!(
        report(&f, None)
            .checks
            .iter()
            .all(|c| c.name != CheckName::BootRun)
    );
    f.write(
        "run/bbrkit/bbr3.boot.json",
        &serde_json::to_string(&rec(&this, true)).unwrap(),
    );
    assert_eq!(
        check(&f, None, "boot_run.bbr3").line(),
        format!(
            "ok   boot_run.bbr3=ok ({} this boot: bbr3: registered)",
            f.root().show(&f.root().path("run/bbrkit/bbr3.boot.json"))
        )
    );
    f.write(
        "run/bbrkit/bbr3.boot.json",
        &serde_json::to_string(&rec(&this, false)).unwrap(),
    );
    let c = check(&f, None, "boot_run.bbr3");
    assert!(
        !c.ok
            && c.detail
                .ends_with("this boot: bbr3: registration failed: x"),
        "{c:?}"
    );
}
