//! The text of a BPF socket's model state in `conns`' detail line (a build
//! without the cargo feature `bpf` has none: `conns_model_none.rs`).

use bbrkit_host::bpf::Model;

use super::{ms, opt};
use crate::units::rate;

/// `bbr3:(mode:probe_bw/cruise,bw:…,mrtt:…ms,inflight_hi:…,inflight_lo:…,pacing_gain:…,cwnd_gain:…)`.
pub(super) fn detail(m: &Model) -> String {
    let phase = m
        .phase
        .map(|p| format!("/{}", p.name()))
        .unwrap_or_default();
    format!(
        "bbr{}:(mode:{}{phase},bw:{},mrtt:{}ms,inflight_hi:{},inflight_lo:{},pacing_gain:{:.3},cwnd_gain:{:.3})",
        m.version,
        m.mode.map_or("?", |x| x.name()),
        rate(m.bw_bits_per_second as f64),
        ms(m.min_rtt_ms),
        opt(m.inflight_hi),
        opt(m.inflight_lo),
        m.pacing_gain,
        m.cwnd_gain,
    )
}
