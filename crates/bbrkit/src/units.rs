//! Human units on the command line: rates (`100mbit`), durations (`10ms`),
//! fractions (`2%`, `0.02`), sizes (`64kb`, `100pkt`, `1bdp`) and
//! comma-separated lists of any of them; and the one formatter of rates
//! in human output ([`rate`]).
//!
//! Rate suffixes follow `tc(8)`: `bit`, `kbit`, `mbit`, `gbit`, `tbit` are bits
//! per second (powers of 1000); `bps`, `kbps`, `mbps`, `gbps` are *bytes* per
//! second, as in tc. Every parser rejects negative, NaN and infinite values
//! with a message that names the offending text.

use std::time::Duration;

/// An error naming the text that could not be parsed and what was expected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnitError(pub String);

impl std::fmt::Display for UnitError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UnitError {}

/// Splits `text` into a leading non-negative finite number and its suffix.
fn number_and_suffix(text: &str, what: &str) -> Result<(f64, String), UnitError> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+'))
        .unwrap_or(t.len());
    let (num, suffix) = t.split_at(split);
    let value: f64 = num
        .parse()
        .map_err(|_| UnitError(format!("invalid {what} '{text}'")))?;
    if !value.is_finite() {
        return Err(UnitError(format!("invalid {what} '{text}'")));
    }
    if value < 0.0 {
        return Err(UnitError(format!("{what} must not be negative: '{text}'")));
    }
    Ok((value, suffix.trim().to_ascii_lowercase()))
}

/// A rate in bits per second, e.g. `100mbit` → 100_000_000. Zero is rejected.
pub fn parse_rate(text: &str) -> Result<u64, UnitError> {
    let (v, suffix) = number_and_suffix(text, "rate")?;
    let bits_per_unit = match suffix.as_str() {
        "" | "bit" => 1.0,
        "kbit" | "k" => 1e3,
        "mbit" | "m" => 1e6,
        "gbit" | "g" => 1e9,
        "tbit" | "t" => 1e12,
        "bps" => 8.0,
        "kbps" => 8e3,
        "mbps" => 8e6,
        "gbps" => 8e9,
        _ => {
            return Err(UnitError(format!(
                "invalid rate '{text}' (use e.g. 100mbit, 1gbit, 500kbit)"
            )));
        }
    };
    let bits = (v * bits_per_unit).round();
    if bits < 1.0 {
        return Err(UnitError(format!("rate must be positive: '{text}'")));
    }
    if bits > u64::MAX as f64 {
        return Err(UnitError(format!("rate too large: '{text}'")));
    }
    Ok(bits as u64)
}

/// A duration, e.g. `10ms`, `6s`, `250us`, `1.5s`, `2m`. A bare number is
/// rejected because its unit would be a guess (except `0`).
pub fn parse_duration(text: &str) -> Result<Duration, UnitError> {
    let (v, suffix) = number_and_suffix(text, "duration")?;
    let secs_per_unit = match suffix.as_str() {
        "ns" => 1e-9,
        "us" | "µs" => 1e-6,
        "ms" => 1e-3,
        "s" | "sec" => 1.0,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        "" if v == 0.0 => 1.0,
        _ => {
            return Err(UnitError(format!(
                "invalid duration '{text}' (use e.g. 10ms, 6s, 250us)"
            )));
        }
    };
    let secs = v * secs_per_unit;
    if secs > 1e9 {
        return Err(UnitError(format!("duration too large: '{text}'")));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// A probability in 0..=1 from `2%` or `0.02`.
pub fn parse_fraction(text: &str) -> Result<f64, UnitError> {
    let (v, suffix) = number_and_suffix(text, "loss")?;
    let p = match suffix.as_str() {
        "%" => v / 100.0,
        "" => v,
        _ => {
            return Err(UnitError(format!(
                "invalid probability '{text}' (use e.g. 2% or 0.02)"
            )));
        }
    };
    if p > 1.0 {
        return Err(UnitError(format!(
            "probability must be between 0 and 100%: '{text}'"
        )));
    }
    Ok(p)
}

/// A buffer size: bytes (`64kb`, `1mb`, `150000`), packets (`100pkt`, `100p`)
/// or bandwidth-delay-product multiples (`1bdp`, `0.5bdp`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Size {
    /// A byte count (`kb` = 1000 bytes, `kib` = 1024 bytes).
    Bytes(u64),
    /// A count of MTU-sized packets.
    Packets(u64),
    /// A multiple of the path's bandwidth-delay product.
    Bdp(f64),
}

/// Parses a [`Size`].
pub fn parse_size(text: &str) -> Result<Size, UnitError> {
    let (v, suffix) = number_and_suffix(text, "size")?;
    let bytes = |mult: f64| Ok(Size::Bytes((v * mult).round() as u64));
    match suffix.as_str() {
        "" | "b" => bytes(1.0),
        "kb" | "k" => bytes(1e3),
        "mb" => bytes(1e6),
        "gb" => bytes(1e9),
        "kib" => bytes(1024.0),
        "mib" => bytes(1024.0 * 1024.0),
        "p" | "pkt" | "pkts" | "packets" => {
            if v.fract() != 0.0 {
                return Err(UnitError(format!("packet count must be whole: '{text}'")));
            }
            Ok(Size::Packets(v as u64))
        }
        "bdp" => Ok(Size::Bdp(v)),
        _ => Err(UnitError(format!(
            "invalid size '{text}' (use e.g. 1bdp, 100pkt, 64kb)"
        ))),
    }
}

/// Parses a comma-separated list with `item`, rejecting empty lists and items.
pub fn parse_list<T>(
    text: &str,
    item: impl Fn(&str) -> Result<T, UnitError>,
) -> Result<Vec<T>, UnitError> {
    let items: Vec<&str> = text.split(',').map(str::trim).collect();
    if items.iter().any(|s| s.is_empty()) {
        return Err(UnitError(format!("empty item in list '{text}'")));
    }
    items.into_iter().map(item).collect()
}

/// A rate in bits per second for people, with 3–4 significant digits:
/// `4.70 Gbit/s`, `190.7 Gbit/s`, `959.6 Mbit/s`, `7.9 Mbit/s`,
/// `12.0 kbit/s`, `500 bit/s`. Every table (`lab`, `sim`, `conns`) uses it.
pub fn rate(bps: f64) -> String {
    if bps >= 10e9 {
        format!("{:.1} Gbit/s", bps / 1e9)
    } else if bps >= 1e9 {
        format!("{:.2} Gbit/s", bps / 1e9)
    } else if bps >= 1e6 {
        format!("{:.1} Mbit/s", bps / 1e6)
    } else if bps >= 1e3 {
        format!("{:.1} kbit/s", bps / 1e3)
    } else {
        format!("{bps:.0} bit/s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_for_people() {
        let cases = [
            (4.7e9, "4.70 Gbit/s"),
            (190.72e9, "190.7 Gbit/s"),
            (959.6e6, "959.6 Mbit/s"),
            (7.9e6, "7.9 Mbit/s"),
            (12e3, "12.0 kbit/s"),
            (500.0, "500 bit/s"),
            (0.0, "0 bit/s"),
        ];
        for (bps, text) in cases {
            assert_eq!(rate(bps), text);
        }
    }

    #[test]
    fn rates() {
        assert_eq!(parse_rate("100mbit").unwrap(), 100_000_000);
        assert_eq!(parse_rate("1gbit").unwrap(), 1_000_000_000);
        assert_eq!(parse_rate("1.5Gbit").unwrap(), 1_500_000_000);
        assert_eq!(parse_rate("500kbit").unwrap(), 500_000);
        assert_eq!(parse_rate("1mbps").unwrap(), 8_000_000, "tc: mbps is bytes");
        assert!(parse_rate("0").unwrap_err().0.contains("positive"));
        assert!(parse_rate("0mbit").is_err());
        assert!(parse_rate("-1mbit").unwrap_err().0.contains("negative"));
        assert!(parse_rate("fast").is_err());
        assert!(parse_rate("10 furlongs").is_err());
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("10ms").unwrap(), Duration::from_millis(10));
        assert_eq!(parse_duration("6s").unwrap(), Duration::from_secs(6));
        assert_eq!(parse_duration("250us").unwrap(), Duration::from_micros(250));
        assert_eq!(parse_duration("1.5s").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse_duration("0").unwrap(), Duration::ZERO);
        assert!(parse_duration("-1ms").unwrap_err().0.contains("negative"));
        assert!(parse_duration("10").is_err(), "a bare number has no unit");
        assert!(parse_duration("nan").is_err());
    }

    #[test]
    fn fractions() {
        assert_eq!(parse_fraction("2%").unwrap(), 0.02);
        assert_eq!(parse_fraction("0.05").unwrap(), 0.05);
        assert_eq!(parse_fraction("0").unwrap(), 0.0);
        assert!(parse_fraction("150%").unwrap_err().0.contains("between"));
        assert!(parse_fraction("1.5").is_err());
        assert!(parse_fraction("-2%").is_err());
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("1bdp").unwrap(), Size::Bdp(1.0));
        assert_eq!(parse_size("0.5bdp").unwrap(), Size::Bdp(0.5));
        assert_eq!(parse_size("100pkt").unwrap(), Size::Packets(100));
        assert_eq!(parse_size("64kb").unwrap(), Size::Bytes(64_000));
        assert_eq!(parse_size("1mib").unwrap(), Size::Bytes(1 << 20));
        assert!(parse_size("1.5pkt").is_err());
        assert!(parse_size("lots").is_err());
    }

    #[test]
    fn lists() {
        assert_eq!(
            parse_list("0,2%,5%", parse_fraction).unwrap(),
            vec![0.0, 0.02, 0.05]
        );
        assert!(parse_list("0,,5%", parse_fraction).is_err());
        assert!(parse_list("0,x", parse_fraction).is_err());
    }
}
