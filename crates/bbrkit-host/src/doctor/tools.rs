//! `doctor`'s findings about other software that sets the keys `enable`
//! manages after the sysctl files: tuned (`tuned`), cloud-init, ufw and
//! rc.local (`image_files`).

use crate::change::sysctl::TUNING;
use crate::outcome::{Finding, FindingId, Level};
use crate::{KEY_CC, KEY_QDISC, Root};

pub(super) fn tuned(root: &Root) -> Option<Finding> {
    let p = std::fs::read_to_string(root.path("etc/tuned/active_profile")).ok()?;
    let p = p.trim();
    if p.is_empty() {
        return None;
    }
    let main = std::fs::read_to_string(root.path("etc/tuned/tuned-main.conf")).unwrap_or_default();
    let profile_keys = tuned_profile_keys(root, p);
    Some(if tuned_reapplies(&main) {
        let mut ev = vec![format!("{}: {}", root.show(&root.path("etc/tuned/active_profile")), p), "reapply_sysctl = 1 (default): /run/sysctl.d, /etc/sysctl.d, /etc/sysctl.conf re-applied, /usr/lib/sysctl.d not".into()];
        ev.extend(profile_keys);
        Finding::new(
            FindingId::Tuned,
            Level::Info,
            format!("tuned profile {p} is active and re-applies sysctl files after its own values"),
            ev,
            "nothing required: bbrkit's /etc/sysctl.d file is re-applied after tuned",
        )
    } else {
        let mut ev = vec![format!(
            "{}: reapply_sysctl = 0",
            root.show(&root.path("etc/tuned/tuned-main.conf"))
        )];
        ev.extend(profile_keys);
        Finding::new(
            FindingId::Tuned,
            Level::Warning,
            format!("tuned profile {p} overrides sysctl files (reapply_sysctl = 0)"),
            ev,
            "set reapply_sysctl = 1 in tuned-main.conf or make the tuned profile set the same values",
        )
    })
}

pub(super) fn image_files(root: &Root) -> Option<Finding> {
    let mut hits = Vec::new();
    for rel in [
        "etc/cloud/cloud.cfg",
        "etc/cloud/cloud.cfg.d",
        "etc/ufw/sysctl.conf",
        "etc/rc.local",
    ] {
        grep_keys(root, rel, &mut hits);
    }
    (!hits.is_empty()).then(|| {
        Finding::new(FindingId::ImageFiles, Level::Warning, "cloud-init, ufw or rc.local set these keys outside sysctl.d", hits,
            "cloud-init write_files/runcmd, ufw and rc.local re-apply these values after boot: change them there to match")
    })
}

fn grep_keys(root: &Root, rel: &str, out: &mut Vec<String>) {
    let p = root.path(rel);
    let files: Vec<std::path::PathBuf> = if p.is_dir() {
        std::fs::read_dir(&p)
            .map(|rd| rd.flatten().map(|e| e.path()).collect())
            .unwrap_or_default()
    } else {
        vec![p]
    };
    for file in files {
        if let Ok(t) = std::fs::read_to_string(&file) {
            for (i, l) in t.lines().enumerate() {
                if !l.trim_start().starts_with('#') && sets_a_managed_key(l) {
                    out.push(format!("{}:{}: {}", root.show(&file), i + 1, l.trim()));
                }
            }
        }
    }
}

/// The line names a key `enable` may set (dotted or `/` form).
fn sets_a_managed_key(line: &str) -> bool {
    let line = line.replace('/', ".");
    [KEY_CC, KEY_QDISC]
        .into_iter()
        .chain(TUNING.iter().map(|t| t.key))
        .any(|k| line.contains(k))
}

/// The `[sysctl]` lines of a tuned profile (`etc/tuned/<p>/tuned.conf`,
/// else `usr/lib/tuned/<p>/tuned.conf`) that set a key `enable` may set.
fn tuned_profile_keys(root: &Root, profile: &str) -> Vec<String> {
    let mut out = Vec::new();
    for dir in ["etc/tuned", "usr/lib/tuned", "usr/lib/tuned/profiles"] {
        let p = root.path(format!("{dir}/{profile}/tuned.conf"));
        let Ok(t) = std::fs::read_to_string(&p) else {
            continue;
        };
        let mut in_sysctl = false;
        for (i, l) in t.lines().enumerate() {
            let l = l.trim();
            if l.starts_with('[') {
                in_sysctl = l == "[sysctl]";
            } else if in_sysctl && !l.starts_with('#') && sets_a_managed_key(l) {
                out.push(format!("{}:{}: {l}", root.show(&p), i + 1));
            }
        }
        break;
    }
    out
}

/// `reapply_sysctl` of tuned-main.conf (tuned's default is 1).
fn tuned_reapplies(main: &str) -> bool {
    !main.lines().any(|l| {
        l.split_once('=')
            .is_some_and(|(k, v)| k.trim() == "reapply_sysctl" && v.trim() == "0")
    })
}
