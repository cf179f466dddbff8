//! Fixture tests of the modules part (issue 33.1) on a [`crate::MemoryHost`]
//! whose kernel builds `tcp_bbr` as a module (Debian's
//! `CONFIG_TCP_CONG_BBR=m`): `enable --cc bbr` and `enable --policy` with
//! a rule naming bbr write the same modules-load.d file, load the module,
//! survive a simulated reboot, and rollback restores the file byte for byte.

use std::path::{Path, PathBuf};

use super::*;
use crate::change::UndoMode;
use crate::enable::{self, Options, PolicyOptions};
use crate::host::Host;
use crate::testing::{DEBIAN, Fixture};
use crate::{KEY_CC, image, rollback};

/// The module tree of the fixture's kernel (`kernel.osrelease`).
const MODULE: &str = "lib/modules/6.18.0-test/kernel/net/ipv4/tcp_bbr.ko.xz";

/// A Debian-like root whose kernel has tcp_bbr as a module, not loaded.
fn module_host() -> Fixture {
    let mut f = Fixture::new(&[DEBIAN, &[(MODULE, "")]].concat());
    let live = f.live();
    live.available_cc = vec!["reno".into(), "cubic".into()];
    live.proc_config = Some(
        "CONFIG_TCP_CONG_BBR=m\nCONFIG_TCP_CONG_CUBIC=y\nCONFIG_DEFAULT_TCP_CONG=\"cubic\"\n"
            .into(),
    );
    f
}

fn files(f: &Fixture) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![f.root().base().to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p.clone());
            }
            out.push((p.clone(), std::fs::read(&p).unwrap_or_default()));
        }
    }
    out.sort();
    out
}

fn loaded(f: &Fixture) -> bool {
    f.host.available_cc().iter().any(|c| c == "bbr")
}

fn file_text(f: &Fixture) -> Option<String> {
    std::fs::read_to_string(f.root().path(FILE)).ok()
}

const LISTED: &str = "# Written by `bbrkit enable`; undo with `bbrkit rollback` (do not edit: bbrkit\n# compares this file byte for byte). The congestion controls bbrkit relies on\n# are modules of this kernel: loaded at boot so they are registered before\n# the default or a policy names them (modules-load.d(5)).\ntcp_bbr\n";

#[test]
fn enable_cc_bbr_lists_the_module_and_rollback_removes_the_file() {
    let mut f = module_host();
    assert_eq!(f.snap().provider("bbr"), Provider::Module);
    let before = files(&f);
    let dry = enable::run(
        &mut f.host,
        &Options {
            dry_run: true,
            ..Options::new("bbr")
        },
    )
    .unwrap();
    let m = dry.modules.as_ref().unwrap();
    assert_eq!(
        (m.modules.clone(), m.write, m.load.clone()),
        (
            vec!["tcp_bbr".to_string()],
            true,
            vec!["tcp_bbr".to_string()]
        )
    );
    assert_eq!(
        dry.modules_lines()[0],
        format!(
            "modules: would write {} (tcp_bbr, loaded at boot)",
            f.root().show(&f.root().path(FILE))
        )
    );
    assert_eq!(
        (files(&f), loaded(&f)),
        (before.clone(), false),
        "a dry run changes nothing"
    );

    let r = enable::run(&mut f.host, &Options::new("bbr")).unwrap();
    assert!(!r.problem, "{r:?}");
    assert_eq!(file_text(&f).as_deref(), Some(LISTED));
    assert!(loaded(&f));
    assert_eq!(f.host.sysctl(KEY_CC).as_deref(), Some("bbr"));
    let again = enable::run(&mut f.host, &Options::new("bbr")).unwrap();
    assert!(!again.changed && !again.modules.unwrap().write);

    let rb = rollback::run(&mut f.host, UndoMode::default()).unwrap();
    assert!(!rb.problem, "{rb:?}");
    assert_eq!(files(&f), before, "the file and its directory are gone");
    assert_eq!(f.host.sysctl(KEY_CC).as_deref(), Some("cubic"));
}

#[test]
fn a_policy_naming_bbr_loads_it_keeps_it_at_boot_and_rollback_restores_the_file() {
    let mut f = module_host();
    // Another file of the directory, and an older file of bbrkit's name:
    // rollback puts it back byte for byte.
    f.write("etc/modules-load.d/other.conf", "nf_conntrack\n");
    f.write(FILE, "# mine\ntcp_htcp\n");
    let before = files(&f);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("p.toml");
    std::fs::write(&file, "[[rule]]\nlocal_port = [443]\ncc = \"bbr\"\n").unwrap();
    let opts = Options {
        policy: Some(PolicyOptions { file, cgroup: None }),
        ..Options::new("bbr")
    };
    let r = enable::run(&mut f.host, &opts).unwrap();
    assert!(!r.problem, "{r:?}");
    let m = r.modules.as_ref().unwrap();
    assert_eq!(m.modules, ["tcp_bbr", "tcp_htcp"]);
    assert!(loaded(&f), "loaded now");
    assert_eq!(
        f.host.sysctl(KEY_CC).as_deref(),
        Some("cubic"),
        "the default is left alone"
    );
    assert!(file_text(&f).unwrap().ends_with("\ntcp_bbr\ntcp_htcp\n"));
    let img = image::load(f.root()).unwrap().unwrap();
    assert!(img.changes.iter().any(|c| matches!(c, crate::image::Recorded::File { path, .. } if Path::new(path) == Path::new(FILE))));

    // A reboot without modules-load (or before it ran): the module is not
    // loaded and no pin is left; `boot --policy` loads it and attaches.
    f.live().available_cc.retain(|c| c != "bbr");
    f.host.live.policy_pins.clear();
    let b = crate::boot::run_policy(&mut f.host).unwrap();
    assert!(b.ok, "{b:?}");
    assert_eq!(b.steps[0], "bbr: module tcp_bbr loaded (a policy names it)");
    assert!(loaded(&f) && f.host.live.policy_pins.len() == 1);

    let rb = rollback::run(&mut f.host, UndoMode::default()).unwrap();
    assert!(!rb.problem, "{rb:?}");
    assert_eq!(
        files(&f),
        before,
        "bbrkit.conf as it was, other.conf untouched"
    );
    assert!(f.host.live.policy_pins.is_empty());
}

#[test]
fn nothing_is_listed_where_the_algorithm_is_built_in() {
    let mut f = Fixture::new(DEBIAN);
    let r = enable::run(&mut f.host, &Options::new("bbr")).unwrap();
    assert!(r.modules.is_none());
    assert!(file_text(&f).is_none());
}
