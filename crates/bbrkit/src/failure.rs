//! How bbrkit says it failed (the CLI contract, ../shared/DESIGN.md): one
//! line `bbrkit: MESSAGE` on stderr and the exit code, and with `--json`
//! also one JSON document on stdout, so `--json` prints exactly one
//! document on every path:
//!
//! ```text
//!   {"error": {"message": "MESSAGE", "exit_code": 2}}
//! ```
//!
//! Unless the command already printed its document (a failure after the
//! report, such as an unwritable `--textfile`): then stdout keeps that one
//! and the failure is the stderr line and the exit code.

use std::ffi::OsStr;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};

use serde::Serialize;

/// Set once a command's JSON document is on stdout.
static DOCUMENT_PRINTED: AtomicBool = AtomicBool::new(false);

/// The JSON document of a failure.
#[derive(Debug, Serialize)]
struct ErrorDocument<'a> {
    error: ErrorBody<'a>,
}

#[derive(Debug, Serialize)]
struct ErrorBody<'a> {
    /// The stderr line without its `bbrkit: ` prefix.
    message: &'a str,
    /// The process's exit code.
    exit_code: u8,
}

/// Records that the command's own document was printed.
pub fn document_printed() {
    DOCUMENT_PRINTED.store(true, Ordering::SeqCst);
}

/// `--json` is among `args` (before a `--`): honoured even when the
/// arguments do not parse.
pub fn json_in<I: IntoIterator<Item = S>, S: AsRef<OsStr>>(args: I) -> bool {
    args.into_iter()
        .take_while(|a| a.as_ref() != "--")
        .any(|a| a.as_ref() == "--json")
}

/// `--json` is in the process's arguments.
pub fn json_in_argv() -> bool {
    json_in(std::env::args_os().skip(1))
}

/// The error document of `message` and `exit_code` (one line, newline
/// ended).
fn document(message: &str, exit_code: u8) -> String {
    let doc = ErrorDocument {
        error: ErrorBody { message, exit_code },
    };
    serde_json::to_string(&doc).expect("a string and a number serialise") + "\n"
}

/// Says the failure `message` (without `bbrkit: `) with `exit_code`: the
/// stderr line, and with `json` the error document unless the command's
/// document is already out. Returns the exit code to end with.
pub fn fail(message: &str, exit_code: u8, json: bool) -> u8 {
    eprintln!("bbrkit: {message}");
    document_only(message, exit_code, json);
    exit_code
}

/// The error document alone (the stderr side was already written, as
/// clap's help is).
pub fn document_only(message: &str, exit_code: u8, json: bool) {
    if json && !DOCUMENT_PRINTED.swap(true, Ordering::SeqCst) {
        // stdout gone (a closed pipe): the stderr line and exit code
        // still say it.
        let _ = crate::emit(&document(message, exit_code));
    }
}

/// [`fail`] as the process's exit code.
pub fn exit_code(message: &str, exit_code: u8, json: bool) -> ExitCode {
    ExitCode::from(fail(message, exit_code, json))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_document_is_one_line_of_message_and_code() {
        let d = document("no such cgroup '/x': \"quoted\"", 2);
        assert_eq!(
            d,
            "{\"error\":{\"message\":\"no such cgroup '/x': \\\"quoted\\\"\",\"exit_code\":2}}\n"
        );
        let v: serde_json::Value = serde_json::from_str(&d).unwrap();
        assert_eq!(v["error"]["exit_code"], 2);
    }

    #[test]
    fn json_is_found_anywhere_before_a_double_dash() {
        assert!(json_in(["bogus", "--json"]));
        assert!(json_in(["--json", "trial"]));
        assert!(!json_in(["trial", "--jsn"]));
        assert!(!json_in(["lab", "--", "--json"]));
    }
}
