//! Runtime sysctls as one kind of change: the keys `enable` manages
//! ([`Setting`]: the algorithm, the default qdisc, the tuning set), each
//! planned against the value found ([`key_result`]), written and read back
//! ([`SetSysctl`]), recorded with its prior value, checked by `verify`
//! ([`check`]) and written back by `rollback` ([`plan_undo`]).
//!
//! The tuning set never lowers what the kernel or the operator set: each
//! key has a [`Direction`], and a buffer size found larger in any field is
//! kept in that field ([`merge`]); the report says kept or raised, with the
//! value found.

use serde::Serialize;

use super::Undo;
use crate::host::{HostMut, KeyAccess};
use crate::image::{BeforeImage, Recorded};
use crate::outcome::{Action, ActionKind, Check, CheckName};
use crate::snapshot::Snapshot;
use crate::sysctl::{WriteError, normalize};
use crate::{KEY_CC, KEY_QDISC};

pub use crate::tuning::{Direction, TUNING, Tuning};

/// The value to set for bbrkit's `ours` when `found` is there now: field by
/// field the larger (AtLeast) or smaller (AtMost) one. Values that are not
/// the same number of integers are not compared: bbrkit's is used.
pub fn merge(direction: Direction, ours: &str, found: Option<&str>) -> String {
    let parse =
        |v: &str| -> Option<Vec<u64>> { v.split_whitespace().map(|f| f.parse().ok()).collect() };
    let (Some(o), Some(f)) = (parse(ours), found.and_then(parse)) else {
        return normalize(ours);
    };
    if o.len() != f.len() || direction == Direction::Exactly {
        return normalize(ours);
    }
    o.iter()
        .zip(&f)
        .map(|(a, b)| match direction {
            Direction::AtMost => a.min(b),
            _ => a.max(b),
        })
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join(" ")
}

/// One key `enable` manages, before its outcome is known.
#[derive(Debug, Clone)]
pub struct Setting {
    /// Dotted key.
    pub key: String,
    /// The value bbrkit sets (after [`merge`]).
    pub value: String,
    /// bbrkit's own value, when the value found changed it.
    pub ours: String,
    /// How the value moves from the one found.
    pub direction: Direction,
    /// Why bbrkit sets it.
    pub rationale: String,
    /// Written to bbrkit's file.
    pub persist: bool,
    /// Written with a `-` prefix (ignored at boot when the kernel lacks it).
    pub optional: bool,
    /// Why this namespace does not own the key, if it does not.
    pub host_only: Option<String>,
}

/// The state of one key at runtime after `enable`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RuntimeStatus {
    /// Written and read back.
    Set,
    /// Already had the value.
    AlreadySet,
    /// `--dry-run`: would be written.
    WouldSet,
    /// A raise-only key written and read back: raised from the value found.
    Raised,
    /// `--dry-run`: a raise-only key would be raised.
    WouldRaise,
    /// The value found is already past bbrkit's (larger buffer, tighter
    /// limit): kept, nothing written.
    Kept,
    /// `--no-apply`: not written.
    Skipped,
    /// Not owned by this network namespace (absent or read-only): the host's job.
    HostOnly,
    /// The kernel lacks the feature (e.g. fq: ENOENT); not a failure.
    NoKernelSupport,
    /// EPERM (e.g. not in tcp_allowed_congestion_control).
    NotPermitted,
    /// Any other failure.
    Failed,
}

impl RuntimeStatus {
    /// Display words (`enable`'s `[status]`).
    pub fn words(self) -> &'static str {
        match self {
            RuntimeStatus::Set => "set",
            RuntimeStatus::AlreadySet => "already",
            RuntimeStatus::WouldSet => "would set",
            RuntimeStatus::Raised => "raised",
            RuntimeStatus::WouldRaise => "would raise",
            RuntimeStatus::Kept => "kept",
            RuntimeStatus::Skipped => "skipped",
            RuntimeStatus::HostOnly => "host's job",
            RuntimeStatus::NoKernelSupport => "no kernel support",
            RuntimeStatus::NotPermitted => "EPERM",
            RuntimeStatus::Failed => "FAILED",
        }
    }
}

/// One key `enable` manages, as reported.
#[derive(Debug, Clone, Serialize)]
pub struct KeyResult {
    /// Dotted key.
    pub key: String,
    /// bbrkit's value (after [`merge`] with the value found).
    pub value: String,
    /// Why bbrkit sets it.
    pub rationale: String,
    /// Written to bbrkit's sysctl.d file.
    pub persisted: bool,
    /// Runtime value before.
    pub before: Option<String>,
    /// Runtime outcome.
    pub runtime: RuntimeStatus,
    /// One line explaining the outcome.
    pub detail: String,
}

/// The planned runtime outcome of `s` (`dry_run`, `no_apply` as given).
pub fn key_result(s: &Setting, snap: &Snapshot, dry_run: bool, no_apply: bool) -> KeyResult {
    let before = snap.runtime(&s.key).map(String::from);
    let same = before.as_deref() == Some(normalize(&s.value).as_str());
    let raise = s.direction == Direction::AtLeast;
    let (runtime, detail) = if let Some(h) = &s.host_only {
        (RuntimeStatus::HostOnly, h.clone())
    } else if same && s.value != normalize(&s.ours) {
        let than = if raise { "larger" } else { "smaller" };
        let v = before.as_deref().unwrap_or_default();
        (
            RuntimeStatus::Kept,
            format!(
                "found {v}: kept, never lowered ({than} than bbrkit's {} in a field)",
                s.ours
            ),
        )
    } else if same {
        (RuntimeStatus::AlreadySet, "already set".to_string())
    } else if no_apply && !dry_run {
        (
            RuntimeStatus::Skipped,
            "--no-apply: file only, takes effect at boot".to_string(),
        )
    } else {
        let status = if raise {
            RuntimeStatus::WouldRaise
        } else {
            RuntimeStatus::WouldSet
        };
        (
            status,
            format!(
                "would change {} -> {}",
                before.as_deref().unwrap_or("(absent)"),
                s.value
            ),
        )
    };
    KeyResult {
        key: s.key.clone(),
        value: s.value.clone(),
        rationale: s.rationale.clone(),
        persisted: s.persist,
        before,
        runtime,
        detail,
    }
}

/// Why this namespace does not own `key`, if it does not.
pub fn host_only(snap: &Snapshot, key: &str) -> Option<String> {
    match snap.access(key) {
        KeyAccess::Missing => Some(format!(
            "{key} does not exist in this network namespace: the host's job (change it on the host)"
        )),
        KeyAccess::ReadOnly => Some(format!(
            "{key} is read-only in this network namespace: owned by the host (change it on the host)"
        )),
        KeyAccess::Denied | KeyAccess::Writable => None,
    }
}

/// Write a runtime sysctl and read it back.
#[derive(Debug, Clone)]
pub struct SetSysctl {
    /// Dotted key.
    pub key: String,
    /// bbrkit's value.
    pub value: String,
    /// The value now (None: absent).
    pub before: Option<String>,
    /// A raise-only key (the outcome says raised).
    pub raise: bool,
    /// The value is a BPF algorithm becoming the default of a non-initial
    /// network namespace: see [`bpf_default_refused`].
    pub bpf_default_in_netns: bool,
}

/// Whether writing BPF algorithm `cc` as a non-initial namespace's default
/// must not be made: the kernel answers EPERM for an algorithm missing from
/// `tcp_allowed_congestion_control` (`allowed`, read after the
/// registration: bbr3 is NON_RESTRICTED, so registering adds it), and on
/// that path `tcp_set_default_congestion_control` (Linux 6.18
/// `net/ipv4/tcp_cong.c`) keeps the reference it took: a BPF struct_ops
/// map would then live until reboot. So bbrkit never makes that write.
pub fn bpf_default_refused(cc: &str, allowed: &[String]) -> Option<String> {
    (!allowed.iter().any(|a| a == cc)).then(|| {
        format!(
            "{cc} is not in net.ipv4.tcp_allowed_congestion_control ({}) of this network namespace: not written (the kernel would answer EPERM and keep a reference to {cc} until reboot)",
            allowed.join(" ")
        )
    })
}

/// What writing one key did.
#[derive(Debug, Clone)]
pub struct KeyOutcome {
    /// Dotted key.
    pub key: String,
    /// The status.
    pub runtime: RuntimeStatus,
    /// One line.
    pub detail: String,
}

impl KeyOutcome {
    /// A failure the command exits 1 for.
    pub fn problem(&self) -> bool {
        matches!(
            self.runtime,
            RuntimeStatus::NotPermitted | RuntimeStatus::Failed
        )
    }
}

impl SetSysctl {
    pub(super) fn record(&self) -> Recorded {
        Recorded::Sysctl {
            key: self.key.clone(),
            prior: self.before.clone(),
        }
    }

    pub(super) fn apply(&self, host: &mut dyn HostMut) -> KeyOutcome {
        let before = self.before.as_deref().unwrap_or("(absent)");
        let outcome = |runtime, detail| KeyOutcome {
            key: self.key.clone(),
            runtime,
            detail,
        };
        if self.bpf_default_in_netns
            && let Some(why) = bpf_default_refused(&self.value, &host.allowed_cc())
        {
            return outcome(RuntimeStatus::NotPermitted, why);
        }
        let (runtime, detail) = match host.write_sysctl(&self.key, &self.value) {
            Ok(()) if self.raise => (
                RuntimeStatus::Raised,
                format!("found {before} -> {} (read back)", self.value),
            ),
            Ok(()) => (
                RuntimeStatus::Set,
                format!("{before} -> {} (read back)", self.value),
            ),
            Err(WriteError::ValueUnknown) if self.key == KEY_QDISC => (
                RuntimeStatus::NoKernelSupport,
                format!(
                    "kernel has no {}: BBR uses internal pacing (Linux >= 4.13); not a failure",
                    self.value
                ),
            ),
            Err(WriteError::KeyMissing) | Err(WriteError::ReadOnly) => (
                RuntimeStatus::HostOnly,
                format!(
                    "{}: the host's job (change it on the host)",
                    WriteError::ReadOnly
                ),
            ),
            Err(WriteError::NotPermitted) => (
                RuntimeStatus::NotPermitted,
                format!(
                    "EPERM: {} is not in net.ipv4.tcp_allowed_congestion_control of this namespace; add it on the host",
                    self.value
                ),
            ),
            Err(e) => (RuntimeStatus::Failed, e.to_string()),
        };
        outcome(runtime, detail)
    }
}

/// `verify`'s first check: the runtime default is `expected`.
pub fn check(snap: &Snapshot, expected: &str) -> Check {
    let cur = snap
        .kernel
        .current_cc
        .clone()
        .unwrap_or_else(|| "(absent)".into());
    Check::new(
        CheckName::Sysctl,
        cur == expected,
        KEY_CC,
        &cur,
        expected,
        "/proc/sys of this network namespace",
    )
}

/// `rollback`'s plan for the recorded runtime values, in record order
/// (default_qdisc before the interfaces that depend on it).
pub fn plan_undo(
    image: &BeforeImage,
    snap: &Snapshot,
    mode: super::UndoMode,
    lines: &mut Vec<Action>,
    steps: &mut Vec<(Undo, Option<usize>)>,
) {
    for c in &image.changes {
        let Recorded::Sysctl { key, prior } = c else {
            continue;
        };
        let now = snap.runtime(key).map(String::from);
        let Some(prior) = prior else {
            lines.push(Action::new(
                key,
                ActionKind::Skipped,
                "key did not exist before",
            ));
            continue;
        };
        if now.as_ref() == Some(prior) {
            lines.push(Action::new(
                key,
                ActionKind::Unchanged,
                format!("already {prior}"),
            ));
            continue;
        }
        let now = now.unwrap_or_default();
        if mode.files_only() {
            lines.push(Action::new(
                key,
                ActionKind::Skipped,
                format!("--no-apply: stays {now} until reboot"),
            ));
            continue;
        }
        let undo = Undo::SetSysctl {
            key: key.clone(),
            value: prior.clone(),
        };
        steps.push((undo, Some(lines.len())));
        lines.push(Action::new(
            key,
            ActionKind::WouldRestore,
            format!("{now} -> {prior}"),
        ));
    }
}

/// Writes `value` back to `key`; the outcome in `a`. True on failure.
pub(super) fn restore(host: &mut dyn HostMut, key: &str, value: &str, a: &mut Action) -> bool {
    match host.write_sysctl(key, value) {
        Ok(()) => {
            *a = Action::new(
                key,
                ActionKind::Restored,
                format!("{} (read back)", a.detail),
            );
            false
        }
        Err(e) => {
            *a = Action::new(key, ActionKind::Failed, format!("writing {value}: {e}"));
            true
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_raises_never_lowers_field_by_field() {
        let d = Direction::AtLeast;
        assert_eq!(
            merge(d, "4096 87380 33554432", Some("4096 131072 6291456")),
            "4096 131072 33554432"
        );
        assert_eq!(
            merge(d, "4096 87380 33554432", Some("4096\t131072\t67108864")),
            "4096 131072 67108864"
        );
        assert_eq!(merge(d, "1", Some("2")), "2");
        assert_eq!(merge(d, "67108864", None), "67108864");
        assert_eq!(
            merge(d, "4096 87380 33554432", Some("1 2")),
            "4096 87380 33554432"
        );
        assert_eq!(merge(Direction::AtMost, "131072", Some("16384")), "16384");
        assert_eq!(
            merge(Direction::AtMost, "131072", Some("4294967295")),
            "131072"
        );
        assert_eq!(merge(Direction::Exactly, "0", Some("1")), "0");
    }

    #[test]
    fn every_tuning_key_has_a_rationale_and_buffers_only_rise() {
        for t in TUNING {
            assert!(!t.why.is_empty() && !t.key.contains("ip_forward"), "{t:?}");
            if t.key.contains("mem") {
                assert_eq!(t.direction, Direction::AtLeast, "{}", t.key);
            }
        }
        assert!(TUNING.iter().any(|t| t.key == "net.ipv4.tcp_notsent_lowat"));
    }
}
