//! `struct tcp_info` (uapi `include/uapi/linux/tcp.h`) decoded from the bytes the
//! kernel sends in `INET_DIAG_INFO` or returns from `getsockopt(TCP_INFO)`.
//!
//! Owns the field offsets. The struct has grown for twenty years and keeps
//! growing, so decoding is driven by the payload length exactly as `ss` does
//! it: a field the payload does not fully cover is `None` (an older kernel),
//! and bytes past the last field known here are ignored and counted in
//! [`TcpInfo::len`] (a newer kernel). Decoding never fails and never panics.
//! Must never interpret the values (units stay as the kernel sends them:
//! microseconds, bytes, packets); conversions live in the callers' helpers below.

/// Size in bytes of the newest `struct tcp_info` this module knows
/// (up to `tcpi_total_rto_time`, Linux 6.7).
pub const KNOWN_LEN: usize = 248;

/// Fixed-size little pieces that can be read at an offset in native byte order.
trait Field: Sized {
    const SIZE: usize;
    fn read(b: &[u8]) -> Self;
}

macro_rules! impl_field {
    ($($t:ty),*) => {$(
        impl Field for $t {
            const SIZE: usize = std::mem::size_of::<$t>();
            fn read(b: &[u8]) -> Self {
                let mut a = [0u8; std::mem::size_of::<$t>()];
                a.copy_from_slice(&b[..Self::SIZE]);
                <$t>::from_ne_bytes(a)
            }
        }
    )*};
}
impl_field!(u8, u16, u32, u64);

/// Reads a `T` at `off` if the payload covers all of it.
fn at<T: Field>(b: &[u8], off: usize) -> Option<T> {
    let end = off.checked_add(T::SIZE)?;
    b.get(off..end).map(T::read)
}

macro_rules! tcp_info_struct {
    ($( $(#[$doc:meta])* $name:ident : $ty:ty = $off:expr; )*) => {
        /// A decoded `struct tcp_info`. Every field is `None` when the payload
        /// was too short to contain it (see the module documentation).
        #[derive(Debug, Clone, Default, PartialEq, Eq)]
        pub struct TcpInfo {
            /// Number of bytes the kernel sent (may be more or less than [`KNOWN_LEN`]).
            pub len: usize,
            /// `tcpi_snd_wscale` (low 4 bits of byte 6).
            pub snd_wscale: Option<u8>,
            /// `tcpi_rcv_wscale` (high 4 bits of byte 6).
            pub rcv_wscale: Option<u8>,
            /// `tcpi_delivery_rate_app_limited` (bit 0 of byte 7).
            pub delivery_rate_app_limited: Option<bool>,
            /// `tcpi_fastopen_client_fail` (bits 1-2 of byte 7).
            pub fastopen_client_fail: Option<u8>,
            $( $(#[$doc])* pub $name: Option<$ty>, )*
        }

        impl TcpInfo {
            /// Decodes `bytes` as `struct tcp_info`, tolerating any length.
            pub fn parse(bytes: &[u8]) -> TcpInfo {
                let b6: Option<u8> = at(bytes, 6);
                let b7: Option<u8> = at(bytes, 7);
                TcpInfo {
                    len: bytes.len(),
                    snd_wscale: b6.map(|v| v & 0x0f),
                    rcv_wscale: b6.map(|v| v >> 4),
                    delivery_rate_app_limited: b7.map(|v| v & 1 == 1),
                    fastopen_client_fail: b7.map(|v| (v >> 1) & 3),
                    $( $name: at(bytes, $off), )*
                }
            }
        }
    };
}

tcp_info_struct! {
    /// `tcpi_state`: the kernel TCP state number (1 = ESTABLISHED, ...).
    state: u8 = 0;
    /// `tcpi_ca_state`: 0 Open, 1 Disorder, 2 CWR, 3 Recovery, 4 Loss.
    ca_state: u8 = 1;
    /// `tcpi_retransmits`: retransmissions of the current RTO episode.
    retransmits: u8 = 2;
    /// `tcpi_probes`: unanswered zero-window probes.
    probes: u8 = 3;
    /// `tcpi_backoff`: RTO backoff exponent.
    backoff: u8 = 4;
    /// `tcpi_options`: bit set of TS(1) SACK(2) WSCALE(4) ECN(8) ECN_SEEN(16) SYN_DATA(32).
    options: u8 = 5;
    /// `tcpi_rto`, microseconds.
    rto_us: u32 = 8;
    /// `tcpi_ato`, microseconds.
    ato_us: u32 = 12;
    /// `tcpi_snd_mss`, bytes.
    snd_mss: u32 = 16;
    /// `tcpi_rcv_mss`, bytes.
    rcv_mss: u32 = 20;
    /// `tcpi_unacked`, packets.
    unacked: u32 = 24;
    /// `tcpi_sacked`, packets.
    sacked: u32 = 28;
    /// `tcpi_lost`, packets.
    lost: u32 = 32;
    /// `tcpi_retrans`: packets currently retransmitted and unacknowledged.
    retrans: u32 = 36;
    /// `tcpi_fackets` (always 0 since Linux 4.15).
    fackets: u32 = 40;
    /// `tcpi_last_data_sent`, milliseconds ago.
    last_data_sent_ms: u32 = 44;
    /// `tcpi_last_ack_sent` (not remembered by Linux, 0).
    last_ack_sent_ms: u32 = 48;
    /// `tcpi_last_data_recv`, milliseconds ago.
    last_data_recv_ms: u32 = 52;
    /// `tcpi_last_ack_recv`, milliseconds ago.
    last_ack_recv_ms: u32 = 56;
    /// `tcpi_pmtu`, bytes.
    pmtu: u32 = 60;
    /// `tcpi_rcv_ssthresh`, bytes.
    rcv_ssthresh: u32 = 64;
    /// `tcpi_rtt`: smoothed RTT, microseconds.
    rtt_us: u32 = 68;
    /// `tcpi_rttvar`: RTT mean deviation, microseconds.
    rttvar_us: u32 = 72;
    /// `tcpi_snd_ssthresh`, packets (`0x7fffffff` = infinite).
    snd_ssthresh: u32 = 76;
    /// `tcpi_snd_cwnd`, packets.
    snd_cwnd: u32 = 80;
    /// `tcpi_advmss`, bytes.
    advmss: u32 = 84;
    /// `tcpi_reordering`, packets.
    reordering: u32 = 88;
    /// `tcpi_rcv_rtt`, microseconds.
    rcv_rtt_us: u32 = 92;
    /// `tcpi_rcv_space`, bytes.
    rcv_space: u32 = 96;
    /// `tcpi_total_retrans`: retransmitted segments over the connection's life.
    total_retrans: u32 = 100;
    /// `tcpi_pacing_rate`, bytes per second (`u64::MAX` = unlimited).
    pacing_rate: u64 = 104;
    /// `tcpi_max_pacing_rate`, bytes per second (`u64::MAX` = unlimited).
    max_pacing_rate: u64 = 112;
    /// `tcpi_bytes_acked`, bytes.
    bytes_acked: u64 = 120;
    /// `tcpi_bytes_received`, bytes.
    bytes_received: u64 = 128;
    /// `tcpi_segs_out`, segments.
    segs_out: u32 = 136;
    /// `tcpi_segs_in`, segments.
    segs_in: u32 = 140;
    /// `tcpi_notsent_bytes`, bytes.
    notsent_bytes: u32 = 144;
    /// `tcpi_min_rtt`, microseconds (`u32::MAX` = no sample yet).
    min_rtt_us: u32 = 148;
    /// `tcpi_data_segs_in`, segments.
    data_segs_in: u32 = 152;
    /// `tcpi_data_segs_out`, segments.
    data_segs_out: u32 = 156;
    /// `tcpi_delivery_rate`, bytes per second.
    delivery_rate: u64 = 160;
    /// `tcpi_busy_time`: time with data in flight, microseconds.
    busy_time_us: u64 = 168;
    /// `tcpi_rwnd_limited`: time limited by the peer's receive window, microseconds.
    rwnd_limited_us: u64 = 176;
    /// `tcpi_sndbuf_limited`: time limited by the send buffer, microseconds.
    sndbuf_limited_us: u64 = 184;
    /// `tcpi_delivered`, packets.
    delivered: u32 = 192;
    /// `tcpi_delivered_ce`, packets.
    delivered_ce: u32 = 196;
    /// `tcpi_bytes_sent`, bytes (including retransmissions).
    bytes_sent: u64 = 200;
    /// `tcpi_bytes_retrans`, bytes.
    bytes_retrans: u64 = 208;
    /// `tcpi_dsack_dups`, segments.
    dsack_dups: u32 = 216;
    /// `tcpi_reord_seen`, events.
    reord_seen: u32 = 220;
    /// `tcpi_rcv_ooopack`, packets.
    rcv_ooopack: u32 = 224;
    /// `tcpi_snd_wnd`: peer's advertised window, bytes.
    snd_wnd: u32 = 228;
    /// `tcpi_rcv_wnd`: local advertised window, bytes.
    rcv_wnd: u32 = 232;
    /// `tcpi_rehash`, attempts.
    rehash: u32 = 236;
    /// `tcpi_total_rto`, timeouts.
    total_rto: u16 = 240;
    /// `tcpi_total_rto_recoveries`, recoveries.
    total_rto_recoveries: u16 = 242;
    /// `tcpi_total_rto_time`, milliseconds.
    total_rto_time_ms: u32 = 244;
}

impl TcpInfo {
    /// Bytes the kernel sent beyond the fields this module knows (newer kernel).
    pub fn unknown_tail(&self) -> usize {
        self.len.saturating_sub(KNOWN_LEN)
    }

    /// Minimum RTT in microseconds, `None` before the first sample (`~0U`) or
    /// when the kernel does not report it.
    pub fn min_rtt_sample_us(&self) -> Option<u32> {
        self.min_rtt_us.filter(|&v| v != u32::MAX && v != 0)
    }

    /// Smoothed RTT in microseconds, `None` before the first sample (0).
    pub fn rtt_sample_us(&self) -> Option<u32> {
        self.rtt_us.filter(|&v| v != 0)
    }

    /// Pacing rate in bytes per second, `None` when unlimited (`~0ULL`) or absent.
    pub fn pacing_rate_limited(&self) -> Option<u64> {
        self.pacing_rate.filter(|&v| v != u64::MAX)
    }

    /// Share of busy time limited by the receive window (0..1), like `ss`'s
    /// `rwnd_limited:..(x%)`. `None` when nothing was busy or fields are absent.
    pub fn rwnd_limited_ratio(&self) -> Option<f64> {
        ratio(self.rwnd_limited_us?, self.busy_time_us?)
    }

    /// Share of busy time limited by the send buffer (0..1).
    pub fn sndbuf_limited_ratio(&self) -> Option<f64> {
        ratio(self.sndbuf_limited_us?, self.busy_time_us?)
    }

    /// Retransmitted bytes over bytes sent (0..1): a per-flow loss proxy.
    pub fn retrans_ratio(&self) -> Option<f64> {
        ratio(self.bytes_retrans?, self.bytes_sent?)
    }
}

fn ratio(part: u64, whole: u64) -> Option<f64> {
    (whole > 0).then(|| part as f64 / whole as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(len: usize) -> Vec<u8> {
        let mut b = vec![0u8; len];
        for (i, v) in b.iter_mut().enumerate() {
            *v = i as u8;
        }
        b
    }

    #[test]
    fn empty_payload_gives_all_none() {
        let t = TcpInfo::parse(&[]);
        assert_eq!(t.len, 0);
        assert_eq!(t.state, None);
        assert_eq!(t.snd_wscale, None);
        assert_eq!(t.total_rto_time_ms, None);
    }

    #[test]
    fn field_straddling_the_end_is_none() {
        // 82 bytes: snd_cwnd (80..84) is cut in half.
        let t = TcpInfo::parse(&sample(82));
        assert_eq!(t.snd_ssthresh, Some(u32::from_ne_bytes([76, 77, 78, 79])));
        assert_eq!(t.snd_cwnd, None);
    }

    #[test]
    fn offsets_of_known_fields() {
        let mut b = vec![0u8; KNOWN_LEN];
        b[0] = 1;
        b[6] = 0x79; // rcv 7, snd 9
        b[7] = 0b101; // app limited, fastopen fail 2
        b[80..84].copy_from_slice(&10u32.to_ne_bytes());
        b[160..168].copy_from_slice(&12345u64.to_ne_bytes());
        b[240..242].copy_from_slice(&3u16.to_ne_bytes());
        b[244..248].copy_from_slice(&99u32.to_ne_bytes());
        let t = TcpInfo::parse(&b);
        assert_eq!(t.state, Some(1));
        assert_eq!(t.snd_wscale, Some(9));
        assert_eq!(t.rcv_wscale, Some(7));
        assert_eq!(t.delivery_rate_app_limited, Some(true));
        assert_eq!(t.fastopen_client_fail, Some(2));
        assert_eq!(t.snd_cwnd, Some(10));
        assert_eq!(t.delivery_rate, Some(12345));
        assert_eq!(t.total_rto, Some(3));
        assert_eq!(t.total_rto_time_ms, Some(99));
        assert_eq!(t.unknown_tail(), 0);
    }

    /// The chrono timers `bbrkit advise` reads (uapi `struct tcp_info`,
    /// Linux 4.10: `tcpi_busy_time` at 168, `tcpi_rwnd_limited` at 176,
    /// `tcpi_sndbuf_limited` at 184), and `None` on a 4.9 kernel's 168 bytes.
    #[test]
    fn chrono_timers_at_their_offsets() {
        let mut b = vec![0u8; 192];
        b[168..176].copy_from_slice(&1_000_000u64.to_ne_bytes());
        b[176..184].copy_from_slice(&250_000u64.to_ne_bytes());
        b[184..192].copy_from_slice(&125_000u64.to_ne_bytes());
        let t = TcpInfo::parse(&b);
        assert_eq!(t.busy_time_us, Some(1_000_000));
        assert_eq!(t.rwnd_limited_us, Some(250_000));
        assert_eq!(t.sndbuf_limited_us, Some(125_000));
        assert_eq!(t.rwnd_limited_ratio(), Some(0.25));
        assert_eq!(t.sndbuf_limited_ratio(), Some(0.125));
        let old = TcpInfo::parse(&b[..168]);
        assert_eq!(
            (old.busy_time_us, old.rwnd_limited_us, old.sndbuf_limited_us),
            (None, None, None)
        );
    }

    #[test]
    fn longer_payload_keeps_known_fields_and_counts_tail() {
        let mut b = vec![0u8; KNOWN_LEN + 40];
        b[80..84].copy_from_slice(&7u32.to_ne_bytes());
        let t = TcpInfo::parse(&b);
        assert_eq!(t.snd_cwnd, Some(7));
        assert_eq!(t.unknown_tail(), 40);
    }

    #[test]
    fn sentinels_are_filtered() {
        let mut b = vec![0u8; KNOWN_LEN];
        b[148..152].copy_from_slice(&u32::MAX.to_ne_bytes());
        b[104..112].copy_from_slice(&u64::MAX.to_ne_bytes());
        let t = TcpInfo::parse(&b);
        assert_eq!(t.min_rtt_sample_us(), None);
        assert_eq!(t.pacing_rate_limited(), None);
        assert_eq!(t.rtt_sample_us(), None);
        assert_eq!(t.retrans_ratio(), None);
    }
}
