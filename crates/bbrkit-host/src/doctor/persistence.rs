//! `doctor`'s findings about the sysctl files against the runtime, key by
//! key (the keys `enable` manages): another file overrides bbrkit's at boot
//! (`boot_override`), a runtime value no file keeps (`not_persisted`), a
//! file that loses at boot (`overridden_file`), a runtime value that
//! differs from bbrkit's file (`runtime_differs`).

use super::{Finding, Level};
use crate::precedence::{self, Loader};
use crate::verify::bbrkit_value;
use crate::{HostError, KEY_CC, KEY_QDISC, Root, enable, kernel, sysctl};

pub(super) fn boot_findings(
    root: &Root,
    facts: &kernel::KernelFacts,
    out: &mut Vec<Finding>,
) -> Result<(), HostError> {
    let mut keys = vec![KEY_CC];
    if facts.default_qdisc.is_some() {
        keys.push(KEY_QDISC);
    }
    for (k, _, _) in enable::TUNING {
        if bbrkit_value(root, k).is_some() {
            keys.push(k);
        }
    }
    let res = precedence::resolve(root, &keys, None)?;
    for key in &keys {
        let k = KeyState {
            key,
            mine: root.show(&root.bbrkit_file()),
            ours: bbrkit_value(root, key),
            runtime: sysctl::read(key).ok().flatten(),
        };
        let mut lost = Lost::default();
        for r in res.iter().filter(|r| r.key == *key) {
            out.extend(k.winner_finding(r, facts, &mut lost));
            out.extend(k.overridden_findings(r));
        }
        out.extend(k.lost_finding(lost));
        out.extend(k.runtime_differs(facts));
    }
    Ok(())
}

/// One key as `doctor` sees it: bbrkit's file, its value there, the runtime.
struct KeyState<'a> {
    key: &'a str,
    mine: String,
    ours: Option<String>,
    runtime: Option<String>,
}

/// Boot files that set a runtime value bbrkit does not manage differently.
#[derive(Default)]
struct Lost {
    evidence: Vec<String>,
    files: Vec<String>,
    fix: String,
}

impl KeyState<'_> {
    /// What the winner under one loader means: bbrkit overridden, or a
    /// runtime value lost (collected in `lost`) or never persisted.
    fn winner_finding(
        &self,
        r: &precedence::Resolution,
        facts: &kernel::KernelFacts,
        lost: &mut Lost,
    ) -> Option<Finding> {
        let (key, mine) = (self.key, &self.mine);
        match (&self.ours, &r.winner) {
            (Some(v), Some(w)) if &w.file != mine && &w.value != v => Some(Finding::new(
                "boot_override",
                Level::Warning,
                format!("{} overrides bbrkit's {key} at boot", w.file),
                vec![format!(
                    "{} applies {key} = {} from {}:{} after {mine} ({v})",
                    r.loader.name(),
                    w.value,
                    w.file,
                    w.line
                )],
                format!(
                    "remove or change line {} of {} (bbrkit never edits other files), then `bbrkit verify`",
                    w.line, w.file
                ),
            )),
            (None, Some(w)) if self.runtime.as_ref().is_some_and(|rv| rv != &w.value) => {
                let rv = self.runtime.clone().unwrap_or_default();
                lost.evidence.push(format!(
                    "{}: {}:{} sets {}",
                    r.loader.name(),
                    w.file,
                    w.line,
                    w.value
                ));
                lost.files.push(format!("{} ({})", w.file, w.value));
                lost.fix = format!(
                    "persist it: {} (or change {}:{})",
                    enable_cmd(key, &rv),
                    w.file,
                    w.line
                );
                None
            }
            (None, None) if r.loader == Loader::Systemd => {
                let kdef = match key {
                    KEY_CC => facts.config_default_cc.clone(),
                    KEY_QDISC => Some("pfifo_fast".into()),
                    _ => None,
                };
                let (kd, rv) = (kdef?, self.runtime.as_ref()?);
                (&kd != rv).then(|| Finding::new(
                    "not_persisted",
                    Level::Warning,
                    format!("runtime {key} = {rv} is not persisted: no sysctl file sets it (kernel default {kd})"),
                    vec![format!("/proc/sys: {key} = {rv}"), format!("no file under sysctl.d or sysctl.conf sets {key}")],
                    format!("{} writes it to {mine}", enable_cmd(key, rv)),
                ))
            }
            _ => None,
        }
    }

    /// Files that set the key but lose at boot (systemd's order).
    fn overridden_findings(&self, r: &precedence::Resolution) -> Vec<Finding> {
        let Some(w) = r.winner.as_ref().filter(|_| r.loader == Loader::Systemd) else {
            return Vec::new();
        };
        r.overridden
            .iter()
            .filter(|o| o.value != w.value && o.file != self.mine)
            .map(|o| {
                Finding::new(
                    "overridden_file",
                    Level::Info,
                    format!(
                        "{} sets {} = {} but loses at boot",
                        o.file, self.key, o.value
                    ),
                    vec![format!(
                        "{}:{} is applied before {}:{}",
                        o.file, o.line, w.file, w.line
                    )],
                    "nothing to do; remove the line to avoid confusion",
                )
            })
            .collect()
    }

    fn lost_finding(&self, mut lost: Lost) -> Option<Finding> {
        if lost.evidence.is_empty() {
            return None;
        }
        let (key, rv) = (self.key, self.runtime.clone().unwrap_or_default());
        lost.files.dedup();
        let mut evidence = vec![format!("/proc/sys: {key} = {rv}")];
        evidence.extend(lost.evidence);
        Some(Finding::new(
            "not_persisted",
            Level::Warning,
            format!(
                "runtime {key} = {rv} is lost on reboot: boot applies {}",
                lost.files.join(", ")
            ),
            evidence,
            lost.fix,
        ))
    }

    /// The runtime value differs from bbrkit's file (a qdisc the kernel
    /// lacks excepted).
    fn runtime_differs(&self, facts: &kernel::KernelFacts) -> Option<Finding> {
        let (key, v, rv) = (self.key, self.ours.as_ref()?, self.runtime.as_ref()?);
        let lacks = key == KEY_QDISC
            && facts
                .qdisc(v)
                .is_some_and(|q| q.provision == kernel::Provision::Absent);
        (v != rv && !lacks).then(|| Finding::new(
            "runtime_differs",
            Level::Warning,
            format!("runtime {key} = {rv} differs from bbrkit's file ({v})"),
            vec![format!("/proc/sys: {key} = {rv}"), format!("{}: {key} = {v}", self.mine)],
            "`bbrkit enable` applies it again; find who changed it (tuned, a container start script, an operator)",
        ))
    }
}

fn enable_cmd(key: &str, value: &str) -> String {
    match key {
        KEY_CC => format!("`bbrkit enable --cc {value}`"),
        KEY_QDISC => format!("`bbrkit enable --qdisc {value}`"),
        _ => "`bbrkit enable --tune`".to_string(),
    }
}
