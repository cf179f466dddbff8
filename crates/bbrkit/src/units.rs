//! Human units on the command line and in tables: bbrkit-vocab's one
//! parser and formatter of rates (`100mbit`), durations (`10ms`), losses
//! (`2%`, `0.02`), sizes (`64kb`, `100pkt`, `1bdp`) and lists, gathered for
//! the command modules, and the clap value parsers that several commands
//! take: a positive duration, a trial's name.

pub use bbrkit_vocab::format::{bytes, pct, rate};
pub use bbrkit_vocab::size::parse_bytes;
pub use bbrkit_vocab::units::{parse_duration, parse_rate};

/// A `--flag TIME` that must be above zero (clap value parser).
pub fn positive_duration(text: &str) -> Result<std::time::Duration, String> {
    match parse_duration(text).map_err(|e| e.to_string())? {
        d if d.is_zero() => Err(format!("must be positive: '{text}'")),
        d => Ok(d),
    }
}

/// A name that is a Prometheus label value, a file name and a systemd
/// instance alike: 1 to 64 of `A-Z a-z 0-9 _ . -`, not starting with `.`
/// or `-`.
pub fn trial_name(text: &str) -> Result<String, String> {
    let ok = (1..=64).contains(&text.len())
        && !text.starts_with(['.', '-'])
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'));
    if ok {
        Ok(text.to_string())
    } else {
        Err(format!(
            "'{text}' is not a trial name: 1 to 64 letters, digits, '_', '.' or '-', \
             not starting with '.' or '-'"
        ))
    }
}
