//! bbrkit's own sysctl.d file, `etc/sysctl.d/99-zz-bbrkit.conf`: what it
//! says ([`render`]), which file wins each key at boot under both loaders
//! with it in place (`enable`'s [`boot_winners`], which block a run another
//! file would override), `verify`'s persistence checks ([`checks`]) and
//! `doctor`'s findings about files against the runtime ([`findings`]:
//! another file overrides bbrkit's, a runtime value no file keeps, a file
//! that loses at boot, a runtime value that differs from bbrkit's file, an
//! edit of bbrkit's own files). The file itself is a [`super::file`]
//! change; this module is what its content means.

use serde::Serialize;

use super::sysctl::Setting;
use crate::image::{BeforeImage, Present, Recorded};
use crate::kernel::Provision;
use crate::outcome::{Check, CheckName, Finding, FindingId, Level};
use crate::precedence::{Loader, Overlay, Resolution};
use crate::snapshot::Snapshot;
use crate::tuning::TUNING;
use crate::{KEY_CC, KEY_QDISC};

/// bbrkit's file (deterministic: no timestamps, so a second run is a no-op).
pub fn render(settings: &[Setting]) -> String {
    let mut s = String::from(
        "# Written by `bbrkit enable`; undo with `bbrkit rollback` (do not edit: bbrkit\n\
         # compares this file byte for byte). The name 99-zz-bbrkit.conf sorts after\n\
         # 50-default.conf and 99-sysctl.conf, so it wins under systemd-sysctl.\n",
    );
    for st in settings.iter().filter(|s| s.persist) {
        s.push_str(&format!(
            "\n# {}\n{}{} = {}\n",
            st.rationale,
            if st.optional { "-" } else { "" },
            st.key,
            st.value
        ));
    }
    s
}

/// Which file wins one key at boot under one loader.
#[derive(Debug, Clone, Serialize)]
pub struct BootWinner {
    /// Key.
    pub key: String,
    /// Loader.
    pub loader: Loader,
    /// Winning file (None: no file sets it; the kernel default stays).
    pub file: Option<String>,
    /// Line in that file.
    pub line: Option<usize>,
    /// Value that wins.
    pub value: Option<String>,
    /// True when bbrkit's file wins or the winner has bbrkit's value.
    pub ok: bool,
}

/// The winner at boot of every persisted key under both loaders, with the
/// planned file (`content`) in place.
pub fn boot_winners(snap: &Snapshot, settings: &[Setting], content: &str) -> Vec<BootWinner> {
    let file_shown = snap.root.show(&snap.root.bbrkit_file());
    let overlay = Overlay {
        basename: crate::SYSCTL_FILE_NAME.into(),
        content: Some(content.to_string()),
    };
    let keys: Vec<&str> = settings
        .iter()
        .filter(|s| s.persist)
        .map(|s| s.key.as_str())
        .collect();
    snap.resolve(&keys, Some(&overlay))
        .into_iter()
        .map(|r| {
            let ours = settings.iter().find(|s| s.key == r.key).map(|s| &s.value);
            let ok = r
                .winner
                .as_ref()
                .is_some_and(|w| w.file == file_shown || Some(&w.value) == ours);
            BootWinner {
                key: r.key,
                loader: r.loader,
                file: r.winner.as_ref().map(|w| w.file.clone()),
                line: r.winner.as_ref().map(|w| w.line),
                value: r.winner.map(|w| w.value),
                ok,
            }
        })
        .collect()
}

/// The human `boot:` lines: one per key when both loaders agree, else one
/// per loader. `planned`: bbrkit's file is not written by this run (a dry
/// run or a blocked one), so where it wins it *would* apply.
pub fn boot_lines(boot: &[BootWinner], bbrkit_file: &str, planned: bool) -> Vec<String> {
    let mut keys: Vec<&str> = boot.iter().map(|b| b.key.as_str()).collect();
    keys.sort();
    keys.dedup();
    let mut out = Vec::new();
    for key in keys {
        let rows: Vec<&BootWinner> = boot.iter().filter(|b| b.key == key).collect();
        let who = |b: &BootWinner| match (&b.file, b.line) {
            (Some(f), Some(l)) => format!("{f}:{l} ({})", b.value.as_deref().unwrap_or("")),
            _ => "no file".into(),
        };
        let verb = |b: &BootWinner, one: &str, both: &str| {
            let would = planned && b.file.as_deref() == Some(bbrkit_file);
            format!(
                "{}{}",
                if would { "would " } else { "" },
                if would { both } else { one }
            )
        };
        let same = rows.windows(2).all(|w| who(w[0]) == who(w[1]));
        if same && rows.iter().all(|b| b.ok) {
            out.push(format!(
                "boot: {key}: systemd-sysctl and sysctl --system {} {}",
                verb(rows[0], "apply", "apply"),
                who(rows[0])
            ));
        } else {
            for b in rows {
                let flag = if b.ok { "" } else { "  <- overrides bbrkit" };
                out.push(format!(
                    "boot: {key}: {} {} {}{flag}",
                    b.loader.name(),
                    verb(b, "applies", "apply"),
                    who(b)
                ));
            }
        }
    }
    out
}

/// `verify`'s persistence checks: the value that wins at boot under each
/// loader is `expected`.
pub fn checks(snap: &Snapshot, expected: &str) -> Vec<Check> {
    let file_shown = snap.root.show(&snap.root.bbrkit_file());
    let mut checks = Vec::new();
    for r in snap.resolve(&[KEY_CC], None) {
        let key = format!(
            "boot.{}",
            match r.loader {
                Loader::Systemd => "systemd",
                Loader::Procps => "procps",
            }
        );
        let (value, ok, detail) = match &r.winner {
            Some(w) if w.file == file_shown => (
                format!("{}:{}", w.file, w.line),
                w.value == expected,
                format!("{} sets {}", r.loader.name(), w.value),
            ),
            Some(w) => (
                format!("{}:{}", w.file, w.line),
                w.value == expected,
                format!(
                    "{} applies {} = {} from {}:{} last",
                    r.loader.name(),
                    KEY_CC,
                    w.value,
                    w.file,
                    w.line
                ),
            ),
            None => {
                let d = snap
                    .kernel
                    .config_default_cc
                    .clone()
                    .unwrap_or_else(|| "unknown".into());
                (
                    "(no file)".to_string(),
                    d == expected,
                    format!("no file sets it: kernel default CONFIG_DEFAULT_TCP_CONG={d}"),
                )
            }
        };
        checks.push(Check::new(
            CheckName::Boot,
            ok,
            key,
            value,
            format!("{file_shown} ({expected})"),
            detail,
        ));
    }
    checks
}

/// `doctor`'s findings about the sysctl files against the runtime, key by
/// key (the keys `enable` manages), and about edits of bbrkit's files.
pub fn findings(snap: &Snapshot, image: Option<&BeforeImage>) -> Vec<Finding> {
    let mut keys = vec![KEY_CC];
    if snap.kernel.default_qdisc.is_some() {
        keys.push(KEY_QDISC);
    }
    for t in TUNING {
        if snap.bbrkit_value(t.key).is_some() {
            keys.push(t.key);
        }
    }
    let res = snap.resolve(&keys, None);
    let mut out = Vec::new();
    for key in &keys {
        let k = KeyState {
            key,
            mine: snap.root.show(&snap.root.bbrkit_file()),
            ours: snap.bbrkit_value(key),
            runtime: snap.runtime(key).map(String::from),
        };
        let mut lost = Lost::default();
        for r in res.iter().filter(|r| r.key == *key) {
            out.extend(k.winner_finding(r, snap, &mut lost));
            out.extend(k.overridden_findings(r));
        }
        out.extend(k.lost_finding(lost));
        out.extend(k.runtime_differs(snap));
    }
    out.extend(edited(snap, image));
    out
}

/// bbrkit's files that were edited since bbrkit wrote them.
fn edited(snap: &Snapshot, image: Option<&BeforeImage>) -> Option<Finding> {
    let edits: Vec<String> = image?
        .changes
        .iter()
        .filter_map(|c| match c {
            Recorded::File { path, .. } => Some(snap.root.path(path)),
            _ => None,
        })
        .filter_map(|p| {
            let now = Present::read(&p).ok()?;
            super::file::edit(image, &snap.root, &p, &now)
        })
        .map(|e| format!("{}: {}", e.file, e.summary()))
        .collect();
    (!edits.is_empty()).then(|| Finding::new(
        FindingId::EditedFile,
        Level::Info,
        format!("{} file(s) bbrkit wrote were edited since", edits.len()),
        edits,
        "bbrkit keeps an edited file: `bbrkit enable` will not replace it and `bbrkit rollback` leaves it; move your lines to a file of your own and delete bbrkit's, then run the command again",
    ))
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
    fn winner_finding(&self, r: &Resolution, snap: &Snapshot, lost: &mut Lost) -> Option<Finding> {
        let (key, mine) = (self.key, &self.mine);
        match (&self.ours, &r.winner) {
            (Some(v), Some(w)) if &w.file != mine && &w.value != v => Some(Finding::new(
                FindingId::BootOverride,
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
                    KEY_CC => snap.kernel.config_default_cc.clone(),
                    KEY_QDISC => Some("pfifo_fast".into()),
                    _ => None,
                };
                let (kd, rv) = (kdef?, self.runtime.as_ref()?);
                (&kd != rv).then(|| Finding::new(
                    FindingId::NotPersisted,
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
    fn overridden_findings(&self, r: &Resolution) -> Vec<Finding> {
        let Some(w) = r.winner.as_ref().filter(|_| r.loader == Loader::Systemd) else {
            return Vec::new();
        };
        r.overridden
            .iter()
            .filter(|o| o.value != w.value && o.file != self.mine)
            .map(|o| {
                Finding::new(
                    FindingId::OverriddenFile,
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
            FindingId::NotPersisted,
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
    fn runtime_differs(&self, snap: &Snapshot) -> Option<Finding> {
        let (key, v, rv) = (self.key, self.ours.as_ref()?, self.runtime.as_ref()?);
        let lacks = key == KEY_QDISC
            && snap
                .kernel
                .qdisc(v)
                .is_some_and(|q| q.provision == Provision::Absent);
        (v != rv && !lacks).then(|| Finding::new(
            FindingId::RuntimeDiffers,
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
