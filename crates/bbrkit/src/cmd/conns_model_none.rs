//! `conns_model.rs` of a build without the cargo feature `bpf`: no socket
//! has a model state (the report's note says why), so there is no text.

use bbrkit_host::bpf::Model;

/// Nothing: this build knows no model.
pub(super) fn detail(_: &Model) -> String {
    String::new()
}
