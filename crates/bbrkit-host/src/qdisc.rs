//! Interface qdiscs through rtnetlink (never `tc`): list every interface's
//! root qdisc (with mq leaves and ingress/clsact), classify it, and re-create
//! a kernel-default root so the kernel re-attaches the *current*
//! `default_qdisc` the way it does at boot (mq + leaves on multiqueue
//! devices). Never touches a qdisc somebody attached on purpose.

use netlink_packet_core::{NLM_F_CREATE, NLM_F_REPLACE};
use netlink_packet_route::RouteNetlinkMessage;
use netlink_packet_route::link::{LinkAttribute, LinkFlags, LinkMessage};
use netlink_packet_route::tc::{TcAttribute, TcHandle, TcMessage};
use serde::Serialize;

use crate::HostError;
use crate::netlink::request;

/// How bbrkit treats an interface's root qdisc.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Class {
    /// Attached by the kernel from `default_qdisc` (handle 0:), single queue.
    KernelDefault,
    /// `mq` attached by the kernel, with per-queue default leaves.
    Multiqueue,
    /// `noqueue` (virtual devices: lo, veth, bridges): not affected.
    NoQueue,
    /// Attached by someone (non-zero handle, shaping kind, or ingress
    /// shaping): left alone.
    Deliberate,
    /// Device down with no qdisc yet (`noop`); gets the default on up.
    Inactive,
}

/// One interface's queueing state.
#[derive(Debug, Clone, Serialize)]
pub struct InterfaceQdisc {
    /// Interface index.
    pub ifindex: u32,
    /// Interface name.
    pub name: String,
    /// Kind of the root qdisc (`pfifo_fast`, `mq`, `fq`, `noqueue`, ...).
    pub root: String,
    /// Root handle as `major:` (`0:` = attached by the kernel).
    pub handle: String,
    /// Kinds of mq's per-queue leaves (empty unless root is mq).
    pub leaves: Vec<String>,
    /// `ingress` or `clsact` when present.
    pub ingress: Option<String>,
    /// Number of TX queues.
    pub tx_queues: u32,
    /// Interface is administratively up.
    pub up: bool,
    /// bbrkit's classification.
    pub class: Class,
}

impl InterfaceQdisc {
    /// The kind that carries traffic: the leaf kind under mq, else the root.
    pub fn effective(&self) -> &str {
        if self.root == "mq" {
            self.leaves.first().map(String::as_str).unwrap_or("mq")
        } else {
            &self.root
        }
    }
    /// Human form, e.g. `mq (leaves: fq x4)` or `pfifo_fast 0:`.
    pub fn describe(&self) -> String {
        let mut s = format!("{} {}", self.root, self.handle);
        if !self.leaves.is_empty() {
            s.push_str(&format!(
                " (leaves: {} x{})",
                self.leaves[0],
                self.leaves.len()
            ));
        }
        if let Some(i) = &self.ingress {
            s.push_str(&format!(" + {i}"));
        }
        s
    }
}

/// Kinds that shape or schedule on purpose; never re-created.
pub const SHAPING_KINDS: &[&str] = &[
    "htb", "tbf", "cake", "netem", "hfsc", "prio", "drr", "qfq", "cbq", "red", "sfb", "choke",
    "mqprio", "taprio", "ets", "cbs", "etf", "multiq", "plug", "skbprio", "gred", "atm", "dsmark",
];

/// Classifies a root qdisc from its kind, handle major, ingress presence.
pub fn classify(kind: &str, handle_major: u16, ingress: bool) -> Class {
    if kind == "noqueue" {
        return Class::NoQueue;
    }
    if kind == "noop" {
        return Class::Inactive;
    }
    if handle_major != 0 || ingress || SHAPING_KINDS.contains(&kind) {
        return Class::Deliberate;
    }
    if kind == "mq" {
        Class::Multiqueue
    } else {
        Class::KernelDefault
    }
}

fn kind_of(attrs: &[TcAttribute]) -> String {
    attrs
        .iter()
        .find_map(|a| match a {
            TcAttribute::Kind(k) => Some(k.clone()),
            _ => None,
        })
        .unwrap_or_default()
}

/// Lists every interface of the calling thread's network namespace.
pub fn list() -> Result<Vec<InterfaceQdisc>, HostError> {
    let links = request(
        RouteNetlinkMessage::GetLink(LinkMessage::default()),
        0,
        true,
    )?;
    let qdiscs = request(
        RouteNetlinkMessage::GetQueueDiscipline(TcMessage::default()),
        0,
        true,
    )?;
    let mut out = Vec::new();
    for l in links {
        let RouteNetlinkMessage::NewLink(l) = l else {
            continue;
        };
        let ifindex = l.header.index;
        let mut name = String::new();
        let mut tx_queues = 1;
        for a in &l.attributes {
            match a {
                LinkAttribute::IfName(n) => name = n.clone(),
                LinkAttribute::NumTxQueues(n) => tx_queues = *n,
                _ => {}
            }
        }
        let mine: Vec<&TcMessage> = qdiscs
            .iter()
            .filter_map(|m| match m {
                RouteNetlinkMessage::NewQueueDiscipline(t) if t.header.index as u32 == ifindex => {
                    Some(t)
                }
                _ => None,
            })
            .collect();
        let root = mine.iter().find(|t| t.header.parent == TcHandle::ROOT);
        let ingress = mine
            .iter()
            .find(|t| t.header.parent == TcHandle::INGRESS)
            .map(|t| kind_of(&t.attributes));
        let (kind, major) = match root {
            Some(t) => (kind_of(&t.attributes), t.header.handle.major),
            None => ("noop".to_string(), 0),
        };
        let leaves = if kind == "mq" {
            mine.iter()
                .filter(|t| {
                    t.header.parent != TcHandle::ROOT
                        && t.header.parent != TcHandle::INGRESS
                        && t.header.parent.major == major
                })
                .map(|t| kind_of(&t.attributes))
                .collect()
        } else {
            Vec::new()
        };
        out.push(InterfaceQdisc {
            ifindex,
            class: classify(&kind, major, ingress.is_some()),
            name,
            root: kind,
            handle: format!("{major:x}:"),
            leaves,
            ingress,
            tx_queues,
            up: l.header.flags.contains(LinkFlags::Up),
        });
    }
    Ok(out)
}

fn root_msg(ifindex: u32, kind: Option<&str>) -> TcMessage {
    let mut m = TcMessage::with_index(ifindex as i32);
    m.header.parent = TcHandle::ROOT;
    if let Some(k) = kind {
        m.attributes.push(TcAttribute::Kind(k.to_string()));
    }
    m
}

/// Re-creates the root qdisc of `ifindex` so the kernel attaches the current
/// `default_qdisc` exactly as at boot: graft a temporary `pfifo` (the kernel
/// refuses to delete a handle-0 default), then delete it; `dev_activate()`
/// then calls `attach_default_qdiscs()` (mq + default leaves on multiqueue
/// devices, the default itself on single-queue ones).
pub fn recreate_root(ifindex: u32) -> Result<(), HostError> {
    request(
        RouteNetlinkMessage::NewQueueDiscipline(root_msg(ifindex, Some("pfifo"))),
        NLM_F_CREATE | NLM_F_REPLACE,
        false,
    )?;
    request(
        RouteNetlinkMessage::DelQueueDiscipline(root_msg(ifindex, None)),
        0,
        false,
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classification() {
        assert_eq!(classify("pfifo_fast", 0, false), Class::KernelDefault);
        assert_eq!(classify("fq_codel", 0, false), Class::KernelDefault);
        assert_eq!(classify("mq", 0, false), Class::Multiqueue);
        assert_eq!(classify("noqueue", 0, false), Class::NoQueue);
        assert_eq!(classify("noop", 0, false), Class::Inactive);
        assert_eq!(classify("fq", 0x8001, false), Class::Deliberate);
        assert_eq!(classify("htb", 1, false), Class::Deliberate);
        assert_eq!(classify("cake", 0, false), Class::Deliberate);
        assert_eq!(classify("pfifo_fast", 0, true), Class::Deliberate);
    }

    #[test]
    fn lists_loopback_of_this_namespace() {
        let l = list().unwrap();
        let lo = l.iter().find(|i| i.name == "lo").expect("lo");
        assert_eq!(lo.ifindex, 1);
    }

    #[test]
    #[ignore = "needs root"]
    fn recreate_root_returns_to_the_kernel_default_in_a_fresh_netns() {
        std::thread::spawn(|| {
            nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWNET).unwrap();
            // Bring lo up so the kernel attaches its default (noqueue).
            let mut m = LinkMessage::default();
            m.header.index = 1;
            m.header.flags = LinkFlags::Up;
            m.header.change_mask = LinkFlags::Up;
            request(RouteNetlinkMessage::SetLink(m), 0, false).unwrap();
            request(
                RouteNetlinkMessage::NewQueueDiscipline(root_msg(1, Some("pfifo"))),
                NLM_F_CREATE | NLM_F_REPLACE,
                false,
            )
            .unwrap();
            let lo = list()
                .unwrap()
                .into_iter()
                .find(|i| i.name == "lo")
                .unwrap();
            assert_eq!((lo.root.as_str(), lo.class), ("pfifo", Class::Deliberate));
            recreate_root(1).unwrap();
            let lo = list()
                .unwrap()
                .into_iter()
                .find(|i| i.name == "lo")
                .unwrap();
            assert_eq!(
                (lo.root.as_str(), lo.handle.as_str(), lo.class),
                ("noqueue", "0:", Class::NoQueue)
            );
        })
        .join()
        .unwrap();
    }
}
