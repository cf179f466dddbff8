//! `bbrkit boot --cc bbr3`, what the boot unit runs after systemd-sysctl:
//! register the BPF congestion control with a pinned link unless bbrkit's
//! pin already holds it, then make it the default when bbrkit's sysctl file
//! says so (that file's `-net.ipv4.tcp_congestion_control = bbr3` line could
//! not take effect earlier: the name did not exist yet). Every run leaves a
//! record in `run/bbrkit/<cc>.boot.json` under the root (`/run` is per
//! boot), which `verify` and `doctor` read to say why a boot failed.
//!
//! Never takes over a name another program registered, never sets the
//! default when registration failed (the host stays on what the kernel
//! chose, and the unit fails visibly), never writes another file.

use serde::{Deserialize, Serialize};

use crate::{HostError, KEY_CC, Root, atomic, bpfcc, sysctl, verify};

/// The outcome of one `bbrkit boot` run, also the record it leaves.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BootRecord {
    /// The algorithm.
    pub cc: String,
    /// `/proc/sys/kernel/random/boot_id` of the boot it ran in.
    pub boot_id: Option<String>,
    /// Everything it had to do succeeded.
    pub ok: bool,
    /// `registered`, `already_registered`, `foreign`, `failed`.
    pub registration: String,
    /// The default it set (`None`: left alone).
    pub default_set: Option<String>,
    /// One line per step.
    pub steps: Vec<String>,
    /// Why it failed.
    pub error: Option<String>,
    /// The end of the verifier's log when the kernel refused a program.
    pub verifier_log_tail: Option<String>,
}

/// Lines of the verifier log kept in the record (its verdict is at the end).
const LOG_TAIL_LINES: usize = 20;

/// `run/bbrkit/<cc>.boot.json` under the root.
pub fn record_path(root: &Root, cc: &str) -> std::path::PathBuf {
    root.path(format!("run/bbrkit/{cc}.boot.json"))
}

/// This boot's id.
pub fn boot_id() -> Option<String> {
    sysctl::read("kernel.random.boot_id").ok().flatten()
}

/// The record the last `bbrkit boot` left, if any.
pub fn load_record(root: &Root, cc: &str) -> Option<BootRecord> {
    let text = std::fs::read(record_path(root, cc)).ok()?;
    serde_json::from_slice(&text).ok()
}

fn tail(log: &str) -> String {
    let lines: Vec<&str> = log.lines().collect();
    lines[lines.len().saturating_sub(LOG_TAIL_LINES)..].join("\n")
}

/// Registers `cc` unless bbrkit's pin holds it; the registration step of
/// the record. Returns the error line on failure.
fn ensure_registered(cc: &str, rec: &mut BootRecord) -> Result<(), String> {
    let reg = bpfcc::registration(cc);
    if reg.registered && reg.by_bbrkit {
        rec.registration = "already_registered".into();
        rec.steps
            .push(format!("{cc}: already registered by {}", reg.holder));
        return Ok(());
    }
    if reg.registered {
        rec.registration = "foreign".into();
        return Err(format!(
            "{cc} is registered by {}; bbrkit does not take over a name it did not register",
            reg.holder
        ));
    }
    match bpfcc::register_pinned(cc) {
        Ok(pins) => {
            rec.registration = "registered".into();
            let pins: Vec<String> = pins.iter().map(|p| p.display().to_string()).collect();
            rec.steps.push(format!(
                "{cc}: registered, link pinned at {}",
                pins.join(", ")
            ));
            Ok(())
        }
        Err(f) => {
            rec.registration = "failed".into();
            rec.verifier_log_tail = f.verifier_log.as_deref().map(tail);
            Err(format!("{cc}: registration failed: {}", f.reason))
        }
    }
}

/// Runs the boot step for `cc` and records it.
pub fn run(root: &Root, cc: &str) -> Result<BootRecord, HostError> {
    if !bpfcc::is_bpf_cc(cc) {
        return Err(HostError::UnknownCc {
            name: cc.into(),
            available: format!(
                "{} (BPF congestion controls bbrkit ships)",
                bpfcc::BPF_CCS.join(" ")
            ),
        });
    }
    let mut rec = BootRecord {
        cc: cc.into(),
        boot_id: boot_id(),
        ok: false,
        registration: String::new(),
        default_set: None,
        steps: Vec::new(),
        error: None,
        verifier_log_tail: None,
    };
    match ensure_registered(cc, &mut rec) {
        Err(e) => {
            let now = sysctl::read(KEY_CC).ok().flatten().unwrap_or_default();
            rec.steps.push(format!("{KEY_CC} left at {now}"));
            rec.error = Some(e);
        }
        Ok(()) => apply_default(root, cc, &mut rec),
    }
    save(root, &rec)?;
    Ok(rec)
}

/// Sets the default to `cc` when bbrkit's file says so.
fn apply_default(root: &Root, cc: &str, rec: &mut BootRecord) {
    let file = root.show(&root.bbrkit_file());
    if verify::bbrkit_value(root, KEY_CC).as_deref() != Some(cc) {
        rec.ok = true;
        rec.steps.push(format!(
            "{KEY_CC}: {file} does not set {cc}; default left alone"
        ));
        return;
    }
    let before = sysctl::read(KEY_CC).ok().flatten().unwrap_or_default();
    match sysctl::write(KEY_CC, cc) {
        Ok(()) => {
            rec.ok = true;
            rec.default_set = Some(cc.into());
            rec.steps.push(format!(
                "{KEY_CC} = {cc} ({before} -> {cc}, read back; from {file})"
            ));
        }
        Err(e) => {
            rec.error = Some(format!("{KEY_CC} = {cc}: {e}"));
        }
    }
}

fn save(root: &Root, rec: &BootRecord) -> Result<(), HostError> {
    let path = record_path(root, &rec.cc);
    let dir = path.parent().unwrap_or(root.base()).to_path_buf();
    std::fs::create_dir_all(&dir).map_err(|e| HostError::io(&dir, e))?;
    let text = serde_json::to_vec_pretty(rec).map_err(|e| HostError::State {
        path: path.clone(),
        reason: e.to_string(),
    })?;
    atomic::write_atomic(&path, &text, 0o644).map_err(|e| HostError::io(&path, e))
}
