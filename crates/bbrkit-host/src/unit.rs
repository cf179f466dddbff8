//! The boot unit of a BPF congestion control (`bbrkit-bbr3.service`): its
//! text (the one source file `contrib/systemd/bbrkit-<cc>.service`, embedded
//! in [`crate::algorithm::BPF_ALGORITHMS`]; the Debian package does not
//! ship it, `enable` writes it through the before-image), where `enable` installs and enables it under the root
//! (`etc/systemd/system/` and the `sysinit.target.wants/` symlink, exactly
//! what `systemctl enable` makes, without systemctl), whether this root
//! runs systemd, what the unit found under a root says (installed,
//! enabled, ordered after systemd-sysctl, running `bbrkit boot`), and the
//! record each `bbrkit boot` run leaves in `run/bbrkit/<cc>.boot.json`.
//!
//! Only computes paths and reads files; `enable` writes them through the
//! change model (`crate::change::boot_unit`). Never talks to a running
//! systemd.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::Root;

/// The binary path the shipped unit runs; `enable` puts the path of the
/// binary it runs there.
pub const SHIPPED_EXE: &str = "/usr/bin/bbrkit";

/// The target whose `.wants/` directory enables the unit.
pub const WANTED_BY: &str = "sysinit.target";

/// Unit directories in systemd's order of precedence (the first holding a
/// name wins), as `man systemd.unit` lists them for the system manager.
pub const UNIT_DIRS: [&str; 5] = [
    "etc/systemd/system",
    "run/systemd/system",
    "usr/local/lib/systemd/system",
    "usr/lib/systemd/system",
    "lib/systemd/system",
];

/// The unit name (`bbrkit-<NAME>.service`) of the policies' boot unit,
/// which runs `bbrkit boot --policy`; every other name is a BPF
/// algorithm's, whose unit runs `bbrkit boot --cc NAME`.
pub const POLICY: &str = "policy";

/// The policies' boot unit (`contrib/systemd/bbrkit-policy.service`).
pub const POLICY_UNIT: &str = include_str!("../../../contrib/systemd/bbrkit-policy.service");

/// `bbrkit-<cc>.service`.
pub fn name(cc: &str) -> String {
    format!("bbrkit-{cc}.service")
}

/// The arguments of `bbrkit boot` the unit `name` runs.
pub fn boot_args(name: &str) -> String {
    if name == POLICY {
        "--policy".into()
    } else {
        format!("--cc {name}")
    }
}

/// The unit as `enable` installs it: the shipped text with `ExecStart`
/// pointing at `exe` (the binary the booted system runs), so a bbrkit
/// installed elsewhere than `/usr/bin` still runs at boot.
pub fn render(cc: &str, exe: &Path) -> Option<String> {
    let text = if cc == POLICY {
        POLICY_UNIT
    } else {
        crate::algorithm::shipped_bpf(cc)?.unit
    };
    Some(text.replace(
        &format!("ExecStart={SHIPPED_EXE} "),
        &format!("ExecStart={} ", exe.display()),
    ))
}

/// `etc/systemd/system/bbrkit-<cc>.service` under the root.
pub fn unit_path(root: &Root, cc: &str) -> PathBuf {
    root.path(format!("etc/systemd/system/{}", name(cc)))
}

/// The enabling symlink `etc/systemd/system/sysinit.target.wants/<unit>`.
pub fn wants_path(root: &Root, cc: &str) -> PathBuf {
    root.path(format!("etc/systemd/system/{WANTED_BY}.wants/{}", name(cc)))
}

/// What the enabling symlink points to: the unit's absolute path on the
/// booted system (not prefixed with the root), as `systemctl enable` writes it.
pub fn wants_target(cc: &str) -> PathBuf {
    PathBuf::from(format!("/etc/systemd/system/{}", name(cc)))
}

/// Whether the system under `root` is booted with systemd: the test of
/// `sd_booted()`, a directory `run/systemd/system`. Returns the evidence.
pub fn systemd_booted(root: &Root) -> (bool, String) {
    let p = root.path("run/systemd/system");
    let yes = p.is_dir();
    let shown = root.show(&p);
    (
        yes,
        if yes {
            format!("{shown} exists (systemd is PID 1)")
        } else {
            format!("{shown} does not exist (not booted with systemd)")
        },
    )
}

/// The unit as found under a root.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct UnitState {
    /// `bbrkit-<cc>.service`.
    pub name: String,
    /// The file systemd would load (first unit directory holding the name).
    pub file: Option<String>,
    /// That file is a symlink to `/dev/null` (masked).
    pub masked: bool,
    /// The `.wants/` symlinks that enable it (under `etc/` or `usr/lib/`).
    pub enabled_by: Vec<String>,
    /// `After=` names.
    pub after: Vec<String>,
    /// `Before=` names.
    pub before: Vec<String>,
    /// The `ExecStart=` command line.
    pub exec_start: Option<String>,
}

impl UnitState {
    /// Installed, not masked, and enabled.
    pub fn enabled(&self) -> bool {
        self.file.is_some() && !self.masked && !self.enabled_by.is_empty()
    }

    /// Ordered after systemd-sysctl, so its write of the default is the last
    /// one at boot.
    pub fn after_sysctl(&self) -> bool {
        self.after.iter().any(|a| a == "systemd-sysctl.service")
    }

    /// Whether `ExecStart` runs `boot` with the unit's arguments
    /// ([`boot_args`]: `--cc <cc>`, or `--policy`).
    pub fn runs_boot(&self, cc: &str) -> bool {
        let args = boot_args(cc);
        let want: Vec<&str> = args.split_whitespace().collect();
        self.exec_start.as_deref().is_some_and(|e| {
            let w: Vec<&str> = e.split_whitespace().collect();
            w.get(1) == Some(&"boot") && w.windows(want.len()).any(|p| p == want)
        })
    }

    /// The executable `ExecStart` names (prefixes `-@+!:` stripped).
    pub fn exe(&self) -> Option<PathBuf> {
        let e = self.exec_start.as_deref()?;
        let first = e.split_whitespace().next()?;
        Some(PathBuf::from(
            first.trim_start_matches(['-', '@', '+', '!', ':']),
        ))
    }
}

/// Reads the unit for `cc` under `root` as systemd would find it.
pub fn inspect(root: &Root, cc: &str) -> UnitState {
    let unit = name(cc);
    let mut st = UnitState {
        name: unit.clone(),
        ..Default::default()
    };
    if let Some(p) = UNIT_DIRS
        .iter()
        .map(|d| root.path(format!("{d}/{unit}")))
        .find(|p| std::fs::symlink_metadata(p).is_ok())
    {
        st.masked = std::fs::read_link(&p).is_ok_and(|t| t == Path::new("/dev/null"));
        st.file = Some(root.show(&p));
        if let Ok(text) = std::fs::read_to_string(&p) {
            parse_into(&text, &mut st);
        }
    }
    for d in [
        "etc/systemd/system",
        "usr/lib/systemd/system",
        "lib/systemd/system",
    ] {
        let Ok(rd) = std::fs::read_dir(root.path(d)) else {
            continue;
        };
        for e in rd.flatten() {
            let n = e.file_name().to_string_lossy().into_owned();
            let link = e.path().join(&unit);
            if n.ends_with(".wants") && std::fs::symlink_metadata(&link).is_ok() {
                st.enabled_by.push(root.show(&link));
            }
        }
    }
    st.enabled_by.sort();
    st
}

/// How one `bbrkit boot` run went with the registration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BootRegistration {
    /// Registered with a pinned link by this run.
    Registered,
    /// bbrkit's pin held it already.
    AlreadyRegistered,
    /// A running bbrkit lab's registration, pinned by this run.
    Adopted,
    /// Another loader holds the name: nothing done.
    Foreign,
    /// Registration failed.
    Failed,
}

impl BootRegistration {
    /// The stable word (`already_registered`).
    pub fn as_str(self) -> &'static str {
        match self {
            BootRegistration::Registered => "registered",
            BootRegistration::AlreadyRegistered => "already_registered",
            BootRegistration::Adopted => "adopted",
            BootRegistration::Foreign => "foreign",
            BootRegistration::Failed => "failed",
        }
    }
}

/// The outcome of one `bbrkit boot` run, also the record it leaves.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BootRecord {
    /// The algorithm.
    pub cc: String,
    /// `/proc/sys/kernel/random/boot_id` of the boot it ran in.
    pub boot_id: Option<String>,
    /// Everything it had to do succeeded.
    pub ok: bool,
    /// What happened to the registration.
    pub registration: BootRegistration,
    /// The default it set (`None`: left alone).
    pub default_set: Option<String>,
    /// One line per step.
    pub steps: Vec<String>,
    /// Why it failed.
    pub error: Option<String>,
    /// The end of the verifier's log when the kernel refused a program.
    pub verifier_log_tail: Option<String>,
}

/// `run/bbrkit/<cc>.boot.json` under the root.
pub fn record_path(root: &Root, cc: &str) -> PathBuf {
    root.path(format!("run/bbrkit/{cc}.boot.json"))
}

/// The record the last `bbrkit boot` left, if any.
pub fn load_record(root: &Root, cc: &str) -> Option<BootRecord> {
    let text = std::fs::read(record_path(root, cc)).ok()?;
    serde_json::from_slice(&text).ok()
}

/// Fills `After=`, `Before=`, `ExecStart=` from unit text (`#`/`;`
/// comments, repeated keys accumulate, an empty value resets).
fn parse_into(text: &str, st: &mut UnitState) {
    let mut section = String::new();
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(s) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            section = s.to_string();
            continue;
        }
        let Some((k, v)) = line.split_once('=') else {
            continue;
        };
        let (k, v) = (k.trim(), v.trim());
        let list = |dst: &mut Vec<String>| {
            if v.is_empty() {
                dst.clear();
            } else {
                dst.extend(v.split_whitespace().map(String::from));
            }
        };
        match (section.as_str(), k) {
            ("Unit", "After") => list(&mut st.after),
            ("Unit", "Before") => list(&mut st.before),
            ("Service", "ExecStart") => st.exec_start = Some(v.to_string()),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shipped_unit_orders_after_sysctl_before_services_and_runs_boot() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path()).unwrap();
        let text = render("bbr3", Path::new("/opt/bbrkit/bin/bbrkit")).unwrap();
        assert!(text.contains("\nExecStart=/opt/bbrkit/bin/bbrkit boot --cc bbr3\n"));
        assert_eq!(
            render("bbr3", Path::new(SHIPPED_EXE)).unwrap(),
            crate::algorithm::shipped_bpf("bbr3").unwrap().unit,
            "the shipped path renders the shipped file byte for byte"
        );
        assert!(render("cubic", Path::new(SHIPPED_EXE)).is_none());

        let unit = unit_path(&root, "bbr3");
        std::fs::create_dir_all(unit.parent().unwrap()).unwrap();
        std::fs::write(&unit, &text).unwrap();
        let st = inspect(&root, "bbr3");
        assert_eq!(st.file.as_deref(), Some(root.show(&unit).as_str()));
        assert!(!st.enabled(), "installed, not enabled yet");
        assert!(st.after_sysctl(), "{st:?}");
        assert!(st.before.iter().any(|b| b == "sysinit.target"), "{st:?}");
        assert!(
            st.before.iter().any(|b| b == "network-pre.target"),
            "{st:?}"
        );
        assert!(st.runs_boot("bbr3") && !st.runs_boot("bbr2"));
        assert_eq!(st.exe(), Some(PathBuf::from("/opt/bbrkit/bin/bbrkit")));

        let wants = wants_path(&root, "bbr3");
        std::fs::create_dir_all(wants.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(wants_target("bbr3"), &wants).unwrap();
        let st = inspect(&root, "bbr3");
        assert!(st.enabled());
        assert_eq!(st.enabled_by, vec![root.show(&wants)]);
    }

    #[test]
    fn first_unit_directory_wins_and_dev_null_masks() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path()).unwrap();
        let vendor = root.path("usr/lib/systemd/system/bbrkit-bbr3.service");
        std::fs::create_dir_all(vendor.parent().unwrap()).unwrap();
        std::fs::write(
            &vendor,
            "[Service]\nExecStart=/usr/bin/bbrkit boot --cc bbr3\n",
        )
        .unwrap();
        let st = inspect(&root, "bbr3");
        assert_eq!(st.file.as_deref(), Some(root.show(&vendor).as_str()));
        assert!(!st.after_sysctl());
        let admin = unit_path(&root, "bbr3");
        std::fs::create_dir_all(admin.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink("/dev/null", &admin).unwrap();
        let st = inspect(&root, "bbr3");
        assert!(st.masked && st.exec_start.is_none(), "{st:?}");
    }

    #[test]
    fn systemd_is_detected_by_run_systemd_system() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::new(dir.path()).unwrap();
        let (yes, why) = systemd_booted(&root);
        assert!(!yes && why.contains("does not exist"), "{why}");
        std::fs::create_dir_all(root.path("run/systemd/system")).unwrap();
        assert!(systemd_booted(&root).0);
    }

    /// The real systemd accepts the shipped unit (when systemd-analyze is
    /// installed; CI installs systemd).
    #[test]
    fn systemd_analyze_verify_accepts_the_unit() {
        let Ok(true) = std::process::Command::new("systemd-analyze")
            .arg("--version")
            .output()
            .map(|o| o.status.success())
        else {
            assert!(
                std::env::var_os("CI").is_none(),
                "CI must install systemd (systemd-analyze)"
            );
            return;
        };
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("bbrkit-bbr3.service");
        std::fs::write(&p, render("bbr3", Path::new("/bin/true")).unwrap()).unwrap();
        let out = std::process::Command::new("systemd-analyze")
            .args(["verify", "--man=no"])
            .arg(&p)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success() && err.trim().is_empty(), "{err}");
    }
}
