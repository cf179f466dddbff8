//! Sans-IO TCP congestion controllers: Reno, CUBIC, BBRv1, BBRv2 and BBRv3.
//!
//! Owns the controllers, the delivery-rate sampler ([`rate`]), windowed
//! min/max filters ([`filter`]) and pacing-rate math ([`pacing`]). Must never
//! read a clock, use global randomness or do I/O: time arrives in
//! [`Tcp::now`], randomness through a [`Random`] given at construction.
//!
//! The interface mirrors Linux `tcp_congestion_ops` (see [`controller`]), so
//! each algorithm can follow its kernel reference line by line. Pick one by
//! name with [`Algorithm`] (`"bbr"` means BBRv1, as in the kernel) and drive it
//! through [`AnyController`].
//!
//! [`transport`] is the one TCP transport (scoreboard, RACK, PRR and
//! recovery, RTT estimator and RTO, rate-sampling hand-off, pacing),
//! generic over the controller: `bbrkit-sim` runs every flow on it, and it
//! is the reference for how a transport must call a controller. `testing`
//! (this crate's tests, or the `testing` feature) puts it on a small
//! synthetic path for the unit, property and snapshot tests. `docs/cc.md` documents the interface, the call order and
//! every deliberate deviation from the kernel references.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod algorithm;
pub mod bbr1;
pub mod bbr3;
pub mod controller;
pub mod cubic;
pub mod filter;
pub mod pacing;
pub mod random;
pub mod rate;
pub mod reno;
pub mod tcp;
pub mod tcp_cong;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
pub mod time;
pub mod transport;

pub use algorithm::{Algorithm, AnyController, UnknownAlgorithm};
pub use controller::{CongestionControl, Status};
pub use random::{Random, SeededRng};
pub use rate::{RateSample, TxSnapshot};
pub use tcp::{AckSample, CaEvent, CaState, Tcp};
pub use time::{Duration, Instant};
