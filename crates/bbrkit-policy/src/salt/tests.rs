use std::net::{IpAddr, Ipv4Addr};

use super::*;
use crate::compile::Compiled;
use crate::file::parse;

const SPLIT: &str = r#"
[[rule]]
name = "web"
local_port = [443]
split = { cubic = 50, bbr = 50 }
unit = "client"
"#;

fn policy(text: &str) -> Policy {
    parse("t", text).unwrap()
}

/// The arm each of 24 clients (198.51.100.1..=24, one connection each,
/// to local port 443) draws under `text`, salted as `enable` salts it.
fn arms(text: &str) -> Vec<Option<usize>> {
    let p = policy(text);
    let c = Compiled::new(&p, salt(&p));
    (1..=24u8)
        .map(|i| {
            let remote = IpAddr::V4(Ipv4Addr::new(198, 51, 100, i));
            c.decide(remote, 443, 40000 + u16::from(i), u64::from(i))
                .and_then(|d| d.arm)
        })
        .collect()
}

fn moved(a: &[Option<usize>], b: &[Option<usize>]) -> usize {
    a.iter().zip(b).filter(|(x, y)| x != y).count()
}

#[test]
fn a_comment_whitespace_key_order_name_and_record_keep_every_clients_arm() {
    let before = arms(SPLIT);
    assert!(
        before.contains(&Some(0)) && before.contains(&Some(1)),
        "{before:?}"
    );
    let edits = [
        format!("# the web service's trial, started by ops\n{SPLIT}"),
        SPLIT.replace("[443]", "[ 443 ]").replace('\n', "\n\n"),
        "[[rule]]\nunit = \"client\"\nsplit = { cubic = 50, bbr = 50 }\nlocal_port = [\"443-443\"]\n"
            .to_string(),
        SPLIT.replace("\"web\"", "\"web-renamed\""),
        format!("{SPLIT}record = true\n"),
    ];
    for e in &edits {
        assert_eq!(moved(&before, &arms(e)), 0, "{e}");
    }
}

#[test]
fn a_changed_split_weight_redraws() {
    let before = arms(SPLIT);
    let after = arms(&SPLIT.replace("cubic = 50, bbr = 50", "cubic = 60, bbr = 40"));
    let n = moved(&before, &after);
    assert!(n > 0, "no client of 24 moved: {before:?} {after:?}");
}

#[test]
fn an_explicit_salt_keeps_the_draws_across_any_edit_and_a_new_one_redraws() {
    let with = |salt: &str, text: &str| format!("salt = \"{salt}\"\n{text}");
    let before = arms(&with("web-2026", SPLIT));
    let weights = SPLIT.replace("cubic = 50, bbr = 50", "cubic = 50, bbr = 50, reno = 0");
    assert_eq!(moved(&before, &arms(&with("web-2026", &weights))), 0);
    let p = policy(&with("web-2026", SPLIT));
    assert_eq!(p.salt(), Some("web-2026"));
    assert_eq!(salt(&p), salt(&policy(&with("web-2026", &weights))));
    assert_ne!(salt(&p), salt(&policy(&with("web-2027", SPLIT))));
    assert_ne!(salt(&p), salt(&policy(SPLIT)));
    assert_ne!(
        p,
        policy(SPLIT),
        "the salt is part of what the policy means"
    );
}

#[test]
fn a_salt_that_is_not_a_non_empty_string_is_refused() {
    for bad in ["salt = 7", "salt = \"\"", "salt = [\"a\"]"] {
        let e = parse("p.toml", &format!("{bad}\n{SPLIT}")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "p.toml: salt: expected a non-empty string",
            "{bad}"
        );
    }
}

#[test]
fn the_canonical_content_names_every_rule_in_order() {
    let p = policy(&format!(
        "[[rule]]\nremote = [\"203.0.113.0/24\"]\ncc = \"bbr\"\n{SPLIT}"
    ));
    assert_eq!(
        canonical(&p),
        "remote 203.0.113.0/24; local_port *; remote_port *; cc bbr\n\
         remote *; local_port 443-443; remote_port *; split cubic:50,bbr:50 by client\n"
    );
}
