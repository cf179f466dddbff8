//! The shared words this crate needs before `bbrkit-vocab` has them: the
//! transfer-size classes (the lab's workload report uses the same ones),
//! flow-completion-time quantiles, and the human formatting of rates, byte
//! counts and fractions.
//!
//! Same names, boundaries, serde keys and labels as the vocabulary being
//! built for the lab (`bbrkit_vocab::{SizeClass, FctQuantiles}`,
//! `bbrkit_vocab::format`), so that switching to it is replacing this
//! module by re-exports. Must never hold anything trial-specific.

use serde::Serialize;

/// Transfer-size classes by payload bytes: short transfers are dominated by
/// the handshake and slow start, long ones by the steady state, so goodput
/// and completion times are compared within a class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum SizeClass {
    /// Fewer than 100 kB.
    #[serde(rename = "lt_100kb")]
    Under100Kb,
    /// 100 kB up to 1 MB.
    #[serde(rename = "100kb_1mb")]
    To1Mb,
    /// 1 MB up to 10 MB.
    #[serde(rename = "1mb_10mb")]
    To10Mb,
    /// 10 MB or more.
    #[serde(rename = "gt_10mb")]
    Over10Mb,
}

impl SizeClass {
    /// Every class, smallest first.
    pub const ALL: [SizeClass; 4] = [
        SizeClass::Under100Kb,
        SizeClass::To1Mb,
        SizeClass::To10Mb,
        SizeClass::Over10Mb,
    ];

    /// The class of a transfer of `bytes` payload bytes (decimal units).
    pub fn of(bytes: u64) -> SizeClass {
        match bytes {
            0..100_000 => SizeClass::Under100Kb,
            100_000..1_000_000 => SizeClass::To1Mb,
            1_000_000..10_000_000 => SizeClass::To10Mb,
            _ => SizeClass::Over10Mb,
        }
    }

    /// Position in [`SizeClass::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }

    /// How a table names it.
    pub fn label(self) -> &'static str {
        match self {
            SizeClass::Under100Kb => "< 100 kB",
            SizeClass::To1Mb => "100 kB-1 MB",
            SizeClass::To10Mb => "1-10 MB",
            SizeClass::Over10Mb => "> 10 MB",
        }
    }
}

/// Three quantiles of flow completion time, milliseconds (the lab's
/// workload report has the same keys).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct FctQuantiles {
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
}

/// A rate in bits per second for people, 3–4 significant digits:
/// `4.70 Gbit/s`, `959.6 Mbit/s`, `12.0 kbit/s`, `500 bit/s`.
pub fn rate(bps: f64) -> String {
    if bps >= 10e9 {
        format!("{:.1} Gbit/s", bps / 1e9)
    } else if bps >= 1e9 {
        format!("{:.2} Gbit/s", bps / 1e9)
    } else if bps >= 1e6 {
        format!("{:.1} Mbit/s", bps / 1e6)
    } else if bps >= 1e3 {
        format!("{:.1} kbit/s", bps / 1e3)
    } else {
        format!("{bps:.0} bit/s")
    }
}

/// A fraction (0..1) as a percentage with the precision it needs: `0%`,
/// `0.84%`, `2%`, `2.5%`.
pub fn pct(x: f64) -> String {
    let p = x * 100.0;
    if p == 0.0 {
        "0%".into()
    } else if p.abs() < 1.0 {
        format!("{p:.2}%")
    } else if (p - p.round()).abs() < 1e-9 {
        format!("{p:.0}%")
    } else {
        format!("{p:.1}%")
    }
}

/// A byte count: `512 B`, `125.0 kB`, `1.25 MB`, `4.20 GB` (decimal units).
pub fn bytes(b: u64) -> String {
    let f = b as f64;
    if b >= 1_000_000_000 {
        format!("{:.2} GB", f / 1e9)
    } else if b >= 1_000_000 {
        format!("{:.2} MB", f / 1e6)
    } else if b >= 1_000 {
        format!("{:.1} kB", f / 1e3)
    } else {
        format!("{b} B")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_have_the_issues_boundaries() {
        assert_eq!(SizeClass::of(0), SizeClass::Under100Kb);
        assert_eq!(SizeClass::of(99_999), SizeClass::Under100Kb);
        assert_eq!(SizeClass::of(100_000), SizeClass::To1Mb);
        assert_eq!(SizeClass::of(999_999), SizeClass::To1Mb);
        assert_eq!(SizeClass::of(1_000_000), SizeClass::To10Mb);
        assert_eq!(SizeClass::of(10_000_000), SizeClass::Over10Mb);
        for (i, c) in SizeClass::ALL.iter().enumerate() {
            assert_eq!(c.index(), i);
        }
    }

    #[test]
    fn human_forms() {
        assert_eq!(rate(4.7e9), "4.70 Gbit/s");
        assert_eq!(rate(8.9e6), "8.9 Mbit/s");
        assert_eq!(rate(500.0), "500 bit/s");
        assert_eq!(pct(0.0), "0%");
        assert_eq!(pct(0.0084), "0.84%");
        assert_eq!(pct(0.02), "2%");
        assert_eq!(pct(0.025), "2.5%");
        assert_eq!(bytes(512), "512 B");
        assert_eq!(bytes(4_200_000_000), "4.20 GB");
    }
}
