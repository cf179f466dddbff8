//! Interface qdiscs as rtnetlink reports them (never `tc`): every
//! interface's root qdisc with mq's leaves and ingress/clsact, and how
//! bbrkit classifies it (attached by the kernel from `default_qdisc`, or on
//! purpose by someone).
//!
//! Owns the listing and the classification. Only reads: re-creating a root
//! qdisc is `bbrkit-host`'s (`qdisc::recreate_root`), through the same
//! [`Rtnl`] client.

use netlink_packet_route::RouteNetlinkMessage;
use netlink_packet_route::link::{LinkAttribute, LinkFlags, LinkMessage};
use netlink_packet_route::tc::{TcAttribute, TcHandle, TcMessage};
use serde::Serialize;

use crate::rtnl::{Rtnl, RtnlError};

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

impl Class {
    /// Display words (`bbrkit check`'s interface lines).
    pub fn word(self) -> &'static str {
        match self {
            Class::KernelDefault => "kernel default",
            Class::Multiqueue => "multiqueue",
            Class::NoQueue => "no queue",
            Class::Deliberate => "deliberate",
            Class::Inactive => "inactive",
        }
    }
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
pub fn list() -> Result<Vec<InterfaceQdisc>, RtnlError> {
    let mut rtnl = Rtnl::open()?;
    let links = rtnl.dump(
        "dump links",
        RouteNetlinkMessage::GetLink(LinkMessage::default()),
    )?;
    let qdiscs = rtnl.dump(
        "dump qdiscs",
        RouteNetlinkMessage::GetQueueDiscipline(TcMessage::default()),
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
}
