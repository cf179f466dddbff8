//! Root tests of `enable`/`rollback` against real interfaces and qdiscs, each
//! in a throwaway network namespace of its own thread (ifb devices created
//! through rtnetlink; the namespace and its devices vanish with the thread).
//! Our kernels cannot change `default_qdisc` (no fq, no fq_codel; the key
//! does not exist outside the initial namespace), so a root "on the old
//! default" cannot be produced; these tests pin what can be: re-creation is
//! mq-aware on a real multiqueue device, and deliberate qdiscs are reported
//! and never touched by `enable` and `rollback`.

use netlink_packet_core::{NLM_F_CREATE, NLM_F_EXCL, NLM_F_REPLACE};
use netlink_packet_route::RouteNetlinkMessage;
use netlink_packet_route::link::{InfoKind, LinkAttribute, LinkFlags, LinkInfo, LinkMessage};
use netlink_packet_route::tc::{TcAttribute, TcHandle, TcMessage};

use super::*;
use crate::change::UndoMode;
use crate::netlink::request;
use crate::qdisc::{self, Class, InterfaceQdisc};
use crate::{KEY_CC, KEY_QDISC, LinuxHost, Root, rollback, sysctl};

/// Runs `f` on a thread inside a fresh network namespace; returns the
/// initial namespace's `default_qdisc` (read before unsharing) to `f`.
fn in_netns<T: Send + 'static>(f: impl FnOnce(String) -> T + Send + 'static) -> T {
    std::thread::spawn(move || {
        let default = sysctl::read(KEY_QDISC).unwrap().expect("default_qdisc");
        nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWNET).unwrap();
        f(default)
    })
    .join()
    .unwrap()
}

fn find(name: &str) -> InterfaceQdisc {
    qdisc::list()
        .unwrap()
        .into_iter()
        .find(|i| i.name == name)
        .unwrap_or_else(|| panic!("no interface {name}"))
}

/// Creates an ifb device with `queues` TX/RX queues and brings it up.
fn ifb_up(name: &str, queues: u32) -> u32 {
    let mut m = LinkMessage::default();
    m.attributes.push(LinkAttribute::IfName(name.into()));
    m.attributes.push(LinkAttribute::NumTxQueues(queues));
    m.attributes.push(LinkAttribute::NumRxQueues(queues));
    m.attributes
        .push(LinkAttribute::LinkInfo(vec![LinkInfo::Kind(InfoKind::Ifb)]));
    request(
        RouteNetlinkMessage::NewLink(m),
        NLM_F_CREATE | NLM_F_EXCL,
        false,
    )
    .unwrap();
    let idx = find(name).ifindex;
    let mut up = LinkMessage::default();
    up.header.index = idx;
    up.header.flags = LinkFlags::Up;
    up.header.change_mask = LinkFlags::Up;
    request(RouteNetlinkMessage::SetLink(up), 0, false).unwrap();
    idx
}

fn add_qdisc(ifindex: u32, parent: TcHandle, handle: TcHandle, kind: &str) {
    let mut m = TcMessage::with_index(ifindex as i32);
    m.header.parent = parent;
    m.header.handle = handle;
    m.attributes.push(TcAttribute::Kind(kind.into()));
    request(
        RouteNetlinkMessage::NewQueueDiscipline(m),
        NLM_F_CREATE | NLM_F_REPLACE,
        false,
    )
    .unwrap();
}

fn shape(i: &InterfaceQdisc) -> (String, String, Vec<String>, Option<String>, Class) {
    (
        i.root.clone(),
        i.handle.clone(),
        i.leaves.clone(),
        i.ingress.clone(),
        i.class,
    )
}

#[test]
#[ignore = "needs root"]
fn recreate_root_is_mq_aware_on_a_real_multiqueue_device() {
    in_netns(|default| {
        let idx = ifb_up("bbrkmq0", 4);
        let before = find("bbrkmq0");
        assert_eq!(
            (before.root.as_str(), before.handle.as_str(), before.class),
            ("mq", "0:", Class::Multiqueue),
            "{before:?}"
        );
        assert_eq!(before.leaves, vec![default.clone(); 4]);
        // Replace the root with something else, as an old default would be.
        add_qdisc(idx, TcHandle::ROOT, TcHandle::UNSPEC, "pfifo");
        assert_eq!(find("bbrkmq0").root, "pfifo");
        qdisc::recreate_root(idx).unwrap();
        let after = find("bbrkmq0");
        assert_eq!(
            shape(&after),
            shape(&before),
            "the kernel re-attached mq with one {default} leaf per queue"
        );
    });
}

#[test]
#[ignore = "needs root"]
fn enable_and_rollback_report_deliberate_qdiscs_and_never_touch_them() {
    in_netns(|default| {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path()).unwrap();
        let shaped = ifb_up("bbrkd0", 1);
        add_qdisc(
            shaped,
            TcHandle::ROOT,
            TcHandle { major: 1, minor: 0 },
            "pfifo",
        );
        let policed = ifb_up("bbrkd1", 1);
        add_qdisc(
            policed,
            TcHandle::INGRESS,
            TcHandle {
                major: 0xffff,
                minor: 0,
            },
            "ingress",
        );
        ifb_up("bbrkmq0", 4);
        let names = ["bbrkd0", "bbrkd1", "bbrkmq0"];
        let snapshot = || names.map(|n| shape(&find(n)));
        let before = snapshot();
        assert_eq!(before[0].4, Class::Deliberate);
        assert_eq!(
            (before[1].0.as_str(), before[1].3.as_deref(), before[1].4),
            (default.as_str(), Some("ingress"), Class::Deliberate)
        );
        assert_eq!(before[2].4, Class::Multiqueue);

        sysctl::write(KEY_CC, "reno").unwrap();
        let opts = Options::new("bbr");
        let r = run(&mut LinuxHost::new(root.clone()), &opts).unwrap();
        assert!(r.changed && !r.problem, "{r:?}");
        let action = |n: &str| {
            r.interfaces
                .iter()
                .find(|a| a.name == n)
                .map(|a| a.action)
                .unwrap_or_else(|| panic!("{n} not reported: {r:?}"))
        };
        assert_eq!(action("bbrkd0"), InterfaceVerb::Deliberate);
        assert_eq!(action("bbrkd1"), InterfaceVerb::Deliberate);
        // The default qdisc is the host's in a namespace: nothing to re-create.
        assert_eq!(action("bbrkmq0"), InterfaceVerb::UnchangedDefault);
        assert_eq!(snapshot(), before, "enable changed a qdisc");
        assert_eq!(sysctl::read(KEY_CC).unwrap().as_deref(), Some("bbr"));

        let rb = rollback::run(&mut LinuxHost::new(root), UndoMode::default()).unwrap();
        assert!(!rb.problem, "{rb:?}");
        assert_eq!(snapshot(), before, "rollback changed a qdisc");
        assert_eq!(sysctl::read(KEY_CC).unwrap().as_deref(), Some("reno"));
    });
}
