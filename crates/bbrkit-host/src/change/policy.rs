//! The per-connection policy's sock_ops attachment as one kind of change
//! (`enable --policy FILE [--cgroup PATH]`, issue 19).
//!
//! ```text
//!   plan:     FILE ─parse─▶ Policy ─Compiled::new(salt)─▶ Compiled
//!             every algorithm it names: registered, or a BPF one bbrkit
//!             registers (a `bpf` change of its own, recorded), or a module
//!             loaded and listed in modules-load.d (`modules`); else
//!             refused, nothing changed. The namespace default is never set.
//!             cgroup (default: the cgroup2 mount) ─▶ cgroup id ─▶ pin dirs A, B
//!   record:   Recorded::Policy { cgroup, cgroup_id }   + the copy as a file change
//!   apply:    copy FILE to var/lib/bbrkit/policy/<slug>.toml (atomic, prior kept)
//!             attach + pin in the free dir of A/B        ("policy-pinned")
//!             detach the old one (a replaced policy)     ("policy-attached")
//!   verify:   the link pin's cgroup is the cgroup; maps read back == the copy;
//!             no other sock_ops program on it, an ancestor or a descendant;
//!             live connections agreeing / disagreeing with decide()
//!   doctor:   map pins without a link, a policy program without a pin, rules
//!             no connection matched, other sock_ops programs around the cgroup
//!   rollback: detach both dirs of every recorded cgroup (the copy is a file)
//!   boot:     register the BPF algorithms and load the modules the recorded
//!             policies name, then re-attach each from its copy
//! ```
//!
//! Two pin directories per cgroup (`<PIN_ROOT>/<id>` and `<id>-b`) make a
//! replacement gapless: the new policy is attached and pinned in the free
//! one before the old one is detached. While both are attached the older
//! runs first and its `bpf_setsockopt` marks the socket's algorithm as
//! chosen (`icsk_ca_setsockopt`), so the newer keeps it: the old policy
//! governs whole until it is detached, the new one whole after (measured,
//! `sigkill_at_each_step_leaves_the_old_or_the_new_policy`). The before-image is saved before anything is attached, so
//! every pin bbrkit makes is already named by the image: a kill at any
//! point leaves the old policy, or the new one, or both (the next `enable`
//! or `rollback` detaches the extra one) — never a pin the image does not
//! know. The salt of the splits is the policy's explicit `salt` or a hash of
//! its split-relevant content (`bbrkit_policy::salt`), so the boot unit's
//! re-attachment draws exactly as before, and so does an edit that keeps
//! the split.
//!
//! Never attaches to a cgroup it was not given (the default is the cgroup2
//! mount's root), never touches a pin directory the image does not name.

use std::path::{Path, PathBuf};

use bbrkit_policy::attached::LAYOUT;
use bbrkit_policy::{Compiled, Policy};
use serde::Serialize;

use super::Change;
use super::boot_unit::{self, UnitFile};
use super::bpf::RegistrationStep;
use super::file::WriteFile;
use crate::HostError;
use crate::Provider;
use crate::host::HostMut;
use crate::image::{BeforeImage, Present, Recorded};
use crate::outcome::{Action, ActionKind};
use crate::snapshot::Snapshot;

pub use crate::live::{
    COPY_DIR, PolicyLive, PolicyPin, PolicyRecord, PolicyView, copy_path, pin_dirs, recorded,
};

/// `enable --policy FILE [--cgroup PATH]`.
#[derive(Debug, Clone)]
pub struct PolicyOptions {
    /// The policy file as given.
    pub file: PathBuf,
    /// The cgroup v2 directory (None: the cgroup2 mount's root).
    pub cgroup: Option<PathBuf>,
}

/// What `enable --policy` does about the attachment (`step` in `--json`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PolicyStep {
    /// Nothing attached yet: attach and pin.
    Attach,
    /// Done.
    Attached,
    /// Another bbrkit policy holds the cgroup: attach the new, detach the old.
    Replace,
    /// Done.
    Replaced,
    /// The same policy is attached already.
    Unchanged,
}

/// The policy part of `enable`'s report (`policy` in `--json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PolicyPlan {
    /// The file as given.
    pub file: String,
    /// The copy bbrkit keeps for the boot unit.
    pub copy: String,
    /// The cgroup v2 directory.
    pub cgroup: String,
    /// Its id.
    pub cgroup_id: u64,
    /// Where the attachment is pinned.
    pub pin_dir: String,
    /// The pin directory of the policy it replaces.
    pub replaces: Option<String>,
    /// What happens.
    pub step: PolicyStep,
    /// The algorithms the rules name (registered, or registered or loaded
    /// by this change).
    pub needs: Vec<String>,
    /// bbrkit's BPF algorithms the rules name that this change registers
    /// (without making them the namespace default).
    pub registers: Vec<PolicyRegistration>,
    /// What is accepted but likely a mistake: rules that can never match
    /// because an earlier rule covers them, with their lines
    /// (`bbrkit_policy::Shadowed`).
    pub warnings: Vec<String>,
    /// The compiled rules and maps (`bbrkit_policy::render::dry_run`).
    pub compiled: String,
    /// The boot unit's files (`bbrkit-policy.service`; empty when the root
    /// does not boot with systemd).
    pub unit: Vec<UnitFile>,
    /// Whether the root boots with systemd, and the evidence.
    pub systemd: String,
}

/// A BPF algorithm a policy names, registered by the policy's change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PolicyRegistration {
    /// The algorithm.
    pub cc: String,
    /// What happens to its registration.
    pub registration: RegistrationStep,
    /// The link pin that keeps it registered.
    pub pin: String,
    /// The verifier's answer to the trial load, or why none was needed.
    pub verifier: String,
}

/// Attach and pin a compiled policy, then detach the one it replaces.
#[derive(Debug, Clone)]
pub struct Attach {
    /// The cgroup.
    pub cgroup: PathBuf,
    /// Its id.
    pub cgroup_id: u64,
    /// The free pin directory.
    pub dir: PathBuf,
    /// The attachment it replaces.
    pub old: Option<PathBuf>,
    /// The maps' content.
    pub compiled: Compiled,
}

/// The salt of a policy's draws: its explicit `salt`, or the hash of its
/// split-relevant content, so an edit that keeps the split (a comment, a
/// name) keeps every draw (`bbrkit_policy::salt`).
pub fn salt(policy: &Policy) -> u64 {
    bbrkit_policy::salt(policy)
}

/// Parses and compiles a policy file's bytes.
pub fn compile(origin: &str, bytes: &[u8]) -> Result<(Policy, Compiled), HostError> {
    let text = std::str::from_utf8(bytes).map_err(|e| HostError::PolicyRefused {
        reason: format!("{origin}: not UTF-8 text ({e})"),
    })?;
    let policy = bbrkit_policy::parse(origin, text).map_err(HostError::Policy)?;
    let compiled = Compiled::new(&policy, salt(&policy));
    Ok((policy, compiled))
}

impl Attach {
    pub(super) fn record(&self) -> Recorded {
        Recorded::Policy {
            cgroup: self.cgroup.display().to_string(),
            cgroup_id: self.cgroup_id,
        }
    }

    pub(super) fn apply(&self, host: &mut dyn HostMut) -> Result<PolicyStep, HostError> {
        host.detach_policy(&self.dir)?; // a stale half (map pins, no link)
        host.attach_policy(&self.compiled, &self.cgroup, &self.dir)?;
        host.crash_point("policy-pinned");
        match &self.old {
            None => Ok(PolicyStep::Attached),
            Some(old) => host.detach_policy(old).map(|_| PolicyStep::Replaced),
        }
    }
}

fn refuse(reason: String) -> HostError {
    HostError::PolicyRefused { reason }
}

/// Every algorithm the policy names is registered, or one `enable`
/// registers (bbrkit's BPF ones) or loads (a module); else refused with
/// what this kernel offers.
fn check_algorithms(
    snap: &Snapshot,
    origin: &str,
    policy: &Policy,
) -> Result<Vec<String>, HostError> {
    let needs: Vec<String> = policy.algorithms().into_iter().collect();
    let available = &snap.kernel.available_cc;
    let absent = |c: &&String| !available.contains(c) && !snap.provider(c).offered();
    let Some(cc) = needs.iter().find(absent) else {
        return Ok(needs);
    };
    Err(refuse(format!(
        "{}the policy names {cc}, which this host does not offer: the kernel registers {}, bbrkit's BPF algorithms are {}",
        where_named(origin, policy, cc),
        available.join(" "),
        crate::algorithm::bpf_names()
    )))
}

/// `FILE: rule N (line L): cc: ` of the first rule naming `cc`, in the
/// form the file's own errors take (bbrkit-policy `file.rs`).
fn where_named(origin: &str, policy: &Policy, cc: &str) -> String {
    let first = policy
        .rules()
        .iter()
        .position(|r| r.arms().iter().any(|a| a.cc == cc));
    match first {
        Some(i) => match policy.line(i) {
            Some(line) => format!("{origin}: rule {} (line {line}): cc: ", i + 1),
            None => format!("{origin}: rule {}: cc: ", i + 1),
        },
        None => format!("{origin}: "),
    }
}

/// What attaching and pinning needs, checked before anything is written
/// (issue 33): the privileges, a bpffs at `/sys/fs/bpf` for the pins, and
/// no exclusive (legacy) sock_ops attachment on the cgroup or an ancestor,
/// which would make the kernel refuse the link with a bare EPERM.
fn check_attachable(snap: &Snapshot, host: &dyn HostMut, cgroup: &Path) -> Result<(), HostError> {
    use crate::bpf::FeatureId;
    let features = snap.bpf.features.as_ref();
    for (id, why) in [
        (
            FeatureId::Privileges,
            "attaching a policy needs CAP_BPF and CAP_NET_ADMIN (run as root)",
        ),
        (
            FeatureId::Bpffs,
            "the policy is pinned there so it outlives bbrkit; mount it (`mount -t bpf bpf /sys/fs/bpf`, systemd does at boot), then enable again",
        ),
    ] {
        if let Some(f) = features.and_then(|f| f.get(id)).filter(|f| !f.present) {
            return Err(refuse(format!("{}: {why}", f.detail)));
        }
    }
    match host.sock_ops_exclusive(cgroup) {
        Ok(None) => Ok(()),
        Ok(Some(at)) => Err(refuse(format!(
            "cgroup {} holds a sock_ops program attached exclusively (BPF_PROG_ATTACH without BPF_F_ALLOW_MULTI, an older tool's way): the kernel refuses any other program on it and below it (EPERM); detach it (`bpftool cgroup show {0}` names it) or give a cgroup outside it",
            at.display()
        ))),
        Err(e) => Err(refuse(format!(
            "cannot list the sock_ops programs of {} ({e}): attaching a policy needs CAP_BPF and CAP_NET_ADMIN (run as root)",
            cgroup.display()
        ))),
    }
}

/// Every algorithm the policy names is registered now (the boot entry
/// point, after it registered and loaded what the policies name).
fn check_registered(snap: &Snapshot, policy: &Policy) -> Result<(), HostError> {
    let available = &snap.kernel.available_cc;
    match policy
        .algorithms()
        .into_iter()
        .find(|c| !available.contains(c))
    {
        None => Ok(()),
        Some(cc) => Err(refuse(format!(
            "the policy names {cc}, which is not registered ({}; see the steps above)",
            snap.provider(&cc).words()
        ))),
    }
}

/// The registrations of bbrkit's BPF algorithms among `needs` that are not
/// registered: the report part and the changes (`bpf::plan`: a name
/// another loader holds, a missing requirement, a verifier refusal are
/// refused before anything changes).
fn registrations(
    snap: &Snapshot,
    needs: &[String],
    host: &mut dyn HostMut,
) -> Result<(Vec<PolicyRegistration>, Vec<Change>), HostError> {
    let mut out = Vec::new();
    let mut changes = Vec::new();
    for cc in needs
        .iter()
        .filter(|c| !snap.kernel.available_cc.contains(c))
    {
        let Provider::Bpf(reg) = snap.provider(cc) else {
            continue;
        };
        let (registration, verifier, change) =
            super::bpf::plan(snap, reg, host, true).map_err(|e| match e {
                HostError::BpfRefused { cc, reason } => refuse(format!(
                    "the policy names {cc}, which bbrkit would register for it, but cannot: {reason}"
                )),
                e => e,
            })?;
        changes.extend(change.map(Change::BpfRegistration));
        out.push(PolicyRegistration {
            cc: cc.clone(),
            registration,
            pin: reg.pin.clone(),
            verifier,
        });
    }
    Ok((out, changes))
}

/// The algorithms the recorded policies' copies name.
pub fn named_by_policies(snap: &Snapshot) -> Vec<String> {
    let mut out: Vec<String> = snap
        .policy
        .records
        .iter()
        .filter_map(|r| r.text.as_deref().map(|t| (r, t)))
        .filter_map(|(r, t)| compile(&r.copy.display().to_string(), t).ok())
        .flat_map(|(p, _)| p.algorithms())
        .collect();
    out.sort();
    out.dedup();
    out
}

/// The live pin of `dir`, if a link is pinned there.
fn live<'a>(snap: &'a Snapshot, dir: &Path) -> Option<&'a PolicyLive> {
    let pin = snap.policy.pins.iter().find(|p| p.dir == dir)?;
    pin.live.as_ref().ok()
}

/// The image records a policy on cgroup `cgroup`, by its id now or by
/// path (the id it was recorded with is an earlier boot's).
fn recorded_id(image: Option<&BeforeImage>, cgroup: &Path, id: u64) -> bool {
    recorded(image)
        .iter()
        .any(|(cg, i)| *i == id || Path::new(cg) == cgroup)
}

/// Decides `enable --policy`: refuses a bad file, an algorithm that is not
/// registered, a directory that is not a cgroup v2, a pin the image does
/// not know; returns the report part and the changes (none when the same
/// policy is attached already) — with the boot unit's files, when the
/// root boots with systemd, whatever else is enabled: `boot --policy`
/// leaves an attached policy as it is, so after `bbrkit-bbr3.service`
/// re-attached them it changes nothing.
pub fn plan(
    snap: &Snapshot,
    image: Option<&BeforeImage>,
    opts: &PolicyOptions,
    host: &mut dyn HostMut,
    exe: &Path,
) -> Result<(PolicyPlan, Vec<Change>), HostError> {
    let origin = opts.file.display().to_string();
    let bytes = std::fs::read(&opts.file).map_err(|e| HostError::io(&opts.file, e))?;
    let (policy, compiled) = compile(&origin, &bytes)?;
    let needs = check_algorithms(snap, &origin, &policy)?;
    let cgroup = match (&opts.cgroup, &snap.cgroup2) {
        (Some(c), _) => c.clone(),
        (None, Some(m)) => m.clone(),
        (None, None) => return Err(refuse(
            "no cgroup v2 is mounted (see /proc/self/mountinfo): a policy attaches to a cgroup v2"
                .into(),
        )),
    };
    let cgroup_id = host.cgroup_id(&cgroup)?;
    check_attachable(snap, host, &cgroup)?;
    let (registers, register_changes) = registrations(snap, &needs, host)?;
    let dirs = pin_dirs(cgroup_id);
    let present: Vec<&PathBuf> = dirs
        .iter()
        .filter(|d| snap.policy.pins.iter().any(|p| p.dir == **d))
        .collect();
    if let (Some(d), false) = (present.first(), recorded_id(image, &cgroup, cgroup_id)) {
        return Err(HostError::NotOurs {
            path: d.display().to_string(),
            reason: "a policy pin bbrkit's before-image does not record; bbrkit does not take it over (remove it, then enable again)".into(),
        });
    }
    let old = dirs.iter().find(|d| live(snap, d).is_some()).cloned();
    let dir = dirs
        .iter()
        .find(|d| Some(*d) != old.as_ref())
        .cloned()
        .unwrap_or_else(|| dirs[0].clone());
    let copy = copy_path(&snap.root, snap.cgroup2.as_deref(), &cgroup);
    let same_copy = matches!(Present::read(&copy)?, Present::File { bytes: b, .. } if b == bytes);
    // The same maps of an older layout are an upgrade: replaced (through
    // the free directory, as any replacement), so the new program runs.
    let same_maps = old
        .as_ref()
        .and_then(|o| live(snap, o))
        .is_some_and(|l| l.maps.as_ref() == Ok(&compiled) && l.layout == LAYOUT);
    let step = match (&old, same_copy && same_maps) {
        (Some(_), true) => PolicyStep::Unchanged,
        (Some(_), false) => PolicyStep::Replace,
        (None, _) => PolicyStep::Attach,
    };
    let (systemd, evidence) = &snap.systemd;
    let (unit, unit_changes) = if *systemd {
        boot_unit::plan(&snap.root, image, crate::unit::POLICY, exe)?
    } else {
        (Vec::new(), Vec::new())
    };
    let report = PolicyPlan {
        unit,
        systemd: evidence.clone(),
        file: origin,
        copy: snap.root.show(&copy),
        cgroup: cgroup.display().to_string(),
        cgroup_id,
        pin_dir: if step == PolicyStep::Unchanged {
            old.clone().unwrap_or(dir.clone())
        } else {
            dir.clone()
        }
        .display()
        .to_string(),
        replaces: old
            .as_ref()
            .filter(|_| step == PolicyStep::Replace)
            .map(|o| o.display().to_string()),
        step,
        needs,
        registers,
        warnings: policy.shadowed().iter().map(ToString::to_string).collect(),
        compiled: bbrkit_policy::render::dry_run(&policy, &compiled),
    };
    let mut changes = register_changes;
    if step != PolicyStep::Unchanged {
        if !same_copy {
            changes.push(Change::File(WriteFile {
                path: copy,
                content: bytes,
                mode: 0o644,
            }));
        }
        changes.push(Change::Policy(Attach {
            cgroup,
            cgroup_id,
            dir,
            old,
            compiled,
        }));
    }
    changes.extend(unit_changes);
    Ok((report, changes))
}

/// The human lines of the policy part.
pub fn lines(p: &PolicyPlan, dry_run: bool) -> Vec<String> {
    let would = if dry_run { "would " } else { "" };
    let mut out: Vec<String> = p.compiled.lines().map(|l| format!("    | {l}")).collect();
    out.insert(0, format!("policy: {} (compiled):", p.file));
    out.extend(p.warnings.iter().map(|w| format!("policy: warning: {w}")));
    out.extend(p.registers.iter().map(|r| register_line(r, would)));
    let (cg, dir) = (&p.cgroup, &p.pin_dir);
    out.push(match p.step {
        PolicyStep::Attach => format!("policy: {would}attach to cgroup {cg} (id {}) and pin at {dir}", p.cgroup_id),
        PolicyStep::Attached => format!("policy: attached to cgroup {cg} (id {}), pinned at {dir}", p.cgroup_id),
        PolicyStep::Replace => format!(
            "policy: {would}attach to cgroup {cg} (id {}) and pin at {dir}, then detach the policy at {}",
            p.cgroup_id,
            p.replaces.as_deref().unwrap_or("?")
        ),
        PolicyStep::Replaced => format!(
            "policy: attached to cgroup {cg} (id {}), pinned at {dir}; detached the policy at {}",
            p.cgroup_id,
            p.replaces.as_deref().unwrap_or("?")
        ),
        PolicyStep::Unchanged => format!("policy: already attached to cgroup {cg}, pinned at {dir}"),
    });
    let keep = if dry_run { "would keep" } else { "keeps" };
    out.push(format!(
        "policy: {keep} a copy at {} (the boot entry point `bbrkit boot --policy` re-attaches it)",
        p.copy
    ));
    if p.unit.is_empty() {
        out.push(format!(
            "policy: no boot unit: {}; {} (docs/policy.md)",
            p.systemd,
            boot_unit::boot_hook("bbrkit boot --policy")
        ));
    }
    out.extend(boot_unit::lines(&p.unit, dry_run));
    out
}

/// The line of a BPF algorithm the policy's change registers.
fn register_line(r: &PolicyRegistration, would: &str) -> String {
    let (cc, pin) = (&r.cc, &r.pin);
    let what = match r.registration {
        RegistrationStep::Register => {
            format!(
                "{would}register {cc} with a pinned link {pin} (verifier: {})",
                r.verifier
            )
        }
        RegistrationStep::Registered => format!("registered {cc} with a pinned link {pin}"),
        RegistrationStep::Adopt => {
            format!("{would}pin the running lab's registration of {cc} at {pin}")
        }
        RegistrationStep::Adopted => {
            format!("pinned the running lab's registration of {cc} at {pin}")
        }
        RegistrationStep::AlreadyRegistered => {
            format!("{cc} already registered by bbrkit's pin {pin}")
        }
    };
    format!(
        "policy: {what} for its rules; the namespace default is left as it is (rollback unregisters it, `bbrkit boot --policy` registers it at boot)"
    )
}

/// `rollback`'s plan: detach every pin directory of each recorded cgroup.
pub fn plan_undo(
    image: &BeforeImage,
    snap: &Snapshot,
    mode: super::UndoMode,
    lines: &mut Vec<Action>,
    steps: &mut Vec<(super::Undo, Option<usize>)>,
) {
    for (cg, id) in recorded(Some(image)) {
        let now = snap.policy.records.iter().find(|r| r.cgroup_id == id);
        let dirs = now.map_or_else(|| pin_dirs(id).to_vec(), PolicyRecord::pin_dirs);
        for dir in dirs {
            if !snap.policy.pins.iter().any(|p| p.dir == dir) {
                continue;
            }
            let what = dir.display().to_string();
            if mode.files_only() {
                lines.push(Action::new(
                    &what,
                    ActionKind::Skipped,
                    format!("--no-apply: the policy stays attached to {cg} until reboot"),
                ));
                continue;
            }
            steps.push((
                super::Undo::DetachPolicy { dir: dir.clone() },
                Some(lines.len()),
            ));
            lines.push(Action::new(
                &what,
                ActionKind::WouldDetach,
                format!("detach the policy from {cg} and remove its pins"),
            ));
        }
    }
}

/// Detaches `dir`; the outcome in `a`. True on failure.
pub(super) fn detach(host: &mut dyn HostMut, dir: &Path, a: &mut Action) -> bool {
    match host.detach_policy(dir) {
        Ok(_) => {
            a.action = ActionKind::Detached;
            a.detail = a
                .detail
                .replace("detach the policy", "detached the policy")
                .replace("remove its pins", "removed its pins");
            false
        }
        Err(e) => {
            a.action = ActionKind::Failed;
            a.detail = bbrkit_diag::error_chain(&e);
            true
        }
    }
}

/// The boot entry point: re-attaches every recorded policy that is not
/// attached (after a reboot) from its copy, in the cgroup it was enabled
/// for — found by path: a child cgroup's directory is new after a reboot,
/// with a new id, whose pin directories the record then names through
/// [`PolicyRecord::pin_dirs`]. A cgroup whose directory does not exist is
/// refused with the fix (nothing waits for it: the next `boot --policy`,
/// e.g. from the owning service's `ExecStartPre`, attaches it), the others
/// are still attached. Returns a line per policy and whether each succeeded.
pub fn reattach(host: &mut dyn HostMut, snap: &Snapshot) -> Vec<(bool, String)> {
    snap.policy
        .records
        .iter()
        .map(|r| match reattach_one(host, snap, r) {
            Ok(line) => (true, line),
            Err(e) => (
                false,
                format!(
                    "policy {}: {}",
                    r.cgroup.display(),
                    bbrkit_diag::error_chain(&e)
                ),
            ),
        })
        .collect()
}

fn reattach_one(
    host: &mut dyn HostMut,
    snap: &Snapshot,
    r: &PolicyRecord,
) -> Result<String, HostError> {
    let cg = r.cgroup.display();
    if let Some((dir, _)) = attached(snap, r) {
        return Ok(format!(
            "policy {cg}: already attached, pinned at {}",
            dir.display()
        ));
    }
    let text = r
        .text
        .as_deref()
        .ok_or_else(|| refuse(format!("{} is missing", r.copy.display())))?;
    let (policy, compiled) = compile(&r.copy.display().to_string(), text)?;
    check_registered(snap, &policy)?;
    if r.now_id.is_none() {
        return Err(refuse(format!(
            "cgroup {cg} does not exist (yet): create it, or start the service that owns it, then run `bbrkit boot --policy` again (e.g. as the service's `ExecStartPre=+bbrkit boot --policy`); the policy is kept in {}",
            r.copy.display()
        )));
    }
    // By path: a child cgroup made again (after a reboot) has a new id.
    let id = host.cgroup_id(&r.cgroup)?;
    let dir = pin_dirs(id)[0].clone();
    host.detach_policy(&dir)?;
    host.attach_policy(&compiled, &r.cgroup, &dir)?;
    Ok(format!(
        "policy {cg}: attached from {}, pinned at {}",
        r.copy.display(),
        dir.display()
    ))
}

#[path = "policy_judge.rs"]
mod judge;
use judge::attached;
pub use judge::{agreement, checks, findings, foreign_programs, governed};

#[cfg(test)]
#[path = "policy_tests.rs"]
mod tests;
