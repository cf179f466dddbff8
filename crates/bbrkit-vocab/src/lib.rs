//! bbrkit's shared vocabulary: one type for each word more than one crate
//! uses — a rate, a size, a buffer size, the conditions of a path (rate,
//! RTT, loss, jitter, buffer), an algorithm's name, a BBR state — with the
//! one parser of their human spelling (`100mbit`, `10ms`, `2%`, `1bdp`) and
//! the one formatter of their human and JSON forms.
//!
//! Sim, lab, advise, trial, diag and the CLI all speak these types; none of
//! them defines its own. Must never do I/O, read a clock or depend on
//! another bbrkit crate: everything else depends on it.

#![forbid(unsafe_code)]
