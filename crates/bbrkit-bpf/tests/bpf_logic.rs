//! The BPF object's logic, compiled for the host and driven function by
//! function (`bpf/test/logic.c`): what the kernel cannot be made to do on
//! demand in a test (a TLP repair, losses marked between two ACKs, an
//! optmem failure) and what a loaded program cannot show (which path ran).
//! Needs a C compiler (`BBRKIT_TEST_CC`, else `clang-19`, else `cc`), as
//! the vendored libbpf build does; no root.

use std::path::{Path, PathBuf};
use std::process::Command;

fn compiler() -> String {
    if let Ok(cc) = std::env::var("BBRKIT_TEST_CC") {
        return cc;
    }
    let found = |name: &str| {
        std::env::var_os("PATH")
            .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(name).is_file()))
    };
    if found("clang-19") { "clang-19" } else { "cc" }.to_string()
}

fn bpf_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("bpf")
}

#[test]
fn bpf_logic_checks_pass_on_the_host() {
    logic_checks_pass(&[], "bbr3.bpf.o");
}

/// The same checks on the 2-argument build (`bbr3-cc2.bpf.o`, Linux
/// 6.0–6.9): the ACK's ECE through `in_ack_event`, PROBE_RTT's
/// app-limited mark in the socket's storage.
#[test]
fn bpf_logic_checks_pass_on_the_host_for_the_2_argument_build() {
    logic_checks_pass(&["-DBBR3_CC2"], "bbr3-cc2.bpf.o");
}

fn logic_checks_pass(defines: &[&str], build: &str) {
    let dir = bpf_dir();
    let exe = std::env::temp_dir().join(format!("bbrkit-bpf-logic-{}-{build}", std::process::id()));
    let cc = compiler();
    // -w: the object itself is built with -Wall -Werror by the Makefile;
    // here only the host's view of the BPF-only attributes would warn.
    let out = Command::new(&cc)
        .args(defines)
        .args(["-O1", "-g", "-w", "-I"])
        .arg(dir.join("test/shim"))
        .arg("-I")
        .arg(&dir)
        .arg(dir.join("test/logic.c"))
        .arg("-o")
        .arg(&exe)
        .output()
        .unwrap_or_else(|e| panic!("run {cc}: {e}"));
    assert!(
        out.status.success(),
        "{cc} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run = Command::new(&exe).output().expect("run the logic checks");
    let _ = std::fs::remove_file(&exe);
    let text = String::from_utf8_lossy(&run.stdout);
    print!("{text}");
    assert!(run.status.success(), "{build}: {text}");
    assert!(text.ends_with("0 check(s) failed\n"), "{build}: {text}");
}
