//! Every `BpfError` names each cause once: the wording is bbrkit's, the OS
//! or libbpf error is the `source`, and a chain printer (the binary uses
//! `bbrkit_diag::error_chain`) never prints the same cause twice.

use std::path::Path;

use bbrkit_bpf::BpfError;
use bbrkit_bpf::load::{Loaded, ObjectSource};
use bbrkit_diag::error_chain as chain;

#[test]
fn a_missing_object_file_names_the_path_and_the_os_error_once() {
    let path = Path::new("/nonexistent/bbrkit/bbr3.bpf.o");
    let Err(e) = Loaded::load(ObjectSource::File(path)) else {
        panic!("loading a missing file succeeded");
    };
    assert!(matches!(e, BpfError::Read { .. }), "{e:?}");
    let text = chain(&e);
    assert_eq!(text.matches(path.to_str().unwrap()).count(), 1, "{text}");
    assert_eq!(
        text.matches("No such file or directory").count(),
        1,
        "{text}"
    );
}

#[test]
fn a_garbage_object_is_an_open_error_naming_the_object_once() {
    let Err(e) = Loaded::load(ObjectSource::Memory {
        name: "garbage",
        bytes: b"not an ELF file",
    }) else {
        panic!("loading garbage succeeded");
    };
    assert!(matches!(e, BpfError::Open { .. }), "{e:?}");
    let text = chain(&e);
    assert!(text.starts_with("open BPF object garbage: "), "{text}");
    assert_eq!(text.matches("garbage").count(), 1, "{text}");
}

#[test]
fn an_io_source_is_named_once() {
    let e = BpfError::Pin {
        path: "/sys/fs/bpf/bbrkit/bbr3/link".into(),
        source: libbpf_rs::Error::from(std::io::Error::from_raw_os_error(libc::EACCES)),
    };
    let text = chain(&e);
    assert_eq!(text.matches("Permission denied").count(), 1, "{text}");
    assert!(
        text.starts_with("pin /sys/fs/bpf/bbrkit/bbr3/link: "),
        "{text}"
    );
    let e = BpfError::Unpin {
        ca: "bbr3".into(),
        source: std::io::Error::from_raw_os_error(libc::EBUSY),
    };
    let text = chain(&e);
    assert_eq!(text.matches("busy").count(), 1, "{text}");
}

#[test]
fn the_committed_object_opens_from_its_file_as_from_memory() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("bpf/bbr3.bpf.o");
    let from_file = bbrkit_bpf::load::struct_ops_names(ObjectSource::File(&path))
        .unwrap_or_else(|e| panic!("{}", chain(&e)));
    let bytes = std::fs::read(&path).unwrap();
    let from_memory = bbrkit_bpf::load::struct_ops_names(ObjectSource::Memory {
        name: "bbr3",
        bytes: &bytes,
    })
    .unwrap();
    assert_eq!(from_file, from_memory);
    assert!(from_file.iter().any(|n| n == "bbr3"), "{from_file:?}");
}
