//! `bbrkit --version` names every BPF object the binary carries by the
//! first 12 hex digits of its SHA-256, the digits `sha256sum` prints for
//! the committed file (docs/build.md), or says it was built without BPF.

use std::process::Command;

use sha2::{Digest, Sha256};

fn version() -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_bbrkit"))
        .arg("--version")
        .output()
        .expect("run bbrkit --version");
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout).expect("utf-8")
}

#[cfg(feature = "bpf")]
#[test]
fn names_both_objects_by_the_committed_files_hashes() {
    let line = version();
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../bbrkit-bpf/bpf");
    for file in ["bbr3.bpf.o", "bbr3-cc2.bpf.o"] {
        let bytes = std::fs::read(format!("{dir}/{file}")).expect("committed object");
        let hex: String = Sha256::digest(&bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let want = format!("{file} sha256:{}", &hex[..12]);
        assert!(line.contains(&want), "{line:?} does not name {want}");
    }
}

#[cfg(not(feature = "bpf"))]
#[test]
fn says_it_carries_no_bpf() {
    assert!(version().contains("without BPF support"));
}
