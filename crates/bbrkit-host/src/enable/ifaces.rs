//! Which interfaces `enable` re-creates and how each one is reported.
//! Pure decisions over an interface list; the netlink calls are in `qdisc`.

use crate::qdisc::{Class, InterfaceQdisc};

use super::InterfaceAction;

/// True when `i`'s root qdisc was attached by the kernel from the old
/// default (directly, or as mq's leaves) and the default changes: the
/// interfaces `enable` re-creates. Deliberate, noqueue and inactive roots
/// never qualify.
pub fn needs_recreate(i: &InterfaceQdisc, old: Option<&str>, new: Option<&str>) -> bool {
    matches!(i.class, Class::KernelDefault | Class::Multiqueue)
        && old == Some(i.effective())
        && new.is_some()
        && new != old
}

pub(super) fn describe_interfaces(
    ifaces: &[InterfaceQdisc],
    candidate: &dyn Fn(&InterfaceQdisc) -> bool,
    verb: &str,
    new: Option<&str>,
) -> Vec<InterfaceAction> {
    ifaces
        .iter()
        .map(|i| {
            let (action, detail) = match i.class {
                _ if candidate(i) => (
                    verb.to_string(),
                    format!(
                        "on the old default {}; re-create so it gets {}",
                        i.effective(),
                        new.unwrap_or("?")
                    ),
                ),
                Class::NoQueue => (
                    "noqueue".into(),
                    "virtual device without a queue: unaffected".into(),
                ),
                Class::Inactive => (
                    "inactive".into(),
                    "no qdisc yet (down): gets the default when brought up".into(),
                ),
                Class::Deliberate => (
                    "deliberate".into(),
                    "attached on purpose (shaping, explicit handle or ingress): left alone".into(),
                ),
                _ if new == Some(i.effective()) => (
                    "already_default".into(),
                    format!("already on {}", i.effective()),
                ),
                _ => (
                    "unchanged_default".into(),
                    format!("kernel default {}: left as is", i.effective()),
                ),
            };
            InterfaceAction {
                name: i.name.clone(),
                before: i.describe(),
                action,
                detail,
            }
        })
        .collect()
}
