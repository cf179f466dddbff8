//! The words every host command's report is made of: a `verify` [`Check`],
//! a `doctor` [`Finding`] and a `rollback` [`Action`], each with a typed
//! name or kind (serialised as the stable snake_case strings scripts rely
//! on). A leaf module: the change kinds (`crate::change`) produce these and
//! the commands collect them; it imports nothing of either.

use serde::Serialize;

/// What a `verify` check measures (its `name` in `--json`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckName {
    /// The runtime default algorithm.
    Sysctl,
    /// The algorithm is registered.
    Available,
    /// Established sockets run it.
    Sockets,
    /// The default qdisc bbrkit's file sets.
    DefaultQdisc,
    /// One interface's root qdisc.
    Qdisc,
    /// The file that wins at boot.
    Boot,
    /// A BPF algorithm's registration.
    Bpf,
    /// The boot unit of a BPF algorithm.
    Unit,
    /// This boot's run of the unit.
    BootRun,
    /// A policy's link attaches to its cgroup.
    PolicyAttached,
    /// A policy's maps equal its file.
    PolicyMaps,
    /// The policy set every matched connection's algorithm.
    PolicyConnections,
    /// No other sock_ops program can set the algorithm of the policy's
    /// sockets (on its cgroup, an ancestor or a descendant).
    PolicyForeign,
}

impl CheckName {
    /// The stable name (`sysctl`, `boot_run`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            CheckName::Sysctl => "sysctl",
            CheckName::Available => "available",
            CheckName::Sockets => "sockets",
            CheckName::DefaultQdisc => "default_qdisc",
            CheckName::Qdisc => "qdisc",
            CheckName::Boot => "boot",
            CheckName::Bpf => "bpf",
            CheckName::Unit => "unit",
            CheckName::BootRun => "boot_run",
            CheckName::PolicyAttached => "policy_attached",
            CheckName::PolicyMaps => "policy_maps",
            CheckName::PolicyConnections => "policy_connections",
            CheckName::PolicyForeign => "policy_foreign",
        }
    }
}

impl std::fmt::Display for CheckName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One `verify` check.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    /// What kind of check.
    pub name: CheckName,
    /// Passed.
    pub ok: bool,
    /// What was measured (`net.ipv4.tcp_congestion_control`, `qdisc.eth0`).
    pub key: String,
    /// Measured value.
    pub value: String,
    /// Expected value.
    pub expected: String,
    /// Evidence / explanation.
    pub detail: String,
}

impl Check {
    /// A check.
    pub fn new(
        name: CheckName,
        ok: bool,
        key: impl Into<String>,
        value: impl Into<String>,
        expected: impl Into<String>,
        detail: impl Into<String>,
    ) -> Check {
        Check {
            name,
            ok,
            key: key.into(),
            value: value.into(),
            expected: expected.into(),
            detail: detail.into(),
        }
    }

    /// The human line: `ok key=value (detail)` or `FAIL key=value expected=value (detail)`.
    pub fn line(&self) -> String {
        if self.ok {
            format!("ok   {}={} ({})", self.key, self.value, self.detail)
        } else {
            format!(
                "FAIL {}={} expected={} ({})",
                self.key, self.value, self.expected, self.detail
            )
        }
    }
}

/// Severity of a finding; `warning` and `error` make `doctor` exit 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Level {
    /// Worth knowing; nothing to fix.
    Info,
    /// Something does not work as the operator probably expects.
    Warning,
    /// BBR cannot work here.
    Error,
}

/// The stable identifier of a `doctor` finding (its `id` in `--json`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[allow(missing_docs)] // each is documented in docs/host.md's table of findings
pub enum FindingId {
    BootOverride,
    NotPersisted,
    OverriddenFile,
    RuntimeDiffers,
    EditedFile,
    Tuned,
    ImageFiles,
    NoBbr,
    NoFq,
    StaleInterfaceQdisc,
    Container,
    ContainerNetns,
    ContainerHints,
    NetnsOldCc,
    NotAllowed,
    OldConnections,
    RouteCongctl,
    MostlyReceives,
    LabLeftovers,
    BpfDefaultWithoutUnit,
    BpfUnitBinaryMissing,
    BpfBootFailed,
    BpfBootNotRun,
    BpfForeign,
    BpfStuckConnections,
    BpfDefaultUnregistered,
    PolicyPinsWithoutProgram,
    PolicyWithoutPin,
    PolicyForeignSockops,
    PolicyUnmatchedRules,
    PolicyOverridesRoute,
    PolicyNoCgroup2,
    PolicyOldLayout,
}

impl FindingId {
    /// The stable id (`boot_override`, ...).
    pub fn as_str(self) -> String {
        serde_json::to_value(self)
            .ok()
            .and_then(|v| v.as_str().map(String::from))
            .unwrap_or_default()
    }
}

impl std::fmt::Display for FindingId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.as_str())
    }
}

/// One `doctor` finding.
#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    /// Stable identifier.
    pub id: FindingId,
    /// Severity.
    pub level: Level,
    /// One-line summary.
    pub title: String,
    /// Facts that show it.
    pub evidence: Vec<String>,
    /// What to do.
    pub fix: String,
}

impl Finding {
    /// A finding with its evidence and fix.
    pub fn new(
        id: FindingId,
        level: Level,
        title: impl Into<String>,
        evidence: Vec<String>,
        fix: impl Into<String>,
    ) -> Finding {
        Finding {
            id,
            level,
            title: title.into(),
            evidence,
            fix: fix.into(),
        }
    }
}

/// What `rollback` did (or would do) with one recorded change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ActionKind {
    /// Put back as before.
    Restored,
    /// Removed (did not exist before).
    Removed,
    /// Already as before.
    Unchanged,
    /// Dry run: would be put back.
    WouldRestore,
    /// Dry run: would be removed.
    WouldRemove,
    /// Not done (`--no-apply`, gone, nothing recorded).
    Skipped,
    /// Tried and failed.
    Failed,
    /// Left as it is on purpose (an operator's edit, an interface the
    /// kernel cannot give its old qdisc back).
    Kept,
    /// Dry run: would be left as it is.
    WouldKeep,
    /// A BPF congestion control's pin removed.
    Unregistered,
    /// Dry run: its pin would be removed.
    WouldUnregister,
    /// A policy detached and its pins removed.
    Detached,
    /// Dry run: would be detached.
    WouldDetach,
}

impl ActionKind {
    /// The words of the human line (`would restore`).
    pub fn words(self) -> &'static str {
        match self {
            ActionKind::Restored => "restored",
            ActionKind::Removed => "removed",
            ActionKind::Unchanged => "unchanged",
            ActionKind::WouldRestore => "would restore",
            ActionKind::WouldRemove => "would remove",
            ActionKind::Skipped => "skipped",
            ActionKind::Failed => "failed",
            ActionKind::Kept => "kept",
            ActionKind::WouldKeep => "would keep",
            ActionKind::Unregistered => "unregistered",
            ActionKind::WouldUnregister => "would unregister",
            ActionKind::Detached => "detached",
            ActionKind::WouldDetach => "would detach",
        }
    }
}

/// One line of the `rollback` report.
#[derive(Debug, Clone, Serialize)]
pub struct Action {
    /// File path, sysctl key, interface name or algorithm.
    pub what: String,
    /// What happened.
    pub action: ActionKind,
    /// One line of detail.
    pub detail: String,
}

impl Action {
    /// An action line.
    pub fn new(what: impl Into<String>, action: ActionKind, detail: impl Into<String>) -> Action {
        Action {
            what: what.into(),
            action,
            detail: detail.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_serialise_as_their_stable_strings() {
        assert_eq!(
            serde_json::to_value(CheckName::BootRun).unwrap(),
            CheckName::BootRun.as_str()
        );
        assert_eq!(
            FindingId::BpfDefaultWithoutUnit.as_str(),
            "bpf_default_without_unit"
        );
        assert_eq!(
            serde_json::to_value(ActionKind::WouldUnregister).unwrap(),
            "would_unregister"
        );
        assert_eq!(ActionKind::WouldUnregister.words(), "would unregister");
    }
}
