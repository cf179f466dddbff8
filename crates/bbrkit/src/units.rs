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
/// instance alike (`bbrkit_trial::render::check_name`).
pub fn trial_name(text: &str) -> Result<String, String> {
    bbrkit_trial::render::check_name(text).map(|()| text.to_string())
}
