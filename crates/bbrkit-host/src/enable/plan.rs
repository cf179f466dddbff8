//! `enable`'s plan: what it would change, decided from a [`Snapshot`] and
//! the before-image. Writes nothing: the plan *is* the dry run (the one
//! kernel call, for `--cc bbr3`, is the verifier's trial load, which
//! registers nothing). [`super::apply`] carries it out.

use std::path::{Path, PathBuf};

use crate::change::file::{self, Edit, WriteFile};
use crate::change::persist;
use crate::change::qdisc::{InterfaceVerb, Interfaces, RecreateQdiscs};
use crate::change::sysctl::{
    self, Direction, KeyResult, RuntimeStatus, SetSysctl, Setting, TUNING,
};
use crate::change::{Change, boot_unit, bpf, modules, policy};
use crate::host::{HostMut, KeyAccess};
use crate::image::{BeforeImage, Present};
use crate::kernel::Provision;
use crate::root::missing_dirs;
use crate::snapshot::Snapshot;
use crate::{HostError, KEY_CC, KEY_QDISC, Provider};

use super::{BpfPlan, EnableReport, Options, PolicyOptions, QdiscChoice};

/// What `enable` would do: the report it prints when every change succeeds
/// (with `--dry-run`, exactly what it prints) and the changes, in order.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The report; [`super::apply`] fills in the outcome of each change.
    pub report: EnableReport,
    /// Directories the changes create (rollback removes them again when empty).
    pub created_dirs: Vec<PathBuf>,
    /// The changes, in the order they are made. Empty for a dry run, a
    /// blocked run and a run with nothing to change.
    pub changes: Vec<Change>,
}

/// Validates `cc` against what this host offers (the kernel's algorithms,
/// loadable modules, bbrkit's BPF ones).
pub fn validate_cc(snap: &Snapshot, cc: &str) -> Result<(), HostError> {
    if snap.provider(cc).offered() {
        return Ok(());
    }
    let k = &snap.kernel;
    let mut all: Vec<String> = k.available_cc.clone();
    all.extend(k.loadable_cc.iter().map(|c| format!("{c} (module)")));
    Err(HostError::UnknownCc {
        name: cc.into(),
        available: all.join(" "),
        bpf: crate::algorithm::bpf_names(),
    })
}

/// The BPF part when `cc` is one of bbrkit's BPF algorithms: the report
/// section and its changes (registration, unit files, binary).
fn bpf_part(
    snap: &Snapshot,
    image: Option<&BeforeImage>,
    opts: &Options,
    host: &mut dyn HostMut,
    exe: &Path,
) -> Result<Option<(BpfPlan, Vec<Change>)>, HostError> {
    let Provider::Bpf(reg) = snap.provider(&opts.cc) else {
        return Ok(None);
    };
    let systemd = boot_unit::require_systemd(snap, &opts.cc)?;
    let (registration, verifier, register) = bpf::plan(snap, reg, host, !opts.no_apply)?;
    let (unit, files) = boot_unit::plan(&snap.root, image, &opts.cc, exe)?;
    let mut changes: Vec<Change> = register.into_iter().map(Change::BpfRegistration).collect();
    changes.extend(files);
    let plan = BpfPlan {
        cc: opts.cc.clone(),
        registration,
        pin: reg.pin.clone(),
        verifier,
        systemd,
        unit,
    };
    Ok(Some((plan, changes)))
}

/// Decides what `enable` would change. Errors (exit 2) when the options
/// are invalid or the caller lacks a permission the changes need; then
/// nothing is written.
pub fn plan(
    snap: &Snapshot,
    image: Option<&BeforeImage>,
    opts: &Options,
    host: &mut dyn HostMut,
    exe: &Path,
) -> Result<Plan, HostError> {
    if let Some(popts) = &opts.policy {
        return plan_policy(snap, image, opts, popts, host, exe);
    }
    preflight(snap, opts)?;
    let bpf = bpf_part(snap, image, opts, host, exe)?;
    let (settings, notes) = settings(snap, opts);
    let content = persist::render(&settings);
    let root = &snap.root;
    let file = root.bbrkit_file();
    let now = Present::read(&file)?;
    let file_changed = !matches!(&now, Present::File { bytes, .. } if *bytes == content.as_bytes());
    let mut changes: Vec<Change> = Vec::new();
    let (bpf, bpf_changes) = bpf.map_or((None, Vec::new()), |(p, c)| (Some(p), c));
    changes.extend(bpf_changes);
    let (modules, module_changes) =
        modules::plan(snap, std::slice::from_ref(&opts.cc), !opts.no_apply)?;
    changes.extend(module_changes);
    let (retire, retire_changes) = if opts.no_apply {
        (Vec::new(), Vec::new())
    } else {
        bpf::retire(snap, image, &opts.cc, &policy::named_by_policies(snap))
    };
    changes.extend(retire_changes);
    if file_changed {
        changes.push(Change::File(WriteFile {
            path: file.clone(),
            content: content.clone().into_bytes(),
            mode: 0o644,
        }));
    }
    let edited = edits(root, image, &changes)?;
    let boot = persist::boot_winners(snap, &settings, &content);
    let blocked = (boot.iter().any(|b| !b.ok) && !opts.force) || !edited.is_empty();
    let mut keys: Vec<KeyResult> = settings
        .iter()
        .map(|s| sysctl::key_result(s, snap, opts.dry_run, opts.no_apply))
        .collect();
    if blocked {
        skip_runtime_sets(&mut keys, !edited.is_empty());
    }
    let target = settings
        .iter()
        .find(|s| s.key == KEY_QDISC && s.host_only.is_none())
        .map(|s| s.value.clone());
    let ifaces = Interfaces::new(snap, target);
    let stale = ifaces.stale();
    let to_set = keys.iter().any(|k| would_write(k.runtime));
    let changed =
        !blocked && (!changes.is_empty() || to_set || (!stale.is_empty() && !opts.no_apply));
    let verb = if opts.dry_run && !blocked {
        InterfaceVerb::WouldRecreate
    } else {
        InterfaceVerb::UnchangedDefault
    };
    let report = EnableReport {
        file: root.show(&file),
        content,
        file_changed,
        interfaces: ifaces.describe(verb),
        keys,
        boot,
        notes,
        blocked,
        edited,
        changed,
        dry_run: opts.dry_run,
        before_image: root.show(&root.state_file()),
        problem: blocked,
        bpf,
        policy: None,
        modules,
        retire,
    };
    if blocked || opts.dry_run || !changed {
        return Ok(Plan {
            report,
            created_dirs: Vec::new(),
            changes: Vec::new(),
        });
    }
    changes.extend(runtime_changes(snap, &report.keys, &opts.cc));
    if let (false, Some(target)) = (opts.no_apply, ifaces.target.clone()) {
        changes.push(Change::Qdiscs(RecreateQdiscs {
            target,
            listed: ifaces.listed,
            interfaces: stale,
        }));
    }
    let created_dirs = created_dirs(snap, &changes);
    Ok(Plan {
        report,
        created_dirs,
        changes,
    })
}

/// `enable --policy`: the policy's changes only (its copy and the
/// attachment); a copy an operator edited blocks the run.
fn plan_policy(
    snap: &Snapshot,
    image: Option<&BeforeImage>,
    opts: &Options,
    popts: &PolicyOptions,
    host: &mut dyn HostMut,
    exe: &Path,
) -> Result<Plan, HostError> {
    let root = &snap.root;
    if !opts.dry_run {
        check_writable(&root.state_dir())?;
    }
    let (part, mut changes) = policy::plan(snap, image, popts, host, exe)?;
    let (modules, module_changes) = modules::plan(snap, &part.needs, !opts.no_apply)?;
    changes.extend(module_changes);
    let edited = edits(root, image, &changes)?;
    let blocked = !edited.is_empty();
    let changed = !changes.is_empty() && !blocked;
    let report = EnableReport {
        file: root.show(&root.bbrkit_file()),
        content: String::new(),
        file_changed: false,
        keys: Vec::new(),
        boot: Vec::new(),
        notes: Vec::new(),
        interfaces: Vec::new(),
        blocked,
        edited,
        changed,
        dry_run: opts.dry_run,
        before_image: root.show(&root.state_file()),
        problem: blocked,
        bpf: None,
        policy: Some(part),
        modules,
        retire: Vec::new(),
    };
    if blocked || opts.dry_run || !changed {
        return Ok(Plan {
            report,
            created_dirs: Vec::new(),
            changes: Vec::new(),
        });
    }
    let mut created_dirs = missing_dirs(&root.state_dir());
    add_file_dirs(&mut created_dirs, root, &changes);
    Ok(Plan {
        report,
        created_dirs,
        changes,
    })
}

/// The planned status writes something.
fn would_write(s: RuntimeStatus) -> bool {
    matches!(s, RuntimeStatus::WouldSet | RuntimeStatus::WouldRaise)
}

/// bbrkit's files among `changes` that an operator edited since bbrkit
/// wrote them.
fn edits(
    root: &crate::Root,
    image: Option<&BeforeImage>,
    changes: &[Change],
) -> Result<Vec<Edit>, HostError> {
    let mut out = Vec::new();
    for path in written_paths(changes) {
        out.extend(file::edit(image, root, path, &Present::read(path)?));
    }
    Ok(out)
}

/// A blocked run sets nothing at runtime: the keys it would have set say why.
fn skip_runtime_sets(keys: &mut [KeyResult], edited: bool) {
    for k in keys.iter_mut().filter(|k| would_write(k.runtime)) {
        k.runtime = RuntimeStatus::Skipped;
        k.detail = if edited {
            "not applied: bbrkit's own file was edited since bbrkit wrote it".into()
        } else {
            "not applied: another file overrides bbrkit at boot (use --force)".into()
        };
    }
}

/// The runtime writes of a run that changes something.
fn runtime_changes<'a>(
    snap: &'a Snapshot,
    keys: &'a [KeyResult],
    cc: &'a str,
) -> impl Iterator<Item = Change> + 'a {
    keys.iter()
        .filter(|k| would_write(k.runtime))
        .map(move |k| {
            Change::Sysctl(SetSysctl {
                key: k.key.clone(),
                value: k.value.clone(),
                before: k.before.clone(),
                raise: k.runtime == RuntimeStatus::WouldRaise,
                bpf_default_in_netns: k.key == KEY_CC
                    && snap.provider(cc).is_bpf()
                    && snap.environment.initial_netns != Some(true),
            })
        })
}

/// The directories a run that changes something creates: sysctl.d, the
/// state directory, and those of the files it writes.
fn created_dirs(snap: &Snapshot, changes: &[Change]) -> Vec<PathBuf> {
    let root = &snap.root;
    let mut created = missing_dirs(&root.path("etc/sysctl.d"));
    created.extend(missing_dirs(&root.state_dir()));
    add_file_dirs(&mut created, root, changes);
    created
}

/// The paths of the files and links among `changes`.
fn written_paths(changes: &[Change]) -> impl Iterator<Item = &Path> {
    changes.iter().filter_map(|c| match c {
        Change::File(f) => Some(f.path.as_path()),
        Change::Symlink(l) => Some(l.path.as_path()),
        _ => None,
    })
}

/// Adds to `created` (once each) the missing directories of the files and
/// links `changes` write.
fn add_file_dirs(created: &mut Vec<PathBuf>, root: &crate::Root, changes: &[Change]) {
    for path in written_paths(changes) {
        for d in missing_dirs(path.parent().unwrap_or(root.base())) {
            if !created.contains(&d) {
                created.push(d);
            }
        }
    }
}

/// The checks that must pass before anything is written: the algorithm
/// exists, the directories and `/proc/sys` are writable, and a non-initial
/// namespace may choose the algorithm.
fn preflight(snap: &Snapshot, opts: &Options) -> Result<(), HostError> {
    validate_cc(snap, &opts.cc)?;
    if opts.dry_run {
        return Ok(());
    }
    check_writable(&snap.root.path("etc/sysctl.d"))?;
    check_writable(&snap.root.state_dir())?;
    if opts.no_apply {
        return Ok(());
    }
    let environment = &snap.environment;
    if snap.access(KEY_CC) != KeyAccess::Writable {
        return Err(HostError::Permission(format!(
            "cannot write {} ({}); run as root, or use --no-apply to write the file only",
            crate::sysctl::proc_path(KEY_CC).display(),
            environment.proc_sys_evidence
        )));
    }
    let facts = &snap.kernel;
    let initial_ns = environment.initial_netns != Some(false);
    if !initial_ns
        && facts.current_cc.as_deref() != Some(opts.cc.as_str())
        && !facts.allowed_cc.contains(&opts.cc)
        && !snap.provider(&opts.cc).is_bpf()
    {
        return Err(HostError::NotAllowed {
            name: opts.cc.clone(),
            allowed: facts.allowed_cc.join(" "),
        });
    }
    Ok(())
}

fn provision(snap: &Snapshot, qdisc: &str) -> Provision {
    snap.kernel
        .qdisc(qdisc)
        .map(|f| f.provision)
        .unwrap_or(Provision::Unknown)
}

/// Why each default qdisc is worth setting.
fn qdisc_reason(kind: &str) -> &'static str {
    match kind {
        "fq" => "fq gives BBR per-flow pacing",
        _ => {
            "fq_codel keeps each flow's queue short with CoDel; it does not pace, BBR paces itself (Linux >= 4.13)"
        }
    }
}

/// The setting of the algorithm itself.
fn cc_setting(snap: &Snapshot, cc: &str) -> Setting {
    let bpf = snap.provider(cc).is_bpf();
    Setting {
        key: KEY_CC.into(),
        value: cc.into(),
        ours: cc.into(),
        direction: Direction::Exactly,
        rationale: if bpf {
            format!(
                "congestion control for new TCP sockets of this network namespace: {cc} (BPF; `-`: it does not exist yet when systemd-sysctl runs, bbrkit-{cc}.service registers it and sets it)"
            )
        } else {
            format!("congestion control for new TCP sockets of this network namespace: {cc}")
        },
        persist: true,
        optional: bpf,
        host_only: None,
    }
}

/// The keys to manage (algorithm, default qdisc, tuning) and the notes
/// explaining what is left alone.
fn settings(snap: &Snapshot, opts: &Options) -> (Vec<Setting>, Vec<String>) {
    let mut notes = Vec::new();
    let mut settings = vec![cc_setting(snap, &opts.cc)];
    let has = |name: &str| provision(snap, name);
    let wanted = match opts.qdisc {
        QdiscChoice::Keep => None,
        QdiscChoice::Auto => match has("fq") {
            Provision::Absent => {
                notes.push("kernel has no fq: BBR uses internal pacing (Linux >= 4.13); default qdisc left as it is".to_string());
                None
            }
            p => Some(("fq", p == Provision::Unknown)),
        },
        QdiscChoice::Fq => Some(("fq", !has("fq").present())),
        QdiscChoice::FqCodel => Some(("fq_codel", !has("fq_codel").present())),
    };
    if let Some((kind, optional)) = wanted {
        let qdisc_host = sysctl::host_only(snap, KEY_QDISC);
        notes.extend(qdisc_host.clone());
        settings.push(Setting {
            key: KEY_QDISC.into(),
            value: kind.into(),
            ours: kind.into(),
            direction: Direction::Exactly,
            rationale: format!(
                "{kind} for qdiscs created from now on ({})",
                qdisc_reason(kind)
            ),
            persist: qdisc_host.is_none(),
            optional,
            host_only: qdisc_host,
        });
    }
    if opts.tune {
        settings.extend(TUNING.iter().map(|t| {
            let h = sysctl::host_only(snap, t.key);
            let found = snap.runtime(t.key).filter(|_| h.is_none());
            Setting {
                key: t.key.into(),
                value: sysctl::merge(t.direction, t.value, found),
                ours: t.value.into(),
                direction: t.direction,
                rationale: t.why.into(),
                persist: h.is_none(),
                optional: false,
                host_only: h,
            }
        }));
    }
    (settings, notes)
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
