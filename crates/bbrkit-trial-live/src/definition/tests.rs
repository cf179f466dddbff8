//! The definition file on fixtures (`tests/fixtures/definition/`): every
//! key read, each bad file one line naming its line, and the command line
//! over the file.

use super::*;

fn fixture(name: &str) -> (String, String) {
    let path = format!(
        "{}/tests/fixtures/definition/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap();
    (name.to_string(), text)
}

fn parse(name: &str) -> Result<Definition, DefinitionError> {
    let (origin, text) = fixture(name);
    Definition::parse(&origin, &text)
}

fn error(name: &str) -> String {
    let e = parse(name).unwrap_err().to_string();
    assert!(!e.contains('\n'), "one line: {e}");
    e
}

#[test]
fn every_key_is_read() {
    let d = parse("full.toml").unwrap();
    assert_eq!(
        d,
        Definition {
            name: Some("edge-bbr".into()),
            arms: Some(["cubic".into(), "bbr".into()]),
            split: Some([90, 10]),
            unit: Some(Unit::Client),
            prefixes: vec!["203.0.113.0/24".into(), "2001:db8::/32".into()],
            ports: vec!["443".into(), "8000-8100".into()],
            policy: None,
            rule: None,
            cgroup: Some("/sys/fs/cgroup/system.slice/nginx.service".into()),
            duration: None,
            until_confident: Some(true),
            max_duration: Some(Duration::from_secs(86_400)),
            interval: Some(Duration::from_secs(30)),
            seed: Some(20_260_601),
            ring_bytes: Some(8 << 20),
            prefix_v4: Some(24),
            prefix_v6: Some(48),
            guardrail_goodput: Some(0.1),
            guardrail_retransmit: Some(0.01),
            groups: Some(5),
            textfile: Some("/var/lib/prometheus/node-exporter/bbrkit-trial-edge-bbr.prom".into()),
        }
    );
    let spec = d.spec(7).unwrap();
    assert_eq!(
        spec.stop,
        Stop::UntilConfident {
            max: Duration::from_secs(86_400)
        }
    );
    assert_eq!(spec.seed, 20_260_601, "the file's seed, not the clock's");
    assert_eq!(spec.look_every, Duration::from_secs(30));
    assert_eq!(spec.guardrails.max_goodput_loss, 0.1);
    assert_eq!(
        spec.matching,
        Matching::Flags {
            prefixes: d.prefixes.clone(),
            ports: d.ports.clone()
        }
    );
}

#[test]
fn the_flags_spellings_are_accepted_and_defaults_fill_the_rest() {
    let d = parse("flag-forms.toml").unwrap();
    assert_eq!(d.arms, Some(["cubic".into(), "bbr".into()]));
    assert_eq!(d.split, Some([50, 50]));
    assert_eq!(d.ports, ["8443"]);
    assert_eq!(d.ring_bytes, Some(65_536));
    assert_eq!(d.seed, Some(u64::MAX));
    let spec = d.spec(7).unwrap();
    assert_eq!(spec.stop, Stop::For(Duration::from_secs(6 * 3600)));
    assert_eq!(spec.look_every, DEFAULT_INTERVAL);
    assert_eq!(spec.prefix, DEFAULT_PREFIX);
    assert_eq!(spec.guardrails, GuardrailBounds::default());
    assert_eq!(d.groups(), DEFAULT_GROUPS);
    // Without a seed anywhere, the clock's.
    let mut d = d;
    d.seed = None;
    assert_eq!(d.spec(7).unwrap().seed, 7);
}

#[test]
fn a_policy_rule_is_read_from_its_file() {
    let d = parse("policy.toml").unwrap();
    assert_eq!(
        d.rule.as_deref(),
        Some("2"),
        "a number is the rule's number"
    );
    let dir = std::env::temp_dir().join(format!("bbrkit-definition-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let policy = dir.join("policy.toml");
    std::fs::write(&policy, "[[rule]]\ncc = \"bbr\"\n").unwrap();
    let d = Definition {
        policy: Some(policy.clone()),
        ..d
    };
    let spec = d.spec(1).unwrap();
    assert_eq!(
        spec.matching,
        Matching::Policy {
            origin: policy.display().to_string(),
            text: "[[rule]]\ncc = \"bbr\"\n".into(),
            rule: "2".into()
        }
    );
    std::fs::remove_dir_all(&dir).unwrap();
    let e = d.spec(1).unwrap_err().to_string();
    assert_eq!(e, format!("read --policy {}", policy.display()));
}

#[test]
fn each_bad_file_is_one_line_naming_the_line() {
    let e = error("unknown-key.toml");
    assert!(
        e.starts_with("unknown-key.toml line 3: unknown field `duraton`, expected one of"),
        "{e}"
    );
    assert_eq!(
        error("bad-duration.toml"),
        "bad-duration.toml line 3: duration \"6 hours\": invalid duration '6 hours' (use e.g. 10ms, 6s, 250us)"
    );
    assert_eq!(
        error("two-stops.toml"),
        "two-stops.toml line 3: duration and until_confident: give one, not both"
    );
    assert_eq!(
        error("policy-and-prefix.toml"),
        "policy-and-prefix.toml line 2: policy and prefix: give one, not both"
    );
    assert!(
        error("bad-name.toml")
            .starts_with("bad-name.toml line 1: name \"edge bbr\": 'edge bbr' is not a trial name"),
    );
    assert_eq!(
        error("syntax.toml"),
        "syntax.toml line 2: missing comma between array elements, expected `,`"
    );
    assert_eq!(
        error("three-arms.toml"),
        "three-arms.toml line 1: arms [\"cubic\", \"bbr\", \"bbr3\"]: give two algorithms, A (the baseline) and B, like cubic,bbr"
    );
    let bad = |text: &str| Definition::parse("t.toml", text).unwrap_err().to_string();
    assert_eq!(
        bad("prefix_v4 = 33\n"),
        "t.toml line 1: prefix_v4 33: expected a whole number 0-32"
    );
    assert_eq!(
        bad("split = [50, 0]\n"),
        "t.toml line 1: split [50, 0]: a weight of 0 leaves an arm empty: a trial needs both"
    );
    assert_eq!(
        bad("\nring_size = \"3kib\"\n"),
        "t.toml line 2: ring_size \"3kib\": '3kib' is not a power of two from 4kib to 2gib (e.g. 4mib)"
    );
    assert_eq!(
        bad("guardrail_goodput = 0.2\n"),
        "t.toml line 1: guardrail_goodput 0.2: expected a string"
    );
    assert_eq!(
        bad("until_confident = \"yes\"\n"),
        "t.toml line 1: until_confident \"yes\": expected true or false"
    );
    assert_eq!(
        bad("unit = \"host\"\n"),
        "t.toml line 1: unit \"host\": expected \"connection\", \"client\" or \"prefix\""
    );
    assert_eq!(
        bad("rule = 2\n"),
        "t.toml: policy and rule go together: the policy file and its rule that is the trial"
    );
    assert_eq!(
        bad("[guardrails]\ngoodput = \"20%\"\n")
            .split(',')
            .next()
            .unwrap(),
        "t.toml line 1: unknown field `guardrails`"
    );
}

#[test]
fn a_file_that_says_not_how_long_is_refused_at_spec() {
    let d = Definition::parse("t.toml", "arms = \"cubic,bbr\"\nuntil_confident = false\n").unwrap();
    assert_eq!(
        d.spec(1).unwrap_err().to_string(),
        "say how long: --duration TIME or --until-confident"
    );
}

#[test]
fn the_command_line_wins_over_the_file() {
    let file = parse("full.toml").unwrap();
    let flags = Definition {
        name: Some("edge-bbr-2".into()),
        duration: Some(Duration::from_secs(600)),
        groups: Some(3),
        ..Definition::default()
    };
    let d = flags.over(file.clone());
    assert_eq!(d.name.as_deref(), Some("edge-bbr-2"));
    assert_eq!(d.groups(), 3);
    assert_eq!(d.duration, Some(Duration::from_secs(600)));
    assert_eq!(
        d.until_confident, None,
        "--duration replaces the file's until_confident"
    );
    assert_eq!(d.spec(1).unwrap().stop, Stop::For(Duration::from_secs(600)));
    // Fields the command line leaves out are the file's.
    assert_eq!(d.arms, file.arms);
    assert_eq!(d.prefixes, file.prefixes);
    assert_eq!(d.seed, file.seed);
    // --policy/--rule replace the file's prefixes and ports, and the other way.
    let flags = Definition {
        policy: Some("/etc/bbrkit/policy.toml".into()),
        rule: Some("download".into()),
        ..Definition::default()
    };
    let d = flags.over(file.clone());
    assert!(d.prefixes.is_empty() && d.ports.is_empty());
    let policy_file = parse("policy.toml").unwrap();
    let flags = Definition {
        prefixes: vec!["10.0.0.0/8".into()],
        ..Definition::default()
    };
    let d = flags.over(policy_file.clone());
    assert_eq!((d.policy, d.rule), (None, None));
    assert_eq!(d.prefixes, ["10.0.0.0/8"]);
    // Nothing on the command line: the file as it is.
    assert_eq!(Definition::default().over(policy_file.clone()), policy_file);
}
