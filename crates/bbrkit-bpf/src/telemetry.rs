//! What a bbr3/bbr2 socket's sk_storage tells about it: the model state and
//! the per-socket event counters (`bpf/telemetry.h`), read with the socket
//! itself in the same sock_diag dump as `tcp_info`. A BPF congestion control
//! cannot implement `get_info`, so `ss -i` shows none of this.
//!
//! Owns the Rust mirror of `bpf/telemetry.h` ([`RawModel`], [`RawCounters`],
//! `#[repr(C)]`, byte for byte at the offsets the header gives; a test
//! checks the value size against the map in the embedded object),
//! bounds-checked decoding into typed values with units converted
//! ([`ModelState`]: bits/s, ms, gains as f64), the census filter that asks
//! the kernel for those values ([`StorageMaps`]: the storage maps of every
//! bbr3 object in the kernel, or of one held object), and the per-CPU
//! counters of sockets that could not get storage ([`storage_failures`]).
//! Needs CAP_BPF or CAP_SYS_ADMIN (opening maps by id, the storage part of
//! the dump). Reads only.

use std::os::fd::{AsFd, AsRawFd};

use bbrkit_diag::{Filter, Socket};
pub use bbrkit_vocab::bbr_state::{Mode, Phase, State};
use libbpf_rs::query::MapInfoIter;
use libbpf_rs::{MapCore, MapFlags, MapHandle, MapType};

use crate::load::Loaded;

/// The storage map's name in the object and in the kernel.
pub const STORAGE_MAP: &str = "bbr3_sk_stor";
/// The per-CPU counters map (`enum bbr3_stat` in `bpf/signals.h`).
pub const STATS_MAP: &str = "bbr3_stats";
/// `BBR3_TELEMETRY_LAYOUT`: the layout this build decodes.
pub const LAYOUT: u8 = 1;
/// `BBR3_COUNTERS_OFFSET`: where [`RawCounters`] starts in the value.
pub const COUNTERS_OFFSET: usize = 16;
/// `BBR3_MODEL_OFFSET`: where [`RawModel`] starts in the value.
pub const MODEL_OFFSET: usize = COUNTERS_OFFSET + COUNTERS_SIZE;
/// Size of the whole value (`struct bbr3_sk`, bpf/bbr3.h).
pub const VALUE_SIZE: usize = 712;
/// Size of [`RawModel`] (56).
pub const MODEL_SIZE: usize = std::mem::size_of::<RawModel>();
/// Size of [`RawCounters`] (104).
pub const COUNTERS_SIZE: usize = std::mem::size_of::<RawCounters>();

/// `struct bbr3_model` (bpf/telemetry.h), in the kernel's units.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[repr(C)]
pub struct RawModel {
    /// `tp->tcp_mstamp` at the write, µs of `CLOCK_MONOTONIC`.
    pub updated_us: u64,
    /// `bbr_bw()`, packets/µs << 24.
    pub bw: u32,
    /// `bbr_max_bw()`, packets/µs << 24.
    pub max_bw: u32,
    /// `bw_lo`, packets/µs << 24; `u32::MAX` unset.
    pub bw_lo: u32,
    /// v2alpha's `bw_hi`; `u32::MAX` unset (always for bbr3).
    pub bw_hi: u32,
    /// `min_rtt_us`; `u32::MAX` none yet.
    pub min_rtt_us: u32,
    /// `inflight_hi`, packets; `u32::MAX` unset.
    pub inflight_hi: u32,
    /// `inflight_lo`, packets; `u32::MAX` unset.
    pub inflight_lo: u32,
    /// `snd_cwnd` at the write, packets.
    pub cwnd: u32,
    /// `mss_cache` at the write, bytes.
    pub mss: u32,
    /// Pacing gain, 256 = 1.0.
    pub pacing_gain: u16,
    /// Cwnd gain, 256 = 1.0.
    pub cwnd_gain: u16,
    /// [`LAYOUT`] when written by this layout.
    pub layout: u8,
    /// 3 (bbr3) or 2 (bbr2).
    pub version: u8,
    /// `enum bbr_mode`.
    pub mode: u8,
    /// ProbeBW cycle index (`enum bbr_pacing_gain_phase`).
    pub cycle_idx: u8,
    /// 1 once STARTUP estimated the pipe full.
    pub full_bw_reached: u8,
    /// Zero.
    pub pad: [u8; 3],
}

/// `struct bbr3_counters` (bpf/telemetry.h): per-socket event counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
#[repr(C)]
pub struct RawCounters {
    /// `cong_control` calls.
    pub acks: u32,
    /// Packet-timed round starts.
    pub rounds: u32,
    /// Round starts in PROBE_BW REFILL or UP.
    pub probe_rounds: u32,
    /// Send snapshot found exactly.
    pub tx_exact: u32,
    /// An older snapshot, corrected.
    pub tx_floor: u32,
    /// None old enough (fallback to `prior_in_flight`/`losses`).
    pub tx_miss: u32,
    /// ACKs without a sampled packet.
    pub no_sample: u32,
    /// Packets the ACK being processed marked lost.
    pub lost_in_ack: u32,
    /// Packets marked lost outside `cong_control` (RACK timer, old ACKs).
    pub lost_between: u32,
    /// Loss events noted.
    pub loss_events: u32,
    /// Lower-bound cuts by loss.
    pub lo_cuts: u32,
    /// REFILL entries.
    pub refills: u32,
    /// UP entries.
    pub ups: u32,
    /// PROBE_RTT entries.
    pub probe_rtts: u32,
    /// "Inflight too high" handled from an ACK's sample.
    pub too_high_ack: u32,
    /// ... from a lost-packet sample.
    pub too_high_lost: u32,
    /// ... from a TLP-repaired loss.
    pub too_high_tlp: u32,
    /// STARTUP ended by loss.
    pub startup_loss_exits: u32,
    /// Packets marked lost by RTOs.
    pub lost_rto: u32,
    /// TLP-repaired losses.
    pub tlp_repairs: u32,
    /// Sum of `inflight_hi` just after each "too high" hit.
    pub hi_at_hit_sum: u64,
    /// `inflight_hi` just after the latest hit.
    pub hi_at_hit_last: u32,
    /// Smallest of them (`u32::MAX`: no hit yet).
    pub hi_at_hit_min: u32,
    /// Largest of them.
    pub hi_at_hit_max: u32,
    /// Zero.
    #[serde(skip)]
    pub pad: u32,
}

fn u16_at(b: &[u8], off: usize) -> u16 {
    u16::from_ne_bytes([b[off], b[off + 1]])
}
fn u32_at(b: &[u8], off: usize) -> u32 {
    u32::from_ne_bytes([b[off], b[off + 1], b[off + 2], b[off + 3]])
}

impl RawModel {
    /// Decodes the model from `b` (exactly [`MODEL_SIZE`] bytes).
    pub fn parse(b: &[u8]) -> Option<RawModel> {
        (b.len() == MODEL_SIZE).then(|| RawModel {
            updated_us: u64::from_ne_bytes(b[0..8].try_into().expect("8 bytes")),
            bw: u32_at(b, 8),
            max_bw: u32_at(b, 12),
            bw_lo: u32_at(b, 16),
            bw_hi: u32_at(b, 20),
            min_rtt_us: u32_at(b, 24),
            inflight_hi: u32_at(b, 28),
            inflight_lo: u32_at(b, 32),
            cwnd: u32_at(b, 36),
            mss: u32_at(b, 40),
            pacing_gain: u16_at(b, 44),
            cwnd_gain: u16_at(b, 46),
            layout: b[48],
            version: b[49],
            mode: b[50],
            cycle_idx: b[51],
            full_bw_reached: b[52],
            pad: [b[53], b[54], b[55]],
        })
    }
}

impl RawCounters {
    /// Decodes the counters from `b` (exactly [`COUNTERS_SIZE`] bytes).
    pub fn parse(b: &[u8]) -> Option<RawCounters> {
        (b.len() == COUNTERS_SIZE).then(|| {
            let w = |i: usize| u32_at(b, 4 * i);
            RawCounters {
                acks: w(0),
                rounds: w(1),
                probe_rounds: w(2),
                tx_exact: w(3),
                tx_floor: w(4),
                tx_miss: w(5),
                no_sample: w(6),
                lost_in_ack: w(7),
                lost_between: w(8),
                loss_events: w(9),
                lo_cuts: w(10),
                refills: w(11),
                ups: w(12),
                probe_rtts: w(13),
                too_high_ack: w(14),
                too_high_lost: w(15),
                too_high_tlp: w(16),
                startup_loss_exits: w(17),
                lost_rto: w(18),
                tlp_repairs: w(19),
                hi_at_hit_sum: u64::from_ne_bytes(b[80..88].try_into().expect("8 bytes")),
                hi_at_hit_last: w(22),
                hi_at_hit_min: w(23),
                hi_at_hit_max: w(24),
                pad: w(25),
            }
        })
    }

    /// "Inflight too high" hits, all paths.
    pub fn too_high_hits(&self) -> u32 {
        self.too_high_ack
            .wrapping_add(self.too_high_lost)
            .wrapping_add(self.too_high_tlp)
    }
}

/// `bbr_rate_bytes_per_sec(sk, rate, BBR_UNIT, 0)`: a bw in packets/µs
/// << 24 as bytes per second, in the kernel's order of operations.
pub fn bw_bytes_per_second(bw: u32, mss: u32) -> u64 {
    let rate = u128::from(bw) * u128::from(mss) * 1_000_000;
    u64::try_from((rate >> 24).max(1)).unwrap_or(u64::MAX)
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
    /// cwnd when the model was written, packets.
    pub cwnd: u32,
    /// `CLOCK_MONOTONIC` ns of the last write (µs resolution: the write is
    /// at a round start or a state change, not per ACK).
    pub updated_ns: u64,
}

impl ModelState {
    /// The state as one value (`None` when mode or phase is unknown).
    pub fn state(&self) -> Option<State> {
        State::of(self.mode?, self.phase)
    }
}

impl From<&RawModel> for ModelState {
    fn from(r: &RawModel) -> ModelState {
        let mode = Mode::from_kernel(r.mode);
        let phase = match mode {
            Some(Mode::ProbeBw) => Phase::from_cycle_idx(r.cycle_idx),
            _ => None,
        };
        let set32 = |v: u32| (v != u32::MAX).then_some(v);
        let bits = |bw: u32| bw_bytes_per_second(bw, r.mss) * 8;
        ModelState {
            version: r.version,
            mode,
            phase,
            bw_bits_per_second: bits(r.bw),
            max_bw_bits_per_second: bits(r.max_bw),
            bw_lo_bits_per_second: set32(r.bw_lo).map(bits),
            min_rtt_ms: set32(r.min_rtt_us).map(|us| f64::from(us) / 1000.0),
            inflight_hi: set32(r.inflight_hi),
            inflight_lo: set32(r.inflight_lo),
            pacing_gain: f64::from(r.pacing_gain) / 256.0,
            cwnd_gain: f64::from(r.cwnd_gain) / 256.0,
            cwnd: r.cwnd,
            updated_ns: r.updated_us.saturating_mul(1000),
        }
    }
}

/// One socket's telemetry, decoded.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Telemetry {
    /// The model state.
    pub model: ModelState,
    /// The event counters.
    pub counters: RawCounters,
}

/// Why telemetry could not be read.
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    /// A storage value of another size or layout than this build knows.
    #[error(
        "{STORAGE_MAP} value of {len} bytes, layout {layout}; this build reads {VALUE_SIZE} bytes, layout {LAYOUT} (a different bbr3 object)"
    )]
    Layout {
        /// Bytes in the value.
        len: usize,
        /// Its layout byte (0 when too short to have one).
        layout: u8,
    },
    /// A system call on a map failed (e.g. EPERM without CAP_SYS_ADMIN).
    #[error("read BPF map {what}")]
    Read {
        /// Which map.
        what: &'static str,
        /// The error.
        #[source]
        source: libbpf_rs::Error,
    },
}

impl Telemetry {
    /// Decodes a `bbr3_sk_stor` value.
    pub fn decode(value: &[u8]) -> Result<Telemetry, TelemetryError> {
        let layout = value.get(MODEL_OFFSET + 48).copied().unwrap_or(0);
        let err = TelemetryError::Layout {
            len: value.len(),
            layout,
        };
        if value.len() != VALUE_SIZE || layout != LAYOUT {
            return Err(err);
        }
        let model = RawModel::parse(&value[MODEL_OFFSET..MODEL_OFFSET + MODEL_SIZE]);
        let counters = RawCounters::parse(&value[COUNTERS_OFFSET..MODEL_OFFSET]);
        match (model, counters) {
            (Some(m), Some(c)) => Ok(Telemetry {
                model: ModelState::from(&m),
                counters: c,
            }),
            _ => Err(err),
        }
    }
}

/// The `bbr3_sk_stor` maps a census asks for: every bbr3 object's in the
/// kernel ([`StorageMaps::in_kernel`]: the lab's, a pinned registration's,
/// another process's) or one held object's ([`StorageMaps::of`]).
#[derive(Debug, Default)]
pub struct StorageMaps {
    maps: Vec<(u32, MapHandle)>,
}

impl StorageMaps {
    /// Every `bbr3_sk_stor` map of this layout in the kernel, opened by id
    /// (needs CAP_SYS_ADMIN). None is not an error: then no socket runs a
    /// bbrkit BPF algorithm.
    pub fn in_kernel() -> Result<StorageMaps, TelemetryError> {
        crate::log::install();
        let mut maps = Vec::new();
        for info in MapInfoIter::default() {
            if info.name.to_str() != Some(STORAGE_MAP)
                || info.ty != MapType::SkStorage
                || info.value_size as usize != VALUE_SIZE
            {
                continue;
            }
            match MapHandle::from_map_id(info.id) {
                Ok(m) => maps.push((info.id, m)),
                // Freed between listing and opening: its sockets are gone.
                Err(e) if e.kind() == libbpf_rs::ErrorKind::NotFound => {}
                Err(source) => {
                    return Err(TelemetryError::Read {
                        what: STORAGE_MAP,
                        source,
                    });
                }
            }
        }
        Ok(StorageMaps { maps })
    }

    /// The storage map of an object this process holds (e.g. the lab's
    /// registration).
    pub fn of(loaded: &Loaded) -> Result<StorageMaps, TelemetryError> {
        let mut maps = Vec::new();
        for m in loaded.object().maps() {
            if m.name().to_str() != Some(STORAGE_MAP) {
                continue;
            }
            let read = |source| TelemetryError::Read {
                what: STORAGE_MAP,
                source,
            };
            let h = MapHandle::try_from(&m).map_err(read)?;
            let id = libbpf_rs::MapInfo::new(h.as_fd()).map_err(read)?.info.id;
            maps.push((id, h));
        }
        Ok(StorageMaps { maps })
    }

    /// Whether there is no map to ask for.
    pub fn is_empty(&self) -> bool {
        self.maps.is_empty()
    }

    /// `filter` asking the kernel for these maps' values of each socket
    /// ([`Filter::sk_storage_maps`]); the fds stay valid while `self` lives.
    pub fn ask(&self, filter: &mut Filter) {
        filter
            .sk_storage_maps
            .extend(self.maps.iter().map(|(_, m)| m.as_fd().as_raw_fd()));
    }

    /// The telemetry of `s` from the census answer: its value in one of
    /// these maps (`None`: the socket has none, e.g. it runs another
    /// algorithm or its storage could not be created).
    pub fn telemetry(&self, s: &Socket) -> Option<Result<Telemetry, TelemetryError>> {
        s.bpf_storages
            .iter()
            .find(|b| self.maps.iter().any(|(id, _)| *id == b.map_id))
            .map(|b| Telemetry::decode(&b.value))
    }
}

/// Per-CPU counters summed over every bbr3 object in the kernel:
/// (sockets whose storage could not be created, of them recovered by a
/// later retry). A socket without storage runs on the fallbacks of
/// DEVIATIONS.md #12 until the retry succeeds.
pub fn storage_failures() -> Result<(u64, u64), TelemetryError> {
    crate::log::install();
    let read = |source| TelemetryError::Read {
        what: STATS_MAP,
        source,
    };
    let (mut missing, mut recovered) = (0, 0);
    for info in MapInfoIter::default() {
        if info.name.to_str() != Some(STATS_MAP) || info.ty != MapType::PercpuArray {
            continue;
        }
        let m = MapHandle::from_map_id(info.id).map_err(read)?;
        for (key, slot) in [(0u32, &mut missing), (1u32, &mut recovered)] {
            for cpu in m
                .lookup_percpu(&key.to_ne_bytes(), MapFlags::ANY)
                .map_err(read)?
                .unwrap_or_default()
            {
                *slot += cpu
                    .get(..8)
                    .map_or(0, |b| u64::from_ne_bytes(b.try_into().expect("8 bytes")));
            }
        }
    }
    Ok((missing, recovered))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_matches_telemetry_h() {
        assert_eq!((MODEL_SIZE, COUNTERS_SIZE), (56, 104));
        assert_eq!((COUNTERS_OFFSET, MODEL_OFFSET), (16, 120));
        assert_eq!(std::mem::offset_of!(RawModel, layout), 48);
        assert_eq!(std::mem::offset_of!(RawModel, cycle_idx), 51);
        assert_eq!(std::mem::offset_of!(RawCounters, tlp_repairs), 76);
        assert_eq!(std::mem::offset_of!(RawCounters, hi_at_hit_sum), 80);
        assert_eq!(std::mem::offset_of!(RawCounters, hi_at_hit_max), 96);
    }

    /// A value as the BPF object writes it: 100 Mbit/s at mss 1448 is
    /// 100e6 / 8 / 1448 packets/s = 8.632 packets/ms.
    fn value(mode: u8, cycle_idx: u8) -> Vec<u8> {
        let mut v = vec![0u8; VALUE_SIZE];
        let m = MODEL_OFFSET;
        v[m..m + 8].copy_from_slice(&5_000_000u64.to_ne_bytes());
        let bw = ((100e6 / 8.0 / 1448.0) * (1u64 << 24) as f64 / 1e6).round() as u32;
        v[m + 8..m + 12].copy_from_slice(&bw.to_ne_bytes());
        v[m + 12..m + 16].copy_from_slice(&bw.to_ne_bytes());
        v[m + 16..m + 20].copy_from_slice(&u32::MAX.to_ne_bytes());
        v[m + 24..m + 28].copy_from_slice(&20_500u32.to_ne_bytes());
        v[m + 28..m + 32].copy_from_slice(&u32::MAX.to_ne_bytes());
        v[m + 32..m + 36].copy_from_slice(&17u32.to_ne_bytes());
        v[m + 36..m + 40].copy_from_slice(&40u32.to_ne_bytes());
        v[m + 40..m + 44].copy_from_slice(&1448u32.to_ne_bytes());
        v[m + 44..m + 46].copy_from_slice(&320u16.to_ne_bytes());
        v[m + 48] = LAYOUT;
        v[m + 49] = 3;
        v[m + 50] = mode;
        v[m + 51] = cycle_idx;
        let c = COUNTERS_OFFSET;
        v[c..c + 4].copy_from_slice(&1234u32.to_ne_bytes()); // acks
        v[c + 56..c + 60].copy_from_slice(&2u32.to_ne_bytes()); // too_high_ack
        v[c + 64..c + 68].copy_from_slice(&1u32.to_ne_bytes()); // too_high_tlp
        v[c + 80..c + 88].copy_from_slice(&300u64.to_ne_bytes());
        v
    }

    #[test]
    fn units_and_unset_values() {
        let t = Telemetry::decode(&value(2, 0)).unwrap();
        let s = &t.model;
        let mbit = s.bw_bits_per_second as f64 / 1e6;
        assert!((mbit - 100.0).abs() < 0.01, "{mbit}");
        assert_eq!(s.bw_lo_bits_per_second, None);
        assert_eq!(s.min_rtt_ms, Some(20.5));
        assert_eq!((s.inflight_hi, s.inflight_lo), (None, Some(17)));
        assert_eq!(
            (s.pacing_gain, s.cwnd, s.updated_ns),
            (1.25, 40, 5_000_000_000)
        );
        assert_eq!((s.mode, s.phase), (Some(Mode::ProbeBw), Some(Phase::Up)));
        assert_eq!(s.state(), Some(State::ProbeBwUp));
        assert_eq!((t.counters.acks, t.counters.too_high_hits()), (1234, 3));
        assert_eq!(t.counters.hi_at_hit_sum, 300);
        let json = serde_json::to_value(s).unwrap();
        assert_eq!(
            (json["mode"].as_str(), json["phase"].as_str()),
            (Some("probe_bw"), Some("up"))
        );
        // STARTUP: the cycle index means nothing.
        let t = Telemetry::decode(&value(0, 2)).unwrap();
        assert_eq!((t.model.mode, t.model.phase), (Some(Mode::Startup), None));
        assert_eq!(Telemetry::decode(&value(7, 0)).unwrap().model.mode, None);
    }

    #[test]
    fn other_layouts_are_refused_by_name() {
        let mut v = value(2, 2);
        v[MODEL_OFFSET + 48] = 9;
        let e = Telemetry::decode(&v).unwrap_err().to_string();
        assert!(e.contains("layout 9") && e.contains(STORAGE_MAP), "{e}");
        let e = Telemetry::decode(&[0u8; 4168]).unwrap_err().to_string();
        assert!(e.contains("4168 bytes"), "{e}");
    }

    #[test]
    fn the_socket_carries_its_own_value_by_map_id() {
        let maps = StorageMaps::default();
        let mut s = bbrkit_diag::testing::socket(
            Some("bbr3"),
            "10.0.0.1:5201".parse().unwrap(),
            "10.0.0.2:40000".parse().unwrap(),
        );
        s.bpf_storages.push(bbrkit_diag::BpfStorage {
            map_id: 7,
            value: value(2, 2),
        });
        assert!(maps.telemetry(&s).is_none(), "not one of our maps");
    }
}
