//! Sans-IO TCP congestion controllers: Reno, CUBIC, BBRv1, BBRv2 and BBRv3.
//!
//! Owns the controllers, the delivery-rate sampler, windowed min/max filters
//! and pacing-rate math. Must never read a clock, use global randomness or do
//! I/O: time and randomness are passed in by the caller.
