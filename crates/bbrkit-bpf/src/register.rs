//! Registering the struct_ops maps of a loaded object through links.
//!
//! A struct_ops map in `.struct_ops.link` is registered by creating a BPF
//! link; the registration lives exactly as long as the link (its file
//! descriptor, or a pin in bpffs), so a process that dies by any means
//! leaves nothing registered. Dropping a [`Registration`] unregisters.

use libbpf_rs::{Link, MapCore, MapType};

use crate::error::{BpfError, Result};
use crate::load::Loaded;

/// Links of every struct_ops map of one object; declared before `loaded`
/// so the links drop (unregister) before the object closes.
#[derive(Debug)]
pub struct Registration {
    links: Vec<(String, Link)>,
    loaded: Loaded,
}

impl Registration {
    /// Registers every struct_ops map of `loaded`. On error the links made
    /// so far drop, so nothing stays registered.
    pub fn register(mut loaded: Loaded) -> Result<Registration> {
        let mut links = Vec::new();
        for mut map in loaded.object_mut().maps_mut() {
            if map.map_type() != MapType::StructOps {
                continue;
            }
            let name = map.name().to_string_lossy().into_owned();
            let link = map
                .attach_struct_ops()
                .map_err(|source| BpfError::Register {
                    map: name.clone(),
                    source,
                })?;
            links.push((name, link));
        }
        if links.is_empty() {
            return Err(BpfError::Missing {
                object: loaded.name().to_string(),
                what: "struct_ops map".into(),
            });
        }
        Ok(Registration { links, loaded })
    }

    /// Names of the registered struct_ops maps.
    pub fn maps(&self) -> impl Iterator<Item = &str> {
        self.links.iter().map(|(n, _)| n.as_str())
    }

    /// The loaded object (for its telemetry maps).
    pub fn loaded(&self) -> &Loaded {
        &self.loaded
    }
}
