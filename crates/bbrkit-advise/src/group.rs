//! Groups of connections by remote prefix, and each group's aggregates.
//!
//! Owns the prefix of an address (IPv4-mapped IPv6 addresses count as IPv4,
//! so a dual-stack listener's clients group with the IPv4 ones) and the
//! per-group sums. Must never estimate anything a formula in
//! [`crate::estimate`] owns.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::estimate::{self, Interval, Limited};
use crate::track::Conn;

/// The network of `addr` with `v4` / `v6` prefix bits, as `a.b.c.d/len`.
pub fn prefix_of(addr: IpAddr, v4: u8, v6: u8) -> String {
    match canonical(addr) {
        IpAddr::V4(a) => {
            let bits = u32::from(a) & mask32(v4);
            format!("{}/{v4}", Ipv4Addr::from(bits))
        }
        IpAddr::V6(a) => {
            let bits = u128::from(a) & mask128(v6);
            format!("{}/{v6}", Ipv6Addr::from(bits))
        }
    }
}

/// `addr` with an IPv4-mapped IPv6 address turned into IPv4.
pub fn canonical(addr: IpAddr) -> IpAddr {
    match addr {
        IpAddr::V6(a) => a.to_ipv4_mapped().map_or(addr, IpAddr::V4),
        a => a,
    }
}

fn mask32(len: u8) -> u32 {
    u32::MAX
        .checked_shl(32 - u32::from(len.min(32)))
        .unwrap_or(0)
}

fn mask128(len: u8) -> u128 {
    u128::MAX
        .checked_shl(128 - u32::from(len.min(128)))
        .unwrap_or(0)
}

/// What the connections of one prefix did during the window.
#[derive(Debug, Clone, PartialEq)]
pub struct Group {
    /// `198.51.100.0/24`, `2001:db8::/48`.
    pub prefix: String,
    /// One remote address of the group (where its link is looked up).
    pub address: IpAddr,
    /// The prefix is a loopback network: its connections never leave this
    /// host, so no network path limits them.
    pub loopback: bool,
    /// Distinct connections seen.
    pub connections: usize,
    /// Bytes this host sent and the peers acknowledged.
    pub bytes_sent: u64,
    /// Bytes this host received.
    pub bytes_received: u64,
    /// Data segments this host sent (retransmissions included).
    pub segments_sent: u64,
    /// Segments this host retransmitted.
    pub segments_retransmitted: u64,
    /// Smallest minimum RTT of any connection, µs.
    pub min_rtt_us: Option<u32>,
    /// Mean smoothed RTT over every sample of every connection, µs.
    pub mean_srtt_us: Option<f64>,
    /// Loss the sender saw and its 95 % interval (`None`: sent no data).
    pub loss: Option<Interval>,
    /// Time fractions (`None`: no connection seen twice).
    pub limited: Option<Limited>,
    /// Throughput while busy, per connection, bits/s.
    pub throughput_bits_per_second: Option<f64>,
    /// Highest delivery rate any connection measured while not app-limited, bits/s.
    pub max_delivery_rate_bits_per_second: Option<f64>,
    /// Connections per algorithm.
    pub cc: BTreeMap<String, usize>,
    /// The algorithm that carried the most bytes sent (else the most connections).
    pub main_cc: Option<String>,
}

/// Groups `conns` by remote prefix; sorted by bytes (sent + received), largest first.
pub fn groups<'a>(conns: impl IntoIterator<Item = &'a Conn>, v4: u8, v6: u8) -> Vec<Group> {
    let mut by: BTreeMap<String, Vec<&Conn>> = BTreeMap::new();
    for c in conns {
        by.entry(prefix_of(c.remote.ip(), v4, v6))
            .or_default()
            .push(c);
    }
    let mut out: Vec<Group> = by.into_iter().map(|(p, cs)| aggregate(p, &cs)).collect();
    out.sort_by(|a, b| {
        (b.bytes_sent + b.bytes_received)
            .cmp(&(a.bytes_sent + a.bytes_received))
            .then_with(|| a.prefix.cmp(&b.prefix))
    });
    out
}

fn aggregate(prefix: String, cs: &[&Conn]) -> Group {
    let (segments_sent, segments_retransmitted) = estimate::segments(cs.iter().copied());
    let mut cc: BTreeMap<String, usize> = BTreeMap::new();
    let mut cc_bytes: BTreeMap<String, u64> = BTreeMap::new();
    let (mut srtt_sum, mut srtt_n) = (0u64, 0u64);
    for c in cs {
        let name = c.cc.clone().unwrap_or_else(|| "unknown".into());
        *cc.entry(name.clone()).or_default() += 1;
        *cc_bytes.entry(name).or_default() += c.window().bytes_acked;
        srtt_sum += c.srtt_sum_us;
        srtt_n += u64::from(c.srtt_samples);
    }
    let main_cc = cc_bytes
        .iter()
        .max_by_key(|(name, bytes)| (**bytes, cc[*name]))
        .map(|(name, _)| name.clone());
    let max_rate = cs.iter().map(|c| c.max_delivery_rate).max().unwrap_or(0);
    let address = canonical(cs[0].remote.ip()); // a group has a connection
    Group {
        prefix,
        address,
        loopback: address.is_loopback(),
        connections: cs.len(),
        bytes_sent: cs.iter().map(|c| c.window().bytes_acked).sum(),
        bytes_received: cs.iter().map(|c| c.window().bytes_received).sum(),
        segments_sent,
        segments_retransmitted,
        min_rtt_us: cs.iter().filter_map(|c| c.min_rtt_us).min(),
        mean_srtt_us: (srtt_n > 0).then(|| srtt_sum as f64 / srtt_n as f64),
        loss: estimate::loss(cs.iter().copied()),
        limited: estimate::limited(cs.iter().copied()),
        throughput_bits_per_second: estimate::throughput(cs.iter().copied()),
        max_delivery_rate_bits_per_second: (max_rate > 0).then_some(max_rate as f64 * 8.0),
        cc,
        main_cc,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_mask_and_map() {
        let p = |s: &str, a, b| prefix_of(s.parse().unwrap(), a, b);
        assert_eq!(p("198.51.100.77", 24, 48), "198.51.100.0/24");
        assert_eq!(p("198.51.100.77", 16, 48), "198.51.0.0/16");
        assert_eq!(p("198.51.100.77", 32, 48), "198.51.100.77/32");
        assert_eq!(p("198.51.100.77", 0, 48), "0.0.0.0/0");
        assert_eq!(p("2001:db8:1:2::9", 24, 48), "2001:db8:1::/48");
        assert_eq!(p("2001:db8:1:2::9", 24, 128), "2001:db8:1:2::9/128");
        assert_eq!(p("::ffff:192.0.2.9", 24, 48), "192.0.2.0/24");
    }
}
