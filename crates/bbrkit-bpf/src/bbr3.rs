//! The bbr3 object embedded in the binary: BBRv3 (and BBRv2 from the same
//! source, if the object has it) as struct_ops congestion controls.
//!
//! `bpf/bbr3.bpf.o` is built from `bpf/*.c,*.h` by `bpf/Makefile` (clang)
//! and committed, so `cargo build` needs no BPF toolchain; CI rebuilds it
//! and fails when the committed object is stale (`make -C bpf check`). The
//! struct_ops maps are named after their congestion controls (`bbr3`,
//! `bbr2`); every other program and map name starts with `bbr3`.

use crate::error::Result;
use crate::load::{self, Loaded, ObjectSource};
use crate::register::Registration;

/// libbpf's name for the object; its internal maps (`.bss`, `.rodata`)
/// become `bbr3_bpf.bss`, ... (the first 8 characters), so they share the
/// `bbr3` prefix too.
pub const OBJECT_NAME: &str = "bbr3_bpf";
/// Prefix of every BPF program and map name of the object.
pub const PREFIX: &str = "bbr3";

/// 8-byte alignment for the embedded ELF image (libelf reads its headers in
/// place).
#[repr(C, align(8))]
struct Aligned<T: ?Sized>(T);

static OBJECT: &Aligned<[u8]> = &Aligned(*include_bytes!("../bpf/bbr3.bpf.o"));

/// SHA-256 of the embedded object in lowercase hex, as `sha256sum
/// bpf/bbr3.bpf.o` prints it (computed by the build script): names the BPF
/// code a binary carries.
pub const OBJECT_SHA256: &str = env!("BBRKIT_BBR3_OBJECT_SHA256");

/// The embedded object's bytes.
pub fn object_bytes() -> &'static [u8] {
    &OBJECT.0
}

/// The embedded object as a load source.
pub fn source() -> ObjectSource<'static> {
    ObjectSource::Memory {
        name: OBJECT_NAME,
        bytes: object_bytes(),
    }
}

/// The congestion controls the object offers (its struct_ops maps).
pub fn algorithms() -> Result<Vec<String>> {
    load::struct_ops_names(source())
}

/// Loads the object with only the congestion controls in `only` (all when
/// `None`).
pub fn load(only: Option<&[&str]>) -> Result<Loaded> {
    Loaded::load_only(source(), only)
}

/// Loads and registers the congestion controls in `only` (all when `None`)
/// for the lifetime of the returned value.
pub fn register(only: Option<&[&str]>) -> Result<Registration> {
    Registration::register(load(only)?)
}

#[cfg(test)]
mod tests {
    use libbpf_rs::MapType;

    use super::*;
    use crate::telemetry::{STORAGE_MAP, VALUE_SIZE};

    /// The build script's hash is the file's, computed by another
    /// implementation (coreutils' `sha256sum`, on every Linux).
    #[test]
    fn object_hash_is_what_sha256sum_says() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/bpf/bbr3.bpf.o");
        let out = std::process::Command::new("sha256sum")
            .arg(path)
            .output()
            .expect("run sha256sum");
        let text = String::from_utf8(out.stdout).unwrap();
        assert_eq!(text.split_whitespace().next(), Some(OBJECT_SHA256));
        assert_eq!(std::fs::read(path).unwrap(), object_bytes());
    }

    #[test]
    fn offers_bbr3() {
        let algos = algorithms().expect("open the embedded object");
        assert!(algos.iter().any(|a| a == "bbr3"), "{algos:?}");
    }

    /// A build without BPF support names the object's algorithms from a
    /// list (it does not carry the object): the list is the object's.
    #[test]
    fn the_vocabulary_lists_the_objects_algorithms() {
        let mut algos = algorithms().expect("open the embedded object");
        let mut listed = bbrkit_vocab::bpf_features::BPF_ALGORITHMS.to_vec();
        algos.sort();
        listed.sort();
        assert_eq!(algos, listed);
    }

    /// The Rust mirror of telemetry.h has the value size the object's
    /// storage map has, and the object has no other per-socket map (the
    /// LRU telemetry map of earlier builds is gone).
    #[test]
    fn storage_layout_matches_the_object() {
        let open = source().open().expect("open");
        let map = open
            .maps()
            .find(|m| m.name().to_str() == Some(STORAGE_MAP))
            .expect("storage map in the object");
        assert_eq!(map.map_type(), MapType::SkStorage);
        assert_eq!(map.value_size() as usize, VALUE_SIZE);
        let kinds: Vec<MapType> = open.maps().map(|m| m.map_type()).collect();
        assert!(!kinds.contains(&MapType::LruHash), "{kinds:?}");
        assert!(!kinds.contains(&MapType::Hash), "{kinds:?}");
    }

    /// Leak checks find the object's programs and maps by this prefix (or,
    /// for a struct_ops map, by its algorithm's name).
    #[test]
    fn every_program_and_map_name_has_the_prefix() {
        let open = source().open().expect("open");
        let algos = algorithms().expect("algorithms");
        for p in open.progs() {
            let n = p.name().to_string_lossy();
            assert!(n.starts_with(PREFIX), "program {n}");
        }
        for m in open.maps() {
            let n = m.name().to_string_lossy().into_owned();
            let ops = m.map_type() == MapType::StructOps && algos.contains(&n);
            assert!(n.starts_with(PREFIX) || ops, "map {n}");
        }
    }
}
