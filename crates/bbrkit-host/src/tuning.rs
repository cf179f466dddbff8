//! The tuning set (`enable --tune`): the keys, bbrkit's values, why, and
//! which way each may move from the value found ([`Direction`]). Data only,
//! at the bottom of the crate's imports: [`crate::snapshot`] reads these
//! keys, [`crate::change::sysctl`] plans and writes them,
//! [`crate::change::persist`] puts them in bbrkit's sysctl.d file and judges
//! the files that override them.

/// Which way a tuning value may move from the value found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Raise only: each whitespace-separated field becomes at least
    /// bbrkit's (a buffer size, a probing level).
    AtLeast,
    /// Lower only: each field becomes at most bbrkit's (a limit where
    /// smaller is tighter).
    AtMost,
    /// bbrkit's value as it is (a switch).
    Exactly,
}

/// One key of the tuning set (`--tune`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tuning {
    /// Dotted key.
    pub key: &'static str,
    /// bbrkit's value.
    pub value: &'static str,
    /// One-line rationale.
    pub why: &'static str,
    /// How it moves from the value found.
    pub direction: Direction,
}

/// The tuning set (`--tune`), from the seed articles.
pub const TUNING: &[Tuning] = &[
    Tuning {
        key: "net.core.rmem_max",
        value: "67108864",
        why: "largest receive buffer a socket may request: 64 MiB for long fat paths",
        direction: Direction::AtLeast,
    },
    Tuning {
        key: "net.core.wmem_max",
        value: "67108864",
        why: "largest send buffer a socket may request: 64 MiB",
        direction: Direction::AtLeast,
    },
    Tuning {
        key: "net.ipv4.tcp_rmem",
        value: "4096 87380 33554432",
        why: "TCP receive autotuning min/default/max: up to 32 MiB (BDP of 1 Gbit/s x 250 ms)",
        direction: Direction::AtLeast,
    },
    Tuning {
        key: "net.ipv4.tcp_wmem",
        value: "4096 65536 33554432",
        why: "TCP send autotuning min/default/max: up to 32 MiB",
        direction: Direction::AtLeast,
    },
    Tuning {
        key: "net.ipv4.tcp_notsent_lowat",
        value: "131072",
        why: "keep at most 128 KiB unsent in the socket: less latency and memory, BBR still fills the pipe",
        direction: Direction::AtMost,
    },
    Tuning {
        key: "net.ipv4.tcp_mtu_probing",
        value: "1",
        why: "probe the path MTU after an ICMP black hole instead of stalling",
        direction: Direction::AtLeast,
    },
    Tuning {
        key: "net.ipv4.tcp_slow_start_after_idle",
        value: "0",
        why: "keep cwnd after idle periods so bursts after a pause need no new slow start",
        direction: Direction::Exactly,
    },
];
