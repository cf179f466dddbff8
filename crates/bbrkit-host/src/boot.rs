//! `bbrkit boot --cc bbr3`, what the boot unit runs after systemd-sysctl:
//! register the BPF congestion control with a pinned link unless bbrkit's
//! pin already holds it (a running bbrkit lab's registration is pinned
//! instead of registering a second one), then make it the default when
//! bbrkit's sysctl file says so (that file's
//! `-net.ipv4.tcp_congestion_control = bbr3` line could not take effect
//! earlier: the name did not exist yet). Every run leaves a record in
//! `run/bbrkit/<cc>.boot.json` under the root (`/run` is per boot), which
//! `verify` and `doctor` read to say why a boot failed.
//!
//! Then (and alone with `--policy`) re-attaches the per-connection policies
//! the before-image records (`crate::change::policy::reattach`), after the
//! registration because a policy may name the algorithm — first registering
//! the other BPF algorithms and loading the modules the policies name (a
//! policy's change registers what it names without making it the default,
//! issue 33.6; `tcp_bbr` may be a module, issue 33.1).
//!
//! Never takes over a name another loader registered, never sets the
//! default when registration failed (the host stays on what the kernel
//! chose, and the unit fails visibly), never writes another file.

use crate::algorithm::{Holding, Registration, bpf_names};
use crate::host::HostMut;
use crate::snapshot::{Scope, Snapshot};
use crate::unit::{BootRecord, BootRegistration, record_path};
use crate::{HostError, KEY_CC, Provider, atomic};

/// Lines of the verifier log kept in the record (its verdict is at the end).
const LOG_TAIL_LINES: usize = 20;

fn tail(log: &str) -> String {
    let lines: Vec<&str> = log.lines().collect();
    lines[lines.len().saturating_sub(LOG_TAIL_LINES)..].join("\n")
}

/// `boot --cc` of a name that is not one of bbrkit's BPF algorithms.
fn not_bootable(cc: &str, p: Provider<'_>) -> HostError {
    let next = match p {
        Provider::Absent => String::new(),
        _ => format!("; {cc} needs no boot step (`bbrkit enable --cc {cc}` persists it)"),
    };
    HostError::NotBootable {
        name: cc.into(),
        reason: format!(
            "{cc} is {}: `bbrkit boot` only registers bbrkit's BPF congestion controls ({}) at boot{next}",
            p.words(),
            bpf_names()
        ),
    }
}

/// Registers `cc` unless bbrkit's pin holds it (or pins a running lab's
/// registration); the registration step of the record. Returns the error
/// line on failure.
fn ensure_registered(
    host: &mut dyn HostMut,
    reg: &Registration,
    rec: &mut BootRecord,
) -> Result<(), String> {
    let cc = &reg.cc;
    let (step, made) = match reg.holding {
        Holding::Pin => {
            rec.registration = BootRegistration::AlreadyRegistered;
            rec.steps
                .push(format!("{cc}: already registered by {}", reg.holder));
            return Ok(());
        }
        Holding::Other => {
            rec.registration = BootRegistration::Foreign;
            return Err(format!(
                "{cc} is registered by {}; bbrkit does not take over a name it did not register",
                reg.holder
            ));
        }
        Holding::BbrkitLink { .. } => (
            BootRegistration::Adopted,
            host.adopt_bpf(cc).map(|p| vec![p]),
        ),
        Holding::None => (BootRegistration::Registered, host.register_bpf(cc)),
    };
    match made {
        Ok(pins) => {
            rec.registration = step;
            let pins: Vec<String> = pins.iter().map(|p| p.display().to_string()).collect();
            rec.steps.push(match step {
                BootRegistration::Adopted => format!(
                    "{cc}: registered by a running bbrkit lab; its link pinned at {}",
                    pins.join(", ")
                ),
                _ => format!("{cc}: registered, link pinned at {}", pins.join(", ")),
            });
            Ok(())
        }
        Err(f) => {
            rec.registration = BootRegistration::Failed;
            rec.verifier_log_tail = f.verifier_log.as_deref().map(tail);
            Err(format!("{cc}: registration failed: {}", f.reason))
        }
    }
}

/// Runs the boot step for `cc` on `host` and records it.
pub fn run(host: &mut dyn HostMut, cc: &str) -> Result<BootRecord, HostError> {
    let snap = Snapshot::read(host, &Scope::default())?;
    let reg = match snap.provider(cc) {
        Provider::Bpf(r) => r.clone(),
        p => return Err(not_bootable(cc, p)),
    };
    let mut rec = BootRecord {
        cc: cc.into(),
        boot_id: snap.boot_id.clone(),
        ok: false,
        registration: BootRegistration::Failed,
        default_set: None,
        steps: Vec::new(),
        error: None,
        verifier_log_tail: None,
    };
    match ensure_registered(host, &reg, &mut rec) {
        Err(e) => {
            let now = snap.runtime(KEY_CC).unwrap_or_default();
            rec.steps.push(format!("{KEY_CC} left at {now}"));
            rec.error = Some(e);
        }
        Ok(()) => {
            apply_default(host, &snap, cc, &mut rec);
            // After the registration: a policy naming `cc` needs it.
            let after = Snapshot::read(host, &Scope::default())?;
            policies(host, after, &mut rec)?;
        }
    }
    save(&snap, &rec)?;
    Ok(rec)
}

/// Registers and loads what the recorded policies name, then re-attaches
/// them; a failure fails the run.
fn policies(
    host: &mut dyn HostMut,
    mut snap: Snapshot,
    rec: &mut BootRecord,
) -> Result<(), HostError> {
    if prepare(host, &snap, rec) {
        snap = Snapshot::read(host, &Scope::default())?;
    }
    for (ok, line) in crate::change::policy::reattach(host, &snap) {
        if !ok {
            rec.ok = false;
            rec.error.get_or_insert_with(|| line.clone());
        }
        rec.steps.push(line);
    }
    Ok(())
}

/// Registers the BPF algorithms and loads the modules the recorded
/// policies name that are not registered (the re-attachment refuses a
/// policy whose algorithm is still missing). Whether it tried anything.
fn prepare(host: &mut dyn HostMut, snap: &Snapshot, rec: &mut BootRecord) -> bool {
    let needs: Vec<String> = crate::change::policy::named_by_policies(snap)
        .into_iter()
        .filter(|c| !snap.kernel.available_cc.contains(c))
        .collect();
    let mut tried = false;
    for cc in &needs {
        let step = match snap.provider(cc) {
            Provider::Bpf(reg) => {
                let mut own = rec.clone();
                own.steps.clear();
                let made = ensure_registered(host, reg, &mut own);
                rec.steps.extend(own.steps);
                made.err()
            }
            Provider::Module => match host.load_cc_module(cc) {
                Ok(()) => {
                    rec.steps
                        .push(format!("{cc}: module tcp_{cc} loaded (a policy names it)"));
                    None
                }
                Err(e) => Some(bbrkit_diag::error_chain(&e)),
            },
            _ => continue,
        };
        tried = true;
        if let Some(e) = step {
            rec.steps.push(e);
        }
    }
    tried
}

/// `bbrkit boot --policy`: re-attaches the recorded policies only (a host
/// that enabled a policy and no BPF algorithm). Not recorded in a file:
/// the result is the steps and the first error.
pub fn run_policy(host: &mut dyn HostMut) -> Result<BootRecord, HostError> {
    let snap = Snapshot::read(host, &Scope::default())?;
    let mut rec = BootRecord {
        cc: String::new(),
        boot_id: snap.boot_id.clone(),
        ok: true,
        registration: BootRegistration::AlreadyRegistered,
        default_set: None,
        steps: Vec::new(),
        error: None,
        verifier_log_tail: None,
    };
    policies(host, snap, &mut rec)?;
    if rec.steps.is_empty() {
        rec.steps
            .push("policy: the before-image records none".into());
    }
    Ok(rec)
}

/// Sets the default to `cc` when bbrkit's file says so.
fn apply_default(host: &mut dyn HostMut, snap: &Snapshot, cc: &str, rec: &mut BootRecord) {
    let file = snap.root.show(&snap.root.bbrkit_file());
    if snap.bbrkit_value(KEY_CC).as_deref() != Some(cc) {
        rec.ok = true;
        rec.steps.push(format!(
            "{KEY_CC}: {file} does not set {cc}; default left alone"
        ));
        return;
    }
    let before = snap.runtime(KEY_CC).unwrap_or_default();
    match host.write_sysctl(KEY_CC, cc) {
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

fn save(snap: &Snapshot, rec: &BootRecord) -> Result<(), HostError> {
    let path = record_path(&snap.root, &rec.cc);
    let dir = path.parent().unwrap_or(snap.root.base()).to_path_buf();
    std::fs::create_dir_all(&dir).map_err(|e| HostError::io(&dir, e))?;
    let text = serde_json::to_vec_pretty(rec).map_err(|e| HostError::State {
        path: path.clone(),
        reason: e.to_string(),
    })?;
    atomic::write_atomic(&path, &text, 0o644).map_err(|e| HostError::io(&path, e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Host;
    use crate::algorithm::RegisterFailure;
    use crate::testing::{BBR3_DEFAULT, DEBIAN, Fixture, SYSTEMD};

    fn host(holding: Holding) -> Fixture {
        let mut f = Fixture::new(&[DEBIAN, SYSTEMD, BBR3_DEFAULT].concat());
        f.live().register("bbr3", holding);
        f
    }

    /// Issue 21.12: `boot --cc bbr` says plainly what is wrong.
    #[test]
    fn only_bbrkits_bpf_algorithms_boot() {
        let mut f = host(Holding::None);
        let e = run(&mut f.host, "bbr").unwrap_err().to_string();
        assert_eq!(
            e,
            "boot --cc bbr: bbr is built into this kernel: `bbrkit boot` only registers bbrkit's BPF congestion controls (bbr3 bbr2) at boot; bbr needs no boot step (`bbrkit enable --cc bbr` persists it)"
        );
        let e = run(&mut f.host, "bogus").unwrap_err().to_string();
        assert!(
            e.starts_with("boot --cc bogus: bogus is not offered by this kernel"),
            "{e}"
        );
    }

    #[test]
    fn registers_then_sets_the_default_and_records_it() {
        let mut f = host(Holding::None);
        let r = run(&mut f.host, "bbr3").unwrap();
        assert!(
            r.ok && r.registration == BootRegistration::Registered,
            "{r:?}"
        );
        assert_eq!(f.host.sysctl(KEY_CC).as_deref(), Some("bbr3"));
        assert_eq!(crate::unit::load_record(f.root(), "bbr3"), Some(r));
        let again = run(&mut f.host, "bbr3").unwrap();
        assert_eq!(again.registration, BootRegistration::AlreadyRegistered);
        assert!(again.steps[0].contains("already registered by bbrkit's pinned link"));
    }

    /// Issue 21.3: a running lab's registration is pinned, not refused.
    #[test]
    fn a_labs_registration_is_pinned_and_a_foreign_one_refused() {
        let mut f = host(Holding::BbrkitLink { link_id: 9 });
        let r = run(&mut f.host, "bbr3").unwrap();
        assert!(r.ok && r.registration == BootRegistration::Adopted, "{r:?}");
        assert!(
            r.steps[0].starts_with("bbr3: registered by a running bbrkit lab; its link pinned at")
        );
        let mut f = host(Holding::Other);
        let r = run(&mut f.host, "bbr3").unwrap();
        assert!(
            !r.ok && r.registration == BootRegistration::Foreign,
            "{r:?}"
        );
        assert_eq!(r.steps, ["net.ipv4.tcp_congestion_control left at cubic"]);
        assert_eq!(f.host.sysctl(KEY_CC).as_deref(), Some("cubic"));
    }

    #[test]
    fn a_refused_program_is_recorded_with_the_end_of_the_verifier_log() {
        let mut f = host(Holding::None);
        let log: String = (0..30).map(|i| format!("line {i}\n")).collect();
        f.live().trial_load = Err(RegisterFailure {
            reason: "the kernel's verifier refused BPF program x".into(),
            verifier_log: Some(log),
        });
        let r = run(&mut f.host, "bbr3").unwrap();
        assert!(!r.ok && r.registration == BootRegistration::Failed);
        assert_eq!(
            r.error.as_deref(),
            Some("bbr3: registration failed: the kernel's verifier refused BPF program x")
        );
        let tail = r.verifier_log_tail.unwrap();
        assert_eq!(tail.lines().count(), LOG_TAIL_LINES);
        assert!(tail.ends_with("line 29"), "{tail}");
    }
}
