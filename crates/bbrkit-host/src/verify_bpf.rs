//! `verify`'s extra checks when the expected algorithm is a BPF one
//! (bbr3): registered now and by bbrkit's pinned link; the boot unit
//! installed, enabled, ordered after systemd-sysctl and running
//! `bbrkit boot`, so the registration comes back at boot before the default
//! is applied; and, when the unit ran this boot, that it succeeded. Only
//! reads.

use crate::verify::Check;
use crate::{Root, boot, bpfcc, unit};

fn check(
    name: &str,
    ok: bool,
    key: String,
    value: String,
    expected: String,
    detail: String,
) -> Check {
    Check {
        name: name.into(),
        ok,
        key,
        value,
        expected,
        detail,
    }
}

/// The checks for BPF algorithm `cc`.
pub fn checks(root: &Root, cc: &str) -> Vec<Check> {
    let mut out = vec![registration(&bpfcc::registration(cc))];
    out.push(boot_unit(root, cc));
    let rec =
        boot::load_record(root, cc).filter(|r| r.boot_id.is_some() && r.boot_id == boot::boot_id());
    if let Some(r) = rec {
        out.push(check(
            "boot_run",
            r.ok,
            format!("boot_run.{cc}"),
            if r.ok { "ok".into() } else { "failed".into() },
            "ok".into(),
            format!(
                "{} this boot: {}",
                root.show(&boot::record_path(root, cc)),
                r.error.unwrap_or_else(|| r.steps.join("; "))
            ),
        ));
    }
    out
}

/// Registered now, through bbrkit's pin.
pub fn registration(r: &bpfcc::Registration) -> Check {
    let value = if !r.registered {
        "not registered".to_string()
    } else if r.by_bbrkit {
        "bbrkit".to_string()
    } else {
        "other".to_string()
    };
    let detail = if r.registered {
        format!("holder: {}", r.holder)
    } else {
        format!(
            "not in tcp_available_congestion_control; {} {}",
            r.pin,
            if r.pin_exists {
                "exists (stale)"
            } else {
                "absent"
            }
        )
    };
    check(
        "bpf",
        r.registered && r.by_bbrkit,
        format!("bpf.{}", r.cc),
        value,
        format!("bbrkit ({})", r.pin),
        detail,
    )
}

/// The unit that registers `cc` at boot and then sets the default.
fn boot_unit(root: &Root, cc: &str) -> Check {
    let st = unit::inspect(root, cc);
    let (systemd, sd_why) = unit::systemd_booted(root);
    let exe_ok = st
        .exe()
        .is_some_and(|e| e.exists() || root.path(&e).exists());
    let problems: Vec<String> = [
        (!systemd).then(|| sd_why.clone()),
        st.file.is_none().then(|| "not installed".to_string()),
        st.masked.then(|| "masked".to_string()),
        (st.file.is_some() && st.enabled_by.is_empty()).then(|| "not enabled".to_string()),
        (st.file.is_some() && !st.masked && !st.after_sysctl())
            .then(|| "not ordered After=systemd-sysctl.service".to_string()),
        (st.file.is_some() && !st.masked && !st.runs_boot(cc))
            .then(|| format!("ExecStart does not run `bbrkit boot --cc {cc}`")),
        (st.file.is_some() && !st.masked && st.runs_boot(cc) && !exe_ok).then(|| {
            format!(
                "ExecStart's {} does not exist",
                st.exe().unwrap_or_default().display()
            )
        }),
    ]
    .into_iter()
    .flatten()
    .collect();
    let ok = problems.is_empty();
    let detail = if ok {
        format!(
            "{}, enabled by {}: after systemd-sysctl, before sysinit.target, runs `{}` (registers {cc}, then sets the default)",
            st.file.clone().unwrap_or_default(),
            st.enabled_by.join(", "),
            st.exec_start.clone().unwrap_or_default()
        )
    } else {
        format!("{}: nothing registers {cc} at boot", problems.join("; "))
    };
    check(
        "unit",
        ok,
        format!("unit.{}", st.name),
        if ok {
            "enabled".into()
        } else {
            problems.first().cloned().unwrap_or_default()
        },
        "enabled".into(),
        detail,
    )
}
