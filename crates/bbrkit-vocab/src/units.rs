//! The one parser of the human spellings on bbrkit's command lines: rates
//! (`100mbit`), durations (`10ms`), loss probabilities (`2%`, `0.02`) and
//! comma-separated lists of any of them. Sizes are in [`crate::size`].
//!
//! Rate suffixes follow `tc(8)`: `bit`, `kbit`, `mbit`, `gbit`, `tbit` are
//! bits per second (powers of 1000); `bps`, `kbps`, `mbps`, `gbps` are
//! *bytes* per second, as in tc. A bare number is refused wherever its unit
//! would be a guess (`--rate 100` once ran a 100 bit/s path), except `0`
//! where zero is meaningful. Every parser rejects negative, NaN and
//! infinite values with a message that names the offending text.

use std::time::Duration;

/// An error naming the text that could not be parsed and what was expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct UnitError(pub String);

/// Splits `text` into a leading non-negative finite number and its
/// lower-case suffix.
pub(crate) fn number_and_suffix(text: &str, what: &str) -> Result<(f64, String), UnitError> {
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

/// A rate in bits per second, e.g. `100mbit` → 100_000_000. Zero and a
/// bare number are rejected.
pub fn parse_rate(text: &str) -> Result<u64, UnitError> {
    let (v, suffix) = number_and_suffix(text, "rate")?;
    let bits_per_unit = match suffix.as_str() {
        "" if v == 0.0 => return Err(UnitError(format!("rate must be positive: '{text}'"))),
        "" => {
            return Err(UnitError(format!(
                "rate '{text}' has no unit (write e.g. {n}mbit, {n}kbit or {n}bit: bits per second)",
                n = text.trim()
            )));
        }
        "bit" => 1.0,
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

/// The largest loss probability accepted as a bare fraction: `0.02` is 2 %,
/// but `0.5` is far more often a typo for `0.5%` than a 50 % loss, so from
/// here on the `%` must be written.
pub const BARE_FRACTION_LIMIT: f64 = 0.2;

/// A loss probability in 0..=1 from `2%` or `0.02`. A bare fraction of
/// [`BARE_FRACTION_LIMIT`] or more is refused with a hint (write `50%` to
/// mean it).
pub fn parse_loss(text: &str) -> Result<f64, UnitError> {
    let (v, suffix) = number_and_suffix(text, "loss")?;
    let p = match suffix.as_str() {
        "%" => v / 100.0,
        "" if v >= BARE_FRACTION_LIMIT => {
            let t = text.trim();
            return Err(UnitError(format!(
                "loss '{t}' without % would mean {}% (write {}% if you mean it, or {t}% for {t} percent)",
                crate::format::number(v * 100.0),
                crate::format::number(v * 100.0),
            )));
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates() {
        assert_eq!(parse_rate("100mbit").unwrap(), 100_000_000);
        assert_eq!(parse_rate("1gbit").unwrap(), 1_000_000_000);
        assert_eq!(parse_rate("1.5Gbit").unwrap(), 1_500_000_000);
        assert_eq!(parse_rate("500kbit").unwrap(), 500_000);
        assert_eq!(parse_rate("100bit").unwrap(), 100);
        assert_eq!(parse_rate("1mbps").unwrap(), 8_000_000, "tc: mbps is bytes");
        assert!(parse_rate("0mbit").unwrap_err().0.contains("positive"));
        assert!(parse_rate("-1mbit").unwrap_err().0.contains("negative"));
        assert!(parse_rate("fast").is_err());
        assert!(parse_rate("10 furlongs").is_err());
    }

    #[test]
    fn a_bare_rate_is_refused_with_a_hint() {
        let e = parse_rate("100").unwrap_err().0;
        assert!(e.contains("no unit") && e.contains("100mbit"), "{e}");
        assert!(parse_rate("0").unwrap_err().0.contains("positive"));
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
    fn losses() {
        assert_eq!(parse_loss("2%").unwrap(), 0.02);
        assert_eq!(parse_loss("0.05").unwrap(), 0.05);
        assert_eq!(parse_loss("0.19").unwrap(), 0.19);
        assert_eq!(parse_loss("0").unwrap(), 0.0);
        assert_eq!(parse_loss("50%").unwrap(), 0.5);
        assert!(parse_loss("150%").unwrap_err().0.contains("between"));
        assert!(parse_loss("-2%").is_err());
    }

    #[test]
    fn a_large_bare_fraction_is_refused_with_a_hint() {
        let e = parse_loss("0.5").unwrap_err().0;
        assert!(e.contains("50%") && e.contains("0.5%"), "{e}");
        let e = parse_loss("2").unwrap_err().0;
        assert!(e.contains("200%") && e.contains("2%"), "{e}");
        assert!(parse_loss("0.2").is_err());
        assert!(parse_loss("1").is_err());
    }

    #[test]
    fn lists() {
        assert_eq!(
            parse_list("0,2%,5%", parse_loss).unwrap(),
            vec![0.0, 0.02, 0.05]
        );
        assert!(parse_list("0,,5%", parse_loss).is_err());
        assert!(parse_list("0,x", parse_loss).is_err());
    }
}
