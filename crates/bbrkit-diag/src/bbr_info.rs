//! `struct tcp_bbr_info` from the `INET_DIAG_BBRINFO` attribute.
//!
//! Owns both layouts: mainline BBRv1 (five `u32`, 20 bytes) and the longer
//! BBRv3 layout of google/bbr (52 bytes) whose `bbr_version` byte sits at
//! offset 39. Decoding is length-driven: fewer than 20 bytes is an error
//! ([`DiagError::Truncated`]); 20 bytes is v1; 40 or more bytes carries the
//! version byte; the v3 model fields are decoded only when all 52 bytes are
//! there; bytes beyond 52 are ignored. Must never confuse v1's `bbr_bw_lo/hi`
//! (the two halves of one 64-bit bandwidth) with v3's `bw_lo`/`bw_hi` (two
//! different model bounds).

use crate::DiagError;

/// Size of the mainline (v1) `struct tcp_bbr_info`.
pub const V1_LEN: usize = 20;
/// Size of the BBRv3 `struct tcp_bbr_info`.
pub const V3_LEN: usize = 52;
/// Offset of the `bbr_version` byte in the v3 layout.
pub const VERSION_OFFSET: usize = 39;

/// A decoded `tcp_bbr_info`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BbrInfo {
    /// Number of payload bytes the kernel sent.
    pub len: usize,
    /// Max-filtered bandwidth estimate, bytes per second (`bbr_bw_hi << 32 | bbr_bw_lo`).
    pub bw_bytes_per_second: u64,
    /// Min-filtered RTT, microseconds.
    pub min_rtt_us: u32,
    /// Pacing gain in 1/256 units (`bbr_pacing_gain`).
    pub pacing_gain_x256: u32,
    /// Cwnd gain in 1/256 units (`bbr_cwnd_gain`).
    pub cwnd_gain_x256: u32,
    /// `bbr_version` when the payload is long enough to carry it (v3 layout).
    pub version_byte: Option<u8>,
    /// The v3 model fields when all 52 bytes are present.
    pub v3: Option<BbrV3Model>,
}

/// The fields the BBRv3 patch appends to `tcp_bbr_info`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BbrV3Model {
    /// Long-term upper bound on bandwidth (`bbr_bw_hi_msb:lsb`), bytes per second.
    pub bw_hi: u64,
    /// Short-term lower bound on bandwidth (`bbr_bw_lo_msb:lsb`), bytes per second.
    pub bw_lo: u64,
    /// `bbr_mode`, `enum bbr_mode`: 0 STARTUP, 1 DRAIN, 2 PROBE_BW, 3 PROBE_RTT.
    pub mode: u8,
    /// `bbr_phase`, `enum tcp_bbr_phase` (mode and PROBE_BW phase in one):
    /// 0 INVALID, 1 STARTUP, 2 DRAIN, 3 PROBE_RTT, 4 PROBE_BW_UP,
    /// 5 PROBE_BW_DOWN, 6 PROBE_BW_CRUISE, 7 PROBE_BW_REFILL
    /// ([`crate::model::TCP_BBR_PHASE`]).
    pub phase: u8,
    /// `bbr_inflight_lo`, packets.
    pub inflight_lo: u32,
    /// `bbr_inflight_hi`, packets.
    pub inflight_hi: u32,
    /// `bbr_extra_acked`, packets.
    pub extra_acked: u32,
}

fn u32_at(b: &[u8], off: usize) -> u32 {
    u32::from_ne_bytes([b[off], b[off + 1], b[off + 2], b[off + 3]])
}

fn u64_halves(b: &[u8], lo: usize, hi: usize) -> u64 {
    (u64::from(u32_at(b, hi)) << 32) | u64::from(u32_at(b, lo))
}

impl BbrInfo {
    /// Decodes an `INET_DIAG_BBRINFO` payload (see the module documentation).
    pub fn parse(b: &[u8]) -> Result<BbrInfo, DiagError> {
        if b.len() < V1_LEN {
            return Err(DiagError::Truncated {
                what: "tcp_bbr_info",
                need: V1_LEN,
                got: b.len(),
            });
        }
        let v3 = (b.len() >= V3_LEN).then(|| BbrV3Model {
            bw_hi: u64_halves(b, 20, 24),
            bw_lo: u64_halves(b, 28, 32),
            mode: b[36],
            phase: b[37],
            inflight_lo: u32_at(b, 40),
            inflight_hi: u32_at(b, 44),
            extra_acked: u32_at(b, 48),
        });
        Ok(BbrInfo {
            len: b.len(),
            bw_bytes_per_second: u64_halves(b, 0, 4),
            min_rtt_us: u32_at(b, 8),
            pacing_gain_x256: u32_at(b, 12),
            cwnd_gain_x256: u32_at(b, 16),
            version_byte: b.get(VERSION_OFFSET).copied(),
            v3,
        })
    }

    /// BBR generation: the version byte when present, else 1 (the mainline
    /// 20-byte layout has no version byte and is BBRv1).
    pub fn version(&self) -> u8 {
        self.version_byte.unwrap_or(1)
    }

    /// Pacing gain as a real number (e.g. 2.885 in STARTUP).
    pub fn pacing_gain(&self) -> f64 {
        f64::from(self.pacing_gain_x256) / 256.0
    }

    /// Cwnd gain as a real number (e.g. 2.0 in PROBE_BW).
    pub fn cwnd_gain(&self) -> f64 {
        f64::from(self.cwnd_gain_x256) / 256.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v1(bw: u64, min_rtt: u32, pg: u32, cg: u32) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(&(bw as u32).to_ne_bytes());
        b.extend_from_slice(&((bw >> 32) as u32).to_ne_bytes());
        b.extend_from_slice(&min_rtt.to_ne_bytes());
        b.extend_from_slice(&pg.to_ne_bytes());
        b.extend_from_slice(&cg.to_ne_bytes());
        b
    }

    #[test]
    fn v1_layout() {
        let i = BbrInfo::parse(&v1(5_000_000_123, 1500, 739, 512)).unwrap();
        assert_eq!(i.bw_bytes_per_second, 5_000_000_123);
        assert_eq!(i.min_rtt_us, 1500);
        assert!((i.pacing_gain() - 2.88671875).abs() < 1e-9);
        assert_eq!(i.cwnd_gain(), 2.0);
        assert_eq!(i.version(), 1);
        assert!(i.v3.is_none());
    }

    #[test]
    fn v3_layout() {
        let mut b = v1(1000, 20, 256, 512);
        b.extend_from_slice(&7u32.to_ne_bytes()); // bw_hi lsb
        b.extend_from_slice(&1u32.to_ne_bytes()); // bw_hi msb
        b.extend_from_slice(&9u32.to_ne_bytes()); // bw_lo lsb
        b.extend_from_slice(&0u32.to_ne_bytes()); // bw_lo msb
        b.extend_from_slice(&[2, 7, 0, 3]); // PROBE_BW, PROBE_BW_REFILL, unused, version
        b.extend_from_slice(&11u32.to_ne_bytes());
        b.extend_from_slice(&12u32.to_ne_bytes());
        b.extend_from_slice(&13u32.to_ne_bytes());
        assert_eq!(b.len(), V3_LEN);
        let i = BbrInfo::parse(&b).unwrap();
        assert_eq!(i.version(), 3);
        let m = i.v3.unwrap();
        assert_eq!(m.bw_hi, (1 << 32) | 7);
        assert_eq!(m.bw_lo, 9);
        assert_eq!((m.mode, m.phase), (2, 7));
        assert_eq!((m.inflight_lo, m.inflight_hi, m.extra_acked), (11, 12, 13));
        assert_eq!(i.bw_bytes_per_second, 1000);
    }

    #[test]
    fn short_payload_is_an_error_not_a_panic() {
        for n in 0..V1_LEN {
            let e = BbrInfo::parse(&vec![0u8; n]).unwrap_err();
            assert!(e.to_string().contains("tcp_bbr_info truncated"), "{e}");
        }
    }

    #[test]
    fn partial_v3_has_version_but_no_model() {
        let mut b = v1(1, 2, 3, 4);
        b.resize(44, 0);
        b[VERSION_OFFSET] = 3;
        let i = BbrInfo::parse(&b).unwrap();
        assert_eq!(i.version(), 3);
        assert!(i.v3.is_none());
    }
}
