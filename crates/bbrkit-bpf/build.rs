//! Build script of bbrkit-bpf: `BBRKIT_BBR3_OBJECT_SHA256` and
//! `BBRKIT_BBR3_CC2_OBJECT_SHA256`, the SHA-256 of the embedded
//! `bpf/bbr3.bpf.o` and `bpf/bbr3-cc2.bpf.o` (what `sha256sum` prints), so that a
//! binary names the BPF code it carries (`bbrkit --version`).
//!
//! Must never build or fetch anything: it reads two files.

use sha2::{Digest, Sha256};

/// The object `bbr3.rs` embeds, relative to this crate.
const OBJECT: &str = "bpf/bbr3.bpf.o";

/// Its 2-argument `cong_control` build (Linux 6.0-6.9).
const OBJECT_CC2: &str = "bpf/bbr3-cc2.bpf.o";

fn main() {
    for (path, var) in [
        (OBJECT, "BBRKIT_BBR3_OBJECT_SHA256"),
        (OBJECT_CC2, "BBRKIT_BBR3_CC2_OBJECT_SHA256"),
    ] {
        println!("cargo:rerun-if-changed={path}");
        let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("read {path}: {e}"));
        let hex: String = Sha256::digest(&bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        println!("cargo:rustc-env={var}={hex}");
    }
}
