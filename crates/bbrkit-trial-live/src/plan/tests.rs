use super::*;

fn facts() -> HostFacts {
    HostFacts {
        available: vec!["reno".into(), "cubic".into(), "bbr".into()],
        cgroup2_root: Some(PathBuf::from("/sys/fs/cgroup/unified")),
    }
}

fn spec(matching: Matching) -> TrialSpec {
    TrialSpec {
        arms: Some(["cubic".into(), "bbr".into()]),
        split: None,
        unit: None,
        matching,
        cgroup: None,
        stop: Stop::For(Duration::from_secs(60)),
        look_every: Duration::from_secs(10),
        seed: 7,
        ring_bytes: 1 << 22,
        prefix: PrefixLengths { v4: 24, v6: 48 },
        guardrails: GuardrailBounds::default(),
    }
}

fn flags(prefixes: &[&str], ports: &[&str]) -> Matching {
    Matching::Flags {
        prefixes: prefixes.iter().map(|s| s.to_string()).collect(),
        ports: ports.iter().map(|s| s.to_string()).collect(),
    }
}

fn err(spec: &TrialSpec) -> String {
    plan(spec, &facts()).unwrap_err().to_string()
}

#[test]
fn flags_make_one_recorded_split_rule_on_the_whole_host() {
    let p = plan(
        &spec(flags(&["198.51.100.0/24"], &["443", "8000-8099"])),
        &facts(),
    )
    .unwrap();
    assert_eq!(p.cgroup, PathBuf::from("/sys/fs/cgroup/unified"));
    assert!(p.scope.whole_host);
    assert_eq!(
        p.scope.rule_text,
        "rule 1 \"trial\": remote 198.51.100.0/24; local_port 443, 8000-8099 -> split cubic 50 / bbr 50 per connection, recorded at close"
    );
    assert_eq!(
        (p.def.arms[0].cc.as_str(), p.def.arms[1].cc.as_str()),
        ("cubic", "bbr")
    );
    assert_eq!(p.def.unit, Unit::Connection, "the default unit");
    assert_eq!(p.compiled.salt, 7);
    assert!(p.compiled.rules[0].record);
    let d = p
        .compiled
        .decide("198.51.100.9".parse().unwrap(), 8050, 40000, 1)
        .unwrap();
    assert_eq!(d.rule, 0);
    assert!(
        p.compiled
            .decide("203.0.113.9".parse().unwrap(), 443, 40000, 1)
            .is_none()
    );
    assert!(
        p.compiled
            .decide("198.51.100.9".parse().unwrap(), 22, 40000, 1)
            .is_none()
    );
}

#[test]
fn no_prefix_and_no_port_match_every_connection_of_the_cgroup() {
    let mut s = spec(flags(&[], &[]));
    s.cgroup = Some(PathBuf::from("/sys/fs/cgroup/unified/web"));
    s.split = Some([90, 10]);
    s.unit = Some(Unit::Client);
    let p = plan(&s, &facts()).unwrap();
    assert!(!p.scope.whole_host);
    assert_eq!(p.def.share(1), 0.1);
    assert_eq!(p.def.unit, Unit::Client);
    assert_eq!(p.compiled.rules[0].unit, bbrkit_policy::Unit::Client);
    assert!(
        p.compiled
            .decide("2001:db8::1".parse().unwrap(), 1, 2, 3)
            .is_some()
    );
}

#[test]
fn a_policy_rule_is_the_trial_and_only_it_records() {
    let text = r#"
[[rule]]
name = "domestic"
remote = ["10.0.0.0/8"]
cc = "cubic"
record = true

[[rule]]
name = "downloads"
local_port = [8000]
split = { reno = 1, bbr = 3 }
unit = "client"
"#;
    let mut s = spec(Matching::Policy {
        origin: "p.toml".into(),
        text: text.into(),
        rule: "downloads".into(),
    });
    s.arms = None;
    let p = plan(&s, &facts()).unwrap();
    assert_eq!(p.scope.rule, 1);
    assert_eq!(p.scope.policy.as_deref(), Some("p.toml"));
    assert_eq!(p.def.arms[0].cc, "reno");
    assert_eq!(p.def.share(1), 0.75);
    assert_eq!(p.def.unit, Unit::Client);
    let recorded: Vec<bool> = p.compiled.rules.iter().map(|r| r.record).collect();
    assert_eq!(recorded, [false, true]);
    if let Matching::Policy { rule, .. } = &mut s.matching {
        *rule = "2".into();
    }
    assert_eq!(plan(&s, &facts()).unwrap().scope.rule, 1, "by number");
    for (which, want) in [
        (
            "1",
            "p.toml: --rule 1: gives every connection cubic; a trial needs a split of two arms",
        ),
        ("3", "p.toml: --rule 3: the file has rules 1 to 2"),
        ("uploads", "p.toml: --rule uploads: no rule has this name"),
    ] {
        if let Matching::Policy { rule, .. } = &mut s.matching {
            *rule = which.into();
        }
        assert_eq!(err(&s), want);
    }
    s.arms = Some(["cubic".into(), "bbr".into()]);
    assert!(err(&s).starts_with("--arms, --split and --unit come from the policy"));
}

#[test]
fn refusals_name_the_flag_and_the_fix() {
    let mut s = spec(flags(&["10.0.0.0/33"], &[]));
    let e = plan(&s, &facts()).unwrap_err();
    assert_eq!(e.to_string(), "--prefix \"10.0.0.0/33\"");
    assert_eq!(
        std::error::Error::source(&e).unwrap().to_string(),
        "prefix length 33 > 32"
    );
    s.matching = flags(&[], &["70000"]);
    assert_eq!(err(&s), "--port \"70000\"");
    s.matching = flags(&[], &[]);
    s.arms = Some(["cubic".into(), "bbr3".into()]);
    assert_eq!(
        err(&s),
        "algorithm bbr3 is not registered (tcp_available_congestion_control: reno cubic bbr): run `bbrkit enable --cc bbr3` first"
    );
    s.arms = Some(["cubic".into(), "vegas".into()]);
    assert!(
        err(&s).ends_with("): load its module (modprobe tcp_vegas) or choose another algorithm")
    );
    s.arms = None;
    assert_eq!(
        err(&s),
        "say what to compare: --arms A,B (or --policy FILE --rule N)"
    );
    s.arms = Some(["cubic".into(), "bbr".into()]);
    s.unit = Some(Unit::Prefix);
    s.prefix.v4 = 16;
    assert!(err(&s).starts_with("--unit prefix draws one arm per /24"));
    s.prefix.v4 = 24;
    assert!(plan(&s, &facts()).is_ok());
    let no_mount = HostFacts {
        cgroup2_root: None,
        ..facts()
    };
    assert!(matches!(plan(&s, &no_mount), Err(LiveError::NoCgroup2)));
}

#[test]
fn arms_and_split_parse_or_say_why_not() {
    assert_eq!(
        parse_arms("cubic, bbr").unwrap(),
        ["cubic".to_string(), "bbr".to_string()]
    );
    for (bad, why) in [
        ("cubic", "give two algorithms"),
        ("cubic,bbr,reno", "give two algorithms"),
        ("cubic,", "empty"),
        ("cubic,b b", "not an algorithm name"),
    ] {
        let e = parse_arms(bad).unwrap_err().to_string();
        assert!(e.contains(why), "{bad}: {e}");
    }
    assert_eq!(
        parse_arms("cubic,cubic").unwrap(),
        ["cubic".to_string(), "cubic".to_string()],
        "an A/A trial, the platform check"
    );
    assert_eq!(parse_split("90/10").unwrap(), [90, 10]);
    for (bad, why) in [
        ("50", "give the weights of A and B"),
        ("50/x", "whole number"),
        ("0/100", "leaves an arm empty"),
        ("70000/1", "whole number"),
    ] {
        let e = parse_split(bad).unwrap_err().to_string();
        assert!(e.contains(why), "{bad}: {e}");
    }
}
