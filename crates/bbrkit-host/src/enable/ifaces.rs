//! Which interfaces `enable` re-creates and how each one is reported.
//! Pure decisions over an interface list; the netlink calls are in `qdisc`.

use crate::qdisc::{Class, InterfaceQdisc};

use super::InterfaceAction;

/// True when `i`'s root qdisc was attached by the kernel (directly, or as
/// mq's leaves) from a default other than `target`: created before the
/// default changed (by this run or earlier). These are the interfaces
/// `enable` re-creates once `target` is in effect. Deliberate, noqueue and
/// inactive roots never qualify.
pub fn needs_recreate(i: &InterfaceQdisc, target: Option<&str>) -> bool {
    matches!(i.class, Class::KernelDefault | Class::Multiqueue)
        && target.is_some_and(|t| t != i.effective())
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
