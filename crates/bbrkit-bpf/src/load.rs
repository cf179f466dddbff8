//! Opening and loading a BPF object, with the verifier's log when the kernel
//! refuses a program.
//!
//! Each program gets a log buffer but log level 0: libbpf loads it without
//! a log, and only when the kernel refuses it does libbpf retry at level 1
//! into that buffer, so a good load costs no verifier log. The refused
//! program's log becomes [`BpfError::Refused`]. Loading creates the maps and
//! programs; it registers nothing (see [`crate::register`]). On a kernel
//! without struct_ops links (Linux < 6.4, from kernel BTF) the struct_ops
//! maps are created without `BPF_F_LINK`, to be registered by map update.

use std::path::Path;

use libbpf_rs::{AsRawLibbpf, MapType, Object, ObjectBuilder, OpenObject};

use crate::error::{BpfError, Result};
use crate::log::Capture;

/// Verifier log buffer per program. The kernel keeps the tail when the log
/// is longer (rotating log, Linux 6.4+), and the tail holds the verdict.
const LOG_SIZE: usize = 1 << 20;

/// 8-byte alignment for an embedded ELF image (libelf reads its headers in
/// place): `static O: &Aligned8<[u8]> = &Aligned8(*include_bytes!(...));`.
#[repr(C, align(8))]
pub(crate) struct Aligned8<T: ?Sized>(pub T);

/// Where an object comes from.
#[derive(Debug, Clone, Copy)]
pub enum ObjectSource<'a> {
    /// An ELF file on disk.
    File(&'a Path),
    /// An ELF image in memory (e.g. `include_bytes!`), with a name for messages.
    Memory {
        /// Object name used in messages and by libbpf.
        name: &'a str,
        /// The ELF bytes.
        bytes: &'a [u8],
    },
}

impl ObjectSource<'_> {
    /// The name used in messages.
    pub fn name(&self) -> String {
        match self {
            ObjectSource::File(p) => p.display().to_string(),
            ObjectSource::Memory { name, .. } => (*name).to_string(),
        }
    }

    /// Opens (parses) the object without loading anything. A file is read
    /// here and parsed from memory, so a missing file is an OS error naming
    /// the path once (libbpf's `open_file` error names it again). The
    /// object gets the name libbpf's `open_file` would give it: the file
    /// name up to its first dot (`bbr3.bpf.o` → `bbr3`).
    pub(crate) fn open(&self) -> Result<OpenObject> {
        let (name, bytes) = match self {
            ObjectSource::File(p) => {
                let bytes = std::fs::read(p).map_err(|source| BpfError::Read {
                    path: p.to_path_buf(),
                    source,
                })?;
                let file = p.file_name().unwrap_or_default().to_string_lossy();
                let stem = file.split_once('.').map_or(&*file, |(stem, _)| stem);
                (stem.to_string(), std::borrow::Cow::Owned(bytes))
            }
            ObjectSource::Memory { name, bytes } => {
                ((*name).to_string(), std::borrow::Cow::Borrowed(*bytes))
            }
        };
        let mut builder = ObjectBuilder::default();
        builder
            .name(name)
            .and_then(|b| b.open_memory(&bytes))
            .map_err(|source| BpfError::Open {
                object: self.name(),
                source,
            })
    }
}

/// A loaded object: its maps and programs exist in the kernel for as long
/// as this value (or a link or pin made from it) lives.
#[derive(Debug)]
pub struct Loaded {
    object: Object,
    name: String,
}

impl Loaded {
    /// Opens and loads `source` with all its struct_ops maps.
    pub fn load(source: ObjectSource<'_>) -> Result<Loaded> {
        Loaded::load_only(source, None)
    }

    /// Opens and loads `source`; with `Some(names)` only the struct_ops
    /// maps (congestion controls) named there are created, and programs
    /// only they use are not loaded.
    pub fn load_only(source: ObjectSource<'_>, only: Option<&[&str]>) -> Result<Loaded> {
        Loaded::load_prepared(source, |open, name| match only {
            Some(only) => select_struct_ops(open, only, name),
            None => Ok(()),
        })
    }

    /// [`Loaded::load_only`] with every struct_ops map created without
    /// `BPF_F_LINK`, whatever the kernel offers: the registration by map
    /// update of Linux < 6.4, on any kernel (tests, the `register` example).
    pub fn load_only_without_links(
        source: ObjectSource<'_>,
        only: Option<&[&str]>,
    ) -> Result<Loaded> {
        Loaded::load_prepared(source, |open, name| {
            if let Some(only) = only {
                select_struct_ops(open, only, name)?;
            }
            without_links(open, name)
        })
    }

    /// Opens `source`, lets `prepare` adjust the opened object (map sizes,
    /// which maps to create), then loads it.
    pub fn load_prepared(
        source: ObjectSource<'_>,
        prepare: impl FnOnce(&mut OpenObject, &str) -> Result<()>,
    ) -> Result<Loaded> {
        let name = source.name();
        let mut open = source.open()?;
        prepare(&mut open, &name)?;
        if !crate::features::registering().links {
            without_links(&mut open, &name)?;
        }
        let mut logs = attach_log_buffers(&mut open);
        let capture = Capture::start();
        let loaded = open.load();
        let warnings = capture.finish();
        match loaded {
            Ok(object) => Ok(Loaded { object, name }),
            Err(source) => Err(refusal(&name, &mut logs).unwrap_or_else(|| BpfError::Load {
                object: name.clone(),
                detail: summarize(&warnings),
                source,
            })),
        }
    }

    /// The libbpf object (maps, programs).
    pub fn object(&self) -> &Object {
        &self.object
    }

    /// The libbpf object, mutable (for links and pins).
    pub fn object_mut(&mut self) -> &mut Object {
        &mut self.object
    }

    /// The object's name as given to [`Loaded::load`].
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// The names of the struct_ops maps of `source` (opened, not loaded: needs
/// no privileges).
pub fn struct_ops_names(source: ObjectSource<'_>) -> Result<Vec<String>> {
    let open = source.open()?;
    Ok(open
        .maps()
        .filter(|m| m.map_type() == MapType::StructOps)
        .map(|m| m.name().to_string_lossy().into_owned())
        .collect())
}

fn select_struct_ops(open: &mut OpenObject, only: &[&str], object: &str) -> Result<()> {
    let mut found = 0;
    for mut map in open.maps_mut() {
        if map.map_type() != MapType::StructOps {
            continue;
        }
        let keep = only.iter().any(|n| map.name().to_str() == Some(n));
        found += usize::from(keep);
        map.set_autocreate(keep).map_err(|source| BpfError::Open {
            object: object.to_string(),
            source,
        })?;
    }
    if found < only.len() {
        return Err(BpfError::Missing {
            object: object.to_string(),
            what: format!("struct_ops map among {}", only.join(", ")),
        });
    }
    Ok(())
}

/// `BPF_F_LINK` (include/uapi/linux/bpf.h, `1U << 13`): a struct_ops map
/// created with it is registered by `BPF_LINK_CREATE`; libbpf sets it for
/// maps in `.struct_ops.link`. Linux < 6.4 refuses the flag.
pub(crate) const BPF_F_LINK: u32 = 1 << 13;

/// On a kernel without struct_ops links (Linux < 6.4): creates every
/// struct_ops map without `BPF_F_LINK`, so that libbpf registers it by a
/// map update (`bpf_map__attach_struct_ops` without a real link, whose
/// detach deletes the element: unregisters) instead of a link the kernel
/// cannot make.
fn without_links(open: &mut OpenObject, object: &str) -> Result<()> {
    for mut map in open.maps_mut() {
        if map.map_type() == MapType::StructOps && map.map_flags() & BPF_F_LINK != 0 {
            let flags = map.map_flags() & !BPF_F_LINK;
            map.set_map_flags(flags).map_err(|source| BpfError::Open {
                object: object.to_string(),
                source,
            })?;
        }
    }
    Ok(())
}

/// One program's log buffer, kept alive until the load has returned.
struct ProgramLog {
    program: String,
    buf: Vec<u8>,
}

fn attach_log_buffers(open: &mut OpenObject) -> Vec<ProgramLog> {
    let mut logs: Vec<ProgramLog> = Vec::new();
    for prog in open.progs_mut() {
        let mut log = ProgramLog {
            program: prog.name().to_string_lossy().into_owned(),
            buf: vec![0u8; LOG_SIZE],
        };
        // SAFETY: the program pointer is valid while `open` lives; the
        // buffer is heap memory owned by `log`, which the caller keeps until
        // after `load()` returned (moving the Vec does not move its heap
        // buffer), and libbpf writes at most `len` bytes into it.
        unsafe {
            libbpf_sys::bpf_program__set_log_buf(
                prog.as_libbpf_object().as_ptr(),
                log.buf.as_mut_ptr().cast(),
                log.buf.len() as u64,
            );
        }
        logs.push(log);
    }
    logs
}

/// The first program with a non-empty log is the one the kernel refused
/// (libbpf stops at the first refusal).
fn refusal(object: &str, logs: &mut [ProgramLog]) -> Option<BpfError> {
    let log = logs
        .iter()
        .find(|l| l.buf.first().is_some_and(|&b| b != 0))?;
    let end = log
        .buf
        .iter()
        .position(|&b| b == 0)
        .unwrap_or(log.buf.len());
    let text = String::from_utf8_lossy(&log.buf[..end]).into_owned();
    let reason = verdict(&text);
    Some(BpfError::Refused {
        object: object.to_string(),
        program: log.program.clone(),
        reason,
        log: text,
    })
}

/// The verifier's verdict: the last line that is not its statistics
/// ("processed N insns ...", "verification time ...", "stack depth ...").
pub(crate) fn verdict(log: &str) -> String {
    let stats = [
        "processed ",
        "verification time",
        "stack depth",
        "max_states_per_insn",
    ];
    log.lines()
        .rev()
        .map(str::trim)
        .find(|l| !l.is_empty() && !stats.iter().any(|s| l.starts_with(s)))
        .unwrap_or("(empty verifier log)")
        .to_string()
}

/// libbpf's warnings as `: a; b`, without the program logs they embed.
fn summarize(warnings: &str) -> String {
    let mut out = Vec::new();
    let mut in_log = false;
    for line in warnings.lines().map(str::trim) {
        if line.contains("-- BEGIN PROG LOAD LOG --") {
            in_log = true;
        } else if line.contains("-- END PROG LOAD LOG --") {
            in_log = false;
        } else if !in_log && !line.is_empty() {
            out.push(line.trim_start_matches("libbpf: ").to_string());
        }
    }
    if out.is_empty() {
        String::new()
    } else {
        format!(": {}", out.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdict_skips_statistics() {
        let log = "0: R1=ctx() R10=fp0\n1: (b7) r0 = 0\nR0 !read_ok\nprocessed 2 insns (limit 1000000) max_states_per_insn 0\n";
        assert_eq!(verdict(log), "R0 !read_ok");
        assert_eq!(verdict(""), "(empty verifier log)");
    }

    #[test]
    fn summary_drops_embedded_program_logs() {
        let w = "libbpf: prog 'x': BPF program load failed: -EACCES\nlibbpf: prog 'x': -- BEGIN PROG LOAD LOG --\n0: ...\n-- END PROG LOAD LOG --\nlibbpf: failed to load object 'o'\n";
        assert_eq!(
            summarize(w),
            ": prog 'x': BPF program load failed: -EACCES; failed to load object 'o'"
        );
        assert_eq!(summarize(""), "");
    }
}
