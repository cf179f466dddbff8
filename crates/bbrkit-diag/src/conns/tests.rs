use super::*;
use crate::testing::{bbr_socket, bbr_v3_bytes};

#[test]
fn json_of_v1_and_v3_bbr_sockets() {
    let v1 = bbr_socket(248, &bbr_v3_bytes()[..20]);
    let j = serde_json::to_value(socket_row::<()>(&v1, None)).unwrap();
    assert_eq!(j["state"], "ESTABLISHED");
    assert_eq!(
        (&j["local"], &j["family"]),
        (&"10.0.0.1:443".into(), &"ipv4".into())
    );
    assert_eq!(j["rtt_ms"], 2.0);
    assert_eq!(j["cwnd"], 42);
    assert_eq!(j["delivery_rate_bits_per_second"], 8_000_000);
    assert_eq!(j["retrans_ratio"], 0.25);
    assert_eq!(j["bbr"]["version"], 1);
    assert_eq!(j["bbr"]["bw_bits_per_second"], 1_000_000);
    assert_eq!(j["bbr"]["min_rtt_ms"], 1.5);
    assert_eq!(j["bbr"]["pacing_gain"], 1.25);
    assert_eq!(j["bbr"]["cwnd_gain"], 2.0);
    assert!(j["bbr"]["v3"].is_null());
    assert!(
        j.get("busy_us").is_none(),
        "the table's raw value stays out of the JSON"
    );

    let v3 = bbr_socket(248, &bbr_v3_bytes());
    let j = serde_json::to_value(socket_row::<()>(&v3, None)).unwrap();
    assert_eq!(j["bbr"]["version"], 3);
    let m = &j["bbr"]["v3"];
    assert_eq!(m["bw_hi_bits_per_second"], 2_000_000);
    assert_eq!(m["bw_lo_bits_per_second"], 800_000);
    assert_eq!((&m["mode"], &m["phase"]), (&2.into(), &5.into()));
    assert_eq!(
        (&m["inflight_lo"], &m["inflight_hi"], &m["extra_acked"]),
        (&7.into(), &9.into(), &2.into())
    );
}

#[test]
fn older_kernel_fields_are_null_not_zero() {
    // A 4.x-era 104-byte tcp_info: no pacing, delivery rate, bytes or busy time.
    let s = bbr_socket(104, &bbr_v3_bytes()[..20]);
    let j = serde_json::to_value(socket_row::<()>(&s, None)).unwrap();
    assert_eq!(j["tcp_info_bytes"], 104);
    assert_eq!(j["cwnd"], 42);
    for k in [
        "pacing_rate_bits_per_second",
        "delivery_rate_bits_per_second",
        "bytes_sent",
        "bytes_retrans",
        "retrans_ratio",
        "busy_s",
        "rwnd_limited_ratio",
        "min_rtt_ms",
    ] {
        assert!(j[k].is_null(), "{k}: {}", j[k]);
    }
}

#[test]
fn kernel_values_are_interpreted() {
    let mut s = bbr_socket(248, &bbr_v3_bytes()[..20]);
    let t = s.tcp_info.as_mut().unwrap();
    t.ca_state = Some(3);
    t.snd_ssthresh = Some(INFINITE_SSTHRESH);
    let j = serde_json::to_value(socket_row::<()>(&s, None)).unwrap();
    assert_eq!(j["ca_state"], "recovery");
    assert!(j["ssthresh"].is_null(), "infinite ssthresh is no value");
    let t = s.tcp_info.as_mut().unwrap();
    t.ca_state = Some(9);
    t.snd_ssthresh = Some(20);
    let j = serde_json::to_value(socket_row::<()>(&s, None)).unwrap();
    assert_eq!(
        (&j["ca_state"], &j["ssthresh"]),
        (&"unknown".into(), &20.into())
    );
}

/// A model source's state lands in `bpf_model` of the socket it names, and
/// its note in `bpf_model_note`.
#[test]
fn models_join_by_socket_and_note() {
    let mut a = bbr_socket(248, &bbr_v3_bytes()[..20]);
    a.cc = Some("bbr3".into());
    let mut b = a.clone();
    b.remote = "10.0.0.3:1".parse().unwrap();
    let models = Models::new(
        [((a.local, a.remote), "probe_bw")],
        Some(ModelNote::Missing("1 bbr3 socket(s) with no entry".into())),
    );
    let q = Query {
        cc: None,
        port: Some(443),
        states: StateSet::connected(),
    };
    let r = report(&q, &[a, b], &models, &Policies::default());
    let j = serde_json::to_value(&r).unwrap();
    assert_eq!(j["sockets"][0]["bpf_model"], "probe_bw");
    assert!(j["sockets"][1]["bpf_model"].is_null());
    assert_eq!(j["bpf_model_note"], "1 bbr3 socket(s) with no entry");
    assert_eq!(j["filter"]["port"], 443);
    assert_eq!(j["filter"]["states"][0], "ESTABLISHED");
    assert!(
        !j["filter"]["states"]
            .as_array()
            .unwrap()
            .contains(&"LISTEN".into())
    );
    assert_eq!(j["summary"][0]["cc"], "bbr3");
    assert_eq!(j["summary"][0]["sockets"], 2);
    let text = serde_json::to_string(&r).unwrap();
    let at = |k: &str| text.find(&format!("\"{k}\":")).unwrap();
    assert!(
        at("filter") < at("summary") && at("summary") < at("sockets"),
        "the document's order: {text}"
    );
    assert!(at("sockets") < at("bpf_model_note"));
    assert_eq!(j["policy_summary"], serde_json::json!([]));
    assert!(j["policy_note"].is_null() && j["sockets"][0]["policy"].is_null());
}

/// A policy on `cgroup`: rule 1 gives port 443 `bbr3`, rule 2 splits
/// 203.0.113.0/24 between cubic and bbr per connection, rule 3 has every
/// weight at 0 (a file cannot say so; a trial's reweighting can).
fn attached(cgroup: &str, id: u64) -> AttachedPolicy {
    let text = "[[rule]]\nlocal_port = [443]\ncc = \"bbr3\"\n\n\
                [[rule]]\nremote = [\"203.0.113.0/24\"]\nsplit = { cubic = 50, bbr = 50 }\n\n\
                [[rule]]\nremote_port = [9]\nsplit = { cubic = 1 }\n";
    let p = bbrkit_policy::parse("fixture.toml", text).unwrap();
    let mut compiled = bbrkit_policy::Compiled::new(&p, 7);
    compiled.rules[2].arms[0].weight = 0; // as a trial's set_weights leaves it
    AttachedPolicy {
        cgroup: Some(cgroup.into()),
        cgroup_id: id,
        compiled,
    }
}

fn sock(cc: &str, local: &str, remote: &str, cgroup_id: u64, cookie: u64) -> Socket {
    Socket {
        cgroup_id: Some(cgroup_id),
        cookie,
        ..crate::testing::socket(Some(cc), local.parse().unwrap(), remote.parse().unwrap())
    }
}

/// Each socket's rule is the nearest policy's `decide` (1-based, the arm's
/// algorithm), a socket on another algorithm says so, listeners and
/// sockets outside every governed cgroup have none, and the summary counts
/// by (cgroup, rule, algorithm).
#[test]
fn rules_come_from_the_nearest_policy_and_are_counted() {
    let root = attached("/cg", 1);
    let child = attached("/cg/svc", 20);
    let policies = Policies {
        attached: vec![root.clone(), child],
        cgroups: [
            (1, "/cg".into()),
            (20, "/cg/svc".into()),
            (21, "/cg/svc/worker".into()),
            (30, "/other".into()),
        ]
        .into_iter()
        .collect(),
        note: None,
    };
    let listener = Socket {
        state: TcpState::Listen,
        ..sock("cubic", "10.0.0.1:443", "0.0.0.0:0", 20, 9)
    };
    let split: Vec<Socket> = (0..64)
        .map(|c| sock("cubic", "10.0.0.1:5000", "203.0.113.9:80", 1, c))
        .collect();
    let mut socks = vec![
        sock("bbr3", "10.0.0.1:443", "198.51.100.1:40000", 21, 1), // rule 1, child policy
        sock("cubic", "10.0.0.1:443", "198.51.100.2:40000", 1, 2), // rule 1, the app's own cubic
        sock("cubic", "10.0.0.1:5000", "198.51.100.3:9", 1, 3),    // rule 3: no arm
        sock("cubic", "10.0.0.1:5000", "198.51.100.3:22", 1, 4),   // no rule
        sock("cubic", "10.0.0.1:443", "198.51.100.4:1", 30, 5),    // not governed
        listener,
    ];
    socks.extend(split.iter().cloned());
    let q = Query {
        cc: None,
        port: None,
        states: StateSet::ALL,
    };
    let r = report(&q, &socks, &Models::<()>::default(), &policies);
    let row = |i: usize| r.sockets[i].policy.clone();
    let p0 = row(0).unwrap();
    assert_eq!(
        (
            p0.cgroup.as_str(),
            p0.rule,
            p0.arm,
            p0.cc.as_deref(),
            p0.differs
        ),
        ("/cg/svc", Some(1), Some(0), Some("bbr3"), false)
    );
    let p1 = row(1).unwrap();
    assert_eq!(
        (p1.cgroup.as_str(), p1.rule, p1.cc.as_deref(), p1.differs),
        ("/cg", Some(1), Some("bbr3"), true)
    );
    let p2 = row(2).unwrap();
    assert_eq!(
        (p2.rule, p2.arm, p2.cc.as_deref(), p2.differs),
        (Some(3), None, None, false)
    );
    let p3 = row(3).unwrap();
    assert_eq!((p3.rule, p3.cc.as_deref(), p3.differs), (None, None, false));
    assert!(
        row(4).is_none() && row(5).is_none(),
        "not governed; a listener"
    );
    // The split's arms are decide()'s draw for each cookie.
    let mut drawn = [0usize; 2];
    for (i, s) in split.iter().enumerate() {
        let p = row(6 + i).unwrap();
        let d = root
            .compiled
            .decide(s.remote.ip(), 5000, 80, s.cookie)
            .unwrap();
        assert_eq!((p.rule, p.arm), (Some(2), d.arm));
        drawn[d.arm.unwrap()] += 1;
        assert_eq!(p.differs, p.cc.as_deref() != Some("cubic"));
    }
    assert!(drawn[0] > 0 && drawn[1] > 0, "both arms drawn: {drawn:?}");
    let j = serde_json::to_value(&r).unwrap();
    let summary: Vec<(String, serde_json::Value, serde_json::Value, u64, u64)> =
        j["policy_summary"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                (
                    e["cgroup"].as_str().unwrap().to_string(),
                    e["rule"].clone(),
                    e["cc"].clone(),
                    e["sockets"].as_u64().unwrap(),
                    e["differ"].as_u64().unwrap(),
                )
            })
            .collect();
    let n = |x: usize| x as u64;
    assert_eq!(
        summary,
        [
            ("/cg".into(), 1.into(), "bbr3".into(), 1, 1),
            (
                "/cg".into(),
                2.into(),
                "bbr".into(),
                n(drawn[1]),
                n(drawn[1])
            ),
            ("/cg".into(), 2.into(), "cubic".into(), n(drawn[0]), 0),
            ("/cg".into(), 3.into(), serde_json::Value::Null, 1, 0),
            (
                "/cg".into(),
                serde_json::Value::Null,
                serde_json::Value::Null,
                1,
                0
            ),
            ("/cg/svc".into(), 1.into(), "bbr3".into(), 1, 0),
        ]
    );
}

/// A policy whose cgroup directory was not found governs its own id only,
/// and names it by id.
#[test]
fn a_policy_without_a_directory_governs_its_own_id() {
    let mut p = attached("/gone", 5);
    p.cgroup = None;
    let policies = Policies {
        attached: vec![p],
        cgroups: [(6, "/gone/child".into())].into_iter().collect(),
        note: Some("x".into()),
    };
    let own = policy::row(&policies, &sock("bbr3", "10.0.0.1:443", "10.0.0.2:1", 5, 1)).unwrap();
    assert_eq!((own.cgroup.as_str(), own.rule), ("cgroup id 5", Some(1)));
    assert!(policy::row(&policies, &sock("bbr3", "10.0.0.1:443", "10.0.0.2:1", 6, 1)).is_none());
    let none = Socket {
        cgroup_id: None,
        ..sock("bbr3", "10.0.0.1:443", "10.0.0.2:1", 5, 1)
    };
    assert!(
        policy::row(&policies, &none).is_none(),
        "TIME_WAIT and request sockets carry no cgroup id"
    );
}

#[test]
fn an_unregistered_cc_is_refused_naming_the_registered_ones() {
    let q = Query {
        cc: Some("bbr2-typo".into()),
        port: None,
        states: StateSet::connected(),
    };
    let e = take(&q, &NoModels, &NoRules).unwrap_err().to_string();
    assert!(
        e.starts_with(
            "--cc bbr2-typo: no such congestion-control algorithm on this kernel (available: "
        ),
        "{e}"
    );
    assert!(e.contains("reno"), "reno is always registered: {e}");
}
