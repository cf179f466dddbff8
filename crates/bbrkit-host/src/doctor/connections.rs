//! `doctor`'s findings about which algorithm connections actually use:
//! established ones on another algorithm than the default
//! (`old_connections`; those an attached policy's rule governs are
//! `verify`'s), routes with their own (`route_congctl`).

use crate::change::policy;
use crate::host::{Established, connection_lines};
use crate::outcome::{Finding, FindingId, Level};
use crate::snapshot::Snapshot;

/// Established connections on another algorithm than the default, but for
/// those an attached policy's rule governs (counted in the evidence).
pub(super) fn old_connections(snap: &Snapshot) -> Option<Finding> {
    let cur = snap.kernel.current_cc.as_ref()?;
    let socks = snap.sockets.as_ref().ok()?;
    let other = |s: &Established| s.cc.as_deref() != Some(cur.as_str());
    let ruled = socks
        .iter()
        .filter(|s| other(s) && policy::governed(snap, s))
        .count();
    let (n, mut old) = connection_lines(socks, |s| other(s) && !policy::governed(snap, s), "");
    if ruled > 0 {
        old.push(format!(
            "not counted: {ruled} connection(s) an attached policy's rule gives their algorithm (verify judges them)"
        ));
    }
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
