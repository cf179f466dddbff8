//! A BPF congestion control's registration as one kind of change: `enable
//! --cc bbr3` registers it with a pinned link — or pins the live link of a
//! running bbrkit lab that registered it, so the two share one registration
//! (`bbrkit_bpf::share`) — after refusing what cannot work ([`plan`]); the
//! image records the pins that existed before; `verify` checks that
//! bbrkit's pin holds it ([`check`]); `doctor` names a foreign holder and
//! connections left on an unregistered one ([`findings`]); `rollback`
//! removes bbrkit's pins ([`plan_undo`]), after which the name goes when
//! its last other holder (a lab) lets go, and names the connections that
//! keep the program until they close.
//!
//! Never takes over a name another loader registered, and touches no pin
//! outside bbrkit's directory.

use serde::Serialize;

use super::boot_unit::UnitFile;
use super::{Undo, UndoMode};
use crate::algorithm::{Holding, Registration};
use crate::host::HostMut;
use crate::image::{BeforeImage, Recorded};
use crate::outcome::{Action, ActionKind, Check, CheckName, Finding, FindingId, Level};
use crate::snapshot::Snapshot;
use crate::{HostError, KEY_CC};

/// What `enable` does about the registration (`registration` in `--json`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RegistrationStep {
    /// Not registered yet: register it with a pinned link.
    Register,
    /// bbrkit's pin holds it already.
    AlreadyRegistered,
    /// Done by this run.
    Registered,
    /// A running bbrkit lab registered it: pin its link.
    Adopt,
    /// Done by this run: the lab's link is pinned.
    Adopted,
}

/// The BPF part of `enable`'s plan (also in the `--json` report as `bpf`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BpfPlan {
    /// The algorithm.
    pub cc: String,
    /// What happens to the registration.
    pub registration: RegistrationStep,
    /// The link pin that keeps it registered.
    pub pin: String,
    /// The verifier's answer to the trial load, or why none was needed.
    pub verifier: String,
    /// Why the root counts as booted with systemd.
    pub systemd: String,
    /// The unit's files (and the binary it runs).
    pub unit: Vec<UnitFile>,
}

fn refuse(cc: &str, why: impl std::fmt::Display) -> HostError {
    HostError::BpfRefused {
        cc: cc.into(),
        reason: why.to_string(),
    }
}

/// Register `cc` with a pinned link, or pin a lab's live link.
#[derive(Debug, Clone)]
pub struct Register {
    /// The algorithm.
    pub cc: String,
    /// Pin the link of the lab that registered it instead.
    pub adopt: bool,
    /// Algorithms pinned under /sys/fs/bpf/bbrkit before.
    pub pinned_before: Vec<String>,
}

/// The registration made: what was done, and to which algorithm.
#[derive(Debug, Clone)]
pub struct Registered(pub RegistrationStep, pub String);

impl Register {
    pub(super) fn record(&self) -> Recorded {
        Recorded::BpfRegistration {
            cc: self.cc.clone(),
            pinned_before: self.pinned_before.clone(),
        }
    }

    pub(super) fn apply(&self, host: &mut dyn HostMut) -> Result<Registered, HostError> {
        let cc = &self.cc;
        let made = if self.adopt {
            host.adopt_bpf(cc).map(|_| RegistrationStep::Adopted)
        } else {
            host.register_bpf(cc).map(|_| RegistrationStep::Registered)
        };
        made.map(|s| Registered(s, cc.clone()))
            .map_err(|f| HostError::BpfRefused {
                cc: cc.clone(),
                reason: format!("register {cc}: {f}"),
            })
    }
}

/// Decides the registration part for `cc` (registered as `reg` says),
/// refusing what cannot work: a name another loader holds, a missing
/// kernel requirement, an object the verifier refuses (the trial load
/// through `host` registers nothing). Returns the plan's fields and the
/// change to make, if any (`apply`: not `--no-apply`).
pub fn plan(
    snap: &Snapshot,
    reg: &Registration,
    host: &mut dyn HostMut,
    apply: bool,
) -> Result<(RegistrationStep, String, Option<Register>), HostError> {
    let cc = &reg.cc;
    let (step, verifier) = match reg.holding {
        Holding::Other => {
            return Err(refuse(
                cc,
                format!(
                    "{cc} is registered by {}; bbrkit does not take over a name it did not register",
                    reg.holder
                ),
            ));
        }
        Holding::Pin => (
            RegistrationStep::AlreadyRegistered,
            format!("not needed: {}", reg.holder),
        ),
        Holding::BbrkitLink { .. } => (
            RegistrationStep::Adopt,
            format!("not needed: {}", reg.holder),
        ),
        Holding::None => {
            if let Some(m) = &snap.bpf.missing {
                return Err(refuse(
                    cc,
                    format!("{m} (`bbrkit check` lists every requirement)"),
                ));
            }
            host.trial_load_bpf(cc).map_err(|f| refuse(cc, f))?;
            (
                RegistrationStep::Register,
                "accepted (trial load, nothing registered)".to_string(),
            )
        }
    };
    let change = (apply && step != RegistrationStep::AlreadyRegistered).then(|| Register {
        cc: cc.clone(),
        adopt: step == RegistrationStep::Adopt,
        pinned_before: snap.bpf.pinned.clone(),
    });
    Ok((step, verifier, change))
}

/// The human lines of the registration.
pub fn lines(p: &BpfPlan, dry_run: bool) -> Vec<String> {
    let would = if dry_run { "would " } else { "" };
    let (cc, pin) = (&p.cc, &p.pin);
    // Linux < 6.4 has no struct_ops links: the map is pinned (bbrkit_bpf::pin)
    let what = if pin.ends_with("/map") {
        "pinned struct_ops map (registered by map update: no struct_ops links before Linux 6.4)"
    } else {
        "pinned link"
    };
    let mut out = vec![match p.registration {
        RegistrationStep::Register => format!(
            "bpf: {would}register {cc} with a {what} {pin} (verifier: {})",
            p.verifier
        ),
        RegistrationStep::Registered => format!("bpf: registered {cc} with a {what} {pin}"),
        RegistrationStep::Adopt => format!(
            "bpf: {cc} is registered by a running bbrkit lab: {would}pin its link at {pin}, so it stays registered after the lab ends ({})",
            p.verifier.trim_start_matches("not needed: ")
        ),
        RegistrationStep::Adopted => format!(
            "bpf: pinned the running lab's registration of {cc} at {pin}: it stays registered after the lab ends"
        ),
        RegistrationStep::AlreadyRegistered => {
            format!("bpf: {cc} already registered by bbrkit's pin {pin}")
        }
    }];
    out.extend(super::boot_unit::lines(&p.unit, dry_run));
    out.push(format!("unit: {}", p.systemd));
    out
}

/// `verify`: registered now, through bbrkit's pin.
pub fn check(r: &Registration) -> Check {
    let value = if !r.registered {
        "not registered".to_string()
    } else if r.by_bbrkit {
        "bbrkit".to_string()
    } else {
        "other".to_string()
    };
    let detail = if r.registered {
        format!("holder: {}", r.holder)
    } else {
        format!(
            "not in tcp_available_congestion_control; {} {}",
            r.pin,
            if r.pin_exists {
                "exists (stale)"
            } else {
                "absent"
            }
        )
    };
    Check::new(
        CheckName::Bpf,
        r.registered && r.by_bbrkit,
        format!("bpf.{}", r.cc),
        value,
        format!("bbrkit ({})", r.pin),
        detail,
    )
}

/// `doctor`: a name another loader holds, and connections or a default
/// left on an unregistered algorithm.
pub fn findings(snap: &Snapshot) -> Vec<Finding> {
    let mut out: Vec<Finding> = snap.bpf.registrations.iter().filter_map(foreign).collect();
    out.extend(stuck(snap));
    out
}

/// The name is registered by another loader (a lab's link is bbrkit's own).
fn foreign(r: &Registration) -> Option<Finding> {
    (r.holding == Holding::Other).then(|| Finding::new(
        FindingId::BpfForeign,
        Level::Warning,
        format!("{} is registered by something else than bbrkit", r.cc),
        vec![
            format!("tcp_available_congestion_control lists {}; holder: {}", r.cc, r.holder),
            format!("bbrkit's pin {} {}", r.pin, if r.pin_exists { "exists but does not hold it" } else { "does not exist" }),
        ],
        format!(
            "connections that choose {} get that program, which may not be bbrkit's; bbrkit never takes it over: stop what registered it (`bpftool struct_ops list`), then `bbrkit boot --cc {}`",
            r.cc, r.cc
        ),
    ))
}

/// Sockets, or this namespace's default, on an algorithm that is no longer
/// registered (a BPF one that was unregistered while they used it).
fn stuck(snap: &Snapshot) -> Vec<Finding> {
    let available = &snap.kernel.available_cc;
    let gone = |cc: &str| !available.iter().any(|c| c == cc);
    let mut out = Vec::new();
    let socks = snap.sockets.as_deref().unwrap_or_default();
    let (n, lines) = crate::host::connection_lines(
        socks,
        |s| s.cc.as_deref().is_some_and(gone),
        " (not registered)",
    );
    if n > 0 {
        let mut ev = lines;
        for r in snap
            .bpf
            .registrations
            .iter()
            .filter(|r| !r.lingering_maps.is_empty())
        {
            ev.push(format!("{}: struct_ops map(s) {:?} of that name no longer registered but still alive (held by connections or by a namespace's default)", r.cc, r.lingering_maps));
        }
        out.push(Finding::new(
            FindingId::BpfStuckConnections,
            Level::Warning,
            format!("{n} connection(s) still run an unregistered congestion control"),
            ev,
            "they keep the old program until they close (it is freed then); restart or reconnect them to move them to the default",
        ));
    }
    if let Some(cur) = snap.kernel.current_cc.as_deref().filter(|c| gone(c)) {
        out.push(Finding::new(
            FindingId::BpfDefaultUnregistered,
            Level::Error,
            format!("the default {cur} of this network namespace is no longer registered"),
            vec![
                format!("{KEY_CC} = {cur}"),
                format!("tcp_available_congestion_control = {}", available.join(" ")),
                "the namespace still holds the unregistered program: new sockets keep getting it".into(),
            ],
            format!("`bbrkit boot --cc {cur}` registers it again, or set another default (`bbrkit rollback`, `bbrkit enable --cc bbr`)"),
        ));
    }
    out
}

/// The pins the image says bbrkit made (present now, absent before).
fn pins_to_remove(image: &BeforeImage, pinned: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for c in &image.changes {
        let Recorded::BpfRegistration { pinned_before, .. } = c else {
            continue;
        };
        for p in pinned.iter().filter(|p| !pinned_before.contains(p)) {
            if !out.contains(p) {
                out.push(p.clone());
            }
        }
    }
    out
}

/// The algorithms the image says bbrkit registered.
pub fn recorded(image: &BeforeImage) -> Vec<String> {
    image
        .changes
        .iter()
        .filter_map(|c| match c {
            Recorded::BpfRegistration { cc, .. } => Some(cc.clone()),
            _ => None,
        })
        .collect()
}

/// `rollback`'s plan: remove the pins bbrkit made (every pin under
/// bbrkit's directory that was not there before, so also other struct_ops
/// maps of the same object), after the defaults are restored (a
/// namespace's default holds the program).
pub fn plan_undo(
    image: &BeforeImage,
    snap: &Snapshot,
    mode: UndoMode,
    lines: &mut Vec<Action>,
    steps: &mut Vec<(Undo, Option<usize>)>,
) {
    let ccs = recorded(image);
    if ccs.is_empty() {
        return;
    }
    for name in pins_to_remove(image, &snap.bpf.pinned) {
        // the registration's own pin (a map pin on Linux < 6.4)
        let pin = snap
            .bpf
            .registrations
            .iter()
            .find(|r| r.cc == name)
            .map_or_else(|| Registration::absent(&name).pin, |r| r.pin.clone());
        if mode.files_only() {
            lines.push(Action::new(
                &name,
                ActionKind::Skipped,
                format!("--no-apply: stays registered through {pin} until reboot"),
            ));
            continue;
        }
        steps.push((Undo::Unregister { name: name.clone() }, Some(lines.len())));
        lines.push(Action::new(
            &name,
            ActionKind::WouldUnregister,
            format!("remove pin {pin}"),
        ));
    }
    for cc in ccs {
        if !lines.iter().any(|a| a.what == cc) {
            lines.push(Action::new(
                &cc,
                ActionKind::Unchanged,
                "no pin of bbrkit's holds it any more",
            ));
        }
    }
}

/// Unregister an algorithm bbrkit registered for an earlier default, which
/// the new one replaces (issue 33.9: `enable --cc bbr3`, then `--cc bbr2`).
#[derive(Debug, Clone)]
pub struct Retire {
    /// The algorithm.
    pub cc: String,
}

/// What `enable` retires (`retire` in `--json`): an algorithm bbrkit
/// registered for an earlier default, and its boot unit's files.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Retiring {
    /// The algorithm.
    pub cc: String,
    /// Its link pin.
    pub pin: String,
    /// The boot unit's files removed.
    pub files: Vec<String>,
    /// The outcome (empty until done; a dry run leaves it empty).
    pub done: String,
}

impl Retire {
    pub(super) fn apply(&self, host: &mut dyn HostMut) -> super::Applied {
        let mut a = Action::new(&self.cc, ActionKind::WouldUnregister, "");
        let failed = unregister(host, &self.cc, &mut a);
        let word = if failed {
            "not unregistered"
        } else {
            "unregistered"
        };
        let done = format!("{word} ({})", a.detail);
        super::Applied::Retired(self.cc.clone(), done, failed)
    }
}

/// The algorithms an earlier `enable` registered (the image records them)
/// that `cc` replaces as the default: held by bbrkit's pin now, not `cc`,
/// and not in `keep` (the algorithms the recorded policies name). Each
/// with its unit's files that exist and are bbrkit's as it wrote them (an
/// operator's edited one is kept). The changes come after the new default
/// is set.
pub fn retire(
    snap: &Snapshot,
    image: Option<&BeforeImage>,
    cc: &str,
    keep: &[String],
) -> (Vec<Retiring>, Vec<super::Change>) {
    let Some(image) = image else {
        return (Vec::new(), Vec::new());
    };
    let mut out = Vec::new();
    let mut changes = Vec::new();
    for old in recorded(image) {
        let Some(reg) = snap.registration(&old) else {
            continue;
        };
        if old == cc || reg.holding != Holding::Pin || keep.contains(&old) {
            continue;
        }
        let root = &snap.root;
        let files: Vec<std::path::PathBuf> = [
            crate::unit::unit_path(root, &old),
            crate::unit::wants_path(root, &old),
        ]
        .into_iter()
        .filter(|p| std::fs::symlink_metadata(p).is_ok())
        .filter(|p| image.file(&root.relative(p)).is_some())
        .filter(|p| {
            let now = crate::image::Present::read(p);
            now.is_ok_and(|n| super::file::edit(Some(image), root, p, &n).is_none())
        })
        .collect();
        out.push(Retiring {
            cc: old.clone(),
            pin: reg.pin.clone(),
            files: files.iter().map(|p| root.show(p)).collect(),
            done: String::new(),
        });
        changes.push(super::Change::Retire(Retire { cc: old.clone() }));
        changes.extend(
            files
                .into_iter()
                .map(|path| super::Change::Remove(super::file::RemoveFile { path })),
        );
    }
    (out, changes)
}

/// The human lines of what `enable` retires.
pub fn retire_lines(r: &[Retiring], dry_run: bool) -> Vec<String> {
    r.iter()
        .map(|t| {
            let unit = t.files.join(", ");
            let head = match (dry_run || t.done.is_empty(), unit.is_empty()) {
                (true, true) => format!("bpf: would unregister {} (remove pin {})", t.cc, t.pin),
                (true, false) => format!(
                    "bpf: would unregister {} (remove pin {}) and remove its boot unit {unit}",
                    t.cc, t.pin
                ),
                (false, true) => format!("bpf: {}: {}", t.cc, t.done),
                (false, false) => format!("bpf: {}: {}; removed its boot unit {unit}", t.cc, t.done),
            };
            format!(
                "{head}: bbrkit registered it for an earlier default, which this one replaces (rollback restores the state before bbrkit)"
            )
        })
        .collect()
}

/// How long rollback waits for the kernel to drop an unpinned name: the
/// last reference to a link goes through a workqueue (`bpf_link_put`), so
/// the name leaves `tcp_available_congestion_control` a moment after the
/// pin is removed.
const UNREGISTER_WAIT_MS: u64 = 2000;

/// Removes the pins of `name` (unregisters it unless a lab still holds
/// it); the outcome in `a`. True on failure.
pub(super) fn unregister(host: &mut dyn HostMut, name: &str, a: &mut Action) -> bool {
    let pin = host.bpf_registration(name).pin;
    match host.unregister_bpf(name) {
        Ok(_) => {
            a.action = ActionKind::Unregistered;
            a.detail = format!("pin {pin} removed");
            if !wait_gone(host, name) {
                let holders = host.bpf_link_holders(name);
                a.detail.push_str(&if holders.is_empty() {
                    format!(
                        "; still listed after {UNREGISTER_WAIT_MS} ms (another process holds a link)"
                    )
                } else {
                    format!(
                        "; still registered: {} holds it (a running lab), and it goes when that run ends",
                        holders.join(", ")
                    )
                });
            }
            false
        }
        Err(e) => {
            a.action = ActionKind::Failed;
            a.detail = bbrkit_diag::error_chain(&e);
            true
        }
    }
}

/// Waits for `name` to leave the list; gives up early when a process (a
/// running lab) holds a link, whose scan of every process's descriptors is
/// made once, after the first 200 ms.
fn wait_gone(host: &dyn HostMut, name: &str) -> bool {
    for i in 0..UNREGISTER_WAIT_MS / 20 {
        if !host.available_cc().iter().any(|c| c == name) {
            return true;
        }
        if i == 10 && !host.bpf_link_holders(name).is_empty() {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    false
}

/// `local -> remote (cc)` of connections on those of `ccs` that are no
/// longer registered (read after the unregistration).
pub fn still_running(host: &dyn HostMut, ccs: &[String]) -> Vec<String> {
    let available = host.available_cc();
    let gone: Vec<&str> = ccs
        .iter()
        .map(String::as_str)
        .filter(|c| !available.iter().any(|a| a == c))
        .collect();
    host.sockets()
        .unwrap_or_default()
        .into_iter()
        .filter(|s| s.cc.as_deref().is_some_and(|c| gone.contains(&c)))
        .map(|s| format!("{} -> {} ({})", s.local, s.remote, s.cc.unwrap_or_default()))
        .collect()
}
