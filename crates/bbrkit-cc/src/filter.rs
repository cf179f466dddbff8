//! Windowed min/max filters (placeholder: being written; see issue 3).
