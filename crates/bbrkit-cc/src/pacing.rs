//! Pacing-rate math (placeholder: being written; see issue 3).
