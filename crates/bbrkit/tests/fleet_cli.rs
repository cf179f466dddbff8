//! `bbrkit completions` and `bbrkit manpages` (what the Debian package
//! ships, docs/fleet.md): one page per visible command, named as man-db
//! looks them up, each with EXIT STATUS, EXAMPLES and FILES; completion
//! scripts that name every command; bad input (`--json` on a completion
//! script included) is a one-line error with exit 2.

use std::process::{Command, Output};

fn bbrkit(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_bbrkit"))
        .args(args)
        .output()
        .expect("spawn bbrkit")
}

/// The visible commands, as `bbrkit --help` lists them.
fn commands() -> Vec<String> {
    let help = String::from_utf8(bbrkit(&["--help"]).stdout).unwrap();
    help.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(str::to_string)
        .collect()
}

#[test]
fn manpages_writes_one_page_per_visible_command() {
    let dir = tempfile::tempdir().unwrap();
    let out = bbrkit(&["manpages", dir.path().to_str().unwrap()]);
    assert!(out.status.success(), "{out:?}");
    let mut pages: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    pages.sort();
    let mut want: Vec<String> = commands().iter().map(|c| format!("bbrkit-{c}.1")).collect();
    want.push("bbrkit.1".into());
    // A command's subcommands have their own pages.
    want.push("bbrkit-fleet-report.1".into());
    want.sort();
    assert!(want.contains(&"bbrkit-enable.1".to_string()), "{want:?}");
    assert!(
        commands().contains(&"manpages".to_string()),
        "manpages is a documented command (issue 21 item 12)"
    );
    assert_eq!(pages, want);
    let enable = std::fs::read_to_string(dir.path().join("bbrkit-enable.1")).unwrap();
    assert!(
        enable.starts_with(".ie \\n(.g .ds Aq"),
        "roff: {enable:.80}"
    );
    assert!(enable.contains(".TH bbrkit-enable 1"), "{enable}");
    assert!(enable.contains("dry\\-run"), "{enable}");
    // Issue 21 item 12: the sections clap does not write, on every page.
    for p in &pages {
        let page = std::fs::read_to_string(dir.path().join(p)).unwrap();
        for section in [".SH \"EXIT STATUS\"", ".SH EXAMPLES"] {
            assert!(page.contains(section), "{p} lacks {section}");
        }
    }
    assert!(enable.contains(".SH FILES"), "{enable}");
    assert!(enable.contains("99\\-zz\\-bbrkit.conf"), "{enable}");
    let verify = std::fs::read_to_string(dir.path().join("bbrkit-verify.1")).unwrap();
    assert!(
        verify.contains("a check failed"),
        "verify's exit 1: {verify}"
    );
    let conns = std::fs::read_to_string(dir.path().join("bbrkit-conns.1")).unwrap();
    assert!(
        !conns.contains("found a problem"),
        "conns never exits 1: {conns}"
    );
    // Deterministic: the same pages twice (no dates).
    let again = tempfile::tempdir().unwrap();
    assert!(
        bbrkit(&["manpages", again.path().to_str().unwrap()])
            .status
            .success()
    );
    for p in &pages {
        assert_eq!(
            std::fs::read(dir.path().join(p)).unwrap(),
            std::fs::read(again.path().join(p)).unwrap(),
            "{p}"
        );
    }
}

#[test]
fn completions_name_every_command() {
    for shell in ["bash", "zsh", "fish"] {
        let out = bbrkit(&["completions", shell]);
        assert!(out.status.success(), "{shell}: {out:?}");
        let script = String::from_utf8(out.stdout).unwrap();
        for c in commands() {
            assert!(script.contains(&c), "{shell} script lacks {c}");
        }
    }
}

#[test]
fn bad_input_is_a_one_line_error() {
    for args in [
        &["completions", "tcsh"][..],
        &["manpages", "/nonexistent/dir"][..],
        // Issue 21 item 12: it printed bash.
        &["completions", "bash", "--json"][..],
    ] {
        let out = bbrkit(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert!(
            err.starts_with("bbrkit: ") && err.lines().count() == 1,
            "{err}"
        );
        // With --json the one JSON document is the error's (the CLI
        // contract); without, stdout stays empty.
        let stdout = String::from_utf8(out.stdout).unwrap();
        if args.contains(&"--json") {
            let doc: serde_json::Value = serde_json::from_str(&stdout).unwrap();
            assert_eq!(doc["error"]["exit_code"], 2, "{stdout}");
            assert_eq!(
                format!("bbrkit: {}", doc["error"]["message"].as_str().unwrap()),
                err.trim_end()
            );
        } else {
            assert!(stdout.is_empty(), "{args:?}: {stdout}");
        }
    }
}
