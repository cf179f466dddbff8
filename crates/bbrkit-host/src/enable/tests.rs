//! Unit tests of `enable`'s planning.

use super::ifaces::describe_interfaces;
use super::plan::{Setting, render};
use super::*;
use crate::qdisc::{self, InterfaceQdisc};

fn iface(name: &str, root: &str, major: u16, leaves: &[&str], ingress: bool) -> InterfaceQdisc {
    InterfaceQdisc {
        ifindex: 1,
        name: name.into(),
        root: root.into(),
        handle: format!("{major:x}:"),
        leaves: leaves.iter().map(|s| s.to_string()).collect(),
        ingress: ingress.then(|| "ingress".to_string()),
        tx_queues: leaves.len().max(1) as u32,
        up: true,
        class: qdisc::classify(root, major, ingress),
    }
}

#[test]
fn only_kernel_defaults_on_the_old_default_are_recreated() {
    let list = [
        iface("eth0", "pfifo_fast", 0, &[], false),
        iface(
            "eth1",
            "mq",
            0,
            &["pfifo_fast", "pfifo_fast", "pfifo_fast", "pfifo_fast"],
            false,
        ),
        iface("eth2", "htb", 1, &[], false),
        iface("eth3", "pfifo_fast", 0, &[], true),
        iface("eth4", "fq", 0x8001, &[], false),
        iface("lo", "noqueue", 0, &[], false),
        iface("ifb0", "noop", 0, &[], false),
        iface("eth5", "fq", 0, &[], false),
    ];
    let picked: Vec<&str> = list
        .iter()
        .filter(|i| needs_recreate(i, Some("fq")))
        .map(|i| i.name.as_str())
        .collect();
    assert_eq!(picked, ["eth0", "eth1"]);
    // No target (keep, or fq absent): nothing is re-created.
    assert!(list.iter().all(|i| !needs_recreate(i, None)));
    // Target pfifo_fast: only the kernel-default fq root (eth5) is stale;
    // an explicitly attached fq (eth4) is deliberate and stays.
    let picked: Vec<&str> = list
        .iter()
        .filter(|i| needs_recreate(i, Some("pfifo_fast")))
        .map(|i| i.name.as_str())
        .collect();
    assert_eq!(picked, ["eth5"]);
    let d = describe_interfaces(
        &list,
        &|i| needs_recreate(i, Some("fq")),
        "recreated",
        Some("fq"),
    );
    let actions: Vec<&str> = d.iter().map(|a| a.action.as_str()).collect();
    assert_eq!(
        actions,
        [
            "recreated",
            "recreated",
            "deliberate",
            "deliberate",
            "deliberate",
            "noqueue",
            "inactive",
            "already_default"
        ]
    );
    assert_eq!(d[1].before, "mq 0: (leaves: pfifo_fast x4)");
}

#[test]
fn tuning_set_matches_the_seeds() {
    let keys: Vec<&str> = TUNING.iter().map(|t| t.0).collect();
    assert!(keys.contains(&"net.ipv4.tcp_notsent_lowat"));
    assert!(
        TUNING
            .iter()
            .all(|t| !t.2.is_empty() && !t.0.contains("ip_forward"))
    );
    let s = vec![Setting {
        key: "k".into(),
        value: "v".into(),
        rationale: "why".into(),
        persist: true,
        optional: true,
        host_only: None,
    }];
    assert!(render(&s).ends_with("\n# why\n-k = v\n"));
}

#[test]
fn plan_writes_nothing_and_apply_records_before_writing() {
    let dir = tempfile::tempdir().unwrap();
    let root = Root::new(dir.path()).unwrap();
    let opts = Options {
        cc: "reno".into(),
        qdisc: QdiscChoice::Keep,
        tune: false,
        dry_run: false,
        no_apply: true,
        force: false,
    };
    let p = plan(&root, &opts).unwrap();
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "plan wrote"
    );
    assert!(
        matches!(&p.steps[..], [Step::WriteFile { .. }]),
        "{:?}",
        p.steps
    );
    assert_eq!(
        p.created_dirs,
        [
            root.path("etc"),
            root.path("etc/sysctl.d"),
            root.path("var"),
            root.path("var/lib"),
            root.path("var/lib/bbrkit"),
        ]
    );
    // The dry run is the plan, with no steps.
    let dry = plan(
        &root,
        &Options {
            dry_run: true,
            ..opts.clone()
        },
    )
    .unwrap();
    assert!(dry.steps.is_empty() && dry.report.changed && dry.report.dry_run);
    assert_eq!(dry.report.content, p.report.content);

    let r = apply(&root, p).unwrap();
    assert!(r.changed && !r.problem);
    assert_eq!(
        std::fs::read_to_string(root.bbrkit_file()).unwrap(),
        r.content
    );
    let image = crate::state::load(&root).unwrap().unwrap();
    assert_eq!(image.files[0].prior, crate::state::Prior::Absent);
    assert!(image.runtime.is_empty(), "--no-apply sets nothing");
    assert_eq!(image.created_dirs.len(), 5);
    // Planned again: nothing to change, no steps.
    let again = plan(&root, &opts).unwrap();
    assert!(again.steps.is_empty() && !again.report.changed);
}
