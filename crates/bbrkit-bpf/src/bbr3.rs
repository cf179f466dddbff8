//! The bbr3 objects embedded in the binary: BBRv3 (and BBRv2 from the same
//! source) as struct_ops congestion controls, in two builds of one source:
//!
//! | object | `cong_control` | kernels |
//! |---|---|---|
//! | `bpf/bbr3.bpf.o` | `(sk, ack, flag, rs)` | Linux >= 6.10 |
//! | `bpf/bbr3-cc2.bpf.o` (`-DBBR3_CC2`) | `(sk, rs)` (+ `in_ack_event` for ECE) | 6.0–6.9 |
//!
//! [`source`] picks the one the running kernel's BTF asks for (the argument
//! count of `tcp_congestion_ops.cong_control`, never the version string).
//! Both are built from `bpf/*.c,*.h` by `bpf/Makefile` (clang) and
//! committed, so `cargo build` needs no BPF toolchain; CI rebuilds them and
//! fails when a committed object is stale (`make -C bpf check`). The
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
static OBJECT_CC2: &Aligned<[u8]> = &Aligned(*include_bytes!("../bpf/bbr3-cc2.bpf.o"));

/// SHA-256 of the embedded 4-argument object in lowercase hex, as
/// `sha256sum bpf/bbr3.bpf.o` prints it (computed by the build script):
/// names the BPF code a binary carries.
pub const OBJECT_SHA256: &str = env!("BBRKIT_BBR3_OBJECT_SHA256");
/// SHA-256 of the embedded 2-argument object (`bpf/bbr3-cc2.bpf.o`).
pub const OBJECT_CC2_SHA256: &str = env!("BBRKIT_BBR3_CC2_OBJECT_SHA256");

/// Which build of the object a kernel takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    /// `bbr3.bpf.o`: `cong_control(sk, ack, flag, rs)`, Linux >= 6.10.
    Cc4,
    /// `bbr3-cc2.bpf.o`: `cong_control(sk, rs)`, Linux 6.0–6.9.
    Cc2,
}

impl Variant {
    /// The build for a `cong_control` of `args` parameters (from kernel
    /// BTF); the 4-argument one when unknown (its load then says why).
    pub fn for_args(args: Option<usize>) -> Variant {
        match args {
            Some(2) => Variant::Cc2,
            _ => Variant::Cc4,
        }
    }

    /// The build this kernel takes ([`crate::features::registering`]).
    pub fn detect() -> Variant {
        Variant::for_args(crate::features::registering().cong_control_args)
    }

    /// The object's file name under `bpf/`.
    pub fn file(self) -> &'static str {
        match self {
            Variant::Cc4 => "bbr3.bpf.o",
            Variant::Cc2 => "bbr3-cc2.bpf.o",
        }
    }

    /// The embedded object's bytes.
    pub fn bytes(self) -> &'static [u8] {
        match self {
            Variant::Cc4 => &OBJECT.0,
            Variant::Cc2 => &OBJECT_CC2.0,
        }
    }

    /// The embedded object's SHA-256.
    pub fn sha256(self) -> &'static str {
        match self {
            Variant::Cc4 => OBJECT_SHA256,
            Variant::Cc2 => OBJECT_CC2_SHA256,
        }
    }

    /// The embedded object as a load source.
    pub fn source(self) -> ObjectSource<'static> {
        ObjectSource::Memory {
            name: OBJECT_NAME,
            bytes: self.bytes(),
        }
    }
}

/// The bytes of the object this kernel takes.
pub fn object_bytes() -> &'static [u8] {
    Variant::detect().bytes()
}

/// The object this kernel takes, as a load source.
pub fn source() -> ObjectSource<'static> {
    Variant::detect().source()
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

    const VARIANTS: [Variant; 2] = [Variant::Cc4, Variant::Cc2];

    /// The build script's hashes are the files', computed by another
    /// implementation (coreutils' `sha256sum`, on every Linux).
    #[test]
    fn object_hash_is_what_sha256sum_says() {
        for v in VARIANTS {
            let path = format!("{}/bpf/{}", env!("CARGO_MANIFEST_DIR"), v.file());
            let out = std::process::Command::new("sha256sum")
                .arg(&path)
                .output()
                .expect("run sha256sum");
            let text = String::from_utf8(out.stdout).unwrap();
            assert_eq!(text.split_whitespace().next(), Some(v.sha256()), "{path}");
            assert_eq!(std::fs::read(&path).unwrap(), v.bytes(), "{path}");
        }
        assert_ne!(OBJECT_SHA256, OBJECT_CC2_SHA256);
    }

    /// The object follows the argument count kernel BTF gives, and only it.
    #[test]
    fn the_variant_follows_cong_controls_arguments() {
        assert_eq!(Variant::for_args(Some(4)), Variant::Cc4);
        assert_eq!(Variant::for_args(Some(2)), Variant::Cc2);
        assert_eq!(Variant::for_args(None), Variant::Cc4);
    }

    /// Both builds offer the same algorithms, storage map and names; the
    /// 2-argument build's cong_control program takes (sk, rs) and it adds
    /// in_ack_event (ECE), nothing else.
    #[test]
    fn the_builds_differ_only_in_the_ack_interface() {
        let progs = |v: Variant| -> Vec<String> {
            let open = v.source().open().expect("open");
            let mut n: Vec<String> = open
                .progs()
                .map(|p| p.name().to_string_lossy().into_owned())
                .collect();
            n.sort();
            n
        };
        let (four, two) = (progs(Variant::Cc4), progs(Variant::Cc2));
        let extra: Vec<&String> = two.iter().filter(|p| !four.contains(p)).collect();
        assert_eq!(extra, ["bbr3_in_ack", "bbr3_v2_in_ack"]);
        assert!(four.iter().all(|p| two.contains(p)), "{four:?} {two:?}");
        for v in VARIANTS {
            let mut names = load::struct_ops_names(v.source()).expect("names");
            names.sort();
            assert_eq!(names, ["bbr2", "bbr3"], "{v:?}");
        }
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
        for v in VARIANTS {
            storage_layout_matches(v);
        }
    }

    fn storage_layout_matches(v: Variant) {
        let open = v.source().open().expect("open");
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
        for v in VARIANTS {
            names_have_the_prefix(v);
        }
    }

    fn names_have_the_prefix(v: Variant) {
        let open = v.source().open().expect("open");
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
