//! Every usage error clap can raise from bbrkit's arguments is the CLI
//! contract's one line (../shared/DESIGN.md, "CLI contract"): exit 2,
//! exactly one stderr line that starts `bbrkit: ` and names what is wrong,
//! and on stdout nothing, or with `--json` anywhere in the arguments one
//! JSON document `{"error": {"message": the line without "bbrkit: ",
//! "exit_code": 2}}`. One real invocation per
//! reachable clap `ErrorKind`; the kinds bbrkit's arguments cannot raise
//! (no `num_args`, `require_equals` or positionals) are covered by the
//! binary's unit test of `one_line` over a command that raises them.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::process::{Command, Output};

/// Runs the built binary with `args`.
fn run(args: &[&OsStr]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_bbrkit"))
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .expect("run bbrkit")
}

/// (clap kind, arguments, what the line must name)
const CASES: &[(&str, &[&str], &[&str])] = &[
    (
        "MissingRequiredArgument",
        &["enable", "--cgroup", "/sys/fs/cgroup/x", "--dry-run"],
        &["not provided", "--policy <FILE>"],
    ),
    (
        "MissingRequiredArgument",
        &["lab", "--keepalive"],
        &["not provided", "--workload <SPEC>"],
    ),
    (
        "ArgumentConflict",
        &["lab", "--compete", "--workload", "rpc"],
        &["'--compete'", "'--workload <SPEC>'"],
    ),
    (
        "ArgumentConflict (twice)",
        &["lab", "--compete", "--compete"],
        &["'--compete' cannot be used multiple times"],
    ),
    (
        "InvalidValue",
        &["sim", "--preset", "bogus"],
        &[
            "'bogus'",
            "'--preset <PRESET>'",
            "[possible values: seed, fairness, bufferbloat]",
        ],
    ),
    (
        "InvalidValue (none supplied)",
        &["conns", "--port"],
        &["'--port <N>'", "none was supplied"],
    ),
    (
        "ValueValidation",
        &["conns", "--port", "70000"],
        &["'70000'", "'--port <N>'"],
    ),
    (
        "UnknownArgument",
        &["check", "--bogus"],
        &["unexpected argument '--bogus'"],
    ),
    (
        "UnknownArgument (positional)",
        &["check", "extra"],
        &["unexpected argument 'extra'"],
    ),
    (
        "InvalidSubcommand",
        &["bogus"],
        &["unrecognized subcommand 'bogus'"],
    ),
    (
        "MissingSubcommand",
        &["--json"],
        &["requires a subcommand", "check", "enable"],
    ),
];

fn assert_one_line(kind: &str, args: &[&OsStr], names: &[&str]) {
    let out = run(args);
    let err = String::from_utf8_lossy(&out.stderr);
    let shown = format!("{kind} {args:?}: stderr {err:?}");
    assert_eq!(out.status.code(), Some(2), "{shown}");
    if args.iter().any(|a| *a == "--json") {
        assert_error_document(&out.stdout, err.trim_end(), 2, &shown);
    } else {
        assert!(out.stdout.is_empty(), "{shown}: stdout {:?}", out.stdout);
    }
    assert_eq!(err.lines().count(), 1, "{shown}");
    assert!(err.starts_with("bbrkit: "), "{shown}");
    assert!(
        !err.contains("Usage:") && !err.contains("--help"),
        "{shown}"
    );
    for n in names {
        assert!(err.contains(n), "{shown}: does not name {n:?}");
    }
}

/// `stdout` is exactly one JSON document, the error of stderr `line`.
fn assert_error_document(stdout: &[u8], line: &str, code: i64, shown: &str) {
    let text = String::from_utf8_lossy(stdout);
    let doc: serde_json::Value = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{shown}: stdout is not one JSON document ({e}): {text:?}"));
    let message = line
        .strip_prefix("bbrkit: ")
        .expect("the contract's prefix");
    assert_eq!(
        doc,
        serde_json::json!({"error": {"message": message, "exit_code": code}}),
        "{shown}"
    );
}

#[test]
fn every_clap_error_kind_is_one_line_naming_the_argument() {
    for (kind, args, names) in CASES {
        let args: Vec<&OsStr> = args.iter().map(OsStr::new).collect();
        assert_one_line(kind, &args, names);
        // The same with --json, first or last: the same line, and the
        // error document on stdout (also when the arguments do not parse).
        if *kind != "MissingSubcommand" {
            let mut first = vec![OsStr::new("--json")];
            first.extend(&args);
            assert_one_line(kind, &first, names);
            let mut last = args.clone();
            last.push(OsStr::new("--json"));
            assert_one_line(kind, &last, names);
        }
    }
}

/// `InvalidUtf8`: clap names no argument, so bbrkit shows the one that is
/// not UTF-8 (lossily).
#[test]
fn invalid_utf8_names_the_argument() {
    let bad = OsStr::from_bytes(b"cu\xffbic");
    let args = [OsStr::new("conns"), OsStr::new("--cc"), bad];
    assert_one_line("InvalidUtf8", &args, &["UTF-8", "'cu\u{fffd}bic'"]);
}
