//! The draw of a split's arm: the same arithmetic as the sock_ops program
//! (`bpf/policy.h`, `bkpol_mix` and `bkpol_pick_arm`), so user space can
//! predict and check every connection's arm.
//!
//! ```text
//!   key (by unit)                          h = mix(salt, a, b)         arm
//!   connection: a = socket cookie, b = 0   fmix64(fmix64(salt ^ a) ^ b)   x = ((h >> 32) * total) >> 32
//!   client:     the remote address         (murmur3's 64-bit finalizer)   first i with x < w0 + .. + wi
//!   prefix:     its /24 (IPv4), /48 (IPv6)
//! ```
//!
//! An address is two words: IPv4 `a` = the address as a big-endian `u32`,
//! `b` = 0; IPv6 `a`, `b` = the high and low 64 bits (big-endian). IPv4-mapped
//! IPv6 peers are keyed as IPv4. The salt is the caller's (a seed), so two
//! trials can split the same clients differently and a test can replay one.
//! `x` is uniform on `0..total` up to 2^-32, so each arm gets its weight's
//! share.

use std::net::IpAddr;

use crate::rule::Unit;

/// The /24 an IPv4 peer's network is keyed by ([`Unit::Prefix`]): the
/// usual allocation to one site.
pub const PREFIX_V4: u8 = 24;
/// The /48 an IPv6 peer's network is keyed by ([`Unit::Prefix`]): the usual
/// allocation to one site (RFC 6177).
pub const PREFIX_V6: u8 = 48;

/// murmur3's 64-bit finalizer (`fmix64`, Austin Appleby, public domain):
/// every input bit flips each output bit with probability ~1/2.
pub fn fmix64(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^ (x >> 33)
}

/// The draw's hash of two key words under `salt`.
pub fn mix(salt: u64, a: u64, b: u64) -> u64 {
    fmix64(fmix64(salt ^ a) ^ b)
}

/// The two key words of `unit` for a connection with this socket cookie and
/// remote address.
pub fn key(unit: Unit, cookie: u64, remote: IpAddr) -> (u64, u64) {
    let remote = remote.to_canonical();
    match (unit, remote) {
        (Unit::Connection, _) => (cookie, 0),
        (Unit::Client, IpAddr::V4(a)) => (u64::from(a.to_bits()), 0),
        (Unit::Prefix, IpAddr::V4(a)) => {
            (u64::from(a.to_bits() & (u32::MAX << (32 - PREFIX_V4))), 0)
        }
        (Unit::Client, IpAddr::V6(a)) => split128(a.to_bits()),
        (Unit::Prefix, IpAddr::V6(a)) => {
            split128(a.to_bits() & (u128::MAX << (128 - u32::from(PREFIX_V6))))
        }
    }
}

fn split128(x: u128) -> (u64, u64) {
    ((x >> 64) as u64, x as u64)
}

/// The arm a hash `h` draws among `weights` (`None` when every weight is 0).
pub fn pick_arm(weights: &[u16], h: u64) -> Option<usize> {
    let total: u64 = weights.iter().map(|&w| u64::from(w)).sum();
    if total == 0 {
        return None;
    }
    let x = ((h >> 32) * total) >> 32;
    let mut cum = 0u64;
    weights.iter().position(|&w| {
        cum += u64::from(w);
        x < cum
    })
}

/// The arm a connection draws: [`pick_arm`] of [`mix`] of its [`key`].
pub fn arm(salt: u64, unit: Unit, weights: &[u16], cookie: u64, remote: IpAddr) -> Option<usize> {
    let (a, b) = key(unit, cookie, remote);
    pick_arm(weights, mix(salt, a, b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fmix64_known_values() {
        // Reference values of murmur3's fmix64.
        assert_eq!(fmix64(0), 0);
        assert_eq!(fmix64(1), 0xb456_bcfc_34c2_cb2c);
    }

    #[test]
    fn keys_follow_the_unit() {
        let a: IpAddr = "203.0.113.77".parse().unwrap();
        let mapped: IpAddr = "::ffff:203.0.113.77".parse().unwrap();
        assert_eq!(key(Unit::Client, 9, a), (0xcb00_714d, 0));
        assert_eq!(key(Unit::Client, 9, mapped), key(Unit::Client, 1, a));
        assert_eq!(key(Unit::Prefix, 9, a), (0xcb00_7100, 0));
        assert_eq!(key(Unit::Connection, 9, a), (9, 0));
        let v6: IpAddr = "2001:db8:1:2::5".parse().unwrap();
        assert_eq!(key(Unit::Client, 0, v6), (0x2001_0db8_0001_0002, 5));
        assert_eq!(key(Unit::Prefix, 0, v6), (0x2001_0db8_0001_0000, 0));
    }

    #[test]
    fn arms_get_their_weights_share_and_zero_weights_nothing() {
        assert_eq!(pick_arm(&[0, 0], 1), None);
        assert_eq!(pick_arm(&[0, 5], 0), Some(1));
        assert_eq!(pick_arm(&[5, 0], u64::MAX), Some(0));
        let w = [50u16, 30, 20];
        let mut counts = [0u32; 3];
        for cookie in 0..100_000u64 {
            let i = arm(12345, Unit::Connection, &w, cookie, "::1".parse().unwrap()).unwrap();
            counts[i] += 1;
        }
        // Binomial sd for p = 0.5, n = 1e5 is 158: 5 sd is 790.
        for (c, p) in counts.iter().zip([0.5, 0.3, 0.2]) {
            let expect = 100_000.0 * p;
            assert!((f64::from(*c) - expect).abs() < 800.0, "{counts:?}");
        }
    }
}
