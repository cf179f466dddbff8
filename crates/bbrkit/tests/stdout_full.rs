//! Every command writes its human output and its `--json` document through
//! one stdout writer, so a full disk (`> /dev/full`) is the contract's one
//! line `bbrkit: ...` and exit 2, never a panic (exit 101).

use std::process::{Command, Stdio};

fn to_dev_full(args: &[&str]) -> (Option<i32>, String) {
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_bbrkit"))
        .args(args)
        .stdout(Stdio::from(full))
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

#[test]
fn a_full_stdout_is_a_clean_exit_2_for_human_and_json_output() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_str().unwrap();
    let commands: &[&[&str]] = &[
        &["sim", "--duration", "1s"],
        &["sim", "--cc", "bbr1,cubic", "--compete", "--duration", "1s"],
        &["check", "--root", root],
        &["verify", "--root", root],
        &["doctor", "--root", root],
        &["enable", "--dry-run", "--root", root],
        &["rollback", "--dry-run", "--root", root],
        &["conns"],
        &["metrics"],
    ];
    for args in commands {
        for json in [false, true] {
            let mut a: Vec<&str> = if json { vec!["--json"] } else { vec![] };
            a.extend_from_slice(args);
            let (code, err) = to_dev_full(&a);
            assert_eq!(code, Some(2), "{a:?}: {err}");
            assert_eq!(err.lines().count(), 1, "{a:?}: {err}");
            assert!(
                err.starts_with("bbrkit: ") && err.contains("No space left on device"),
                "{a:?}: {err}"
            );
            assert_eq!(err.matches("os error").count(), 1, "{a:?}: {err}");
        }
    }
}
