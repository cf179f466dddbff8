//! `doctor`'s findings about which algorithm connections actually use:
//! established ones on another algorithm than the default
//! (`old_connections`), routes with their own (`route_congctl`).

use crate::host::connection_lines;
use crate::outcome::{Finding, FindingId, Level};
use crate::snapshot::Snapshot;

pub(super) fn old_connections(snap: &Snapshot) -> Option<Finding> {
    let cur = snap.kernel.current_cc.as_ref()?;
    let socks = snap.sockets.as_ref().ok()?;
    let (n, old) = connection_lines(socks, |s| s.cc.as_deref() != Some(cur.as_str()), "");
    (n > 0).then(|| {
        Finding::new(FindingId::OldConnections, Level::Warning, format!("{n} established connection(s) not on the default {cur}"), old,
            "they were created before the switch (or the application chose another algorithm): they move when they reconnect; restart long-lived services")
    })
}

pub(super) fn route_congctl(snap: &Snapshot) -> Option<Finding> {
    let routes = snap.doctor.routes.as_ref()?;
    if routes.is_empty() {
        return None;
    }
    let cur = snap.kernel.current_cc.clone().unwrap_or_default();
    let other = routes.iter().any(|r| r.cc != cur);
    Some(Finding::new(
        FindingId::RouteCongctl,
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
