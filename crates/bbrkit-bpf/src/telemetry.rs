//! The telemetry map `bbr3_telemetry`: each bbr3/bbr2 socket's model state,
//! written by the BPF program on every ACK (a BPF congestion control cannot
//! implement `get_info`, so `ss -i` shows none of it).
//!
//! Owns the Rust mirror of `bpf/telemetry.h` ([`RawKey`], [`RawState`],
//! `#[repr(C)]`, byte for byte; a test checks their sizes against the map in
//! the embedded object), bounds-checked decoding into typed values with
//! units converted ([`SockModel`]: bits/s, ms, gains as f64), and reading
//! every entry of a map: one the process holds, a bbrkit pin, or every map
//! of that name in the kernel (finding maps by id needs CAP_SYS_ADMIN).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::Path;

use libbpf_rs::query::MapInfoIter;
use libbpf_rs::{MapCore, MapFlags, MapHandle, MapType};

/// The map's name in the object and in the kernel.
pub const MAP_NAME: &str = "bbr3_telemetry";

/// `struct bbr3_sock_key` (bpf/telemetry.h).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[repr(C)]
pub struct RawKey {
    /// Inode of the socket's network namespace.
    pub netns_ino: u32,
    /// `AF_INET` or `AF_INET6`.
    pub family: u16,
    /// Local port, host order.
    pub sport: u16,
    /// Remote port, host order.
    pub dport: u16,
    /// Zero.
    pub pad: u16,
    /// Local address, network order (IPv4 in `[0]`).
    pub saddr: [u32; 4],
    /// Remote address, network order.
    pub daddr: [u32; 4],
}

/// `struct bbr3_sock_state` (bpf/telemetry.h).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[repr(C)]
pub struct RawState {
    /// Bandwidth used now, bits/s.
    pub bw_bps: u64,
    /// `max_bw`, bits/s.
    pub max_bw_bps: u64,
    /// `bw_lo`, bits/s; `u64::MAX` unset.
    pub bw_lo_bps: u64,
    /// `min_rtt`, µs; `u32::MAX` none.
    pub min_rtt_us: u32,
    /// `inflight_hi`, packets; `u32::MAX` unset.
    pub inflight_hi: u32,
    /// `inflight_lo`, packets; `u32::MAX` unset.
    pub inflight_lo: u32,
    /// Pacing gain, 256 = 1.0.
    pub pacing_gain: u32,
    /// Cwnd gain, 256 = 1.0.
    pub cwnd_gain: u32,
    /// `snd_cwnd`, packets.
    pub cwnd: u32,
    /// 0 STARTUP, 1 DRAIN, 2 PROBE_BW, 3 PROBE_RTT.
    pub mode: u8,
    /// 0 DOWN, 1 CRUISE, 2 REFILL, 3 UP (in PROBE_BW).
    pub phase: u8,
    /// 3 (bbr3) or 2 (bbr2).
    pub version: u8,
    /// Zero.
    pub pad8: u8,
    /// Zero.
    pub pad32: u32,
    /// `bpf_ktime_get_ns()` of the last update.
    pub updated_ns: u64,
}

/// Size of [`RawKey`] (44).
pub const KEY_SIZE: usize = std::mem::size_of::<RawKey>();
/// Size of [`RawState`] (64).
pub const VALUE_SIZE: usize = std::mem::size_of::<RawState>();

fn u16_at(b: &[u8], off: usize) -> u16 {
    u16::from_ne_bytes([b[off], b[off + 1]])
}
fn u32_at(b: &[u8], off: usize) -> u32 {
    u32::from_ne_bytes(b[off..off + 4].try_into().expect("4 bytes"))
}
fn u64_at(b: &[u8], off: usize) -> u64 {
    u64::from_ne_bytes(b[off..off + 8].try_into().expect("8 bytes"))
}
fn addr_at(b: &[u8], off: usize) -> [u32; 4] {
    // Kept as the raw network-order bytes, word by word.
    [0, 4, 8, 12].map(|i| u32_at(b, off + i))
}

impl RawKey {
    /// Decodes a key; `None` unless `b` is exactly [`KEY_SIZE`] bytes.
    pub fn parse(b: &[u8]) -> Option<RawKey> {
        (b.len() == KEY_SIZE).then(|| RawKey {
            netns_ino: u32_at(b, 0),
            family: u16_at(b, 4),
            sport: u16_at(b, 6),
            dport: u16_at(b, 8),
            pad: u16_at(b, 10),
            saddr: addr_at(b, 12),
            daddr: addr_at(b, 28),
        })
    }

    /// The key's bytes, as the map stores them.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(KEY_SIZE);
        v.extend(self.netns_ino.to_ne_bytes());
        for x in [self.family, self.sport, self.dport, self.pad] {
            v.extend(x.to_ne_bytes());
        }
        for w in self.saddr.iter().chain(&self.daddr) {
            v.extend(w.to_ne_bytes());
        }
        v
    }

    /// The socket this key names.
    pub fn socket(&self) -> Option<SockId> {
        let ip = |a: &[u32; 4]| -> Option<IpAddr> {
            let bytes: Vec<u8> = a.iter().flat_map(|w| w.to_ne_bytes()).collect();
            match i32::from(self.family) {
                libc::AF_INET => Some(Ipv4Addr::new(bytes[0], bytes[1], bytes[2], bytes[3]).into()),
                libc::AF_INET6 => {
                    let b: [u8; 16] = bytes.try_into().ok()?;
                    Some(Ipv6Addr::from(b).into())
                }
                _ => None,
            }
        };
        Some(SockId {
            netns_ino: self.netns_ino,
            local: SocketAddr::new(ip(&self.saddr)?, self.sport),
            remote: SocketAddr::new(ip(&self.daddr)?, self.dport),
        })
    }
}

impl RawState {
    /// Decodes a value; `None` unless `b` is exactly [`VALUE_SIZE`] bytes.
    pub fn parse(b: &[u8]) -> Option<RawState> {
        (b.len() == VALUE_SIZE).then(|| RawState {
            bw_bps: u64_at(b, 0),
            max_bw_bps: u64_at(b, 8),
            bw_lo_bps: u64_at(b, 16),
            min_rtt_us: u32_at(b, 24),
            inflight_hi: u32_at(b, 28),
            inflight_lo: u32_at(b, 32),
            pacing_gain: u32_at(b, 36),
            cwnd_gain: u32_at(b, 40),
            cwnd: u32_at(b, 44),
            mode: b[48],
            phase: b[49],
            version: b[50],
            pad8: b[51],
            pad32: u32_at(b, 52),
            updated_ns: u64_at(b, 56),
        })
    }
}

/// A socket: its network namespace and 4-tuple.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
pub struct SockId {
    /// Inode of the network namespace (`stat -L /proc/self/ns/net`).
    pub netns_ino: u32,
    /// Local address and port.
    pub local: SocketAddr,
    /// Remote address and port.
    pub remote: SocketAddr,
}

// Mode and Phase are this map's own vocabulary: one table each, in the
// order of the values bbr3.bpf.c writes (telemetry.h), giving both the
// decoding and the names of the `bpf_model` JSON. They are not bbrkit-cc's
// model types: the phase order here (DOWN 0 .. UP 3) is neither google's
// cycle index (UP 0 .. REFILL 3) nor the kernel's `enum tcp_bbr_phase`, and
// this crate depends on no other bbrkit crate (bbrkit-host maps both onto
// bbrkit-diag's metric states).

/// BBR's state machine (`enum bbr_mode`), as `bbr3_sock_state.mode` carries it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Exponential search for the bottleneck rate.
    Startup,
    /// Draining the queue Startup built.
    Drain,
    /// Steady state, cycling through the ProbeBW phases.
    ProbeBw,
    /// Cwnd at 4 (or half) to re-measure min_rtt.
    ProbeRtt,
}

/// `bbr3_sock_state.mode` → (mode, name): 0 STARTUP, 1 DRAIN, 2 PROBE_BW, 3 PROBE_RTT.
const MODES: [(Mode, &str); 4] = [
    (Mode::Startup, "startup"),
    (Mode::Drain, "drain"),
    (Mode::ProbeBw, "probe_bw"),
    (Mode::ProbeRtt, "probe_rtt"),
];

impl Mode {
    /// The mode a `bbr3_sock_state.mode` byte means (`None`: unknown value).
    pub fn from_raw(v: u8) -> Option<Mode> {
        MODES.get(usize::from(v)).map(|&(m, _)| m)
    }

    /// The name used in JSON and tables (`probe_bw`).
    pub fn name(self) -> &'static str {
        MODES[self as usize].1
    }
}

/// ProbeBW's phase, as `bbr3_sock_state.phase` carries it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Pacing below the estimate to drain the queue.
    Down,
    /// At the estimate.
    Cruise,
    /// Refilling the pipe before probing.
    Refill,
    /// Probing for more bandwidth.
    Up,
}

/// `bbr3_sock_state.phase` → (phase, name): 0 DOWN, 1 CRUISE, 2 REFILL, 3 UP
/// (bbr3.bpf.c writes `(cycle_idx + 3) & 3`).
const PHASES: [(Phase, &str); 4] = [
    (Phase::Down, "down"),
    (Phase::Cruise, "cruise"),
    (Phase::Refill, "refill"),
    (Phase::Up, "up"),
];

impl Phase {
    /// The phase a `bbr3_sock_state.phase` byte means (`None`: unknown value).
    pub fn from_raw(v: u8) -> Option<Phase> {
        PHASES.get(usize::from(v)).map(|&(p, _)| p)
    }

    /// The name used in JSON and tables (`cruise`).
    pub fn name(self) -> &'static str {
        PHASES[self as usize].1
    }
}

impl serde::Serialize for Mode {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl serde::Serialize for Phase {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

/// One socket's model state, in the units of bbrkit's JSON.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ModelState {
    /// 3 for bbr3, 2 for bbr2.
    pub version: u8,
    /// State machine mode (`None`: an unknown value).
    pub mode: Option<Mode>,
    /// ProbeBW phase, only in PROBE_BW.
    pub phase: Option<Phase>,
    /// Bandwidth the model uses now, bits/s.
    pub bw_bits_per_second: u64,
    /// `max_bw`, bits/s.
    pub max_bw_bits_per_second: u64,
    /// `bw_lo`, bits/s (`None`: unset).
    pub bw_lo_bits_per_second: Option<u64>,
    /// `min_rtt`, ms (`None`: no sample yet).
    pub min_rtt_ms: Option<f64>,
    /// `inflight_hi`, packets (`None`: unset).
    pub inflight_hi: Option<u32>,
    /// `inflight_lo`, packets (`None`: unset).
    pub inflight_lo: Option<u32>,
    /// Pacing gain (1.0 = the estimate).
    pub pacing_gain: f64,
    /// Cwnd gain.
    pub cwnd_gain: f64,
    /// cwnd, packets.
    pub cwnd: u32,
    /// `CLOCK_MONOTONIC` ns of the last update.
    pub updated_ns: u64,
}

impl From<&RawState> for ModelState {
    fn from(r: &RawState) -> ModelState {
        let mode = Mode::from_raw(r.mode);
        let phase = match mode {
            Some(Mode::ProbeBw) => Phase::from_raw(r.phase),
            _ => None,
        };
        let set32 = |v: u32| (v != u32::MAX).then_some(v);
        ModelState {
            version: r.version,
            mode,
            phase,
            bw_bits_per_second: r.bw_bps,
            max_bw_bits_per_second: r.max_bw_bps,
            bw_lo_bits_per_second: (r.bw_lo_bps != u64::MAX).then_some(r.bw_lo_bps),
            min_rtt_ms: set32(r.min_rtt_us).map(|us| f64::from(us) / 1000.0),
            inflight_hi: set32(r.inflight_hi),
            inflight_lo: set32(r.inflight_lo),
            pacing_gain: f64::from(r.pacing_gain) / 256.0,
            cwnd_gain: f64::from(r.cwnd_gain) / 256.0,
            cwnd: r.cwnd,
            updated_ns: r.updated_ns,
        }
    }
}

/// One map entry, decoded.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SockModel {
    /// The socket.
    pub socket: SockId,
    /// Its model state.
    pub state: ModelState,
}

/// Why a telemetry map could not be read.
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    /// The map has other key or value sizes than this build knows.
    #[error(
        "map {MAP_NAME} has key/value sizes {key}/{value}, expected {KEY_SIZE}/{VALUE_SIZE} (a different bbr3 object)"
    )]
    Layout {
        /// Key size of the map.
        key: u32,
        /// Value size of the map.
        value: u32,
    },
    /// A system call on the map failed (e.g. EPERM as non-root).
    #[error("read BPF map {MAP_NAME}")]
    Read(#[source] libbpf_rs::Error),
}

/// Every entry of `map` (a map the process holds or opened). Entries whose
/// socket died between listing and lookup are skipped.
pub fn read(map: &dyn MapCore) -> Result<Vec<SockModel>, TelemetryError> {
    if map.key_size() as usize != KEY_SIZE || map.value_size() as usize != VALUE_SIZE {
        return Err(TelemetryError::Layout {
            key: map.key_size(),
            value: map.value_size(),
        });
    }
    let mut out = Vec::new();
    for key in map.keys() {
        let Some(value) = map
            .lookup(&key, MapFlags::ANY)
            .map_err(TelemetryError::Read)?
        else {
            continue;
        };
        let (Some(k), Some(v)) = (RawKey::parse(&key), RawState::parse(&value)) else {
            continue;
        };
        if let Some(socket) = k.socket() {
            out.push(SockModel {
                socket,
                state: ModelState::from(&v),
            });
        }
    }
    Ok(out)
}

/// Every entry of the map pinned at `path`.
pub fn read_pinned(path: &Path) -> Result<Vec<SockModel>, TelemetryError> {
    crate::log::install();
    let map = MapHandle::from_pinned_path(path).map_err(TelemetryError::Read)?;
    read(&map)
}

/// Every entry of every `bbr3_telemetry` map in the kernel (the lab's, a
/// pinned registration's, another process's), newest update first when two
/// maps know the same socket. Needs CAP_SYS_ADMIN to open maps by id.
pub fn read_kernel() -> Result<Vec<SockModel>, TelemetryError> {
    crate::log::install();
    let mut out: Vec<SockModel> = Vec::new();
    for info in MapInfoIter::default() {
        if info.name.to_str() != Some(MAP_NAME) || info.ty != MapType::LruHash {
            continue;
        }
        let map = MapHandle::from_map_id(info.id).map_err(TelemetryError::Read)?;
        out.extend(read(&map)?);
    }
    out.sort_by_key(|m| std::cmp::Reverse(m.state.updated_ns));
    let mut seen = std::collections::HashSet::new();
    out.retain(|m| seen.insert(m.socket));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_matches_telemetry_h() {
        assert_eq!(KEY_SIZE, 44);
        assert_eq!(VALUE_SIZE, 64);
        assert_eq!(std::mem::offset_of!(RawState, mode), 48);
        assert_eq!(std::mem::offset_of!(RawState, updated_ns), 56);
        assert_eq!(std::mem::offset_of!(RawKey, saddr), 12);
        assert_eq!(std::mem::offset_of!(RawKey, daddr), 28);
    }

    #[test]
    fn key_round_trip_and_addresses() {
        let k = RawKey {
            netns_ino: 4026531840,
            family: libc::AF_INET as u16,
            sport: 5201,
            dport: 40000,
            pad: 0,
            saddr: [u32::from_ne_bytes([10, 0, 0, 1]), 0, 0, 0],
            daddr: [u32::from_ne_bytes([10, 0, 1, 2]), 0, 0, 0],
        };
        let b = k.to_bytes();
        assert_eq!(b.len(), KEY_SIZE);
        assert_eq!(&b[12..16], &[10, 0, 0, 1]);
        assert_eq!(RawKey::parse(&b), Some(k));
        let s = k.socket().unwrap();
        assert_eq!(s.local.to_string(), "10.0.0.1:5201");
        assert_eq!(s.remote.to_string(), "10.0.1.2:40000");
        assert!(RawKey::parse(&b[..43]).is_none());
        let v6 = RawKey {
            family: libc::AF_INET6 as u16,
            saddr: [0, 0, 0, u32::from_ne_bytes([0, 0, 0, 1])],
            ..k
        };
        assert_eq!(v6.socket().unwrap().local.to_string(), "[::1]:5201");
        assert!(RawKey { family: 99, ..k }.socket().is_none());
    }

    #[test]
    fn units_and_unset_values() {
        let mut b = vec![0u8; VALUE_SIZE];
        b[0..8].copy_from_slice(&100_000_000u64.to_ne_bytes());
        b[16..24].copy_from_slice(&u64::MAX.to_ne_bytes());
        b[24..28].copy_from_slice(&20_500u32.to_ne_bytes());
        b[28..32].copy_from_slice(&u32::MAX.to_ne_bytes());
        b[32..36].copy_from_slice(&17u32.to_ne_bytes());
        b[36..40].copy_from_slice(&320u32.to_ne_bytes());
        b[48] = 2; // PROBE_BW
        b[49] = 3; // UP
        b[50] = 3;
        let s = ModelState::from(&RawState::parse(&b).unwrap());
        assert_eq!(s.bw_bits_per_second, 100_000_000);
        assert_eq!(s.bw_lo_bits_per_second, None);
        assert_eq!(s.min_rtt_ms, Some(20.5));
        assert_eq!(s.inflight_hi, None);
        assert_eq!(s.inflight_lo, Some(17));
        assert_eq!(s.pacing_gain, 1.25);
        assert_eq!((s.mode, s.phase), (Some(Mode::ProbeBw), Some(Phase::Up)));
        let json = serde_json::to_value((Mode::ProbeBw, Phase::Up)).unwrap();
        assert_eq!(
            json,
            serde_json::json!([Mode::ProbeBw.name(), Phase::Up.name()])
        );
        b[48] = 0; // STARTUP: the phase byte means nothing
        let s = ModelState::from(&RawState::parse(&b).unwrap());
        assert_eq!((s.mode, s.phase), (Some(Mode::Startup), None));
        b[24..28].copy_from_slice(&u32::MAX.to_ne_bytes());
        assert_eq!(
            ModelState::from(&RawState::parse(&b).unwrap()).min_rtt_ms,
            None
        );
    }

    /// Each table is indexed by the raw value and by the variant: they must
    /// be in the same order, and a value past the table is unknown.
    #[test]
    fn mode_and_phase_tables_are_in_value_order() {
        for (i, &(m, name)) in MODES.iter().enumerate() {
            assert_eq!(
                (m as usize, Mode::from_raw(i as u8), m.name()),
                (i, Some(m), name)
            );
        }
        for (i, &(p, name)) in PHASES.iter().enumerate() {
            assert_eq!(
                (p as usize, Phase::from_raw(i as u8), p.name()),
                (i, Some(p), name)
            );
        }
        assert_eq!((Mode::from_raw(4), Phase::from_raw(4)), (None, None));
    }
}
