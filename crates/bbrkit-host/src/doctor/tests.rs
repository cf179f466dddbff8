//! `doctor`'s fixture tests (a scratch `--root`, no host change); [`root_with`]
//! also serves `doctor_bpf`'s.

use super::namespaces::netns_entry;
use super::*;

#[test]
fn receive_ratio_and_loopback_bytes() {
    assert!(receive_finding(500_000_000, 1_000_000).is_some());
    assert!(receive_finding(500_000_000, 200_000_000).is_none());
    assert!(receive_finding(1_000, 0).is_none());
    let dev = "Inter-|   Receive\n face |bytes packets errs drop fifo frame compressed multicast|bytes packets\n    lo: 1000 10 0 0 0 0 0 0 2000 20 0 0 0 0 0 0\n  eth0: 5 1 0 0 0 0 0 0 6 1 0 0 0 0 0 0\n";
    assert_eq!(loopback_bytes(dev), Some((1000, 2000)));
    assert_eq!(loopback_bytes("  eth0: 5 1\n"), None);
}

/// A scratch root holding `files` (path under the root, content); also
/// used by `doctor_bpf`'s fixtures.
pub(crate) fn root_with(files: &[(&str, &str)]) -> (tempfile::TempDir, Root) {
    let dir = tempfile::tempdir().unwrap();
    for (p, c) in files {
        let full = dir.path().join(p);
        std::fs::create_dir_all(full.parent().unwrap()).unwrap();
        std::fs::write(full, c).unwrap();
    }
    let root = Root::new(dir.path()).unwrap();
    (dir, root)
}

#[test]
fn file_based_findings_name_the_file_and_line() {
    let (_d, root) = root_with(&[
        (
            "etc/sysctl.d/99-zz-bbrkit.conf",
            "net.ipv4.tcp_congestion_control = bbr\n",
        ),
        (
            "etc/sysctl.conf",
            "#\nnet.ipv4.tcp_congestion_control = cubic\n",
        ),
        (
            "usr/lib/sysctl.d/60-vendor.conf",
            "net.ipv4.tcp_congestion_control = reno\n",
        ),
        ("etc/tuned/active_profile", "network-throughput\n"),
        (
            "etc/cloud/cloud.cfg.d/90-net.cfg",
            "write_files:\n  - content: net.core.default_qdisc=fq_codel\n",
        ),
        (
            "etc/ufw/sysctl.conf",
            "net/ipv4/tcp_congestion_control=cubic\n",
        ),
    ]);
    let r = diagnose(&root).unwrap();
    let by = |id: &str| r.findings.iter().filter(|f| f.id == id).collect::<Vec<_>>();
    let o = by("boot_override");
    assert_eq!(o.len(), 1, "{:#?}", r.findings);
    assert!(
        o[0].evidence[0]
            .contains("sysctl --system applies net.ipv4.tcp_congestion_control = cubic from"),
        "{:?}",
        o[0]
    );
    assert!(
        o[0].fix.contains("line 2 of") && o[0].fix.contains("etc/sysctl.conf"),
        "{}",
        o[0].fix
    );
    assert!(
        by("overridden_file")
            .iter()
            .any(|f| f.title.contains("60-vendor.conf"))
    );
    assert_eq!(by("tuned")[0].level, Level::Info);
    let img = by("image_files");
    assert!(
        img[0].evidence.iter().any(|e| e.contains("90-net.cfg:2")),
        "{:?}",
        img
    );
    assert!(
        img[0]
            .evidence
            .iter()
            .any(|e| e.contains("ufw/sysctl.conf:1")),
        "{:?}",
        img
    );
    assert!(r.problem);
    // Worst first.
    assert!(r.findings.windows(2).all(|w| w[0].level >= w[1].level));
}

#[test]
fn tuned_profile_keys_and_rc_local_are_named() {
    let (_d, root) = root_with(&[
        ("etc/tuned/active_profile", "throughput\n"),
        ("etc/tuned/tuned-main.conf", "reapply_sysctl\t= 0\n"),
        (
            "usr/lib/tuned/throughput/tuned.conf",
            "[main]\nsummary=x\n[sysctl]\n# net.ipv4.tcp_rmem=1 2 3\nnet.ipv4.tcp_rmem=4096 87380 16777216\nnet.ipv4.ip_forward=1\n[vm]\nnet.ipv4.tcp_wmem=9\n",
        ),
        (
            "etc/rc.local",
            "#!/bin/sh\n# sysctl -w net.ipv4.tcp_congestion_control=bbr\nsysctl -w net/ipv4/tcp_notsent_lowat=16384\n",
        ),
    ]);
    let r = diagnose(&root).unwrap();
    let t = r.findings.iter().find(|f| f.id == "tuned").unwrap();
    assert_eq!(t.level, Level::Warning, "a tab before = still parses");
    let hits: Vec<&String> = t
        .evidence
        .iter()
        .filter(|e| e.contains("tuned.conf"))
        .collect();
    assert_eq!(hits.len(), 1, "{:?}", t.evidence);
    assert!(
        hits[0].ends_with(":5: net.ipv4.tcp_rmem=4096 87380 16777216"),
        "{hits:?}"
    );
    let img = r.findings.iter().find(|f| f.id == "image_files").unwrap();
    assert_eq!(img.evidence.len(), 1, "{:?}", img.evidence);
    assert!(img.evidence[0].contains("rc.local:3"), "{:?}", img.evidence);
}

#[test]
fn a_namespace_on_an_unregistered_default_says_so() {
    let n = crate::netns::Namespace {
        inode: 4026532300,
        found_at: "pid 42 (nginx)".into(),
        cc: Some("bbr3".into()),
    };
    let e = netns_entry(&n, &["reno".to_string(), "bbr".to_string()]);
    assert!(
        e.starts_with("net:[4026532300] pid 42 (nginx) defaults to bbr3 (no longer registered"),
        "{e}"
    );
    let e = netns_entry(&n, &["bbr3".to_string()]);
    assert_eq!(e, "net:[4026532300] pid 42 (nginx) defaults to bbr3");
}

#[test]
fn tuned_without_reapply_is_a_warning() {
    let (_d, root) = root_with(&[
        ("etc/tuned/active_profile", "balanced\n"),
        ("etc/tuned/tuned-main.conf", "reapply_sysctl = 0\n"),
    ]);
    let r = diagnose(&root).unwrap();
    let t = r.findings.iter().find(|f| f.id == "tuned").unwrap();
    assert_eq!(t.level, Level::Warning);
}

#[test]
fn connection_lines_count_all_and_list_the_first_ten() {
    let socks: Vec<Established> = (0..12)
        .map(|i| Established {
            local: format!("10.0.0.1:{i}"),
            remote: "10.0.0.2:443".into(),
            cc: (i % 2 == 0).then(|| "cubic".to_string()),
        })
        .collect();
    let (n, lines) = connection_lines(&socks, |s| s.cc.is_none(), " (x)");
    assert_eq!((n, lines.len()), (6, 6));
    assert_eq!(lines[0], "10.0.0.1:1 -> 10.0.0.2:443 uses ? (x)");
    let (n, lines) = connection_lines(&socks, |_| true, "");
    assert_eq!((n, lines.len()), (12, CONNECTIONS_SHOWN));
    assert_eq!(lines[0], "10.0.0.1:0 -> 10.0.0.2:443 uses cubic");
}
