//! The policy's judgements of a snapshot: `verify`'s checks and `doctor`'s
//! findings (pure functions; see the parent module's diagram).

use std::path::Path;

use bbrkit_policy::Compiled;

use super::{PolicyLive, PolicyRecord, compile};
use crate::host::Established;
use crate::live::Foreign;
use crate::outcome::{Check, CheckName, Finding, FindingId, Level};
use crate::snapshot::Snapshot;

/// The attached pin of a recorded policy, if any.
pub(super) fn attached<'a>(
    snap: &'a Snapshot,
    r: &PolicyRecord,
) -> Option<(&'a Path, &'a PolicyLive)> {
    r.pin_dirs().into_iter().find_map(|d| {
        let p = snap.policy.pins.iter().find(|p| p.dir == d)?;
        let l = p.live.as_ref().ok().filter(|l| l.cgroup_id == r.id())?;
        Some((p.dir.as_path(), l))
    })
}

/// The algorithm `compiled`'s rule gives `s` (`None`: no rule with an arm
/// matches it, or its addresses do not parse): `decide`, as the program.
fn rule_cc<'a>(compiled: &'a Compiled, s: &Established) -> Option<&'a str> {
    let l = s.local.parse::<std::net::SocketAddr>().ok()?;
    let r = s.remote.parse::<std::net::SocketAddr>().ok()?;
    let d = compiled.decide(r.ip(), l.port(), r.port(), s.cookie)?;
    d.arm
        .and_then(|a| compiled.rules[d.rule].arms.get(a))
        .map(|a| a.cc.as_str())
}

/// Live connections whose algorithm agrees with `decide` (matched ones
/// only): `(agree, disagree)`.
pub fn agreement(compiled: &Compiled, socks: &[Established]) -> (usize, usize) {
    let mut agree = (0, 0);
    for s in socks {
        match rule_cc(compiled, s) {
            Some(w) if s.cc.as_deref() == Some(w) => agree.0 += 1,
            Some(_) => agree.1 += 1,
            None => {}
        }
    }
    agree
}

/// A rule of a policy attached now (a pin with a live link and readable
/// maps) gives `s` an algorithm: the policy, not the host default, decides
/// it (`doctor`'s `old_connections` leaves it to `verify`'s
/// `policy.*.connections`).
pub fn governed(snap: &Snapshot, s: &Established) -> bool {
    snap.policy.pins.iter().any(|p| {
        p.live
            .as_ref()
            .ok()
            .and_then(|l| l.maps.as_ref().ok())
            .is_some_and(|c| rule_cc(c, s).is_some())
    })
}

/// How far back `verify` judges a policy's failures (the kernel refusing
/// a rule's algorithm): 15 minutes, the window of the `BbrkitPolicyFailures`
/// alert (`increase(...[15m])`, contrib/prometheus/bbrkit.rules.yml), so
/// both forget a transient failure at the same time. The program stamps its
/// latest failure with the monotonic clock (`BKPOL_S_LAST_FAILED`); the
/// counters keep the total since the policy was attached.
pub const FAILURE_WINDOW: std::time::Duration = std::time::Duration::from_secs(15 * 60);

/// The policy's failures since it was attached, whether one is recent
/// (within [`FAILURE_WINDOW`] of the reading; failures without a stamp, of
/// a program older than the stamp, count as recent) and how long ago the
/// latest was.
fn failures(l: &PolicyLive) -> (u64, (bool, Option<std::time::Duration>)) {
    let Ok(k) = &l.counters else {
        return (0, (false, None));
    };
    let failed: u64 = k.arms.iter().map(|a| a.failed).sum();
    let ago = k.stats.since_failed().filter(|_| failed > 0);
    let recent = failed > 0 && ago.is_none_or(|d| d < FAILURE_WINDOW);
    (failed, (recent, ago))
}

/// `verify`: each recorded policy is attached to its cgroup, its maps equal
/// the copy, and the program set the algorithm of every connection it
/// tried to (the live connections' agreement with `decide` in the detail).
pub fn checks(snap: &Snapshot) -> Vec<Check> {
    let mut out = Vec::new();
    if !snap.policy.records.is_empty() {
        out.extend(super::boot_unit::policy_check(snap));
    }
    for r in &snap.policy.records {
        let cg = r.cgroup.display().to_string();
        let att = attached(snap, r);
        out.push(Check::new(
            CheckName::PolicyAttached,
            att.is_some_and(|(_, l)| l.cgroup_id == r.id()),
            format!("policy.{cg}"),
            att.map_or("not attached".into(), |(d, l)| {
                format!(
                    "link {} program {} cgroup {} at {}",
                    l.link_id,
                    l.prog_id,
                    l.cgroup_id,
                    d.display()
                )
            }),
            format!("attached to cgroup id {}", r.id()),
            "the link pin's cgroup".to_string(),
        ));
        let want = r
            .text
            .as_deref()
            .map(|t| compile(&r.copy.display().to_string(), t));
        let (ok, value, detail) = match (att, &want) {
            (_, None) => (
                false,
                "no copy".to_string(),
                format!("{} is missing", r.copy.display()),
            ),
            (_, Some(Err(e))) => (false, "bad copy".to_string(), e.to_string()),
            (None, _) => (false, "not attached".to_string(), String::new()),
            (Some((_, l)), Some(Ok((_, c)))) => match &l.maps {
                Ok(m) if m == c => (
                    true,
                    "equal".to_string(),
                    format!("{} rules", c.rules.len()),
                ),
                Ok(_) => (
                    false,
                    "differ".to_string(),
                    "the maps hold another policy".to_string(),
                ),
                Err(e) => (false, "unreadable".to_string(), e.clone()),
            },
        };
        out.push(Check::new(
            CheckName::PolicyMaps,
            ok,
            format!("policy.{cg}.maps"),
            value,
            format!("equal to {}", r.copy.display()),
            detail,
        ));
        if let Some((_, found)) = foreign_programs(snap)
            .into_iter()
            .find(|(c, _)| *c == r.cgroup.as_path())
        {
            let (ok, value, detail) = match found {
                Ok(f) if f.is_empty() => (true, "none".to_string(), String::new()),
                Ok(f) => (
                    false,
                    format!("{} program(s)", f.len()),
                    f.iter()
                        .map(Foreign::evidence)
                        .collect::<Vec<_>>()
                        .join("; "),
                ),
                Err(e) => (false, "unreadable".to_string(), e.to_string()),
            };
            out.push(Check::new(
                CheckName::PolicyForeign,
                ok,
                format!("policy.{cg}.foreign"),
                value,
                "none",
                detail,
            ));
        }
        if let (Some((_, l)), Some(Ok((_, c)))) = (att, &want) {
            let socks = snap.sockets.as_deref().unwrap_or_default();
            let (agree, disagree) = agreement(c, socks);
            let (failed, recent) = failures(l);
            let mut value = format!("{agree} agree, {disagree} differ, {failed} failed");
            if let Some(ago) = recent.1 {
                value.push_str(&format!(", the latest {} s ago", ago.as_secs()));
            }
            out.push(Check::new(
                CheckName::PolicyConnections,
                !recent.0,
                format!("policy.{cg}.connections"),
                value,
                format!("no failure in the last {} min", FAILURE_WINDOW.as_secs() / 60),
                "matched live connections vs the rule's algorithm; a difference is the application's own choice, a locked route, a connection opened before the policy or outside the cgroup; a failure is the kernel refusing the rule's algorithm, judged over the window".to_string(),
            ));
        }
    }
    out
}

/// The programs around each recorded policy's cgroup that are not bbrkit's
/// pinned policies (`Err`: they could not be listed).
pub fn foreign_programs(snap: &Snapshot) -> Vec<(&Path, Result<Vec<Foreign>, &str>)> {
    let pinned: Vec<u32> = snap
        .policy
        .pins
        .iter()
        .filter_map(|p| p.live.as_ref().ok().map(|l| l.link_id))
        .collect();
    snap.policy
        .programs
        .iter()
        .map(|(cg, around)| {
            let found = around
                .as_ref()
                .map(|a| crate::live::foreign(a, cg, &pinned))
                .map_err(String::as_str);
            (cg.as_path(), found)
        })
        .collect()
}

/// `doctor`: map pins without a link, a policy program without a pin,
/// rules no connection matched, another program's sock_ops on the cgroup.
pub fn findings(snap: &Snapshot) -> Vec<Finding> {
    let mut out = Vec::new();
    let half: Vec<String> = snap
        .policy
        .pins
        .iter()
        .filter(|p| p.live.is_err())
        .map(|p| p.dir.display().to_string())
        .collect();
    if !half.is_empty() {
        out.push(Finding::new(
            FindingId::PolicyPinsWithoutProgram,
            Level::Warning,
            "policy map pins without an attached program",
            half.iter().map(|d| format!("{d}: no link pin")).collect(),
            "left by an interrupted apply; `bbrkit rollback` (or `bbrkit enable --policy` again) removes them",
        ));
    }
    for (cg, found) in foreign_programs(snap) {
        let Ok(found) = found else { continue };
        let (held, others): (Vec<Foreign>, Vec<Foreign>) = found.into_iter().partition(|f| f.ours);
        let unpinned: Vec<String> = held.iter().map(Foreign::evidence).collect();
        if !unpinned.is_empty() {
            out.push(Finding::new(
                FindingId::PolicyWithoutPin,
                Level::Warning,
                format!(
                    "a bbrkit policy program runs on {} without a pin of bbrkit's",
                    cg.display()
                ),
                unpinned,
                "a process holds it (a trial, policy_peer); it goes when that process ends",
            ));
        }
        let foreign: Vec<String> = others.iter().map(Foreign::evidence).collect();
        if !foreign.is_empty() {
            out.push(Finding::new(FindingId::PolicyForeignSockops, Level::Warning, format!("{} other sock_ops program(s) can set the algorithm of the policy's sockets on {}", foreign.len(), cg.display()), foreign, "a program on an ancestor, or on the cgroup attached after the policy, runs after it and its setsockopt replaces the policy's algorithm; one on a descendant, or attached before, runs first and the policy keeps its choice (kept_app). Stop or detach it (bpftune, Cilium, a trial), or move the policy to a cgroup it does not share"));
        }
    }
    for r in &snap.policy.records {
        let Some((dir, l)) = attached(snap, r) else {
            continue;
        };
        if l.layout != bbrkit_policy::attached::LAYOUT {
            out.push(Finding::new(
                FindingId::PolicyOldLayout,
                Level::Warning,
                format!(
                    "the policy on {} runs an older bbrkit's program (pin layout {}, this bbrkit's is {})",
                    r.cgroup.display(),
                    l.layout,
                    bbrkit_policy::attached::LAYOUT
                ),
                vec![format!("{}: layout {}", dir.display(), l.layout)],
                format!(
                    "`bbrkit enable --policy {} --cgroup {}` replaces it with the same rules, without a gap",
                    r.copy.display(),
                    r.cgroup.display()
                ),
            ));
        }
        let Ok(c) = &l.counters else { continue };
        let never = c.unmatched_rules();
        if !never.is_empty() {
            out.push(Finding::new(
                FindingId::PolicyUnmatchedRules,
                Level::Info,
                format!("{} rule(s) of the policy on {} matched no connection yet", never.len(), r.cgroup.display()),
                never.iter().map(|i| format!("rule {} matched 0 connections ({})", i + 1, dir.display())).collect(),
                "a rule shadowed by an earlier one, or a prefix or port that sees no traffic; `bbrkit enable --policy FILE --dry-run` shows the rules in match order",
            ));
        }
    }
    out.extend(routes_overridden(snap));
    out.extend(no_cgroup2(snap));
    out
}

/// No cgroup v2 mounted: a policy cannot attach (a warning when one is
/// recorded, which then governs nothing).
fn no_cgroup2(snap: &Snapshot) -> Option<Finding> {
    if snap.cgroup2.is_some() {
        return None;
    }
    let recorded = !snap.policy.records.is_empty();
    Some(Finding::new(
        FindingId::PolicyNoCgroup2,
        if recorded {
            Level::Warning
        } else {
            Level::Info
        },
        "no cgroup v2 is mounted: a per-connection policy cannot be attached",
        vec!["/proc/self/mountinfo has no cgroup2 mount of the whole hierarchy".to_string()],
        "mount it (`mount -t cgroup2 none /sys/fs/cgroup/unified`, or boot with systemd.unified_cgroup_hierarchy=1), then `bbrkit enable --policy FILE`",
    ))
}

/// A route destination (`10.9.0.0/16`, `default`) as (address bits, prefix
/// length, IPv4); `default` is `None` (every address of its family).
fn route_prefix(dest: &str) -> Option<(u128, u8, bool)> {
    let (a, len) = dest.split_once('/')?;
    let ip: std::net::IpAddr = a.parse().ok()?;
    let len: u8 = len.parse().ok()?;
    Some(match ip.to_canonical() {
        std::net::IpAddr::V4(v) => (u128::from(v.to_bits()), len, true),
        std::net::IpAddr::V6(v) => (v.to_bits(), len, false),
    })
}

/// Whether two prefixes of one family overlap: one contains the other.
fn overlap((a, alen, v4): (u128, u8, bool), (b, blen, w4): (u128, u8, bool)) -> bool {
    let width = if v4 { 32 } else { 128 };
    let len = u32::from(alen.min(blen));
    let shift = width - len.min(width);
    v4 == w4 && (shift >= 128 || (a >> shift) == (b >> shift))
}

/// Routes with `congctl X` whose destination overlaps a rule's remote
/// prefixes while the rule gives another algorithm: the program sets the
/// algorithm at ESTABLISHED, after the route's applied at connect, so the
/// policy wins (a locked `congctl lock X` the program keeps).
fn routes_overridden(snap: &Snapshot) -> Option<Finding> {
    let routes = snap.doctor.routes.as_ref()?;
    let mut lines = Vec::new();
    for r in &snap.policy.records {
        let Some(Ok((policy, _))) = r.text.as_deref().map(|t| compile("copy", t)) else {
            continue;
        };
        for route in routes {
            let dest = route_prefix(&route.destination);
            let hit = policy.rules().iter().enumerate().find(|(_, rule)| {
                let ccs: Vec<String> = rule.arms().into_iter().map(|a| a.cc).collect();
                let other = ccs.iter().any(|c| *c != route.cc);
                let covers = match (&rule.remote, dest) {
                    (None, _) | (_, None) => true,
                    (Some(nets), Some(d)) => nets.iter().any(|n| {
                        let net = route_prefix(&format!("{}/{}", n.network(), n.prefix_len()));
                        net.is_some_and(|n| overlap(n, d))
                    }),
                };
                other && covers
            });
            if let Some((i, rule)) = hit {
                let ccs: Vec<String> = rule.arms().into_iter().map(|a| a.cc).collect();
                lines.push(format!(
                    "route {} table {} congctl {}: rule {} of the policy on {} gives {}",
                    route.destination,
                    route.table,
                    route.cc,
                    i + 1,
                    r.cgroup.display(),
                    ccs.join("/")
                ));
            }
        }
    }
    (!lines.is_empty()).then(|| {
        Finding::new(
            FindingId::PolicyOverridesRoute,
            Level::Warning,
            format!("{} congctl route(s) overlap a policy rule that gives another algorithm: the policy wins", lines.len()),
            lines,
            "the sock_ops program sets the algorithm when the connection is established, after the route's congctl applied at connect; drop the route's congctl, make the rule agree, or lock the route (`congctl lock ALGO`), which the policy keeps",
        )
    })
}
