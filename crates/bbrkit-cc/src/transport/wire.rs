//! What the transport puts on the wire and reads back: data segments and
//! ACKs (with SACK blocks and the ECN bits).
//!
//! Sequence space is counted in segments: segment `k` carries bytes
//! `k*MSS .. min((k+1)*MSS, size)`. Every (re)transmission of a segment uses
//! the same boundaries, as Linux does without repacketisation.

use crate::time::Instant;

/// IPv4 (20) + TCP (20) + timestamp option (12) header bytes per data packet.
pub const HEADER_BYTES: u32 = 52;

/// Most SACK blocks one ACK carries (Linux with timestamps: 3).
pub const MAX_SACK_BLOCKS: usize = 3;

/// A data segment on the forward path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DataPacket {
    /// Flow index.
    pub flow: u32,
    /// Segment number.
    pub seg: u64,
    /// Payload bytes.
    pub len: u32,
    /// When the sender transmitted it.
    pub enqueued: Instant,
    /// A retransmission (the loss hooks of tests tell first copies apart).
    pub retrans: bool,
    /// ECN Congestion Experienced, set by a marking bottleneck.
    pub ce: bool,
}

impl DataPacket {
    /// Bytes on the wire (payload + headers).
    pub fn wire_len(&self) -> u32 {
        self.len + HEADER_BYTES
    }
}

/// A SACK block: segments `start..end` were received.
pub type SackBlock = (u64, u64);

/// An acknowledgment on the return path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AckPacket {
    /// Flow index.
    pub flow: u32,
    /// Next segment expected (cumulative ACK).
    pub cum: u64,
    /// SACK blocks, most recent first; `sacks[..nsacks]` are valid.
    pub sacks: [SackBlock; MAX_SACK_BLOCKS],
    /// Valid SACK blocks.
    pub nsacks: u8,
    /// ECN-Echo: a segment this ACK covers arrived with CE.
    pub ece: bool,
}

impl AckPacket {
    /// The valid SACK blocks.
    pub fn sack_blocks(&self) -> &[SackBlock] {
        &self.sacks[..usize::from(self.nsacks)]
    }
}
