//! Build script of bbrkit-bpf: `BBRKIT_BBR3_OBJECT_SHA256`, the SHA-256 of
//! the embedded `bpf/bbr3.bpf.o` (what `sha256sum` prints), so that a
//! binary names the BPF code it carries (`bbrkit --version`).
//!
//! Must never build or fetch anything: it reads one file.

use sha2::{Digest, Sha256};

/// The object `bbr3.rs` embeds, relative to this crate.
const OBJECT: &str = "bpf/bbr3.bpf.o";

fn main() {
    println!("cargo:rerun-if-changed={OBJECT}");
    let bytes = std::fs::read(OBJECT).unwrap_or_else(|e| panic!("read {OBJECT}: {e}"));
    let hex: String = Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    println!("cargo:rustc-env=BBRKIT_BBR3_OBJECT_SHA256={hex}");
}
