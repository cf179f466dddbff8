//! `doctor`'s findings about which algorithm connections actually use:
//! established ones on another algorithm than the default
//! (`old_connections`), routes with their own (`route_congctl`).

use super::{Finding, Level, connection_lines};
use crate::kernel;

pub(super) fn old_connections(facts: &kernel::KernelFacts) -> Option<Finding> {
    let cur = facts.current_cc.as_ref()?;
    let socks = crate::verify::established_sockets().ok()?;
    let (n, old) = connection_lines(&socks, |s| s.cc.as_deref() != Some(cur.as_str()), "");
    (n > 0).then(|| {
        Finding::new("old_connections", Level::Warning, format!("{n} established connection(s) not on the default {cur}"), old,
            "they were created before the switch (or the application chose another algorithm): they move when they reconnect; restart long-lived services")
    })
}

pub(super) fn route_congctl(facts: &kernel::KernelFacts) -> Option<Finding> {
    let routes = crate::routes::with_congctl().ok()?;
    if routes.is_empty() {
        return None;
    }
    let cur = facts.current_cc.clone().unwrap_or_default();
    let other = routes.iter().any(|r| r.cc != cur);
    Some(Finding::new(
        "route_congctl",
        if other { Level::Warning } else { Level::Info },
        format!(
            "{} route(s) choose their own congestion control (congctl), overriding the default {cur}",
            routes.len()
        ),
        routes
            .iter()
            .map(|r| {
                format!(
                    "{} table {} dev #{} congctl {}",
                    r.destination,
                    r.table,
                    r.oif.unwrap_or(0),
                    r.cc
                )
            })
            .collect(),
        "connections over these routes use the route's algorithm: change it with `ip route change ... congctl <algo>` or drop congctl",
    ))
}
