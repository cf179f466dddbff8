//! Interface qdiscs through rtnetlink (never `tc`): the listing and its
//! classification are `bbrkit_diag::qdisc`'s (re-exported here under the
//! names the host commands use); this module re-creates a kernel-default
//! root so the kernel re-attaches the *current* `default_qdisc` the way it
//! does at boot (mq + leaves on multiqueue devices). Never touches a qdisc
//! somebody attached on purpose.

use netlink_packet_core::{NLM_F_CREATE, NLM_F_REPLACE};
use netlink_packet_route::RouteNetlinkMessage;
use netlink_packet_route::tc::{TcAttribute, TcHandle, TcMessage};

pub use bbrkit_diag::qdisc::{Class, InterfaceQdisc, SHAPING_KINDS, classify};

use crate::HostError;
use crate::netlink::request;

/// Lists every interface of the calling thread's network namespace.
pub fn list() -> Result<Vec<InterfaceQdisc>, HostError> {
    bbrkit_diag::qdisc::list().map_err(crate::netlink::host_error)
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
    use netlink_packet_route::link::{LinkFlags, LinkMessage};

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
