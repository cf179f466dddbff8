//! Interface root qdiscs as one kind of change. Once `enable` makes a new
//! default qdisc, the roots the kernel attached from an older default are
//! re-created so the kernel attaches the new one (mq-aware, as at boot);
//! the image records each interface's old root; `verify` checks every root
//! against the default ([`checks`]); `doctor` names stale ones
//! ([`stale_finding`]); `rollback` re-creates them under the old default
//! ([`plan_undo`]). Deliberate, noqueue and inactive roots are never touched.

use serde::Serialize;

use super::{Undo, UndoMode};
use crate::KEY_QDISC;
use crate::host::HostMut;
use crate::image::{BeforeImage, Recorded};
use crate::kernel::Provision;
use crate::outcome::{Action, ActionKind, Check, CheckName, Finding, FindingId, Level};
use crate::qdisc::{Class, InterfaceQdisc};
use crate::snapshot::Snapshot;

/// True when `i`'s root qdisc was attached by the kernel (directly, or as
/// mq's leaves) from a default other than `target`: created before the
/// default changed (by this run or earlier). These are the interfaces
/// `enable` re-creates once `target` is in effect.
pub fn needs_recreate(i: &InterfaceQdisc, target: Option<&str>) -> bool {
    matches!(i.class, Class::KernelDefault | Class::Multiqueue)
        && target.is_some_and(|t| t != i.effective())
}

/// What `enable` does (or did) with one interface.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum InterfaceVerb {
    /// Its root was re-created.
    Recreated,
    /// Dry run: it would be.
    WouldRecreate,
    /// Already on the new default.
    AlreadyDefault,
    /// Attached on purpose: left alone.
    Deliberate,
    /// A device without a queue.
    Noqueue,
    /// Down, no qdisc yet.
    Inactive,
    /// A kernel default left as it is.
    UnchangedDefault,
    /// Re-creation failed.
    Failed,
}

impl InterfaceVerb {
    /// The words of the human line.
    pub fn words(self) -> &'static str {
        match self {
            InterfaceVerb::Recreated => "recreated",
            InterfaceVerb::WouldRecreate => "would recreate",
            InterfaceVerb::AlreadyDefault => "already default",
            InterfaceVerb::Deliberate => "deliberate",
            InterfaceVerb::Noqueue => "noqueue",
            InterfaceVerb::Inactive => "inactive",
            InterfaceVerb::UnchangedDefault => "unchanged default",
            InterfaceVerb::Failed => "failed",
        }
    }
}

/// What happened to one interface.
#[derive(Debug, Clone, Serialize)]
pub struct InterfaceAction {
    /// Interface name.
    pub name: String,
    /// Root qdisc before (`pfifo_fast 0:`).
    pub before: String,
    /// What `enable` did.
    pub action: InterfaceVerb,
    /// One line explaining it.
    pub detail: String,
}

/// Every interface as `enable` reports it: `candidate` ones get `verb`.
pub fn describe(
    ifaces: &[InterfaceQdisc],
    candidate: &dyn Fn(&InterfaceQdisc) -> bool,
    verb: InterfaceVerb,
    new: Option<&str>,
) -> Vec<InterfaceAction> {
    ifaces
        .iter()
        .map(|i| {
            let (action, detail) = match i.class {
                _ if candidate(i) => (
                    verb,
                    format!(
                        "on the old default {}; re-create so it gets {}",
                        i.effective(),
                        new.unwrap_or("?")
                    ),
                ),
                Class::NoQueue => (
                    InterfaceVerb::Noqueue,
                    "virtual device without a queue: unaffected".into(),
                ),
                Class::Inactive => (
                    InterfaceVerb::Inactive,
                    "no qdisc yet (down): gets the default when brought up".into(),
                ),
                Class::Deliberate => (
                    InterfaceVerb::Deliberate,
                    "attached on purpose (shaping, explicit handle or ingress): left alone".into(),
                ),
                _ if new == Some(i.effective()) => (
                    InterfaceVerb::AlreadyDefault,
                    format!("already on {}", i.effective()),
                ),
                _ => (
                    InterfaceVerb::UnchangedDefault,
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

/// The interfaces and the default qdisc `enable` sets, if it sets one.
#[derive(Debug, Clone)]
pub struct Interfaces {
    /// As listed when planning.
    pub listed: Vec<InterfaceQdisc>,
    /// The new default (None: `enable` leaves the default alone here).
    pub target: Option<String>,
    kernel_has_target: bool,
}

impl Interfaces {
    /// The interfaces of `snap` for a new default `target`.
    pub fn new(snap: &Snapshot, target: Option<String>) -> Interfaces {
        let absent = |k: &str| {
            snap.kernel
                .qdisc(k)
                .is_some_and(|f| f.provision == Provision::Absent)
        };
        Interfaces {
            listed: snap.interface_list().to_vec(),
            kernel_has_target: target.as_deref().is_some_and(|k| !absent(k)),
            target,
        }
    }

    /// Attached by the kernel from another default than the target.
    pub fn candidate(&self, i: &InterfaceQdisc) -> bool {
        self.kernel_has_target && needs_recreate(i, self.target.as_deref())
    }

    /// The candidates, as the before-image records them.
    pub fn stale(&self) -> Vec<Recorded> {
        self.listed
            .iter()
            .filter(|i| self.candidate(i))
            .map(|i| Recorded::Interface {
                name: i.name.clone(),
                root: i.root.clone(),
                leaves: i.leaves.clone(),
            })
            .collect()
    }

    /// Every interface as a plan reports it (`verb` for the candidates).
    pub fn describe(&self, verb: InterfaceVerb) -> Vec<InterfaceAction> {
        describe(
            &self.listed,
            &|i| self.candidate(i),
            verb,
            self.target.as_deref(),
        )
    }
}

/// Once `target` is the kernel's default qdisc, re-create the root of
/// every interface still on an older default.
#[derive(Debug, Clone)]
pub struct RecreateQdiscs {
    /// The new default qdisc.
    pub target: String,
    /// The interfaces as listed when planning.
    pub listed: Vec<InterfaceQdisc>,
    /// The interfaces expected to be re-created, as the image records them.
    pub interfaces: Vec<Recorded>,
}

/// Every interface after the re-creations.
#[derive(Debug, Clone)]
pub struct QdiscOutcome {
    /// One line per interface.
    pub interfaces: Vec<InterfaceAction>,
    /// A re-creation failed.
    pub problem: bool,
}

impl RecreateQdiscs {
    pub(super) fn record(&self) -> Vec<Recorded> {
        self.interfaces.clone()
    }

    /// Re-creates the root of every interface on an older default once
    /// `target` is in effect, and describes every interface.
    pub(super) fn apply(&self, host: &mut dyn HostMut) -> QdiscOutcome {
        let target = self.target.as_str();
        let in_effect = host.sysctl(KEY_QDISC).as_deref() == Some(target);
        let recreate = |i: &InterfaceQdisc| in_effect && needs_recreate(i, Some(target));
        let mut out = describe(
            &self.listed,
            &recreate,
            InterfaceVerb::Recreated,
            Some(target),
        );
        let mut problem = false;
        for a in &mut out {
            if a.action == InterfaceVerb::Recreated {
                let idx = self
                    .listed
                    .iter()
                    .find(|i| i.name == a.name)
                    .map(|i| i.ifindex)
                    .unwrap_or(0);
                match host.recreate_root_qdisc(idx) {
                    Ok(()) => {
                        let now = host
                            .interfaces()
                            .ok()
                            .and_then(|l| l.into_iter().find(|i| i.ifindex == idx))
                            .map(|i| i.describe());
                        a.detail = format!(
                            "root qdisc re-created: now {}",
                            now.unwrap_or_else(|| "?".into())
                        );
                    }
                    Err(e) => {
                        a.action = InterfaceVerb::Failed;
                        a.detail = bbrkit_diag::error_chain(&e);
                        problem = true;
                    }
                }
            } else if a.action == InterfaceVerb::UnchangedDefault && !in_effect {
                a.detail = format!("default qdisc is not {target}: nothing to re-create");
            }
        }
        QdiscOutcome {
            interfaces: out,
            problem,
        }
    }
}

/// `verify`'s qdisc checks: the default qdisc bbrkit's file sets, and every
/// interface's root qdisc.
pub fn checks(snap: &Snapshot) -> Vec<Check> {
    let mut checks = Vec::new();
    let facts = &snap.kernel;
    let absent = |q: &str| {
        facts
            .qdisc(q)
            .is_some_and(|f| f.provision == Provision::Absent)
    };
    if let (Some(w), Some(d)) = (snap.bbrkit_value(KEY_QDISC), &facts.default_qdisc) {
        let kernel_lacks = absent(&w);
        let detail = if kernel_lacks && &w != d {
            format!("kernel has no {w}: BBR paces internally (Linux >= 4.13)")
        } else {
            "bbrkit's file sets it".into()
        };
        checks.push(Check::new(
            CheckName::DefaultQdisc,
            &w == d || kernel_lacks,
            KEY_QDISC,
            d,
            w,
            detail,
        ));
    }
    match &snap.interfaces {
        Ok(list) => checks.extend(
            list.iter()
                .map(|i| check_interface(i, facts.default_qdisc.as_deref(), absent("fq"))),
        ),
        Err(e) => checks.push(Check::new(
            CheckName::Qdisc,
            false,
            "qdisc",
            "unreadable",
            "readable",
            e,
        )),
    }
    checks
}

/// One interface's root qdisc against the default (None: the host's).
fn check_interface(i: &InterfaceQdisc, default: Option<&str>, fq_absent: bool) -> Check {
    let key = format!("qdisc.{}", i.name);
    let eff = i.effective().to_string();
    let (ok, expected_kind, detail) = match (i.class, default) {
        (Class::NoQueue, _) => (true, eff.clone(), "virtual device, no queue".to_string()),
        (Class::Inactive, _) => (
            true,
            eff.clone(),
            "down, gets the default when up".to_string(),
        ),
        (Class::Deliberate, _) => (
            true,
            eff.clone(),
            format!("{}: attached on purpose, left alone", i.describe()),
        ),
        (_, None) => (
            true,
            eff.clone(),
            "default qdisc belongs to the host (non-initial network namespace)".to_string(),
        ),
        (_, Some(d)) if eff == d => (
            true,
            d.to_string(),
            if fq_absent {
                format!(
                    "{}; kernel has no fq: BBR paces internally (Linux >= 4.13)",
                    i.describe()
                )
            } else {
                i.describe()
            },
        ),
        (_, Some(d)) => (
            false,
            d.to_string(),
            format!(
                "{}: created before default_qdisc changed; `bbrkit enable` re-creates it",
                i.describe()
            ),
        ),
    };
    Check::new(CheckName::Qdisc, ok, key, eff, expected_kind, detail)
}

/// `doctor`: interfaces still on an older default qdisc.
pub fn stale_finding(snap: &Snapshot) -> Option<Finding> {
    let d = snap.kernel.default_qdisc.as_ref()?;
    let list = snap.interfaces.as_ref().ok()?;
    let stale: Vec<String> = list
        .iter()
        .filter(|i| needs_recreate(i, Some(d)))
        .map(|i| {
            format!(
                "{}: root {} while net.core.default_qdisc = {d}",
                i.name,
                i.describe()
            )
        })
        .collect();
    (!stale.is_empty()).then(|| {
        Finding::new(
            FindingId::StaleInterfaceQdisc,
            Level::Warning,
            "default qdisc changed but interfaces still use the old one",
            stale,
            "`bbrkit enable` re-creates kernel-default root qdiscs (mq-aware); a reboot also does",
        )
    })
}

/// What rollback does with one recorded interface.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InterfaceStep {
    /// Already as before, or no longer a kernel default (left alone).
    Unchanged,
    /// Re-create the root: the restored default gives back the old kind.
    Recreate,
    /// The old kind came from an even older default: the kernel cannot
    /// re-attach it, so the interface stays as it is (reported).
    Kept,
}

/// Decides what to do with an interface whose root was `before` when
/// `enable` ran, is `now` (class `class`) today, once the default qdisc is
/// `default_after`.
pub fn interface_step(
    now: &str,
    class: Class,
    before: &str,
    default_after: Option<&str>,
) -> InterfaceStep {
    if now == before || !matches!(class, Class::KernelDefault | Class::Multiqueue) {
        InterfaceStep::Unchanged
    } else if default_after == Some(before) {
        InterfaceStep::Recreate
    } else {
        InterfaceStep::Kept
    }
}

/// Re-create an interface's root so the kernel attaches its old kind,
/// momentarily setting `default_qdisc` to `kind` when `restore` (the
/// default to put back afterwards) is given.
#[derive(Debug, Clone)]
pub struct Recreate {
    /// Interface index.
    pub ifindex: u32,
    /// The kind it had before.
    pub kind: String,
    /// Its effective kind now.
    pub now: String,
    /// The default qdisc to put back after a momentary one.
    pub restore: Option<String>,
}

/// `rollback`'s plan for the recorded interfaces.
pub fn plan_undo(
    image: &BeforeImage,
    snap: &Snapshot,
    mode: UndoMode,
    lines: &mut Vec<Action>,
    steps: &mut Vec<(Undo, Option<usize>)>,
) {
    let recorded: Vec<(&String, &String, &Vec<String>)> = image
        .changes
        .iter()
        .filter_map(|c| match c {
            Recorded::Interface { name, root, leaves } => Some((name, root, leaves)),
            _ => None,
        })
        .collect();
    if recorded.is_empty() {
        return;
    }
    let list = snap.interface_list();
    // The default once this rollback is done (dry runs included).
    let default_after = image
        .changes
        .iter()
        .find_map(|c| match c {
            Recorded::Sysctl { key, prior } if key == KEY_QDISC => prior.clone(),
            _ => None,
        })
        .or_else(|| snap.runtime(KEY_QDISC).map(String::from));
    for (name, root, leaves) in recorded {
        let before = leaves.first().unwrap_or(root).clone();
        let Some(cur) = list.iter().find(|i| &i.name == name) else {
            lines.push(Action::new(
                name,
                ActionKind::Skipped,
                "interface no longer exists",
            ));
            continue;
        };
        let now = cur.effective().to_string();
        let step = interface_step(&now, cur.class, &before, default_after.as_deref());
        let (action, detail) = match (step, &default_after) {
            (InterfaceStep::Unchanged, _) => (
                ActionKind::Unchanged,
                format!("root qdisc {}", cur.describe()),
            ),
            (InterfaceStep::Kept, None) => (
                ActionKind::Kept,
                format!(
                    "was {before}, attached under an older default; the kernel re-attaches only the current default , so it stays {now}"
                ),
            ),
            (InterfaceStep::Kept, Some(_)) => (
                ActionKind::WouldRestore,
                format!(
                    "re-create root: {now} -> {before} under a momentary default_qdisc {before}"
                ),
            ),
            (InterfaceStep::Recreate, _) => (
                ActionKind::WouldRestore,
                format!("re-create root: {now} -> {before}"),
            ),
        };
        if action == ActionKind::WouldRestore && !mode.dry_run && !mode.no_apply {
            let r = Recreate {
                ifindex: cur.ifindex,
                kind: before.clone(),
                now: now.clone(),
                restore: (step == InterfaceStep::Kept)
                    .then(|| default_after.clone().unwrap_or_default()),
            };
            steps.push((Undo::RecreateQdisc(r), Some(lines.len())));
        }
        lines.push(Action::new(name, action, detail));
    }
}

/// Why [`Recreate::under`] did not restore an interface.
enum Momentary {
    /// The kernel refused the old kind as default (nothing changed).
    Refused(String),
    /// Re-creation or putting the default back failed.
    Failed(String),
}

impl Recreate {
    /// Re-creates the root (under a momentary default when `restore` is
    /// given); the outcome in `a`. True on failure.
    pub(super) fn apply(self, host: &mut dyn HostMut, a: &mut Action) -> bool {
        let (action, detail) = self.outcome(host);
        (a.action, a.detail) = (action, detail);
        action == ActionKind::Failed
    }

    fn outcome(&self, host: &mut dyn HostMut) -> (ActionKind, String) {
        let kind = &self.kind;
        let Some(after) = &self.restore else {
            return match host.recreate_root_qdisc(self.ifindex) {
                Ok(()) => (
                    ActionKind::Restored,
                    format!("root re-created from default_qdisc {kind}"),
                ),
                Err(e) => (ActionKind::Failed, bbrkit_diag::error_chain(&e)),
            };
        };
        match self.under(host, after) {
            Ok(()) => (
                ActionKind::Restored,
                format!(
                    "root re-created under a momentary default_qdisc {kind} (attached under an older default), then default_qdisc {after} put back"
                ),
            ),
            Err(Momentary::Refused(e)) => (
                ActionKind::Kept,
                format!(
                    "was {kind}, attached under an older default; the kernel refuses {kind} as default_qdisc ({e}), so it stays {}",
                    self.now
                ),
            ),
            Err(Momentary::Failed(e)) => (ActionKind::Failed, e),
        }
    }

    /// Re-creates the root so the kernel attaches `kind` (it attaches only
    /// the current default): sets `default_qdisc` to `kind` for the moment
    /// of the re-creation, then puts `restore` back, also when re-creation
    /// fails.
    fn under(&self, host: &mut dyn HostMut, restore: &str) -> Result<(), Momentary> {
        host.write_sysctl(KEY_QDISC, &self.kind)
            .map_err(|e| Momentary::Refused(e.to_string()))?;
        let made = host.recreate_root_qdisc(self.ifindex);
        let back = host.write_sysctl(KEY_QDISC, restore);
        match (made, back) {
            (Ok(()), Ok(())) => Ok(()),
            (_, Err(e)) => Err(Momentary::Failed(format!(
                "putting default_qdisc {restore} back: {e}"
            ))),
            (Err(e), Ok(())) => Err(Momentary::Failed(format!("re-creating the root: {e}"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interface_steps() {
        let kd = Class::KernelDefault;
        assert_eq!(
            interface_step("fq", kd, "fq", Some("fq")),
            InterfaceStep::Unchanged
        );
        assert_eq!(
            interface_step("fq", kd, "pfifo_fast", Some("pfifo_fast")),
            InterfaceStep::Recreate
        );
        assert_eq!(
            interface_step("fq", Class::Multiqueue, "fq_codel", Some("fq_codel")),
            InterfaceStep::Recreate
        );
        assert_eq!(
            interface_step("htb", Class::Deliberate, "pfifo_fast", Some("pfifo_fast")),
            InterfaceStep::Unchanged
        );
        assert_eq!(
            interface_step("fq", kd, "pfifo_fast", Some("fq")),
            InterfaceStep::Kept
        );
    }
}
