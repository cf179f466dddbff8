//! The one error type of `bbrkit-advise`. Owns the wording of its failures;
//! must never hide the cause (the census or simulator error is the `source`).

/// Everything that can go wrong while sampling or predicting.
#[derive(Debug, thiserror::Error)]
pub enum AdviseError {
    /// A sock_diag census failed.
    #[error("taking the socket census")]
    Census(#[source] bbrkit_diag::DiagError),
    /// The simulator refused a path built from the estimates.
    #[error("simulating {what}")]
    Sim {
        /// The path and algorithm being simulated.
        what: String,
        /// The simulator's reason.
        #[source]
        source: bbrkit_sim::ConfigError,
    },
    /// Invalid options (a zero interval, a prefix longer than the address).
    #[error("{0}")]
    Invalid(String),
}
