//! Fixture tests of the policy change on a [`crate::MemoryHost`]: plan,
//! record, apply, verify, doctor and rollback, as a normal user.

use std::path::{Path, PathBuf};

use bbrkit_policy::attached::{Counters, SockOpsProgram};

use super::*;
use crate::Host;
use crate::algorithm::Holding;
use crate::change::UndoMode;
use crate::enable::{self, Options};
use crate::host::Established;
use crate::outcome::{CheckName, FindingId, Level};
use crate::testing::Fixture;
use crate::{Root, doctor, image, rollback, verify};

const POLICY: &str = "[[rule]]\nname = \"svc\"\nlocal_port = [443]\ncc = \"reno\"\n\n[[rule]]\nremote = [\"203.0.113.0/24\"]\ncc = \"cubic\"\n";

fn with_policy(text: &str) -> (Fixture, tempfile::TempDir, PathBuf) {
    let f = Fixture::new(&[]);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("p.toml");
    std::fs::write(&file, text).unwrap();
    (f, dir, file)
}

fn opts(file: &Path, dry_run: bool) -> Options {
    Options {
        dry_run,
        policy: Some(PolicyOptions {
            file: file.to_path_buf(),
            cgroup: None,
        }),
        ..Options::new("bbr")
    }
}

fn files(f: &Fixture) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![f.root().base().to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            out.push(e.path());
            if e.path().is_dir() {
                stack.push(e.path());
            }
        }
    }
    out.sort();
    out
}

fn linked(f: &Fixture) -> Vec<PathBuf> {
    f.host
        .live
        .policy_pins
        .iter()
        .map(|p| p.dir.clone())
        .collect()
}

#[test]
fn enable_records_copies_attaches_verifies_and_rollback_undoes_it() {
    let (mut f, _d, file) = with_policy(POLICY);
    let before = files(&f);
    let dry = enable::run(&mut f.host, &opts(&file, true)).unwrap();
    let p = dry.policy.as_ref().unwrap();
    assert_eq!(
        (p.step, p.cgroup.as_str(), p.cgroup_id),
        (PolicyStep::Attach, "/sys/fs/cgroup", 1)
    );
    assert!(
        p.compiled
            .starts_with("rule 1 \"svc\": local_port 443 -> reno\n"),
        "{}",
        p.compiled
    );
    assert_eq!(
        (files(&f), linked(&f)),
        (before.clone(), vec![]),
        "a dry run changes nothing"
    );

    let r = enable::run(&mut f.host, &opts(&file, false)).unwrap();
    assert_eq!(r.policy.as_ref().unwrap().step, PolicyStep::Attached);
    assert_eq!(linked(&f), [PathBuf::from("/sys/fs/bpf/bbrkit/policy/1")]);
    let copy = f.root().path("var/lib/bbrkit/policy/root.toml");
    assert_eq!(std::fs::read_to_string(&copy).unwrap(), POLICY);
    let img = image::load(f.root()).unwrap().unwrap();
    assert!(img.changes.contains(&Recorded::Policy {
        cgroup: "/sys/fs/cgroup".into(),
        cgroup_id: 1
    }));

    let v = verify::run(&f.host, None).unwrap();
    let names: Vec<CheckName> = v.checks.iter().map(|c| c.name).collect();
    assert_eq!(
        names,
        [
            CheckName::PolicyAttached,
            CheckName::PolicyMaps,
            CheckName::PolicyForeign,
            CheckName::PolicyConnections
        ]
    );
    assert!(v.ok, "{:?}", v.checks);

    let again = enable::run(&mut f.host, &opts(&file, false)).unwrap();
    assert!(!again.changed && again.policy.unwrap().step == PolicyStep::Unchanged);

    let rb = rollback::run(&mut f.host, UndoMode::default()).unwrap();
    assert!(!rb.problem, "{rb:?}");
    assert_eq!(rb.policy[0].action, ActionKind::Detached);
    assert_eq!((files(&f), linked(&f)), (before, vec![]), "nothing left");
}

#[test]
fn a_second_policy_replaces_the_first_from_the_other_directory() {
    let (mut f, dir, file) = with_policy(POLICY);
    enable::run(&mut f.host, &opts(&file, false)).unwrap();
    let second = dir.path().join("q.toml");
    std::fs::write(&second, "[[rule]]\ncc = \"cubic\"\n").unwrap();
    let r = enable::run(&mut f.host, &opts(&second, false)).unwrap();
    let p = r.policy.unwrap();
    assert_eq!(p.step, PolicyStep::Replaced);
    assert_eq!(p.replaces.as_deref(), Some("/sys/fs/bpf/bbrkit/policy/1"));
    assert_eq!(linked(&f), [PathBuf::from("/sys/fs/bpf/bbrkit/policy/1-b")]);
    assert!(verify::run(&f.host, None).unwrap().ok);
    // The third goes back to the first directory.
    enable::run(&mut f.host, &opts(&file, false)).unwrap();
    assert_eq!(linked(&f), [PathBuf::from("/sys/fs/bpf/bbrkit/policy/1")]);
}

#[test]
fn refuses_what_cannot_work_before_changing_anything() {
    let (mut f, dir, _) = with_policy(POLICY);
    let before = files(&f);
    let cases = [
        (
            "[[rule]]\ncc = \"vegas\"\n",
            None,
            "rule 1 (line 1): cc: the policy names vegas, which this host does not offer: the kernel registers reno bbr cubic, bbrkit's BPF algorithms are bbr3 bbr2",
        ),
        (
            "[[rule]]\ncc = \"reno\"\n",
            Some("/proc"),
            "--policy: /proc: not a cgroup v2 directory",
        ),
        (
            "[[rule]]\nremote = [\"10.0.0.1/8\"]\ncc = \"reno\"\n",
            None,
            "rule 1 (line 1): remote \"10.0.0.1/8\": host bits set after the prefix length; did you mean 10.0.0.0/8?",
        ),
    ];
    for (text, cgroup, want) in cases {
        let file = dir.path().join("x.toml");
        std::fs::write(&file, text).unwrap();
        let mut o = opts(&file, false);
        o.policy.as_mut().unwrap().cgroup = cgroup.map(PathBuf::from);
        let e = enable::run(&mut f.host, &o).unwrap_err().to_string();
        assert!(e.ends_with(want), "{e}");
        assert_eq!((files(&f), linked(&f)), (before.clone(), vec![]));
    }
}

#[test]
fn a_pin_the_image_does_not_record_is_not_taken_over() {
    let (mut f, _d, file) = with_policy(POLICY);
    let c = compile("x", POLICY.as_bytes()).unwrap().1;
    f.host
        .attach_policy(
            &c,
            Path::new("/sys/fs/cgroup"),
            Path::new("/sys/fs/bpf/bbrkit/policy/1"),
        )
        .unwrap();
    let e = enable::run(&mut f.host, &opts(&file, false))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("a policy pin bbrkit's before-image does not record"),
        "{e}"
    );
    assert_eq!(linked(&f).len(), 1);
}

fn ours(id: u32, link: u32) -> SockOpsProgram {
    SockOpsProgram {
        id,
        name: "bkpol_sockops".into(),
        link_id: Some(link),
        ours: true,
    }
}

#[test]
fn doctor_names_half_pins_unpinned_and_foreign_programs() {
    let (mut f, _d, file) = with_policy(POLICY);
    enable::run(&mut f.host, &opts(&file, false)).unwrap();
    let link = f.host.live.policy_pins[0].live.as_ref().unwrap().link_id;
    let cg = PathBuf::from("/sys/fs/cgroup");
    let foreign = SockOpsProgram {
        id: 7,
        name: "tcp_conn_tuner".into(),
        link_id: None,
        ours: false,
    };
    f.live()
        .sock_ops
        .insert(cg, vec![ours(1, link), ours(2, 999), foreign]);
    f.live().policy_pins.push(PolicyPin {
        dir: "/sys/fs/bpf/bbrkit/policy/1-b".into(),
        live: Err("no link pin".into()),
    });
    let ids: Vec<FindingId> = doctor::diagnose(&f.host)
        .unwrap()
        .findings
        .iter()
        .map(|x| x.id)
        .collect();
    for want in [
        FindingId::PolicyPinsWithoutProgram,
        FindingId::PolicyWithoutPin,
        FindingId::PolicyForeignSockops,
    ] {
        assert!(ids.contains(&want), "{want:?} in {ids:?}");
    }
    let r = doctor::diagnose(&f.host).unwrap();
    let x = r
        .findings
        .iter()
        .find(|x| x.id == FindingId::PolicyWithoutPin)
        .unwrap();
    assert_eq!(
        x.evidence,
        [
            "program 2 (bkpol_sockops) (bbrkit's program held by a process: a trial) on /sys/fs/cgroup, the policy's cgroup, attached after it: runs after the policy, its setsockopt replaces the policy's algorithm"
        ]
    );
}

/// Programs on an ancestor, on the cgroup before and after the policy, and
/// on a descendant are each named with where they run; one on a sibling is
/// not; verify fails until they are gone.
#[test]
fn verify_and_doctor_name_programs_around_the_policys_cgroup() {
    let (mut f, _d, file) = with_policy(POLICY);
    let web = PathBuf::from("/sys/fs/cgroup/web");
    f.live().cgroups.insert(web.clone(), 5);
    let mut o = opts(&file, false);
    o.policy.as_mut().unwrap().cgroup = Some(web.clone());
    enable::run(&mut f.host, &o).unwrap();
    let foreign_check = |f: &Fixture| {
        let v = verify::run(&f.host, None).unwrap();
        let c = v
            .checks
            .iter()
            .find(|c| c.name == CheckName::PolicyForeign)
            .cloned()
            .expect("a policy_foreign check");
        (v.ok, c)
    };
    let (ok, c) = foreign_check(&f);
    assert!(ok && c.ok && c.value == "none", "{c:?}");
    let link = f.host.live.policy_pins[0].live.as_ref().unwrap().link_id;
    let prog = |id, name: &str| SockOpsProgram {
        id,
        name: name.into(),
        link_id: None,
        ours: false,
    };
    let so = &mut f.live().sock_ops;
    so.insert("/sys/fs/cgroup".into(), vec![prog(7, "tcp_conn_tuner")]);
    so.insert(
        web.clone(),
        vec![prog(8, "early"), ours(1, link), prog(9, "late")],
    );
    so.insert(web.join("api"), vec![prog(10, "child")]);
    so.insert("/sys/fs/cgroup/other".into(), vec![prog(11, "sibling")]);
    let (ok, c) = foreign_check(&f);
    assert!(!ok && !c.ok, "{c:?}");
    assert_eq!(c.key, "policy./sys/fs/cgroup/web.foreign");
    assert_eq!(c.value, "4 program(s)");
    for want in [
        "program 7 (tcp_conn_tuner) on /sys/fs/cgroup, an ancestor: runs after",
        "program 8 (early) on /sys/fs/cgroup/web, the policy's cgroup, attached before it: runs first",
        "program 9 (late) on /sys/fs/cgroup/web, the policy's cgroup, attached after it: runs after",
        "program 10 (child) on /sys/fs/cgroup/web/api, a descendant: runs first",
    ] {
        assert!(c.detail.contains(want), "{want} in {}", c.detail);
    }
    assert!(!c.detail.contains("sibling"), "{}", c.detail);
    let r = doctor::diagnose(&f.host).unwrap();
    let x = r
        .findings
        .iter()
        .find(|x| x.id == FindingId::PolicyForeignSockops)
        .unwrap();
    assert_eq!(x.evidence.len(), 4, "{x:?}");
    assert!(
        x.evidence[0].starts_with("program 7 (tcp_conn_tuner) on /sys/fs/cgroup,"),
        "{x:?}"
    );
    f.live().sock_ops.clear();
    assert!(foreign_check(&f).0);
}

#[test]
fn doctor_names_rules_no_connection_matched() {
    let (mut f, _d, file) = with_policy(POLICY);
    enable::run(&mut f.host, &opts(&file, false)).unwrap();
    let arm = |rule, matched| bbrkit_policy::attached::ArmCounters {
        rule,
        arm: 0,
        cc: "reno".into(),
        matched,
        assigned: matched,
        kept_app: 0,
        kept_route: 0,
        failed: 0,
    };
    let counters = Counters {
        arms: vec![arm(0, 3), arm(1, 0)],
        stats: Default::default(),
    };
    f.host.live.policy_pins[0].live.as_mut().unwrap().counters = Ok(counters);
    let r = doctor::diagnose(&f.host).unwrap();
    let x = r
        .findings
        .iter()
        .find(|x| x.id == FindingId::PolicyUnmatchedRules)
        .unwrap();
    assert_eq!(
        x.evidence,
        ["rule 2 matched 0 connections (/sys/fs/bpf/bbrkit/policy/1)"]
    );
    assert_eq!(x.level, Level::Info);
}

#[test]
fn verify_counts_connections_that_agree_with_the_decision() {
    let (_f, _d, _) = with_policy(POLICY);
    let c = compile("x", POLICY.as_bytes()).unwrap().1;
    let s = |local: &str, remote: &str, cc: &str| Established {
        local: local.into(),
        remote: remote.into(),
        cc: Some(cc.into()),
        cookie: 1,
    };
    let socks = [
        s("10.0.0.1:443", "10.0.0.2:50000", "reno"), // rule 1, agrees
        s("10.0.0.1:443", "10.0.0.3:50000", "cubic"), // rule 1, differs
        s("10.0.0.1:40000", "203.0.113.9:443", "cubic"), // rule 2, agrees
        s("10.0.0.1:40000", "198.51.100.1:443", "bbr"), // no rule
        s("[::1]:443", "[::ffff:10.0.0.2]:5", "reno"), // rule 1 (mapped), agrees
    ];
    assert_eq!(agreement(&c, &socks), (3, 1));
}

#[test]
fn the_copy_is_named_by_the_cgroup_and_the_salt_by_the_split() {
    let root = Root::new(Path::new("/")).unwrap();
    let m = Some(Path::new("/sys/fs/cgroup/unified"));
    assert_eq!(
        copy_path(&root, m, Path::new("/sys/fs/cgroup/unified")),
        Path::new("/var/lib/bbrkit/policy/root.toml")
    );
    assert_eq!(
        copy_path(
            &root,
            m,
            Path::new("/sys/fs/cgroup/unified/system.slice/web.service")
        ),
        Path::new("/var/lib/bbrkit/policy/system.slice-web.service.toml")
    );
    let split = "[[rule]]\nsplit = { cubic = 50, bbr = 50 }\nunit = \"client\"\n";
    let (_, a) = compile("p", split.as_bytes()).unwrap();
    let (_, commented) = compile("p", format!("# a note\n{split}").as_bytes()).unwrap();
    let (_, reweighed) = compile("p", split.replace("= 50, bbr", "= 60, bbr").as_bytes()).unwrap();
    let (p, explicit) = compile("p", format!("salt = \"s\"\n{split}").as_bytes()).unwrap();
    assert_eq!(a.salt, commented.salt, "a comment keeps the draws");
    assert_eq!(
        a, commented,
        "and the maps: the edit replaces nothing in them"
    );
    assert_ne!(a.salt, reweighed.salt);
    assert_ne!(a.salt, explicit.salt);
    assert_eq!(explicit.salt, salt(&p));
}

/// Gap 1 of issue 19: on a systemd host `enable --policy` writes and
/// enables `bbrkit-policy.service` (running `boot --policy`, ordered after
/// the BPF algorithms' units) through the before-image, `verify` checks it,
/// `boot --policy` is idempotent (it runs after `boot --cc bbr3` re-attached
/// the same policies), and rollback removes it byte for byte.
#[test]
fn on_systemd_the_policy_unit_is_written_checked_and_rolled_back() {
    let mut f = Fixture::new(crate::testing::SYSTEMD);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("p.toml");
    std::fs::write(&file, POLICY).unwrap();
    let exe = dir.path().join("bbrkit");
    std::fs::write(&exe, "a bbrkit binary").unwrap();
    let o = Options {
        exe: Some(exe.clone()),
        ..opts(&file, false)
    };
    let before = files(&f);
    let r = enable::run(&mut f.host, &o).unwrap();
    let p = r.policy.unwrap();
    let shown: Vec<(&str, super::boot_unit::UnitFileAction)> =
        p.unit.iter().map(|u| (u.file.as_str(), u.action)).collect();
    let (unit, wants) = (
        f.root().path("etc/systemd/system/bbrkit-policy.service"),
        f.root()
            .path("etc/systemd/system/sysinit.target.wants/bbrkit-policy.service"),
    );
    assert_eq!(
        shown,
        [
            (
                f.root()
                    .show(&f.root().path("usr/local/lib/bbrkit/bbrkit"))
                    .as_str(),
                super::boot_unit::UnitFileAction::Install
            ),
            (
                f.root().show(&unit).as_str(),
                super::boot_unit::UnitFileAction::Write
            ),
            (
                f.root().show(&wants).as_str(),
                super::boot_unit::UnitFileAction::Link
            ),
        ]
    );
    let text = std::fs::read_to_string(&unit).unwrap();
    assert!(
        text.contains("\nExecStart=/usr/local/lib/bbrkit/bbrkit boot --policy\n"),
        "{text}"
    );
    assert!(text.contains("After=local-fs.target systemd-modules-load.service systemd-sysctl.service sys-fs-bpf.mount bbrkit-bbr3.service bbrkit-bbr2.service\n"));
    assert_eq!(
        std::fs::read_link(&wants).unwrap(),
        Path::new("/etc/systemd/system/bbrkit-policy.service")
    );

    let v = verify::run(&f.host, None).unwrap();
    let unit_check = v.checks.iter().find(|c| c.name == CheckName::Unit).unwrap();
    assert!(v.ok && unit_check.ok, "{:?}", v.checks);
    assert!(
        unit_check
            .detail
            .contains("(re-attaches the recorded policies)"),
        "{}",
        unit_check.detail
    );

    // After `boot --cc bbr3` re-attached it, `boot --policy` changes nothing;
    // after a reboot (no pins) it attaches again.
    let again = crate::boot::run_policy(&mut f.host).unwrap();
    assert!(again.ok, "{again:?}");
    assert!(
        again.steps[0].contains("already attached"),
        "{:?}",
        again.steps
    );
    f.host.live.policy_pins.clear();
    let boot = crate::boot::run_policy(&mut f.host).unwrap();
    assert!(
        boot.ok && boot.steps[0].contains("attached from"),
        "{boot:?}"
    );
    assert_eq!(linked(&f), [PathBuf::from("/sys/fs/bpf/bbrkit/policy/1")]);

    std::fs::remove_file(&wants).unwrap();
    let v = verify::run(&f.host, None).unwrap();
    let unit_check = v.checks.iter().find(|c| c.name == CheckName::Unit).unwrap();
    assert!(!v.ok && !unit_check.ok);
    assert_eq!(
        unit_check.detail,
        "not enabled: nothing re-attaches the policies at boot"
    );
    std::os::unix::fs::symlink("/etc/systemd/system/bbrkit-policy.service", &wants).unwrap();

    let rb = rollback::run(&mut f.host, UndoMode::default()).unwrap();
    assert!(!rb.problem, "{rb:?}");
    assert_eq!((files(&f), linked(&f)), (before, vec![]), "nothing left");
}

/// Without systemd no unit is written and the report says what to run.
#[test]
fn without_systemd_the_report_says_to_run_boot_policy() {
    let (mut f, _d, file) = with_policy(POLICY);
    let r = enable::run(&mut f.host, &opts(&file, true)).unwrap();
    let p = r.policy.unwrap();
    assert!(p.unit.is_empty());
    let last = lines(&p, true).pop().unwrap();
    assert!(
        last.starts_with("policy: no boot unit: ")
            && last.ends_with(
                "(not booted with systemd); run `bbrkit boot --policy` at every boot: OpenRC: a line in /etc/local.d/bbrkit.start (chmod +x) and `rc-update add local default`; sysvinit: a line in /etc/rc.local (before its `exit 0`) (docs/policy.md)"
            ),
        "{last}"
    );
}

/// A child cgroup after a reboot: its directory is new (a new id) or not
/// made yet. `boot --policy` refuses a missing one with the fix, attaches
/// by path once it exists (pinned under the new id), `verify` and a second
/// `enable` accept it, and rollback detaches it.
#[test]
fn a_child_cgroup_policy_is_reattached_by_path_after_a_reboot() {
    let (mut f, _d, file) = with_policy(POLICY);
    let svc = PathBuf::from("/sys/fs/cgroup/web.service");
    f.host.live.cgroups.insert(svc.clone(), 40);
    let on_svc = Options {
        policy: Some(PolicyOptions {
            file: file.clone(),
            cgroup: Some(svc.clone()),
        }),
        ..opts(&file, false)
    };
    enable::run(&mut f.host, &on_svc).unwrap();
    assert_eq!(linked(&f), [PathBuf::from("/sys/fs/bpf/bbrkit/policy/40")]);

    // Reboot: no pins, and the service's cgroup is not made yet.
    f.host.live.policy_pins.clear();
    f.host.live.cgroups.remove(&svc);
    let boot = crate::boot::run_policy(&mut f.host).unwrap();
    assert!(!boot.ok, "{boot:?}");
    assert!(
        boot.steps[0].contains("cgroup /sys/fs/cgroup/web.service does not exist (yet): create it, or start the service that owns it, then run `bbrkit boot --policy` again"),
        "{:?}",
        boot.steps
    );
    assert!(linked(&f).is_empty());

    // The service starts: a new directory, a new id.
    f.host.live.cgroups.insert(svc.clone(), 77);
    let boot = crate::boot::run_policy(&mut f.host).unwrap();
    assert!(
        boot.ok && boot.steps[0].contains("attached from"),
        "{boot:?}"
    );
    assert_eq!(linked(&f), [PathBuf::from("/sys/fs/bpf/bbrkit/policy/77")]);
    let v = verify::run(&f.host, None).unwrap();
    let attached = v
        .checks
        .iter()
        .find(|c| c.name == CheckName::PolicyAttached)
        .unwrap();
    assert!(
        attached.ok && attached.value.contains("cgroup 77"),
        "{attached:?}"
    );
    let again = enable::run(&mut f.host, &on_svc).unwrap();
    assert_eq!(again.policy.unwrap().step, PolicyStep::Unchanged);
    let img = image::load(f.root()).unwrap().unwrap();
    let records = recorded(Some(&img));
    assert_eq!(records, [(svc.display().to_string(), 40)], "one record");

    let rb = rollback::run(&mut f.host, UndoMode::default()).unwrap();
    assert!(!rb.problem, "{rb:?}");
    assert!(linked(&f).is_empty(), "the new id's pin is detached");
}

fn finding(f: &Fixture, id: FindingId) -> Option<crate::outcome::Finding> {
    let r = doctor::diagnose(&f.host).unwrap();
    r.findings.into_iter().find(|x| x.id == id)
}

/// A `congctl` route overlapping a rule's remote prefix with another
/// algorithm is named with the route and the rule; one that agrees with
/// the rule, or lies outside every prefix, is not.
#[test]
fn doctor_names_congctl_routes_the_policy_overrides() {
    let (mut f, _d, file) = with_policy(POLICY);
    enable::run(&mut f.host, &opts(&file, false)).unwrap();
    let route = |d: &str, cc: &str| crate::routes::CcRoute {
        destination: d.into(),
        table: 254,
        oif: Some(2),
        cc: cc.into(),
    };
    // Rule 1 (local_port 443 -> reno) has no remote: it overlaps every route.
    f.live().routes = Ok(vec![route("203.0.113.128/25", "reno")]);
    let x = finding(&f, FindingId::PolicyOverridesRoute).expect("rule 2 gives cubic");
    assert_eq!(
        x.evidence,
        [
            "route 203.0.113.128/25 table 254 congctl reno: rule 2 of the policy on /sys/fs/cgroup gives cubic"
        ]
    );
    assert_eq!(x.level, Level::Warning);
    f.live().routes = Ok(vec![route("10.9.0.0/16", "bbr")]);
    let x = finding(&f, FindingId::PolicyOverridesRoute).unwrap();
    assert_eq!(
        x.evidence,
        [
            "route 10.9.0.0/16 table 254 congctl bbr: rule 1 of the policy on /sys/fs/cgroup gives reno"
        ]
    );
    // A policy whose only rule agrees with the route, and one outside it.
    let agree = _d.path().join("agree.toml");
    std::fs::write(
        &agree,
        "[[rule]]\nremote = [\"10.0.0.0/8\"]\ncc = \"bbr\"\n",
    )
    .unwrap();
    enable::run(&mut f.host, &opts(&agree, false)).unwrap();
    f.live().routes = Ok(vec![
        route("10.9.0.0/16", "bbr"),
        route("192.0.2.0/24", "reno"),
        route("2001:db8::/32", "reno"),
    ]);
    assert!(finding(&f, FindingId::PolicyOverridesRoute).is_none());
    f.live().routes = Ok(vec![route("10.9.0.0/16", "cubic")]);
    assert!(finding(&f, FindingId::PolicyOverridesRoute).is_some());
}

/// No cgroup v2: info on a host without a policy, a warning with one
/// recorded, nothing when it is mounted.
#[test]
fn doctor_names_a_host_without_cgroup_v2() {
    let (mut f, _d, file) = with_policy(POLICY);
    assert!(finding(&f, FindingId::PolicyNoCgroup2).is_none());
    enable::run(&mut f.host, &opts(&file, false)).unwrap();
    f.live().cgroup2 = None;
    let x = finding(&f, FindingId::PolicyNoCgroup2).unwrap();
    assert_eq!(x.level, Level::Warning);
    assert!(x.fix.contains("mount -t cgroup2"), "{}", x.fix);
    let (mut bare, _e, _) = with_policy(POLICY);
    bare.live().cgroup2 = None;
    assert_eq!(
        finding(&bare, FindingId::PolicyNoCgroup2).unwrap().level,
        Level::Info
    );
}

#[test]
fn doctor_does_not_call_connections_a_policy_rule_governs_old() {
    let (mut f, _d, file) = with_policy(POLICY);
    enable::run(&mut f.host, &opts(&file, false)).unwrap();
    let cur = f.snap().kernel.current_cc.clone().unwrap();
    let s = |local: &str, remote: &str, cc: &str| Established {
        local: local.into(),
        remote: remote.into(),
        cc: Some(cc.into()),
        cookie: 1,
    };
    f.live().sockets = Ok(vec![
        s("10.0.0.1:443", "10.0.0.2:50000", "reno"), // rule 1 gives reno
        s("10.0.0.1:40000", "203.0.113.9:443", "cubic"), // rule 2 gives cubic, the default
        s("10.0.0.1:40000", "198.51.100.1:443", "reno"), // no rule: old
    ]);
    let r = doctor::diagnose(&f.host).unwrap();
    let x = r
        .findings
        .iter()
        .find(|x| x.id == FindingId::OldConnections)
        .unwrap_or_else(|| panic!("{cur} {:#?}", r.findings));
    assert_eq!(
        x.title,
        format!("1 established connection(s) not on the default {cur}"),
        "{cur}"
    );
    assert_eq!(
        x.evidence,
        [
            "10.0.0.1:40000 -> 198.51.100.1:443 uses reno",
            "not counted: 1 connection(s) an attached policy's rule gives their algorithm (verify judges them)"
        ]
    );
    // Without the policy's link, all three are old.
    f.host.live.policy_pins.clear();
    let r = doctor::diagnose(&f.host).unwrap();
    let x = r
        .findings
        .iter()
        .find(|x| x.id == FindingId::OldConnections)
        .unwrap();
    assert!(x.title.starts_with("2 established"), "{x:?}");
}

#[test]
fn rules_an_earlier_rule_covers_are_warned_with_their_lines() {
    let text =
        "[[rule]]\ncc = \"cubic\"\n\n[[rule]]\nname = \"web\"\nlocal_port = [443]\ncc = \"reno\"\n";
    let (mut f, _d, file) = with_policy(text);
    let want = "rule 2 (line 4) \"web\" can never match: rule 1 (line 1) matches every connection it would, and the first matching rule applies";
    for dry_run in [true, false] {
        let r = enable::run(&mut f.host, &opts(&file, dry_run)).unwrap();
        let p = r.policy.as_ref().unwrap();
        assert_eq!(p.warnings, [want]);
        assert!(
            lines(p, dry_run).contains(&format!("policy: warning: {want}")),
            "{:#?}",
            lines(p, dry_run)
        );
        let json = serde_json::to_value(p).unwrap();
        assert_eq!(json["warnings"], serde_json::json!([want]));
    }
    // A policy without dead rules has an empty list.
    let (mut f, _d, file) = with_policy(POLICY);
    let r = enable::run(&mut f.host, &opts(&file, true)).unwrap();
    assert!(r.policy.unwrap().warnings.is_empty());
}

/// Issue 33 item 5: no bpffs, no privileges, or an exclusive sock_ops
/// attachment above the cgroup refuse the plan with the fix; a dry run says
/// so too, and nothing is written.
#[test]
fn attaching_needs_bpffs_privileges_and_no_exclusive_attachment() {
    use crate::bpf::FeatureId;
    for (what, want) in [
        (
            "bpffs",
            "--policy: /sys/fs/bpf is not bpffs: the policy is pinned there",
        ),
        (
            "privileges",
            "--policy: missing CAP_BPF: attaching a policy needs CAP_BPF",
        ),
        (
            "exclusive",
            "--policy: cgroup /sys/fs/cgroup holds a sock_ops program attached exclusively",
        ),
    ] {
        let (mut f, _d, file) = with_policy(POLICY);
        let features = &mut f.live().bpf_features.features;
        match what {
            "bpffs" => {
                let b = features
                    .iter_mut()
                    .find(|x| x.id == FeatureId::Bpffs)
                    .unwrap();
                (b.present, b.detail) = (false, "/sys/fs/bpf is not bpffs".into());
            }
            "privileges" => {
                let p = features
                    .iter_mut()
                    .find(|x| x.id == FeatureId::Privileges)
                    .unwrap();
                (p.present, p.detail) = (false, "missing CAP_BPF".into());
            }
            _ => f.live().sock_ops_exclusive.push("/sys/fs/cgroup".into()),
        }
        let before = files(&f);
        for dry_run in [true, false] {
            let e = enable::run(&mut f.host, &opts(&file, dry_run))
                .unwrap_err()
                .to_string();
            assert!(e.starts_with(want), "{what}: {e}");
        }
        assert_eq!((files(&f), linked(&f)), (before, vec![]), "{what}");
    }
}

/// Issue 33: verify judges a recent window. Two failures, the latest a
/// minute before the reading: `policy_connections` fails; the same two
/// with the latest 16 minutes back (past [`judge::FAILURE_WINDOW`], the
/// Prometheus alert's 15 minutes): it passes, the total still shown;
/// failures without a stamp (a program older than it) still fail.
#[test]
fn verify_forgets_a_transient_failure_after_its_window() {
    let (mut f, _d, file) = with_policy(POLICY);
    enable::run(&mut f.host, &opts(&file, false)).unwrap();
    const MIN: u64 = 60_000_000_000;
    let set = |f: &mut Fixture, last_failed_ns: u64| {
        let arm = bbrkit_policy::attached::ArmCounters {
            rule: 0,
            arm: 0,
            cc: "reno".into(),
            matched: 5,
            assigned: 3,
            kept_app: 0,
            kept_route: 0,
            failed: 2,
        };
        let stats = bbrkit_policy::attached::Stats {
            last_failed_ns,
            read_ns: 100 * MIN,
            ..Default::default()
        };
        f.host.live.policy_pins[0].live.as_mut().unwrap().counters = Ok(Counters {
            arms: vec![arm],
            stats,
        });
    };
    let check = |f: &Fixture| {
        let v = verify::run(&f.host, None).unwrap();
        let c = v
            .checks
            .into_iter()
            .find(|c| c.name == CheckName::PolicyConnections)
            .unwrap();
        (v.ok, c)
    };
    set(&mut f, 99 * MIN);
    let (ok, c) = check(&f);
    assert!(!ok && !c.ok, "{c:?}");
    assert!(c.value.ends_with("2 failed, the latest 60 s ago"), "{c:?}");
    assert_eq!(c.expected, "no failure in the last 15 min");
    set(&mut f, 84 * MIN);
    let (ok, c) = check(&f);
    assert!(ok && c.ok, "{c:?}");
    assert!(c.value.ends_with("2 failed, the latest 960 s ago"), "{c:?}");
    set(&mut f, 0);
    assert!(!check(&f).1.ok, "failures without a stamp count as recent");
}

/// Issue 33 item 5: a policy pinned by an older layout with the same maps
/// is not "unchanged": doctor names it, `enable` replaces it through the
/// free directory, and rollback still removes everything.
#[test]
fn an_older_layout_with_the_same_maps_is_replaced() {
    let (mut f, _d, file) = with_policy(POLICY);
    let before = files(&f);
    enable::run(&mut f.host, &opts(&file, false)).unwrap();
    f.host.live.policy_pins[0].live.as_mut().unwrap().layout = 1;
    let d = doctor::diagnose(&f.host).unwrap();
    let x = d
        .findings
        .iter()
        .find(|x| x.id == FindingId::PolicyOldLayout)
        .expect("policy_old_layout");
    assert_eq!(x.evidence, ["/sys/fs/bpf/bbrkit/policy/1: layout 1"]);
    let r = enable::run(&mut f.host, &opts(&file, false)).unwrap();
    let p = r.policy.unwrap();
    assert_eq!(p.step, PolicyStep::Replaced);
    assert_eq!(p.replaces.as_deref(), Some("/sys/fs/bpf/bbrkit/policy/1"));
    assert_eq!(linked(&f), [PathBuf::from("/sys/fs/bpf/bbrkit/policy/1-b")]);
    let again = enable::run(&mut f.host, &opts(&file, false)).unwrap();
    assert_eq!(again.policy.unwrap().step, PolicyStep::Unchanged);
    let rb = rollback::run(&mut f.host, UndoMode::default()).unwrap();
    assert!(!rb.problem, "{rb:?}");
    assert_eq!((files(&f), linked(&f)), (before, vec![]));
}

/// Issue 33.6: a policy naming bbr3 registers it as part of its own change
/// (recorded), leaves the namespace default alone, registers it again at
/// boot, and rollback unregisters it; a verifier refusal changes nothing.
#[test]
fn a_policy_naming_bbr3_registers_it_without_making_it_the_default() {
    let text = "[[rule]]\nlocal_port = [443]\ncc = \"bbr3\"\n";
    let (mut f, _d, file) = with_policy(text);
    let before = files(&f);
    f.live().trial_load = Err(crate::algorithm::RegisterFailure {
        reason: "the kernel's verifier refused BPF program x".into(),
        verifier_log: None,
    });
    let e = enable::run(&mut f.host, &opts(&file, false)).unwrap_err();
    assert_eq!(
        e.to_string(),
        "--policy: the policy names bbr3, which bbrkit would register for it, but cannot: the kernel's verifier refused BPF program x"
    );
    assert_eq!((files(&f), linked(&f)), (before.clone(), vec![]));
    f.live().trial_load = Ok(());

    let dry = enable::run(&mut f.host, &opts(&file, true)).unwrap();
    let lines = dry.policy_lines();
    assert!(
        lines.iter().any(|l| l.starts_with(
            "policy: would register bbr3 with a pinned link /sys/fs/bpf/bbrkit/bbr3/link (verifier: accepted"
        ) && l.contains("the namespace default is left as it is")),
        "{lines:?}"
    );
    assert!(f.host.live.pinned.is_empty(), "a dry run registers nothing");

    let r = enable::run(&mut f.host, &opts(&file, false)).unwrap();
    let reg = &r.policy.unwrap().registers;
    assert_eq!(
        (reg[0].cc.as_str(), reg[0].registration),
        ("bbr3", RegistrationStep::Registered)
    );
    assert_eq!(f.host.live.pinned, ["bbr3"]);
    assert_eq!(f.host.sysctl(crate::KEY_CC).as_deref(), Some("cubic"));
    let img = image::load(f.root()).unwrap().unwrap();
    assert!(img.changes.contains(&Recorded::BpfRegistration {
        cc: "bbr3".into(),
        pinned_before: vec![]
    }));
    assert!(verify::run(&f.host, None).unwrap().ok);

    // A reboot: no pins, bbr3 gone. `boot --policy` registers it first.
    f.live().register("bbr3", Holding::None);
    f.host.live.policy_pins.clear();
    let b = crate::boot::run_policy(&mut f.host).unwrap();
    assert!(b.ok, "{b:?}");
    assert!(
        b.steps[0].starts_with("bbr3: registered, link pinned at"),
        "{b:?}"
    );
    assert_eq!((f.host.live.pinned.len(), linked(&f).len()), (1, 1));
    assert_eq!(f.host.sysctl(crate::KEY_CC).as_deref(), Some("cubic"));

    let rb = rollback::run(&mut f.host, UndoMode::default()).unwrap();
    assert!(!rb.problem, "{rb:?}");
    assert_eq!(rb.bpf[0].action, ActionKind::Unregistered);
    assert_eq!((files(&f), linked(&f)), (before, vec![]), "nothing left");
    assert!(f.host.live.pinned.is_empty());
    assert!(!f.host.available_cc().contains(&"bbr3".to_string()));
    assert_eq!(f.host.sysctl(crate::KEY_CC).as_deref(), Some("cubic"));
}
