//! The model state of each census socket on a BPF congestion control (bbr3,
//! bbr2): the one join of sockets with what the BPF program recorded about
//! them. A BPF CA cannot implement `get_info`, so sock_diag carries no BBR
//! fields for it; the program keeps its model in each socket's sk_storage
//! (`bbr3_sk_stor`), which the census asks the kernel for beside
//! `tcp_info` (`INET_DIAG_REQ_SK_BPF_STORAGES`). `conns` (through
//! [`Telemetry`], a [`bbrkit_diag::conns::ModelSource`]) and `metrics` both
//! use [`Telemetry`].
//!
//! Owns opening the storage maps (by id: needs root), asking the census for
//! them, decoding each socket's own value, the note that says why a model
//! is missing, and the mapping of a model onto the metrics' [`BbrState`].
//! Never changes anything.

use bbrkit_diag::conns::{ModelNote, ModelSource, Models};
use bbrkit_diag::model::BbrState;
use bbrkit_diag::{Filter, Socket};

use crate::telemetry::{ModelState, STORAGE_MAP, StorageMaps};

/// The storage maps a census asks for, or why they could not be opened.
#[derive(Debug)]
pub struct Telemetry(Result<StorageMaps, String>);

impl Telemetry {
    /// Opens every bbr3 storage map in the kernel. Without root
    /// (CAP_SYS_ADMIN) the maps cannot be opened and the kernel would refuse
    /// the whole dump, so nothing is asked and the models carry a note.
    pub fn open() -> Telemetry {
        // SAFETY: geteuid has no preconditions and cannot fail.
        if unsafe { libc::geteuid() } != 0 {
            return Telemetry(Err(format!(
                "reading the sockets' BPF storage ({STORAGE_MAP}) needs root (CAP_SYS_ADMIN)"
            )));
        }
        Telemetry(StorageMaps::in_kernel().map_err(|e| bbrkit_diag::error_chain(&e)))
    }

    /// `filter` asking the census for the storage values (nothing when the
    /// maps could not be opened); the fds stay valid while `self` lives.
    pub fn ask(&self, filter: &mut Filter) {
        if let Ok(maps) = &self.0 {
            maps.ask(filter);
        }
    }

    /// The model state of those of `socks` (from a census [`Self::ask`]ed
    /// for the storage) that run on one of this object's BPF congestion
    /// controls.
    pub fn of(&self, socks: &[Socket]) -> Models<ModelState> {
        let algos = crate::bbr3::algorithms().unwrap_or_default();
        let on_bpf = |s: &&Socket| s.cc.as_ref().is_some_and(|c| algos.contains(c));
        let Some(first) = socks.iter().find(on_bpf) else {
            return Models::default();
        };
        let cc = first.cc.clone().unwrap_or_default();
        let maps = match &self.0 {
            Ok(m) => m,
            Err(why) => {
                let note = ModelNote::Unreadable(format!("no {cc} model state: {why}"));
                return Models::new([], Some(note));
            }
        };
        let mut found = Vec::new();
        let mut undecodable = None;
        for s in socks.iter().filter(on_bpf) {
            match maps.telemetry(s) {
                Some(Ok(t)) => found.push(((s.local, s.remote), t.model)),
                Some(Err(e)) => undecodable = Some(bbrkit_diag::error_chain(&e)),
                None => {}
            }
        }
        // A socket that has not had data acked yet (a pure receiver) may
        // have no model yet; one that has and no storage is worth a note.
        let acked = |s: &&Socket| s.tcp_info.as_ref().and_then(|t| t.bytes_acked) > Some(1);
        let has = |s: &Socket| found.iter().any(|(k, _)| *k == (s.local, s.remote));
        let missing = socks
            .iter()
            .filter(on_bpf)
            .filter(acked)
            .filter(|s| !has(s))
            .count();
        let note = (missing > 0).then(|| {
            ModelNote::Missing(match undecodable {
                Some(e) => format!("{missing} {cc} socket(s) without a model: {e}"),
                None => format!(
                    "{missing} {cc} socket(s) with acked data but no {STORAGE_MAP} value (its storage could not be created: optmem, or another object's bbr3)"
                ),
            })
        });
        Models::new(found, note)
    }
}

impl ModelSource for Telemetry {
    type Model = ModelState;
    fn ask(&self, filter: &mut Filter) {
        Telemetry::ask(self, filter);
    }
    fn models(&self, socks: &[Socket]) -> Models<ModelState> {
        self.of(socks)
    }
}

/// The metrics' state of a model: the same [`BbrState`] a kernel BBR's
/// `tcp_bbr_info` gives ([`BbrState::of`]), through the one BBR state of
/// `bbrkit_vocab::bbr_state`.
pub fn bbr_state(m: &ModelState) -> BbrState {
    BbrState::from_state(m.state())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::telemetry::{Mode, Phase};

    /// The BPF bbr3 and a v3 kernel number the same state differently: the
    /// BPF model carries google's mode and cycle index (UP 0 .. REFILL 3),
    /// the kernel's `bbr_phase` is `enum tcp_bbr_phase` (1 STARTUP .. 7
    /// PROBE_BW_REFILL). Both must decode to one state.
    #[test]
    fn bpf_telemetry_and_kernel_tcp_bbr_phase_agree_on_every_state() {
        let bpf = |mode: u8, cycle_idx: u8| {
            bbr_state(&ModelState {
                version: 3,
                mode: Mode::from_kernel(mode),
                phase: Phase::from_cycle_idx(cycle_idx).filter(|_| mode == 2),
                bw_bits_per_second: 0,
                max_bw_bits_per_second: 0,
                bw_lo_bits_per_second: None,
                min_rtt_ms: None,
                inflight_hi: None,
                inflight_lo: None,
                pacing_gain: 1.0,
                cwnd_gain: 2.0,
                cwnd: 10,
                updated_ns: 0,
            })
        };
        // bbr_get_phase reports ProbeBW as BBR_PHASE_PROBE_BW_UP (4) + cycle_idx.
        for cycle_idx in 0u8..4 {
            let kernel = BbrState::from_tcp_bbr_phase(4 + cycle_idx);
            assert_eq!(bpf(2, cycle_idx), kernel, "cycle_idx {cycle_idx}");
            assert_ne!(kernel, BbrState::Unknown);
        }
        // STARTUP, DRAIN, PROBE_RTT: bbr_mode 0, 1, 3; tcp_bbr_phase 1, 2, 3.
        for (mode, phase) in [(0, 1), (1, 2), (3, 3)] {
            assert_eq!(bpf(mode, 0), BbrState::from_tcp_bbr_phase(phase));
        }
        assert_eq!(bpf(7, 0), BbrState::Unknown);
    }

    /// No socket on a BPF algorithm: nothing is read, no note.
    #[test]
    fn sockets_on_kernel_algorithms_need_no_read() {
        let s = bbrkit_diag::testing::socket(
            Some("cubic"),
            "10.0.0.1:1".parse().unwrap(),
            "10.0.0.2:2".parse().unwrap(),
        );
        let t = Telemetry(Err("not opened".into()));
        let m = t.of(std::slice::from_ref(&s));
        assert!(m.get(&s).is_none() && m.note.is_none());
    }
}
