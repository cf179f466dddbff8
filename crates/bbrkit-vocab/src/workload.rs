//! Request/response workloads, the words the lab, the simulator and a live
//! trial share: what objects are fetched ([`WorkloadSpec`]: one fixed size
//! or the `web` mix), the transfer-size classes results are reported in
//! ([`SizeClass`]: < 100 kB, 100 kB–1 MB, 1–10 MB, > 10 MB of payload),
//! and the per-class flow-completion-time summary ([`ClassFct`]) whose JSON
//! shape `bbrkit lab --workload` and `bbrkit sim --workload` both print.
//!

use std::collections::BTreeMap;

use serde::Serialize;

use crate::format::size;
use crate::size::parse_bytes;
use crate::stats::FctQuantiles;
use crate::units::UnitError;

/// Transfer-size classes: short transfers are dominated by the handshake
/// and slow start, long ones by the steady state, so completion times are
/// compared within a class (a live trial classifies by bytes acked).
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

    /// The class of a transfer of `bytes` payload bytes.
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

/// The `web` mix: (object bytes, weight in percent). Half the requests are
/// small page resources, a fifth a little larger, and the rest spread over
/// images, bundles and downloads, so that every size class sees requests
/// (its mean object is 821 kB; the median is 10 kB).
pub const WEB_MIX: [(u64, u32); 5] = [
    (10_000, 50),
    (50_000, 22),
    (300_000, 15),
    (4_000_000, 10),
    (12_000_000, 3),
];

/// What each request fetches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkloadSpec {
    /// Every object is this many bytes (`10kb`, `4mb`).
    Fixed(u64),
    /// Sizes drawn from [`WEB_MIX`].
    Web,
}

impl WorkloadSpec {
    /// The size of the request whose uniform draw is `u` (in `0..1`; the
    /// caller owns the randomness).
    pub fn object_bytes(self, u: f64) -> u64 {
        match self {
            WorkloadSpec::Fixed(b) => b,
            WorkloadSpec::Web => {
                let total: u32 = WEB_MIX.iter().map(|m| m.1).sum();
                let mut point = u.clamp(0.0, 1.0) * f64::from(total);
                for (bytes, weight) in WEB_MIX {
                    point -= f64::from(weight);
                    if point < 0.0 {
                        return bytes;
                    }
                }
                WEB_MIX[WEB_MIX.len() - 1].0
            }
        }
    }

    /// How a table names it: `10 kB objects`, `web mix`.
    pub fn label(self) -> String {
        match self {
            WorkloadSpec::Fixed(b) => format!("{} objects", size(b)),
            WorkloadSpec::Web => "web mix".into(),
        }
    }
}

impl std::str::FromStr for WorkloadSpec {
    type Err = UnitError;
    /// `web`, or one object size with a byte unit (`10kb`, `4mb`).
    fn from_str(s: &str) -> Result<Self, UnitError> {
        if s.trim().eq_ignore_ascii_case("web") {
            return Ok(WorkloadSpec::Web);
        }
        match parse_bytes(s) {
            Ok(0) => Err(UnitError(format!(
                "workload objects must not be empty: '{s}'"
            ))),
            Ok(b) => Ok(WorkloadSpec::Fixed(b)),
            Err(e) => Err(UnitError(format!("{e}; or 'web' for the size mix"))),
        }
    }
}

/// One size class of one algorithm's requests.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClassFct {
    /// Requests completed in this class.
    pub requests: u64,
    /// Flow completion time quantiles over them.
    pub fct_ms: FctQuantiles,
}

/// Completed requests as (payload bytes, completion time in ms), grouped
/// by [`SizeClass`]; classes without a request are left out.
pub fn fct_by_class(done: &[(u64, f64)]) -> BTreeMap<SizeClass, ClassFct> {
    let mut by: BTreeMap<SizeClass, Vec<f64>> = BTreeMap::new();
    for &(bytes, ms) in done {
        by.entry(SizeClass::of(bytes)).or_default().push(ms);
    }
    by.into_iter()
        .filter_map(|(class, v)| {
            let requests = v.len() as u64;
            let fct_ms = FctQuantiles::of(v)?;
            Some((class, ClassFct { requests, fct_ms }))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_have_the_trials_boundaries() {
        assert_eq!(SizeClass::of(0), SizeClass::Under100Kb);
        assert_eq!(SizeClass::of(99_999), SizeClass::Under100Kb);
        assert_eq!(SizeClass::of(100_000), SizeClass::To1Mb);
        assert_eq!(SizeClass::of(4_000_000), SizeClass::To10Mb);
        assert_eq!(SizeClass::of(10_000_000), SizeClass::Over10Mb);
        for (i, c) in SizeClass::ALL.iter().enumerate() {
            assert_eq!(c.index(), i);
        }
    }

    #[test]
    fn specs_parse() {
        assert_eq!("10kb".parse(), Ok(WorkloadSpec::Fixed(10_000)));
        assert_eq!("4mb".parse(), Ok(WorkloadSpec::Fixed(4_000_000)));
        assert_eq!("WEB".parse(), Ok(WorkloadSpec::Web));
        let e = "4000".parse::<WorkloadSpec>().unwrap_err().0;
        assert!(e.contains("no unit") && e.contains("web"), "{e}");
        assert!("0kb".parse::<WorkloadSpec>().is_err());
    }

    #[test]
    fn the_web_mix_follows_its_weights() {
        let n = 10_000;
        let sizes: Vec<u64> = (0..n)
            .map(|i| WorkloadSpec::Web.object_bytes((i as f64 + 0.5) / n as f64))
            .collect();
        for (bytes, weight) in WEB_MIX {
            let got = sizes.iter().filter(|&&s| s == bytes).count();
            assert_eq!(got, weight as usize * n / 100, "{bytes}");
        }
        assert_eq!(WorkloadSpec::Fixed(7).object_bytes(0.9), 7);
        let mean = WEB_MIX.iter().map(|m| m.0 * u64::from(m.1)).sum::<u64>() / 100;
        assert_eq!(mean, 821_000, "the documented mean");
    }

    #[test]
    fn quantiles_per_class() {
        let mut done: Vec<(u64, f64)> = (1..=100).map(|i| (10_000, f64::from(i))).collect();
        done.push((4_000_000, 500.0));
        let by = fct_by_class(&done);
        assert_eq!(by.len(), 2);
        let small = &by[&SizeClass::Under100Kb];
        assert_eq!(small.requests, 100);
        assert!((small.fct_ms.p50 - 50.5).abs() < 0.01, "{:?}", small.fct_ms);
        assert!(small.fct_ms.p90 > 89.0 && small.fct_ms.p90 < 91.5);
        assert!(small.fct_ms.p99 > 98.0 && small.fct_ms.p99 <= 100.0);
        assert_eq!(by[&SizeClass::To10Mb].fct_ms.p99, 500.0);
        let json = serde_json::to_string(&by).unwrap();
        assert!(
            json.starts_with(r#"{"lt_100kb":{"requests":100,"fct_ms":{"p50":"#),
            "{json}"
        );
    }
}
