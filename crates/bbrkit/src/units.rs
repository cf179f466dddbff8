//! Human units on the command line and in tables: bbrkit-vocab's one
//! parser and formatter of rates (`100mbit`), durations (`10ms`), losses
//! (`2%`, `0.02`), sizes (`64kb`, `100pkt`, `1bdp`) and lists, gathered for
//! the command modules. Nothing is implemented here.

pub use bbrkit_vocab::format::{bytes, pct, rate};
pub use bbrkit_vocab::size::{parse_bytes, parse_size};
pub use bbrkit_vocab::units::{UnitError, parse_duration, parse_list, parse_loss, parse_rate};
