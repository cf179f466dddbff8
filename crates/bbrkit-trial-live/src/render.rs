//! The live report for people: a header of what the live side saw (the
//! cgroup and rule, the program, the records' flow and drops, how the arms
//! were assigned, a guardrail it applied, the open connections), then
//! `bbrkit-trial`'s table; and the progress line of a look. Decides
//! nothing: every number and word comes from the report.

use std::fmt::Write as _;

use bbrkit_trial::gates::Gate;
use bbrkit_trial::render as trial;

use crate::intake::Applied;
use crate::report::{LiveInfo, LiveReport, StopReason};

/// The whole table: the live header, then the statistics' table with at
/// most `max_groups` groups.
pub fn table(r: &LiveReport, max_groups: usize) -> String {
    header(&r.live) + "\n" + &trial::table(&r.report, max_groups)
}

/// The line saying the program is attached.
pub fn attached(info: &LiveInfo) -> String {
    let mut s = format!("attached to {}", cgroup(info));
    if let Some(a) = &info.attachment {
        let _ = write!(
            s,
            " (program {}, link {}, not pinned)",
            a.prog_id, a.link_id
        );
    }
    let _ = write!(s, ": {}", info.scope.rule_text);
    for p in info.other_programs.iter() {
        let _ = write!(
            s,
            "\nnote: the cgroup's sockets also run sock_ops program {} {:?}: if it sets the algorithm it wins (one on an ancestor, or attached after the trial, runs after and replaces the trial's; one attached before runs first and the trial keeps its choice as kept_app)",
            p.id, p.name
        );
    }
    s
}

/// The progress line of a look: the statistics' line, then what the live
/// side must add (a guardrail applied, records lost).
pub fn progress(r: &LiveReport) -> String {
    let mut s = trial::progress_line(&r.report);
    for g in r.live.gates.iter().filter(|g| !g.ok) {
        let _ = write!(s, " | gate {} FAILED", gate_name(g));
    }
    if let Some(g) = &r.live.guardrail {
        let _ = write!(s, " | split moved: {}", moved(g));
    }
    let lost = r.live.lost_records();
    if lost > 0 {
        let _ = write!(s, " | {lost} records LOST");
    }
    s
}

/// The line saying a guardrail moved the split.
pub fn guardrail(g: &Applied) -> String {
    format!(
        "guardrail after {:.0} s: {}; because {}",
        g.after_s,
        g.note,
        g.decision.because.join("; ")
    )
}

fn moved(g: &Applied) -> String {
    format!(
        "new connections to {} ({}) after {:.0} s",
        g.decision.send_to, g.decision.cc, g.after_s
    )
}

fn cgroup(info: &LiveInfo) -> String {
    if info.scope.whole_host {
        format!("cgroup {} (the whole host)", info.scope.cgroup)
    } else {
        format!("cgroup {}", info.scope.cgroup)
    }
}

/// What the live side saw, a line per subject.
fn header(info: &LiveInfo) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "{}", attached(info));
    if let Some(p) = &info.scope.policy {
        let _ = writeln!(s, "  the whole policy {p} applied for the trial's time");
    }
    let _ = writeln!(
        s,
        "ran {:.0} s, stopped: {}; the program is detached",
        info.elapsed_s,
        stopped(info.stopped)
    );
    let r = &info.records;
    let _ = writeln!(
        s,
        "ring: {} records received ({} in the comparison's scope), {} dropped (ring full, {} bytes), {} without storage, {} without tcp_sock, {} malformed",
        r.intake.received,
        r.intake.received - r.intake.other_rule - r.intake.after_guardrail,
        r.dropped_ring_full,
        r.ring_bytes,
        r.without_storage,
        r.without_tcp_sock,
        r.malformed
    );
    for a in &info.assignment {
        let _ = writeln!(
            s,
            "assignment: arm {} {}: {} matched, {} set, {} kept the application's, {} kept a locked route's, {} refused by the kernel",
            ["A", "B"].get(a.arm).unwrap_or(&"?"),
            a.cc,
            a.matched,
            a.assigned,
            a.kept_app,
            a.kept_route,
            a.failed
        );
    }
    let passed: Vec<String> = info.gates.iter().filter(|g| g.ok).map(gate_name).collect();
    if !passed.is_empty() {
        let _ = writeln!(s, "gates passed: {}", passed.join(", "));
    }
    for g in info
        .gates
        .iter()
        .filter(|g| g.ok && g.name == "draws_ratio")
    {
        let _ = writeln!(s, "  {}", g.detail);
    }
    for g in info.gates.iter().filter(|g| !g.ok) {
        let _ = writeln!(s, "gate {} FAILED: {}", gate_name(g), g.detail);
    }
    if let Some(g) = &info.guardrail {
        let _ = writeln!(s, "{}", guardrail(g));
        let _ = writeln!(
            s,
            "  {} connections established after it closed during the trial (not compared)",
            r.intake.after_guardrail
        );
    }
    if let Some(c) = &info.cohort {
        let _ = writeln!(
            s,
            "cohort: connections established before {:.0} s compared: A {} of {} drawn closed, B {} of {}",
            c.established_before_s, c.compared[0], c.drawn[0], c.compared[1], c.drawn[1]
        );
    }
    if let Some(o) = &info.open {
        let _ = writeln!(
            s,
            "open at the end: {} of the rule in this network namespace, {} sampled, {} running another algorithm than their arm's (not sampled), {} closed while sampled",
            o.matched,
            o.records.len(),
            o.not_their_arm,
            o.closed_since
        );
    }
    s
}

/// A gate's name with its arm: `assignment_failures[B]`.
fn gate_name(g: &Gate) -> String {
    match g.arm {
        Some(arm) => format!("{}[{arm}]", g.name),
        None => g.name.to_string(),
    }
}

fn stopped(r: StopReason) -> &'static str {
    match r {
        StopReason::Running => "still running",
        StopReason::Duration => "--duration reached",
        StopReason::Confident => "confident (decided over all connections)",
        StopReason::Guardrail => "a guardrail moved the split",
        StopReason::MaxDuration => "--max-duration reached undecided",
        StopReason::Interrupted => "interrupted",
    }
}
