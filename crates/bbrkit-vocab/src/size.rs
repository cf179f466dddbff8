//! Sizes: the one [`BufferSize`] (a bottleneck buffer, an ECN threshold, a
//! receive window or a flow's length, in bytes, packets or multiples of the
//! bandwidth-delay product) and the one parser of its spellings.
//!
//! Byte suffixes are decimal (`kb` = 1000 bytes, `mb` = 10⁶) with binary
//! `kib`/`mib`; `b` is bytes. A bare number is refused (except `0`): `64`
//! could be bytes, packets or kilobytes.

use crate::units::{UnitError, number_and_suffix};

/// A size given in bytes, packets or bandwidth-delay products; each user
/// resolves it with its own packet size ([`BufferSize::bytes`]).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BufferSize {
    /// A byte count.
    Bytes(u64),
    /// A count of full-size packets.
    Packets(u64),
    /// A multiple of the path's bandwidth-delay product (rate × base RTT).
    Bdp(f64),
}

impl BufferSize {
    /// In bytes, on a path whose bandwidth-delay product is `bdp_bytes`,
    /// with packets of `packet_bytes` each (BDP multiples are rounded to
    /// the nearest byte).
    pub fn bytes(self, bdp_bytes: f64, packet_bytes: u64) -> u64 {
        match self {
            BufferSize::Bytes(b) => b,
            BufferSize::Packets(n) => n * packet_bytes,
            BufferSize::Bdp(m) => (bdp_bytes * m).round() as u64,
        }
    }
}

impl std::str::FromStr for BufferSize {
    type Err = UnitError;
    fn from_str(s: &str) -> Result<Self, UnitError> {
        parse_size(s)
    }
}

/// Parses a [`BufferSize`]: bytes (`64kb`, `1mb`, `150000b`, `1mib`),
/// packets (`100pkt`, `100p`) or BDP multiples (`1bdp`, `0.5bdp`).
pub fn parse_size(text: &str) -> Result<BufferSize, UnitError> {
    let (v, suffix) = number_and_suffix(text, "size")?;
    if let Some(mult) = byte_multiplier(&suffix) {
        return Ok(BufferSize::Bytes((v * mult).round() as u64));
    }
    match suffix.as_str() {
        "" if v == 0.0 => Ok(BufferSize::Bytes(0)),
        "" => Err(UnitError(format!(
            "size '{t}' has no unit (write e.g. {t}b for bytes, {t}kb, {t}pkt for packets or 1bdp)",
            t = text.trim()
        ))),
        "p" | "pkt" | "pkts" | "packets" => {
            if v.fract() != 0.0 {
                return Err(UnitError(format!("packet count must be whole: '{text}'")));
            }
            Ok(BufferSize::Packets(v as u64))
        }
        "bdp" => Ok(BufferSize::Bdp(v)),
        _ => Err(UnitError(format!(
            "invalid size '{text}' (use e.g. 1bdp, 100pkt, 64kb)"
        ))),
    }
}

/// A byte count with a unit (`10kb`, `4mb`, `1500b`): object and flow
/// sizes, where packets and BDP multiples mean nothing.
pub fn parse_bytes(text: &str) -> Result<u64, UnitError> {
    let (v, suffix) = number_and_suffix(text, "size")?;
    match byte_multiplier(&suffix) {
        Some(mult) => Ok((v * mult).round() as u64),
        None if suffix.is_empty() => Err(UnitError(format!(
            "size '{t}' has no unit (write e.g. {t}b for bytes or {t}kb)",
            t = text.trim()
        ))),
        None => Err(UnitError(format!(
            "invalid size '{text}' (use bytes, e.g. 10kb, 4mb, 1500b)"
        ))),
    }
}

/// Bytes per unit of a byte suffix, if `suffix` is one.
fn byte_multiplier(suffix: &str) -> Option<f64> {
    Some(match suffix {
        "b" => 1.0,
        "kb" | "k" => 1e3,
        "mb" => 1e6,
        "gb" => 1e9,
        "kib" => 1024.0,
        "mib" => 1024.0 * 1024.0,
        "gib" => 1024.0 * 1024.0 * 1024.0,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("1bdp").unwrap(), BufferSize::Bdp(1.0));
        assert_eq!(parse_size("0.5bdp").unwrap(), BufferSize::Bdp(0.5));
        assert_eq!(parse_size("100pkt").unwrap(), BufferSize::Packets(100));
        assert_eq!(parse_size("64kb").unwrap(), BufferSize::Bytes(64_000));
        assert_eq!(parse_size("1mib").unwrap(), BufferSize::Bytes(1 << 20));
        assert_eq!(parse_size("1500b").unwrap(), BufferSize::Bytes(1500));
        assert_eq!(parse_size("0").unwrap(), BufferSize::Bytes(0));
        assert!(parse_size("1.5pkt").is_err());
        assert!(parse_size("lots").is_err());
    }

    #[test]
    fn a_bare_size_is_refused_with_a_hint() {
        let e = parse_size("64").unwrap_err().0;
        assert!(e.contains("no unit") && e.contains("64kb"), "{e}");
        assert!(parse_bytes("4000").unwrap_err().0.contains("no unit"));
    }

    #[test]
    fn byte_counts_only_take_byte_units() {
        assert_eq!(parse_bytes("10kb").unwrap(), 10_000);
        assert_eq!(parse_bytes("4mb").unwrap(), 4_000_000);
        assert!(parse_bytes("10pkt").is_err());
        assert!(parse_bytes("1bdp").is_err());
    }

    #[test]
    fn resolves_with_the_callers_packet_size() {
        // 100 Mbit/s × 10 ms = 125 000 bytes.
        assert_eq!(BufferSize::Bdp(1.0).bytes(125_000.0, 1514), 125_000);
        assert_eq!(BufferSize::Bdp(0.5).bytes(125_001.0, 1514), 62_501);
        assert_eq!(BufferSize::Packets(100).bytes(0.0, 1514), 151_400);
        assert_eq!(BufferSize::Bytes(7).bytes(1e9, 1514), 7);
    }
}
