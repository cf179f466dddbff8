//! `doctor`'s findings about BPF congestion controls (bbr3): a sysctl file
//! makes bbr3 the default but no enabled unit registers it at boot; the
//! unit ran this boot and failed (its record names the verifier's verdict,
//! a missing kernel feature, lockdown); bbr3 is registered by something
//! other than bbrkit's pin; connections (or a namespace's default) still on
//! an unregistered bbr3.
//!
//! [`gather`] reads the live state once into a [`BpfView`]; [`findings`]
//! judges it together with the files under the root, so every pitfall has
//! a fixture test with no kernel state at all. Only reads.

use crate::doctor::{Finding, Level, connection_lines};
use crate::precedence;
use crate::verify::Established;
use crate::{KEY_CC, Root, boot, bpfcc, sysctl, unit};

/// The live facts the BPF findings need.
#[derive(Debug, Clone, Default)]
pub struct BpfView {
    /// `tcp_available_congestion_control`.
    pub available_cc: Vec<String>,
    /// This namespace's default.
    pub current_cc: Option<String>,
    /// This boot's id.
    pub boot_id: Option<String>,
    /// The registration of each BPF algorithm bbrkit ships.
    pub registrations: Vec<bpfcc::Registration>,
    /// The first requirement this host lacks to register one, if any.
    pub missing_requirement: Option<String>,
    /// Established sockets of this namespace.
    pub sockets: Vec<Established>,
}

/// Reads the live state.
pub fn gather() -> BpfView {
    BpfView {
        available_cc: bbrkit_diag::algorithms::available().unwrap_or_default(),
        current_cc: sysctl::read(KEY_CC).ok().flatten(),
        boot_id: boot::boot_id(),
        registrations: bpfcc::BPF_CCS
            .iter()
            .map(|c| bpfcc::registration(c))
            .collect(),
        missing_requirement: bpfcc::missing_requirement(&bpfcc::features()),
        sockets: crate::verify::established_sockets().unwrap_or_default(),
    }
}

/// Every BPF finding for `root` and the live view `v`.
pub fn findings(root: &Root, v: &BpfView) -> Vec<Finding> {
    let mut out = Vec::new();
    default_without_unit(root, &mut out);
    for cc in bpfcc::BPF_CCS {
        boot_failed(root, v, cc, &mut out);
    }
    for r in &v.registrations {
        foreign(r, &mut out);
    }
    stuck(v, &mut out);
    out
}

fn unit_words(st: &unit::UnitState) -> String {
    match (&st.file, st.masked, st.enabled_by.is_empty()) {
        (None, _, _) => format!("{} is not installed", st.name),
        (Some(f), true, _) => format!("{} is masked ({f} -> /dev/null)", st.name),
        (Some(f), false, true) => format!("{} is installed ({f}) but not enabled", st.name),
        (Some(f), false, false) => format!("{} is enabled ({f})", st.name),
    }
}

/// A sysctl file sets a BPF algorithm as the boot default, and no enabled
/// unit registers it: at boot the line fails (ENOENT) and the host stays
/// on the kernel's default without anyone noticing.
fn default_without_unit(root: &Root, out: &mut Vec<Finding>) {
    let Ok(res) = precedence::resolve(root, &[KEY_CC], None) else {
        return;
    };
    let mut seen = Vec::new();
    for r in &res {
        let Some(w) = &r.winner else { continue };
        if !bpfcc::is_bpf_cc(&w.value) || seen.contains(&(w.file.clone(), w.line)) {
            continue;
        }
        seen.push((w.file.clone(), w.line));
        let st = unit::inspect(root, &w.value);
        let (systemd, sd_why) = unit::systemd_booted(root);
        if st.enabled() && systemd {
            continue;
        }
        let cc = &w.value;
        let fix = if systemd {
            format!(
                "`bbrkit enable --cc {cc}` installs and enables {} (it registers {cc} after systemd-sysctl, then sets the default); or change {}:{}",
                st.name, w.file, w.line
            )
        } else {
            format!(
                "this host does not boot with systemd: run `bbrkit boot --cc {cc}` from its init system after the sysctl files are applied (docs/host.md), or change {}:{}",
                w.file, w.line
            )
        };
        out.push(Finding::new(
            "bpf_default_without_unit",
            Level::Warning,
            format!("{} makes {cc} the default at boot, but nothing registers {cc} then", w.file),
            vec![
                format!("{}: {}:{} sets {KEY_CC} = {cc}", r.loader.name(), w.file, w.line),
                format!("{cc} is a BPF congestion control: it exists only once registered; until then the write fails with ENOENT (systemd-sysctl ignores it)"),
                unit_words(&st),
                sd_why,
            ],
            fix,
        ));
    }
}

/// The unit is there but this boot's registration failed, or it did not run.
fn boot_failed(root: &Root, v: &BpfView, cc: &str, out: &mut Vec<Finding>) {
    let st = unit::inspect(root, cc);
    let rec = boot::load_record(root, cc).filter(|r| r.boot_id == v.boot_id);
    let registered = v.available_cc.iter().any(|c| c == cc);
    let shown = root.show(&boot::record_path(root, cc));
    match rec {
        Some(r) if !r.ok => {
            let mut ev = vec![format!(
                "{shown}: {} (registration {})",
                r.error.clone().unwrap_or_default(),
                r.registration
            )];
            ev.extend(r.steps.iter().map(|s| format!("{shown}: {s}")));
            if let Some(t) = &r.verifier_log_tail {
                let verdict = t.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("");
                ev.push(format!("verifier log (last line): {verdict}"));
            }
            if let Some(m) = &v.missing_requirement {
                ev.push(format!("requirement missing now: {m}"));
            }
            ev.push(format!(
                "{cc} {} registered now; {KEY_CC} = {}",
                if registered { "is" } else { "is not" },
                v.current_cc.as_deref().unwrap_or("?")
            ));
            out.push(Finding::new(
                "bpf_boot_failed",
                Level::Error,
                format!("{} failed this boot: {cc} was not made the default", st.name),
                ev,
                format!(
                    "`bbrkit check` lists what {cc} needs (Linux >= 6.10 with BTF, struct_ops, no lockdown refusing BPF); fix that, then `systemctl restart {}`; `bbrkit rollback` returns to the previous default",
                    st.name
                ),
            ));
        }
        None if st.enabled() && !registered && unit::systemd_booted(root).0 => {
            out.push(Finding::new(
                "bpf_boot_not_run",
                Level::Warning,
                format!("{} is enabled but has not registered {cc} this boot", st.name),
                vec![
                    unit_words(&st),
                    format!("{shown}: no record from this boot ({})", v.boot_id.as_deref().unwrap_or("boot id unknown")),
                    format!("{cc} is not in tcp_available_congestion_control"),
                ],
                format!("`systemctl status {}` says why it did not run; `systemctl start {}` registers {cc} now", st.name, st.name),
            ));
        }
        _ => {}
    }
}

/// The name is registered, but not through bbrkit's pin.
fn foreign(r: &bpfcc::Registration, out: &mut Vec<Finding>) {
    if r.registered && !r.by_bbrkit {
        out.push(Finding::new(
            "bpf_foreign",
            Level::Warning,
            format!("{} is registered by something else than bbrkit", r.cc),
            vec![
                format!("tcp_available_congestion_control lists {}; holder: {}", r.cc, r.holder),
                format!("bbrkit's pin {} {}", r.pin, if r.pin_exists { "exists but does not hold it" } else { "does not exist" }),
            ],
            format!(
                "connections that choose {} get that program, which may not be bbrkit's; bbrkit never takes it over: stop what registered it (`bpftool struct_ops list`), then `bbrkit boot --cc {}`",
                r.cc, r.cc
            ),
        ));
    }
}

/// Sockets, or this namespace's default, on an algorithm that is no longer
/// registered (a BPF one that was unregistered while they used it).
fn stuck(v: &BpfView, out: &mut Vec<Finding>) {
    let gone = |cc: &str| !v.available_cc.iter().any(|c| c == cc);
    let (n, socks) = connection_lines(
        &v.sockets,
        |s| s.cc.as_deref().is_some_and(gone),
        " (not registered)",
    );
    if n > 0 {
        let mut ev = socks;
        for r in v
            .registrations
            .iter()
            .filter(|r| !r.lingering_maps.is_empty())
        {
            ev.push(format!("{}: struct_ops map(s) {:?} of that name no longer registered but still alive (held by connections or by a namespace's default)", r.cc, r.lingering_maps));
        }
        out.push(Finding::new(
            "bpf_stuck_connections",
            Level::Warning,
            format!("{n} connection(s) still run an unregistered congestion control"),
            ev,
            "they keep the old program until they close (it is freed then); restart or reconnect them to move them to the default",
        ));
    }
    if let Some(cur) = v.current_cc.as_deref().filter(|c| gone(c)) {
        out.push(Finding::new(
            "bpf_default_unregistered",
            Level::Error,
            format!("the default {cur} of this network namespace is no longer registered"),
            vec![
                format!("{KEY_CC} = {cur}"),
                format!("tcp_available_congestion_control = {}", v.available_cc.join(" ")),
                "the namespace still holds the unregistered program: new sockets keep getting it".into(),
            ],
            format!("`bbrkit boot --cc {cur}` registers it again, or set another default (`bbrkit rollback`, `bbrkit enable --cc bbr`)"),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doctor::tests::root_with;

    fn install_unit(root: &Root) {
        let p = unit::unit_path(root, "bbr3");
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, unit::BBR3_UNIT).unwrap();
        let w = unit::wants_path(root, "bbr3");
        std::fs::create_dir_all(w.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(unit::wants_target("bbr3"), &w).unwrap();
    }

    fn view() -> BpfView {
        BpfView {
            available_cc: vec!["reno".into(), "bbr".into(), "cubic".into()],
            current_cc: Some("bbr".into()),
            boot_id: Some("boot-a".into()),
            registrations: vec![bpfcc::Registration {
                cc: "bbr3".into(),
                registered: false,
                by_bbrkit: false,
                holder: "nobody (not registered)".into(),
                pin: "/sys/fs/bpf/bbrkit/bbr3/link".into(),
                pin_exists: false,
                lingering_maps: vec![],
            }],
            missing_requirement: None,
            sockets: vec![],
        }
    }

    fn ids(f: &[Finding]) -> Vec<&str> {
        f.iter().map(|x| x.id.as_str()).collect()
    }

    #[test]
    fn bbr3_default_in_a_sysctl_file_without_a_unit() {
        let (_d, root) = root_with(&[
            ("run/systemd/system/.keep", ""),
            (
                "etc/sysctl.d/60-bbr3.conf",
                "# by hand\nnet.ipv4.tcp_congestion_control = bbr3\n",
            ),
        ]);
        let f = findings(&root, &view());
        assert_eq!(ids(&f), vec!["bpf_default_without_unit"], "{f:#?}");
        let ev = f[0].evidence.join("\n");
        assert!(
            ev.contains("60-bbr3.conf:2 sets net.ipv4.tcp_congestion_control = bbr3"),
            "{ev}"
        );
        assert!(ev.contains("bbrkit-bbr3.service is not installed"), "{ev}");
        assert!(f[0].fix.contains("bbrkit enable --cc bbr3"), "{}", f[0].fix);

        install_unit(&root);
        let f = findings(&root, &view());
        assert_eq!(
            ids(&f),
            vec!["bpf_boot_not_run"],
            "the unit registers it at boot: {f:#?}"
        );

        let (_d, root) = root_with(&[(
            "etc/sysctl.d/60-bbr3.conf",
            "net.ipv4.tcp_congestion_control=bbr3\n",
        )]);
        install_unit(&root);
        let f = findings(&root, &view());
        assert_eq!(ids(&f), vec!["bpf_default_without_unit"]);
        assert!(
            f[0].fix.contains("does not boot with systemd"),
            "{}",
            f[0].fix
        );
    }

    #[test]
    fn unit_present_but_registration_failed_this_boot() {
        let (_d, root) = root_with(&[("run/systemd/system/.keep", "")]);
        install_unit(&root);
        let rec = boot::BootRecord {
            cc: "bbr3".into(),
            boot_id: Some("boot-a".into()),
            ok: false,
            registration: "failed".into(),
            default_set: None,
            steps: vec!["net.ipv4.tcp_congestion_control left at cubic".into()],
            error: Some("bbr3: registration failed: the kernel's verifier refused BPF program bbr3_cong_control of bbr3: R2 invalid mem access 'scalar'".into()),
            verifier_log_tail: Some("12: (61) r3 = *(u32 *)(r2 +0)\nR2 invalid mem access 'scalar'\n".into()),
        };
        let p = boot::record_path(&root, "bbr3");
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, serde_json::to_vec(&rec).unwrap()).unwrap();
        let mut v = view();
        v.missing_requirement = Some("Linux 6.8 < 6.10: cong_control takes 2 arguments".into());
        let f = findings(&root, &v);
        assert_eq!(ids(&f), vec!["bpf_boot_failed"], "{f:#?}");
        assert_eq!(f[0].level, Level::Error);
        let ev = f[0].evidence.join("\n");
        assert!(
            ev.contains("verifier log (last line): R2 invalid mem access 'scalar'"),
            "{ev}"
        );
        assert!(ev.contains("requirement missing now: Linux 6.8"), "{ev}");
        assert!(ev.contains("left at cubic"), "{ev}");
        assert!(f[0].fix.contains("systemctl restart bbrkit-bbr3.service"));

        // A record from an earlier boot is not this boot's failure; the unit
        // simply has not registered bbr3 this time.
        v.boot_id = Some("boot-b".into());
        let f = findings(&root, &v);
        assert_eq!(ids(&f), vec!["bpf_boot_not_run"], "{f:#?}");
        // Registered (the unit ran fine): nothing to say.
        v.available_cc.push("bbr3".into());
        v.registrations[0].registered = true;
        v.registrations[0].by_bbrkit = true;
        assert!(findings(&root, &v).is_empty());
    }

    #[test]
    fn bbr3_registered_by_something_else() {
        let (_d, root) = root_with(&[]);
        let mut v = view();
        v.available_cc.push("bbr3".into());
        v.registrations[0].registered = true;
        v.registrations[0].holder = bpfcc::holder_text(&bbrkit_bpf::status::Holder::Link {
            link_id: 7,
            map_id: 12,
        });
        let f = findings(&root, &v);
        assert_eq!(ids(&f), vec!["bpf_foreign"], "{f:#?}");
        assert!(
            f[0].evidence[0].contains("struct_ops link 7 (map 12) held by a process"),
            "{:?}",
            f[0].evidence
        );
        assert!(f[0].fix.contains("never takes it over"));
    }

    #[test]
    fn connections_and_default_stuck_on_an_unregistered_bbr3() {
        let (_d, root) = root_with(&[]);
        let mut v = view();
        v.current_cc = Some("bbr3".into());
        v.registrations[0].lingering_maps = vec![42];
        v.sockets = vec![
            Established {
                local: "10.0.0.1:443".into(),
                remote: "10.0.0.2:50000".into(),
                cc: Some("bbr3".into()),
            },
            Established {
                local: "10.0.0.1:22".into(),
                remote: "10.0.0.3:50001".into(),
                cc: Some("bbr".into()),
            },
        ];
        let f = findings(&root, &v);
        assert_eq!(
            ids(&f),
            vec!["bpf_stuck_connections", "bpf_default_unregistered"],
            "{f:#?}"
        );
        let ev = f[0].evidence.join("\n");
        assert!(
            ev.contains("10.0.0.1:443 -> 10.0.0.2:50000 uses bbr3 (not registered)"),
            "{ev}"
        );
        assert!(!ev.contains(":22"), "{ev}");
        assert!(ev.contains("[42]"), "{ev}");
        assert!(f[1].fix.contains("bbrkit boot --cc bbr3"));
    }
}
