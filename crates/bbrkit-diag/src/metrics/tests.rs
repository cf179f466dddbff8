use super::*;
use crate::qdisc::Class;
use crate::wire;

fn fixture_sockets() -> Vec<Socket> {
    let mut out = Vec::new();
    for f in ["ipv4-0.bin", "ipv4-1.bin", "ipv6-0.bin"] {
        let path = format!("{}/tests/fixtures/{f}", env!("CARGO_MANIFEST_DIR"));
        let buf = std::fs::read(path).unwrap();
        wire::parse_datagram(&buf, "x", &mut |s| out.push(s)).unwrap();
    }
    out
}

fn text(inputs: &Inputs) -> String {
    exposition(inputs).unwrap().finish()
}

#[test]
fn socket_families_from_captured_sockets() {
    let socks = fixture_sockets();
    let mut st = SocketStats::default();
    socks.iter().for_each(|s| st.observe(s));
    assert_eq!(st.sockets(), 16);
    assert_eq!(st.bbr_version(), Some(1));
    let t = text(&Inputs {
        sockets: st,
        ..Inputs::default()
    });
    // fixtures: 4 TIME_WAIT (no algorithm), bbr 2+4 established + 2 listeners.
    for line in [
        "bbrkit_sockets{cc=\"none\",state=\"TIME_WAIT\"} 4\n",
        "bbrkit_sockets{cc=\"bbr\",state=\"ESTABLISHED\"} 4\n",
        "bbrkit_sockets{cc=\"bbr\",state=\"LISTEN\"} 2\n",
        "bbrkit_socket_min_rtt_seconds_count{cc=\"bbr\"} 4\n",
        "bbrkit_socket_min_rtt_seconds_count{cc=\"reno\"} 2\n",
    ] {
        assert!(t.contains(line), "{line}: {t}");
    }
    assert!(
        !t.contains("cc=\"none\",le="),
        "no histogram for sockets without tcp_info"
    );
}

#[test]
fn counters_present_are_written_absent_left_out() {
    let mut c = Counters::default();
    c.0.insert("TcpRetransSegs".into(), 5);
    let t = text(&Inputs {
        counters: c,
        ..Inputs::default()
    });
    assert!(
        t.contains("bbrkit_tcp_retransmitted_segments_total 5\n"),
        "{t}"
    );
    assert!(!t.contains("bbrkit_tcp_timeouts_total"), "{t}");
}

#[test]
fn one_model_series_per_algorithm_and_state() {
    let mut m = ModelStats::default();
    for _ in 0..1000 {
        m.observe("bbr3", BbrState::ProbeBwCruise, 12_500_000);
    }
    m.observe("bbr3", BbrState::Startup, 0);
    m.observe("bbr", BbrState::ProbeRtt, 1_000_000);
    assert_eq!(m.sockets(), 1002);
    let mut e = Exposition::new();
    write_models(&mut e, &m).unwrap();
    let t = e.finish();
    assert!(
        t.contains("bbrkit_bbr_model_sockets{cc=\"bbr3\",state=\"probe_bw_cruise\"} 1000\n"),
        "{t}"
    );
    assert!(t.contains("bbrkit_bbr_model_sockets{cc=\"bbr3\",state=\"startup\"} 1\n"));
    assert!(t.contains("bbrkit_bbr_bandwidth_estimate_bytes_per_second_count{cc=\"bbr3\"} 1000\n"));
    assert!(
        t.contains(
            "bbrkit_bbr_bandwidth_estimate_bytes_per_second_bucket{cc=\"bbr3\",le=\"12500000\"} 1000\n"
        ),
        "{t}"
    );
    let series = t.lines().filter(|l| !l.starts_with('#')).count();
    assert_eq!(series, 3 + 2 * (BW_BUCKETS.len() + 3), "{t}");
}

fn host_inputs() -> Inputs {
    Inputs {
        host: HostInfo {
            kernel: "6.18.44".into(),
            default_cc: Some("bbr".into()),
            default_qdisc: None,
            bbr_version: "1".into(),
        },
        interfaces: vec![InterfaceQdisc {
            ifindex: 2,
            name: "eth0".into(),
            root: "mq".into(),
            handle: "0:".into(),
            leaves: vec!["fq".into(); 4],
            ingress: None,
            tx_queues: 4,
            up: true,
            class: Class::Multiqueue,
        }],
        bpf: vec![BpfRegistration {
            cc: "bbr3".into(),
            registered: true,
            by_bbrkit: false,
        }],
        verify: Some((
            vec![
                VerifyCheck {
                    name: "sysctl".into(),
                    key: "net.ipv4.tcp_congestion_control".into(),
                    ok: true,
                },
                VerifyCheck {
                    name: "sockets".into(),
                    key: "established_not_bbr".into(),
                    ok: false,
                },
                VerifyCheck {
                    name: "sockets".into(),
                    key: "established_not_bbr".into(),
                    ok: true,
                },
            ],
            false,
        )),
        ..Inputs::default()
    }
}

/// The host, BPF and verify families from plain inputs, in the published
/// order; a repeated check is written once (the first).
#[test]
fn host_bpf_and_verify_families() {
    let t = text(&host_inputs());
    for line in [
        "bbrkit_info{default_cc=\"bbr\",default_qdisc=\"unknown\",bbr_version=\"1\",kernel=\"6.18.44\"} 1\n",
        "bbrkit_interface_root_qdisc_info{dev=\"eth0\",kind=\"mq\",effective=\"fq\"} 1\n",
        "bbrkit_bpf_registered{cc=\"bbr3\"} 1\n",
        "bbrkit_bpf_registered_by_bbrkit{cc=\"bbr3\"} 0\n",
        "bbrkit_verify_ok{check=\"sysctl\",key=\"net.ipv4.tcp_congestion_control\"} 1\n",
        "bbrkit_verify_ok{check=\"sockets\",key=\"established_not_bbr\"} 0\n",
        "bbrkit_verify_all_ok 0\n",
    ] {
        assert!(t.contains(line), "{line}: {t}");
    }
    assert_eq!(t.matches("check=\"sockets\"").count(), 1, "{t}");
    let families: Vec<&str> = t
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .map(|l| l.split(' ').next().unwrap())
        .collect();
    assert_eq!(
        families,
        [
            "bbrkit_info",
            "bbrkit_interface_root_qdisc_info",
            "bbrkit_sockets",
            "bbrkit_socket_min_rtt_seconds",
            "bbrkit_socket_delivery_rate_bytes_per_second",
            "bbrkit_bpf_registered",
            "bbrkit_bpf_registered_by_bbrkit",
            "bbrkit_bbr_model_sockets",
            "bbrkit_bbr_bandwidth_estimate_bytes_per_second",
            "bbrkit_verify_ok",
            "bbrkit_verify_all_ok",
        ]
    );
}

/// Checks that did not run: both verify families, no samples, so the rest
/// still reaches Prometheus.
#[test]
fn verify_that_did_not_run_leaves_empty_families() {
    let t = text(&Inputs {
        verify: None,
        ..host_inputs()
    });
    assert!(t.contains("# TYPE bbrkit_verify_ok gauge\n"), "{t}");
    assert!(!t.contains("bbrkit_verify_ok{"), "{t}");
    assert!(
        !t.lines().any(|l| l.starts_with("bbrkit_verify_all_ok ")),
        "{t}"
    );
}

#[test]
fn json_form_of_the_families() {
    let exp = exposition(&host_inputs()).unwrap();
    let j = serde_json::to_value(families_json(&exp)).unwrap();
    assert_eq!(j[0]["name"], "bbrkit_info");
    assert_eq!(j[0]["type"], "gauge");
    assert_eq!(j[0]["samples"][0]["labels"]["default_cc"], "bbr");
    assert_eq!(j[0]["samples"][0]["value"], 1.0);
    assert_eq!(j.as_array().unwrap().len(), exp.records().len());
}

/// The policy family: one counter per cgroup, rule and arm, and nothing at
/// all on a host without a policy (its exposition stays as it was).
#[test]
fn policy_matches_by_rule_and_arm_only_when_attached() {
    let arm = |rule, arm, cc: &str, matched| PolicyArm {
        cgroup_id: 842,
        rule,
        arm,
        cc: cc.into(),
        matched,
        assigned: matched.saturating_sub(3),
        kept_app: matched.min(2),
        kept_route: 0,
        failed: matched.min(1),
    };
    let t = text(&Inputs {
        policy: vec![
            arm(1, 0, "bbr3", 12),
            arm(2, 0, "cubic", 4),
            arm(2, 1, "bbr3", 0),
        ],
        policy_stats: vec![PolicyStats {
            cgroup_id: 842,
            stats: bbrkit_policy::attached::Stats {
                established: 20,
                unmatched: 4,
                ring_full: 1,
                ..Default::default()
            },
        }],
        ..Inputs::default()
    });
    for line in [
        "# TYPE bbrkit_policy_outcomes_total counter\n",
        "bbrkit_policy_outcomes_total{cgroup_id=\"842\",rule=\"1\",arm=\"0\",cc=\"bbr3\",outcome=\"assigned\"} 9\n",
        "bbrkit_policy_outcomes_total{cgroup_id=\"842\",rule=\"1\",arm=\"0\",cc=\"bbr3\",outcome=\"kept_app\"} 2\n",
        "bbrkit_policy_outcomes_total{cgroup_id=\"842\",rule=\"1\",arm=\"0\",cc=\"bbr3\",outcome=\"kept_route\"} 0\n",
        "bbrkit_policy_outcomes_total{cgroup_id=\"842\",rule=\"2\",arm=\"0\",cc=\"cubic\",outcome=\"failed\"} 1\n",
        "bbrkit_policy_outcomes_total{cgroup_id=\"842\",rule=\"2\",arm=\"1\",cc=\"bbr3\",outcome=\"failed\"} 0\n",
        "# TYPE bbrkit_policy_events_total counter\n",
        "bbrkit_policy_events_total{cgroup_id=\"842\",event=\"established\"} 20\n",
        "bbrkit_policy_events_total{cgroup_id=\"842\",event=\"unmatched\"} 4\n",
        "bbrkit_policy_events_total{cgroup_id=\"842\",event=\"ring_full\"} 1\n",
        "bbrkit_policy_events_total{cgroup_id=\"842\",event=\"no_arm\"} 0\n",
    ] {
        assert!(t.contains(line), "{line}: {t}");
    }
    for line in [
        "# TYPE bbrkit_policy_matches_total counter\n",
        "bbrkit_policy_matches_total{cgroup_id=\"842\",rule=\"1\",arm=\"0\",cc=\"bbr3\"} 12\n",
        "bbrkit_policy_matches_total{cgroup_id=\"842\",rule=\"2\",arm=\"1\",cc=\"bbr3\"} 0\n",
    ] {
        assert!(t.contains(line), "{line}: {t}");
    }
    assert!(!text(&Inputs::default()).contains("bbrkit_policy"));
}

/// The foreign-program gauge: one sample per recorded policy's cgroup, 0
/// included, none for a cgroup that could not be listed.
#[test]
fn policy_foreign_programs_by_cgroup() {
    let t = text(&Inputs {
        policy_foreign: vec![
            PolicyForeign {
                cgroup_id: 842,
                programs: Some(2),
            },
            PolicyForeign {
                cgroup_id: 900,
                programs: Some(0),
            },
            PolicyForeign {
                cgroup_id: 901,
                programs: None,
            },
        ],
        ..Inputs::default()
    });
    for line in [
        "# TYPE bbrkit_policy_foreign_programs gauge\n",
        "bbrkit_policy_foreign_programs{cgroup_id=\"842\"} 2\n",
        "bbrkit_policy_foreign_programs{cgroup_id=\"900\"} 0\n",
    ] {
        assert!(t.contains(line), "{line}: {t}");
    }
    assert!(!t.contains("\"901\""), "{t}");
}
