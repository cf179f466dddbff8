//! `enable`: persist the chosen algorithm (and fq where the kernel has it)
//! in bbrkit's own sysctl.d file, check which file wins at boot under both
//! loaders, apply the values to `/proc/sys` with read-back, re-create the
//! root qdisc of interfaces still on the old kernel default, and record a
//! before-image first. Never writes `etc/sysctl.conf`, never edits or
//! deletes other files, never installs kernels.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::precedence::{self, Overlay};
use crate::qdisc::{self, InterfaceQdisc};
use crate::state::{self, BeforeImage, InterfaceImage};
use crate::sysctl::{self, WriteError};
use crate::{HostError, KEY_CC, KEY_QDISC, Root, atomic, crash_point, env, kernel};

pub mod bpf;
mod ifaces;
mod report;
#[cfg(test)]
mod root_tests;
#[cfg(test)]
mod tests;

use ifaces::describe_interfaces;
pub use ifaces::needs_recreate;
pub use report::*;

fn host_only(key: &str) -> Option<String> {
    let p = sysctl::proc_path(key);
    match std::fs::metadata(&p) {
        Err(_) => Some(format!(
            "{key} does not exist in this network namespace: the host's job (change it on the host)"
        )),
        Ok(m) if m.permissions().mode() & 0o222 == 0 => Some(format!(
            "{key} is read-only in this network namespace: owned by the host (change it on the host)"
        )),
        Ok(_) => None,
    }
}

fn missing_dirs(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut d = Some(dir);
    while let Some(p) = d {
        if p.exists() {
            break;
        }
        out.push(p.to_path_buf());
        d = p.parent();
    }
    out.reverse();
    out
}

fn check_writable(dir: &Path) -> Result<(), HostError> {
    let mut d = Some(dir);
    while let Some(p) = d {
        if p.exists() {
            return nix::unistd::access(p, nix::unistd::AccessFlags::W_OK).map_err(|e| {
                HostError::Permission(format!("cannot write {}: {}", p.display(), e.desc()))
            });
        }
        d = p.parent();
    }
    Ok(())
}

struct Setting {
    key: String,
    value: String,
    rationale: String,
    persist: bool,
    optional: bool,
    host_only: Option<String>,
}

fn render(settings: &[Setting]) -> String {
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

/// Validates `opts.cc` against what this kernel offers.
pub fn validate_cc(facts: &kernel::KernelFacts, cc: &str) -> Result<(), HostError> {
    if facts
        .available_cc
        .iter()
        .chain(&facts.loadable_cc)
        .any(|c| c == cc)
    {
        return Ok(());
    }
    let mut all: Vec<String> = facts.available_cc.clone();
    all.extend(facts.loadable_cc.iter().map(|c| format!("{c} (module)")));
    Err(HostError::UnknownCc {
        name: cc.into(),
        available: all.join(" "),
    })
}

/// Runs `enable` (or its dry run).
pub fn run(root: &Root, opts: &Options) -> Result<EnableReport, HostError> {
    let facts = kernel::gather_without_sockets(root);
    validate_cc(&facts, &opts.cc)?;
    let environment = env::detect(root);
    let initial_ns = environment.initial_netns != Some(false);
    let apply = !opts.dry_run && !opts.no_apply;
    if !opts.dry_run {
        check_writable(&root.path("etc/sysctl.d"))?;
        check_writable(&root.state_dir())?;
    }
    if apply && !sysctl::writable(KEY_CC) {
        return Err(HostError::Permission(format!(
            "cannot write {} ({}); run as root, or use --no-apply to write the file only",
            sysctl::proc_path(KEY_CC).display(),
            environment.proc_sys_evidence
        )));
    }
    if !initial_ns
        && facts.current_cc.as_deref() != Some(opts.cc.as_str())
        && !facts.allowed_cc.contains(&opts.cc)
        && !opts.dry_run
        && apply
    {
        return Err(HostError::NotAllowed {
            name: opts.cc.clone(),
            allowed: facts.allowed_cc.join(" "),
        });
    }

    let mut notes = Vec::new();
    let mut settings = vec![Setting {
        key: KEY_CC.into(),
        value: opts.cc.clone(),
        rationale: format!(
            "congestion control for new TCP sockets of this network namespace: {}",
            opts.cc
        ),
        persist: true,
        optional: false,
        host_only: None,
    }];
    let fq = |name: &str| {
        facts
            .qdisc(name)
            .map(|f| f.provision)
            .unwrap_or(kernel::Provision::Unknown)
    };
    let qdisc_host = host_only(KEY_QDISC);
    let wanted = match opts.qdisc {
        QdiscChoice::Keep => None,
        QdiscChoice::Auto => match fq("fq") {
            kernel::Provision::Absent => {
                notes.push("kernel has no fq: BBR uses internal pacing (Linux >= 4.13); default qdisc left as it is".to_string());
                None
            }
            p => Some(("fq", p == kernel::Provision::Unknown)),
        },
        QdiscChoice::Fq => Some(("fq", !fq("fq").present())),
        QdiscChoice::FqCodel => Some(("fq_codel", !fq("fq_codel").present())),
    };
    if let Some((kind, optional)) = wanted {
        if let Some(why) = &qdisc_host {
            notes.push(why.clone());
        }
        settings.push(Setting {
            key: KEY_QDISC.into(),
            value: kind.into(),
            rationale: format!(
                "{kind} for qdiscs created from now on (fq gives BBR per-flow pacing)"
            ),
            persist: qdisc_host.is_none(),
            optional,
            host_only: qdisc_host.clone(),
        });
    }
    if opts.tune {
        for (k, v, why) in TUNING {
            let h = host_only(k);
            settings.push(Setting {
                key: (*k).into(),
                value: (*v).into(),
                rationale: (*why).into(),
                persist: h.is_none(),
                optional: false,
                host_only: h,
            });
        }
    }
    let content = render(&settings);
    let file = root.bbrkit_file();
    let file_shown = root.show(&file);
    let current_file = std::fs::read(&file).ok();
    let file_changed = current_file.as_deref() != Some(content.as_bytes())
        || std::fs::symlink_metadata(&file).is_ok_and(|m| m.file_type().is_symlink());

    // Boot precedence with the planned file in place.
    let overlay = Overlay {
        basename: crate::SYSCTL_FILE_NAME.into(),
        content: Some(content.clone()),
    };
    let keys: Vec<&str> = settings
        .iter()
        .filter(|s| s.persist)
        .map(|s| s.key.as_str())
        .collect();
    let mut boot = Vec::new();
    for r in precedence::resolve(root, &keys, Some(&overlay))? {
        let ours = settings
            .iter()
            .find(|s| s.key == r.key)
            .map(|s| s.value.clone())
            .unwrap_or_default();
        let ok = r
            .winner
            .as_ref()
            .is_some_and(|w| w.file == file_shown || w.value == ours);
        boot.push(BootWinner {
            key: r.key,
            loader: r.loader,
            file: r.winner.as_ref().map(|w| w.file.clone()),
            line: r.winner.as_ref().map(|w| w.line),
            value: r.winner.map(|w| w.value),
            ok,
        });
    }
    let conflict = boot.iter().any(|b| !b.ok);
    let blocked = conflict && !opts.force;

    // Interfaces the kernel attached from another default than the target.
    let new_default = settings
        .iter()
        .find(|s| s.key == KEY_QDISC && s.host_only.is_none())
        .map(|s| s.value.clone());
    let kernel_has_target = new_default
        .as_deref()
        .is_some_and(|k| fq(k) != kernel::Provision::Absent);
    let ifaces: Vec<InterfaceQdisc> = qdisc::list().unwrap_or_default();
    let candidate =
        |i: &InterfaceQdisc| kernel_has_target && needs_recreate(i, new_default.as_deref());

    let mut keys_out: Vec<KeyResult> = settings
        .iter()
        .map(|s| {
            let before = sysctl::read(&s.key).ok().flatten();
            let same = before.as_deref() == Some(sysctl::normalize(&s.value).as_str());
            let (runtime, detail) = if let Some(h) = &s.host_only {
                (RuntimeStatus::HostOnly, h.clone())
            } else if same {
                (RuntimeStatus::AlreadySet, "already set".to_string())
            } else if opts.dry_run {
                (
                    RuntimeStatus::WouldSet,
                    format!(
                        "would change {} -> {}",
                        before.as_deref().unwrap_or("(absent)"),
                        s.value
                    ),
                )
            } else if opts.no_apply {
                (
                    RuntimeStatus::Skipped,
                    "--no-apply: file only, takes effect at boot".to_string(),
                )
            } else {
                (RuntimeStatus::WouldSet, String::new())
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
        })
        .collect();

    let mut report = EnableReport {
        file: file_shown.clone(),
        content: content.clone(),
        file_changed,
        keys: Vec::new(),
        boot,
        notes,
        interfaces: Vec::new(),
        blocked,
        changed: false,
        dry_run: opts.dry_run,
        before_image: root.show(&root.state_file()),
        problem: blocked,
    };
    let to_write: Vec<usize> = (0..keys_out.len())
        .filter(|&i| keys_out[i].runtime == RuntimeStatus::WouldSet)
        .collect();
    let recreate: Vec<&InterfaceQdisc> = ifaces.iter().filter(|i| candidate(i)).collect();
    report.changed =
        file_changed || !to_write.is_empty() || (!recreate.is_empty() && !opts.no_apply);

    if blocked || opts.dry_run || !report.changed {
        if blocked {
            for k in &mut keys_out {
                if k.runtime == RuntimeStatus::WouldSet {
                    k.runtime = RuntimeStatus::Skipped;
                    k.detail =
                        "not applied: another file overrides bbrkit at boot (use --force)".into();
                }
            }
            report.changed = false;
        }
        report.interfaces = describe_interfaces(
            &ifaces,
            &candidate,
            if opts.dry_run && !blocked {
                "would_recreate"
            } else {
                "unchanged_default"
            },
            new_default.as_deref(),
        );
        report.keys = keys_out;
        return Ok(report);
    }

    // 1. Before-image, recorded atomically before any change.
    let mut image = state::load(root)?.unwrap_or(BeforeImage {
        version: 1,
        ..Default::default()
    });
    let sysctl_dir = root.path("etc/sysctl.d");
    for d in missing_dirs(&sysctl_dir)
        .iter()
        .chain(missing_dirs(&root.state_dir()).iter())
    {
        let rel = root.relative(d);
        if !image.created_dirs.contains(&rel) {
            image.created_dirs.push(rel);
        }
    }
    image.record_file(root, &file)?;
    for &i in &to_write {
        image.record_runtime(&keys_out[i].key, keys_out[i].before.clone());
    }
    if apply {
        for i in &recreate {
            image.record_interface(InterfaceImage {
                name: i.name.clone(),
                root: i.root.clone(),
                leaves: i.leaves.clone(),
            });
        }
    }
    state::save(root, &image)?;
    crash_point("state-written");

    // 2. The file.
    if file_changed {
        std::fs::create_dir_all(&sysctl_dir).map_err(|e| HostError::io(&sysctl_dir, e))?;
        atomic::write_atomic(&file, content.as_bytes(), 0o644)
            .map_err(|e| HostError::io(&file, e))?;
    }
    crash_point("file-written");

    // 3. Runtime values, read back.
    for &i in &to_write {
        let k = &mut keys_out[i];
        if !apply {
            continue;
        }
        match sysctl::write(&k.key, &k.value) {
            Ok(()) => {
                k.runtime = RuntimeStatus::Set;
                k.detail = format!(
                    "{} -> {} (read back)",
                    k.before.as_deref().unwrap_or("(absent)"),
                    k.value
                );
            }
            Err(WriteError::ValueUnknown) if k.key == KEY_QDISC => {
                k.runtime = RuntimeStatus::NoKernelSupport;
                k.detail = format!(
                    "kernel has no {}: BBR uses internal pacing (Linux >= 4.13); not a failure",
                    k.value
                );
            }
            Err(WriteError::KeyMissing) | Err(WriteError::ReadOnly) => {
                k.runtime = RuntimeStatus::HostOnly;
                k.detail = format!(
                    "{}: the host's job (change it on the host)",
                    WriteError::ReadOnly
                );
            }
            Err(WriteError::NotPermitted) => {
                k.runtime = RuntimeStatus::NotPermitted;
                k.detail = format!(
                    "EPERM: {} is not in net.ipv4.tcp_allowed_congestion_control of this namespace; add it on the host",
                    k.value
                );
                report.problem = true;
            }
            Err(e) => {
                k.runtime = RuntimeStatus::Failed;
                k.detail = e.to_string();
                report.problem = true;
            }
        }
    }
    crash_point("runtime-applied");

    // 4. Interfaces still on the old default.
    let in_effect = new_default.is_some() && sysctl::read(KEY_QDISC).ok().flatten() == new_default;
    let recreated_ok = |i: &InterfaceQdisc| in_effect && needs_recreate(i, new_default.as_deref());
    report.interfaces =
        describe_interfaces(&ifaces, &recreated_ok, "recreated", new_default.as_deref());
    for a in &mut report.interfaces {
        if a.action == "recreated" {
            let idx = ifaces
                .iter()
                .find(|i| i.name == a.name)
                .map(|i| i.ifindex)
                .unwrap_or(0);
            match qdisc::recreate_root(idx) {
                Ok(()) => {
                    let now = qdisc::list()
                        .ok()
                        .and_then(|l| l.into_iter().find(|i| i.ifindex == idx))
                        .map(|i| i.describe());
                    a.detail = format!(
                        "root qdisc re-created: now {}",
                        now.unwrap_or_else(|| "?".into())
                    );
                }
                Err(e) => {
                    a.action = "failed".into();
                    a.detail = e.to_string();
                    report.problem = true;
                }
            }
        } else if a.action == "unchanged_default" && !in_effect && new_default.is_some() {
            a.detail = format!(
                "default qdisc is not {}: nothing to re-create",
                new_default.as_deref().unwrap_or("")
            );
        }
    }
    crash_point("qdisc-recreated");
    report.keys = keys_out;
    Ok(report)
}
