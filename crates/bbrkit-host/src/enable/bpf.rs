//! `enable --cc bbr3`: what a BPF congestion control adds to the plan.
//! Before anything is written it refuses (exit 2) a root that does not
//! boot with systemd (nothing would register bbr3 after a reboot), a name
//! another program holds, a kernel that lacks a requirement, and an object
//! the verifier refuses (a trial load that registers nothing). Then it
//! plans: register bbr3 with a pinned link (unless bbrkit's pin holds it),
//! install `etc/systemd/system/bbrkit-bbr3.service`, enable it with the
//! `sysinit.target.wants/` symlink. Only reads; `apply` makes the changes.

use std::path::PathBuf;

use serde::Serialize;

use crate::{HostError, Root, bpfcc, unit};

/// One file `enable` writes for the unit, as the report shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UnitFile {
    /// The path under the root.
    pub file: String,
    /// `write`, `link`, `unchanged` (`would_*` in a dry run is the same plan).
    pub action: String,
    /// What it is.
    pub detail: String,
}

/// The BPF part of the plan (also in the `--json` report as `bpf`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BpfPlan {
    /// The algorithm.
    pub cc: String,
    /// `register` (not registered yet), `already_registered` (bbrkit's pin
    /// holds it), `registered` (done by this run).
    pub registration: String,
    /// The link pin that keeps it registered.
    pub pin: String,
    /// The verifier's answer to the trial load, or why none was needed.
    pub verifier: String,
    /// Why the root counts as booted with systemd.
    pub systemd: String,
    /// The unit file and its enabling symlink.
    pub unit: Vec<UnitFile>,
    /// The pins under `/sys/fs/bpf/bbrkit` before the run (for the image).
    #[serde(skip)]
    pub pinned_before: Vec<String>,
    /// The unit's path, content, and whether it differs from what is there.
    #[serde(skip)]
    pub unit_write: Option<(PathBuf, String)>,
    /// The symlink to create, if it is not there yet.
    #[serde(skip)]
    pub wants_link: Option<(PathBuf, PathBuf)>,
}

impl BpfPlan {
    /// Something would change.
    pub fn changes(&self) -> bool {
        self.registration == "register" || self.unit_write.is_some() || self.wants_link.is_some()
    }
}

fn refuse(cc: &str, why: impl std::fmt::Display) -> HostError {
    HostError::Bpf(format!("--cc {cc}: {why}"))
}

/// Decides the BPF part for `cc`, refusing what cannot work (see the
/// module documentation). `exe` is the bbrkit the unit will run.
pub fn plan(root: &Root, cc: &str, exe: &std::path::Path) -> Result<BpfPlan, HostError> {
    let (systemd, sd_why) = unit::systemd_booted(root);
    if !systemd {
        return Err(refuse(
            cc,
            format!(
                "{sd_why}: bbrkit keeps bbr3 across reboots with a systemd unit; without systemd run `bbrkit boot --cc {cc}` from the init system after the sysctl files (docs/host.md)"
            ),
        ));
    }
    let reg = bpfcc::registration(cc);
    if reg.registered && !reg.by_bbrkit {
        return Err(refuse(
            cc,
            format!(
                "{cc} is registered by {}; bbrkit does not take over a name it did not register",
                reg.holder
            ),
        ));
    }
    let verifier = if reg.by_bbrkit {
        format!("not needed: {}", reg.holder)
    } else {
        if let Some(m) = bpfcc::missing_requirement(&bpfcc::features()) {
            return Err(refuse(
                cc,
                format!("{m} (`bbrkit check` lists every requirement)"),
            ));
        }
        bpfcc::trial_load(cc).map_err(|f| refuse(cc, f))?;
        "accepted (trial load, nothing registered)".to_string()
    };
    let text = unit::render(cc, exe).ok_or_else(|| refuse(cc, "bbrkit has no unit for it"))?;
    let unit_path = unit::unit_path(root, cc);
    let wants = unit::wants_path(root, cc);
    let target = unit::wants_target(cc);
    let unit_same = std::fs::symlink_metadata(&unit_path).is_ok_and(|m| m.is_file())
        && std::fs::read(&unit_path).ok().as_deref() == Some(text.as_bytes());
    let wants_same = std::fs::read_link(&wants).is_ok_and(|t| t == target);
    let mut files = vec![UnitFile {
        file: root.show(&unit_path),
        action: if unit_same { "unchanged" } else { "write" }.into(),
        detail: format!(
            "runs `{} boot --cc {cc}` after systemd-sysctl, before sysinit.target",
            exe.display()
        ),
    }];
    files.push(UnitFile {
        file: root.show(&wants),
        action: if wants_same { "unchanged" } else { "link" }.into(),
        detail: format!(
            "-> {} (enables it, as `systemctl enable` would)",
            target.display()
        ),
    });
    Ok(BpfPlan {
        cc: cc.into(),
        registration: if reg.by_bbrkit {
            "already_registered"
        } else {
            "register"
        }
        .into(),
        pin: reg.pin.clone(),
        verifier,
        systemd: sd_why,
        unit: files,
        pinned_before: bpfcc::pinned(),
        unit_write: (!unit_same).then_some((unit_path, text)),
        wants_link: (!wants_same).then_some((wants, target)),
    })
}

/// The human lines of the BPF plan.
pub fn lines(p: &BpfPlan, dry_run: bool) -> Vec<String> {
    let would = if dry_run { "would " } else { "" };
    let mut out = vec![match p.registration.as_str() {
        "register" => format!(
            "bpf: {would}register {} with a pinned link {} (verifier: {})",
            p.cc, p.pin, p.verifier
        ),
        "registered" => format!("bpf: registered {} with a pinned link {}", p.cc, p.pin),
        _ => format!("bpf: {} already registered by bbrkit's pin {}", p.cc, p.pin),
    }];
    for u in &p.unit {
        let verb = match (u.action.as_str(), dry_run) {
            ("unchanged", _) => "unchanged".to_string(),
            ("write", true) => "would write".to_string(),
            ("write", false) => "wrote".to_string(),
            (_, true) => "would link".to_string(),
            (_, false) => "linked".to_string(),
        };
        out.push(format!("unit: {verb} {} ({})", u.file, u.detail));
    }
    out.push(format!("unit: {}", p.systemd));
    out
}
