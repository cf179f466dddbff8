//! The model state of sockets on a BPF congestion control (bbrkit-bpf's
//! bbr3, bbr2) for `bbrkit conns`, from the `bbr3_telemetry` map: a BPF CA
//! cannot implement `get_info`, so sock_diag carries no BBR fields for it.
//!
//! Owns the join of census sockets with telemetry entries, on this network
//! namespace's inode and the 4-tuple, and the note saying why the state is
//! missing (reading BPF maps by id needs root). Never changes anything.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::os::unix::fs::MetadataExt;

use bbrkit_bpf::telemetry::{self, ModelState};
use bbrkit_diag::Socket;

/// Telemetry of this namespace's BPF-CA sockets, by (local, remote).
#[derive(Debug, Default)]
pub struct BpfModels {
    by_socket: HashMap<(SocketAddr, SocketAddr), ModelState>,
    /// Why some BPF-CA sockets have no model state, if they do not.
    pub note: Option<String>,
}

impl BpfModels {
    /// Reads the telemetry when `socks` has a socket on a BPF algorithm.
    pub fn read(socks: &[Socket]) -> BpfModels {
        let algos = bbrkit_bpf::bbr3::algorithms().unwrap_or_default();
        let on_bpf = |s: &&Socket| s.cc.as_ref().is_some_and(|c| algos.contains(c));
        let Some(first) = socks.iter().find(on_bpf) else {
            return BpfModels::default();
        };
        let cc = first.cc.clone().unwrap_or_default();
        let ns = match std::fs::metadata("/proc/thread-self/ns/net") {
            Ok(m) => m.ino() as u32,
            Err(e) => {
                return BpfModels::noted(format!(
                    "no {cc} model state: /proc/thread-self/ns/net: {e}"
                ));
            }
        };
        if !nix::unistd::geteuid().is_root() {
            return BpfModels::noted(format!(
                "no {cc} model state: reading the BPF map {} needs root (CAP_SYS_ADMIN)",
                telemetry::MAP_NAME
            ));
        }
        let models = match telemetry::read_kernel() {
            Ok(m) => m,
            Err(e) => return BpfModels::noted(format!("no {cc} model state: {}", chain(&e))),
        };
        let by_socket: HashMap<_, _> = models
            .into_iter()
            .filter(|m| m.socket.netns_ino == ns)
            .map(|m| ((m.socket.local, m.socket.remote), m.state))
            .collect();
        // A socket that has not had data acked yet (a pure receiver) has no
        // model sample; one that has and no entry is worth a note.
        let acked = |s: &&Socket| s.tcp_info.as_ref().and_then(|t| t.bytes_acked) > Some(1);
        let missing = socks
            .iter()
            .filter(on_bpf)
            .filter(acked)
            .filter(|s| !by_socket.contains_key(&(s.local, s.remote)))
            .count();
        let note = (missing > 0).then(|| {
            format!(
                "{missing} {cc} socket(s) with acked data but no {} entry (another object's map, or an older bbr3)",
                telemetry::MAP_NAME
            )
        });
        BpfModels { by_socket, note }
    }

    /// Given entries and note (tests).
    #[cfg(test)]
    pub fn with(
        entries: impl IntoIterator<Item = ((SocketAddr, SocketAddr), ModelState)>,
        note: Option<String>,
    ) -> BpfModels {
        BpfModels {
            by_socket: entries.into_iter().collect(),
            note,
        }
    }

    fn noted(note: String) -> BpfModels {
        BpfModels {
            note: Some(note),
            ..BpfModels::default()
        }
    }

    /// The model state of `s`, if the telemetry has it.
    pub fn get(&self, s: &Socket) -> Option<&ModelState> {
        self.by_socket.get(&(s.local, s.remote))
    }
}

fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(x) = src {
        s.push_str(&format!(": {x}"));
        src = x.source();
    }
    s
}

/// `bbr3:(mode:probe_bw/cruise,bw:…,mrtt:…ms,inflight_hi:…,inflight_lo:…,pacing_gain:…,cwnd_gain:…)`;
/// `rate` formats bytes per second.
pub fn detail(m: &ModelState, rate: impl Fn(u64) -> String) -> String {
    let mode = m.mode.map_or("?", |x| x.name());
    let phase = m
        .phase
        .map(|p| format!("/{}", p.name()))
        .unwrap_or_default();
    let opt = |v: Option<u32>| v.map_or("-".into(), |v| v.to_string());
    format!(
        "bbr{}:(mode:{mode}{phase},bw:{},mrtt:{}ms,inflight_hi:{},inflight_lo:{},pacing_gain:{:.3},cwnd_gain:{:.3})",
        m.version,
        rate(m.bw_bits_per_second / 8),
        m.min_rtt_ms.map_or("-".into(), |v| format!("{v:.3}")),
        opt(m.inflight_hi),
        opt(m.inflight_lo),
        m.pacing_gain,
        m.cwnd_gain,
    )
}
