//! `enable`'s plan: what it would change, decided from what the host looks
//! like now. Reads (kernel facts, files under the root, `/proc/sys`,
//! rtnetlink) and never writes: the plan *is* the dry run. [`super::apply`]
//! carries it out.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::precedence::{self, Overlay};
use crate::qdisc::{self, InterfaceQdisc};
use crate::root::missing_dirs;
use crate::state::InterfaceImage;
use crate::{HostError, KEY_CC, KEY_QDISC, Root, env, kernel, sysctl};

use super::bpf::BpfPlan;
use super::ifaces::describe_interfaces;
use super::{
    BootWinner, EnableReport, KeyResult, Options, QdiscChoice, RuntimeStatus, TUNING,
    needs_recreate,
};

/// One change `enable` makes. Each kind says what the before-image records
/// for it (so `rollback` can undo it, see [`super::apply`]) and how it is
/// applied. A new kind of change (a boot unit, a BPF congestion control)
/// is a new variant with those two answers.
#[derive(Debug, Clone)]
pub enum Step {
    /// Replace a file under the root atomically. Recorded: its prior
    /// content, mode, symlink target or absence.
    WriteFile {
        /// The file.
        path: PathBuf,
        /// Its new content.
        content: Vec<u8>,
        /// Its permission bits.
        mode: u32,
    },
    /// Write a runtime sysctl and read it back. Recorded: its prior value.
    SetSysctl {
        /// Dotted key.
        key: String,
        /// bbrkit's value.
        value: String,
        /// The value now (None: absent).
        before: Option<String>,
    },
    /// Create (or replace) a symlink atomically. Recorded like a file.
    WriteSymlink {
        /// The link.
        path: PathBuf,
        /// What it points to.
        target: PathBuf,
    },
    /// Register a BPF congestion control with a link pinned in the live
    /// bpffs. Recorded: the pins that existed before (rollback removes the
    /// others, which unregisters).
    RegisterBpf {
        /// The algorithm.
        cc: String,
        /// Algorithms pinned under /sys/fs/bpf/bbrkit before.
        pinned_before: Vec<String>,
    },
    /// Once `target` is the kernel's default qdisc, re-create the root of
    /// every interface still on an older default. Recorded: the roots of
    /// `interfaces`, the ones re-created when the kernel has `target`.
    RecreateQdiscs {
        /// The new default qdisc.
        target: String,
        /// The interfaces as listed when planning.
        listed: Vec<InterfaceQdisc>,
        /// The interfaces expected to be re-created, as the image records them.
        interfaces: Vec<InterfaceImage>,
    },
}

/// What `enable` would do: the report it prints when every step succeeds
/// (with `--dry-run`, exactly what it prints) and the steps, in order.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The report; [`super::apply`] fills in the outcome of each step.
    pub report: EnableReport,
    /// Directories the steps create (rollback removes them again when empty).
    pub created_dirs: Vec<PathBuf>,
    /// The changes, in the order they are made. Empty for a dry run, a
    /// blocked run and a run with nothing to change.
    pub steps: Vec<Step>,
}

/// One key `enable` manages, before its outcome is known.
pub(super) struct Setting {
    pub key: String,
    pub value: String,
    pub rationale: String,
    /// Written to bbrkit's file.
    pub persist: bool,
    /// Written with a `-` prefix (ignored at boot when the kernel lacks it).
    pub optional: bool,
    /// Why this namespace does not own the key, if it does not.
    pub host_only: Option<String>,
}

/// Decides what `enable` would change. Errors (exit 2) when the options
/// are invalid or the caller lacks a permission the changes need; then
/// nothing is written.
pub fn plan(root: &Root, opts: &Options) -> Result<Plan, HostError> {
    let facts = kernel::gather_without_sockets(root);
    preflight(root, opts, &facts)?;
    let bpf = bpf_plan(root, &opts.cc)?;
    let (settings, notes) = settings(&facts, opts);
    let content = render(&settings);
    let file = root.bbrkit_file();
    let file_shown = root.show(&file);
    let file_changed = std::fs::read(&file).ok().as_deref() != Some(content.as_bytes())
        || std::fs::symlink_metadata(&file).is_ok_and(|m| m.file_type().is_symlink());
    let boot = boot_winners(root, &settings, &content, &file_shown)?;
    let blocked = boot.iter().any(|b| !b.ok) && !opts.force;
    let keys: Vec<KeyResult> = settings.iter().map(|s| key_result(s, opts)).collect();

    let ifaces = Interfaces::list(&facts, &settings);
    let stale = ifaces.stale();
    let to_set = keys.iter().any(|k| k.runtime == RuntimeStatus::WouldSet);
    let bpf_changes = bpf.as_ref().is_some_and(|b| {
        b.unit_write.is_some()
            || b.wants_link.is_some()
            || (b.registration == "register" && !opts.no_apply)
    });
    let changed = !blocked
        && (file_changed || to_set || bpf_changes || (!stale.is_empty() && !opts.no_apply));
    let mut report = EnableReport {
        file: file_shown,
        content,
        file_changed,
        keys,
        boot,
        notes,
        interfaces: Vec::new(),
        blocked,
        changed,
        dry_run: opts.dry_run,
        before_image: root.show(&root.state_file()),
        problem: blocked,
        bpf,
    };
    if blocked {
        skip_runtime_sets(&mut report.keys);
    }
    let verb = if opts.dry_run && !blocked {
        "would_recreate"
    } else {
        "unchanged_default"
    };
    report.interfaces = describe_interfaces(
        &ifaces.listed,
        &|i| ifaces.candidate(i),
        verb,
        ifaces.target.as_deref(),
    );
    if blocked || opts.dry_run || !changed {
        return Ok(Plan {
            report,
            created_dirs: Vec::new(),
            steps: Vec::new(),
        });
    }
    let steps = steps(&report, file, ifaces, stale, !opts.no_apply);
    let created_dirs = created_dirs(root, report.bpf.as_ref());
    Ok(Plan {
        report,
        created_dirs,
        steps,
    })
}

/// The BPF part of the plan when `cc` is one of bbrkit-bpf's algorithms.
fn bpf_plan(root: &Root, cc: &str) -> Result<Option<BpfPlan>, HostError> {
    if !crate::bpfcc::is_bpf_cc(cc) {
        return Ok(None);
    }
    let exe = std::env::current_exe()
        .map_err(|e| HostError::Bpf(format!("the running bbrkit's path: {e}")))?;
    Ok(Some(super::bpf::plan(root, cc, &exe)?))
}

/// A blocked run sets nothing at runtime: the keys it would have set say why.
fn skip_runtime_sets(keys: &mut [KeyResult]) {
    for k in keys {
        if k.runtime == RuntimeStatus::WouldSet {
            k.runtime = RuntimeStatus::Skipped;
            k.detail = "not applied: another file overrides bbrkit at boot (use --force)".into();
        }
    }
}

/// The directories a run that changes something creates: sysctl.d, the
/// state directory, and those of the BPF part's unit files.
fn created_dirs(root: &Root, bpf: Option<&BpfPlan>) -> Vec<PathBuf> {
    let mut created_dirs = missing_dirs(&root.path("etc/sysctl.d"));
    created_dirs.extend(missing_dirs(&root.state_dir()));
    if let Some(b) = bpf {
        let unit_dirs = b.unit_write.iter().map(|(p, _)| p);
        for p in unit_dirs.chain(b.wants_link.iter().map(|(p, _)| p)) {
            for d in missing_dirs(p.parent().unwrap_or(root.base())) {
                if !created_dirs.contains(&d) {
                    created_dirs.push(d);
                }
            }
        }
    }
    created_dirs
}

/// The steps of a run that changes something: the file, the runtime
/// values, then (when applying) the interfaces.
fn steps(
    report: &EnableReport,
    file: PathBuf,
    ifaces: Interfaces,
    stale: Vec<InterfaceImage>,
    apply: bool,
) -> Vec<Step> {
    let mut steps = Vec::new();
    if let Some(b) = &report.bpf {
        if b.registration == "register" && apply {
            steps.push(Step::RegisterBpf {
                cc: b.cc.clone(),
                pinned_before: b.pinned_before.clone(),
            });
        }
        if let Some((path, text)) = &b.unit_write {
            steps.push(Step::WriteFile {
                path: path.clone(),
                content: text.clone().into_bytes(),
                mode: 0o644,
            });
        }
        if let Some((path, target)) = &b.wants_link {
            steps.push(Step::WriteSymlink {
                path: path.clone(),
                target: target.clone(),
            });
        }
    }
    if report.file_changed {
        steps.push(Step::WriteFile {
            path: file,
            content: report.content.clone().into_bytes(),
            mode: 0o644,
        });
    }
    steps.extend(
        report
            .keys
            .iter()
            .filter(|k| k.runtime == RuntimeStatus::WouldSet)
            .map(|k| Step::SetSysctl {
                key: k.key.clone(),
                value: k.value.clone(),
                before: k.before.clone(),
            }),
    );
    if let (true, Some(target)) = (apply, ifaces.target) {
        steps.push(Step::RecreateQdiscs {
            target,
            listed: ifaces.listed,
            interfaces: stale,
        });
    }
    steps
}

/// The interfaces and the default qdisc `enable` sets, if it sets one.
struct Interfaces {
    listed: Vec<InterfaceQdisc>,
    target: Option<String>,
    kernel_has_target: bool,
}

impl Interfaces {
    fn list(facts: &kernel::KernelFacts, settings: &[Setting]) -> Self {
        let target = settings
            .iter()
            .find(|s| s.key == KEY_QDISC && s.host_only.is_none())
            .map(|s| s.value.clone());
        Interfaces {
            listed: qdisc::list().unwrap_or_default(),
            kernel_has_target: target
                .as_deref()
                .is_some_and(|k| provision(facts, k) != kernel::Provision::Absent),
            target,
        }
    }

    /// Attached by the kernel from another default than the target.
    fn candidate(&self, i: &InterfaceQdisc) -> bool {
        self.kernel_has_target && needs_recreate(i, self.target.as_deref())
    }

    /// The candidates, as the before-image records them.
    fn stale(&self) -> Vec<InterfaceImage> {
        self.listed
            .iter()
            .filter(|i| self.candidate(i))
            .map(|i| InterfaceImage {
                name: i.name.clone(),
                root: i.root.clone(),
                leaves: i.leaves.clone(),
            })
            .collect()
    }
}

/// The checks that must pass before anything is written: the algorithm
/// exists, the directories and `/proc/sys` are writable, and a non-initial
/// namespace may choose the algorithm.
fn preflight(root: &Root, opts: &Options, facts: &kernel::KernelFacts) -> Result<(), HostError> {
    super::validate_cc(facts, &opts.cc)?;
    if opts.dry_run {
        return Ok(());
    }
    check_writable(&root.path("etc/sysctl.d"))?;
    check_writable(&root.state_dir())?;
    if opts.no_apply {
        return Ok(());
    }
    let environment = env::detect(root);
    if !sysctl::writable(KEY_CC) {
        return Err(HostError::Permission(format!(
            "cannot write {} ({}); run as root, or use --no-apply to write the file only",
            sysctl::proc_path(KEY_CC).display(),
            environment.proc_sys_evidence
        )));
    }
    let initial_ns = environment.initial_netns != Some(false);
    if !initial_ns
        && facts.current_cc.as_deref() != Some(opts.cc.as_str())
        && !facts.allowed_cc.contains(&opts.cc)
        && !crate::bpfcc::is_bpf_cc(&opts.cc)
    {
        return Err(HostError::NotAllowed {
            name: opts.cc.clone(),
            allowed: facts.allowed_cc.join(" "),
        });
    }
    Ok(())
}

fn provision(facts: &kernel::KernelFacts, qdisc: &str) -> kernel::Provision {
    facts
        .qdisc(qdisc)
        .map(|f| f.provision)
        .unwrap_or(kernel::Provision::Unknown)
}

/// The keys to manage (algorithm, default qdisc, tuning) and the notes
/// explaining what is left alone.
fn settings(facts: &kernel::KernelFacts, opts: &Options) -> (Vec<Setting>, Vec<String>) {
    let mut notes = Vec::new();
    let mut settings = vec![Setting {
        key: KEY_CC.into(),
        value: opts.cc.clone(),
        rationale: if crate::bpfcc::is_bpf_cc(&opts.cc) {
            format!(
                "congestion control for new TCP sockets of this network namespace: {cc} (BPF; `-`: it does not exist yet when systemd-sysctl runs, bbrkit-{cc}.service registers it and sets it)",
                cc = opts.cc
            )
        } else {
            format!(
                "congestion control for new TCP sockets of this network namespace: {}",
                opts.cc
            )
        },
        persist: true,
        optional: crate::bpfcc::is_bpf_cc(&opts.cc),
        host_only: None,
    }];
    let has = |name: &str| provision(facts, name);
    let wanted = match opts.qdisc {
        QdiscChoice::Keep => None,
        QdiscChoice::Auto => match has("fq") {
            kernel::Provision::Absent => {
                notes.push("kernel has no fq: BBR uses internal pacing (Linux >= 4.13); default qdisc left as it is".to_string());
                None
            }
            p => Some(("fq", p == kernel::Provision::Unknown)),
        },
        QdiscChoice::Fq => Some(("fq", !has("fq").present())),
        QdiscChoice::FqCodel => Some(("fq_codel", !has("fq_codel").present())),
    };
    if let Some((kind, optional)) = wanted {
        let qdisc_host = host_only(KEY_QDISC);
        notes.extend(qdisc_host.clone());
        settings.push(Setting {
            key: KEY_QDISC.into(),
            value: kind.into(),
            rationale: format!(
                "{kind} for qdiscs created from now on (fq gives BBR per-flow pacing)"
            ),
            persist: qdisc_host.is_none(),
            optional,
            host_only: qdisc_host,
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
    (settings, notes)
}

/// Why this network namespace does not own `key`, if it does not.
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

/// bbrkit's file (deterministic: no timestamps, so a second run is a no-op).
pub(super) fn render(settings: &[Setting]) -> String {
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

/// The winner at boot of every persisted key under both loaders, with the
/// planned file in place.
fn boot_winners(
    root: &Root,
    settings: &[Setting],
    content: &str,
    file_shown: &str,
) -> Result<Vec<BootWinner>, HostError> {
    let overlay = Overlay {
        basename: crate::SYSCTL_FILE_NAME.into(),
        content: Some(content.to_string()),
    };
    let keys: Vec<&str> = settings
        .iter()
        .filter(|s| s.persist)
        .map(|s| s.key.as_str())
        .collect();
    let resolved = precedence::resolve(root, &keys, Some(&overlay))?;
    Ok(resolved
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
        .collect())
}

/// A key's planned runtime outcome.
fn key_result(s: &Setting, opts: &Options) -> KeyResult {
    let before = sysctl::read(&s.key).ok().flatten();
    let same = before.as_deref() == Some(sysctl::normalize(&s.value).as_str());
    let (runtime, detail) = if let Some(h) = &s.host_only {
        (RuntimeStatus::HostOnly, h.clone())
    } else if same {
        (RuntimeStatus::AlreadySet, "already set".to_string())
    } else if opts.no_apply && !opts.dry_run {
        (
            RuntimeStatus::Skipped,
            "--no-apply: file only, takes effect at boot".to_string(),
        )
    } else {
        (
            RuntimeStatus::WouldSet,
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

/// `dir`, or its nearest existing ancestor, is writable by this process.
fn check_writable(dir: &Path) -> Result<(), HostError> {
    match dir.ancestors().find(|p| p.exists()) {
        Some(p) => nix::unistd::access(p, nix::unistd::AccessFlags::W_OK).map_err(|e| {
            HostError::Permission(format!("cannot write {}: {}", p.display(), e.desc()))
        }),
        None => Ok(()),
    }
}
