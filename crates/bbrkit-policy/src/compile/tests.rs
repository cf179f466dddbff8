use std::net::{Ipv4Addr, Ipv6Addr};

use rand_core::Rng;
use rand_pcg::Pcg64;

use super::*;
use crate::file::parse;
use crate::rule::Action;

fn policy(text: &str) -> Policy {
    parse("t", text).unwrap()
}

fn entries(t: &[TrieEntry]) -> Vec<(String, u64)> {
    t.iter()
        .map(|e| {
            let net = match e.key.len() {
                4 => IpNet::new(
                    IpAddr::from(<[u8; 4]>::try_from(&e.key[..]).unwrap()),
                    e.len,
                ),
                16 => IpNet::new(
                    IpAddr::from(<[u8; 16]>::try_from(&e.key[..]).unwrap()),
                    e.len,
                ),
                _ => unreachable!(),
            };
            (net.unwrap().to_string(), e.rules)
        })
        .collect()
}

#[test]
fn nested_prefixes_carry_every_containing_rule() {
    let p = policy(
        r#"
[[rule]]
remote = ["10.1.0.0/16"]
cc = "bbr"
[[rule]]
remote = ["10.0.0.0/8", "2001:db8::/32"]
cc = "bbr3"
[[rule]]
local_port = [443]
cc = "cubic"
"#,
    );
    let c = Compiled::new(&p, 7);
    assert_eq!(
        entries(&c.v4),
        [
            ("0.0.0.0/0".to_string(), 0b100),
            ("10.0.0.0/8".to_string(), 0b110),
            ("10.1.0.0/16".to_string(), 0b111),
        ]
    );
    assert_eq!(
        entries(&c.v6),
        [
            ("::/0".to_string(), 0b100),
            ("2001:db8::/32".to_string(), 0b110)
        ]
    );
    // Rule 3's port, and /0 for the rules without local_port.
    let lp: Vec<(Vec<u8>, u8, u64)> = c
        .local_port
        .iter()
        .map(|e| (e.key.clone(), e.len, e.rules))
        .collect();
    assert_eq!(lp, [(vec![0, 0], 0, 0b011), (vec![1, 0xbb], 16, 0b111)]);
    let d = |a: &str, lport| {
        c.decide(a.parse().unwrap(), lport, 40000, 1)
            .map(|d| d.rule)
    };
    assert_eq!(d("10.1.2.3", 80), Some(0));
    assert_eq!(d("10.2.2.3", 80), Some(1));
    assert_eq!(d("::ffff:10.2.2.3", 80), Some(1));
    assert_eq!(d("192.0.2.1", 443), Some(2));
    assert_eq!(d("192.0.2.1", 80), None);
    assert_eq!(d("2001:db8::9", 80), Some(1));
}

#[test]
fn port_ranges_become_aligned_blocks() {
    let blocks = |a, b| port_blocks(PortRange { first: a, last: b });
    assert_eq!(blocks(443, 443), [(443, 16)]);
    assert_eq!(blocks(8000, 8007), [(8000, 13)]);
    assert_eq!(blocks(1, 65535).len(), 16);
    assert_eq!(
        blocks(1024, 65535),
        [
            (1024, 6),
            (2048, 5),
            (4096, 4),
            (8192, 3),
            (16384, 2),
            (32768, 1)
        ]
    );
    for (a, b) in [(1, 2), (3, 1000), (8000, 8100), (65535, 65535), (2, 65534)] {
        let bl = blocks(a, b);
        assert!(bl.len() <= 30);
        let covered: u32 = bl.iter().map(|(_, len)| 1u32 << (16 - len)).sum();
        assert_eq!(covered, u32::from(b - a + 1), "{a}-{b}");
        for (p, len) in bl {
            assert_eq!(p % (1 << (16 - len)), 0, "aligned");
            assert!(p >= u128::from(a) && p + (1 << (16 - len)) - 1 <= u128::from(b));
        }
    }
}

#[test]
fn compiling_is_deterministic_and_order_of_a_list_does_not_matter() {
    let a = policy(
        "[[rule]]\nremote = [\"10.0.0.0/8\", \"192.0.2.0/24\", \"10.0.0.0/8\"]\ncc = \"bbr\"\n",
    );
    let b = policy("[[rule]]\nremote = [\"192.0.2.0/24\", \"10.0.0.0/8\"]\ncc = \"bbr\"\n");
    assert_eq!(Compiled::new(&a, 1), Compiled::new(&b, 1));
    assert_ne!(
        Compiled::new(&a, 1),
        Compiled::new(&a, 2),
        "the salt is part of the image"
    );
}

/// A random rule: a few prefixes around a small pool of networks (so they
/// nest and overlap), a few ports and ranges, or missing keys.
fn random_rule(rng: &mut Pcg64) -> Rule {
    let mut pick = |n: u64| rng.next_u64() % n;
    let remote = (pick(3) > 0).then(|| {
        (0..1 + pick(3))
            .map(|_| {
                if pick(2) == 0 {
                    let a = Ipv4Addr::new(10, pick(3) as u8, pick(3) as u8, pick(4) as u8);
                    IpNet::new(a.into(), pick(33) as u8).unwrap().trunc()
                } else {
                    let a =
                        Ipv6Addr::new(0x2001, 0xdb8, pick(3) as u16, 0, 0, 0, 0, pick(4) as u16);
                    IpNet::new(a.into(), pick(129) as u8).unwrap().trunc()
                }
            })
            .collect()
    });
    let mut ports = || {
        (pick(2) > 0).then(|| {
            (0..1 + pick(2))
                .map(|_| {
                    let a = 1 + pick(20) as u16;
                    PortRange {
                        first: a,
                        last: a + pick(6) as u16,
                    }
                })
                .collect()
        })
    };
    let (local_port, remote_port) = (ports(), ports());
    Rule {
        name: None,
        remote,
        local_port,
        remote_port,
        action: Action::Cc { cc: "cubic".into() },
        record: false,
    }
}

/// The compiled tries decide exactly as the rules read in order do, on
/// random policies and random connections (seeded; printed).
#[test]
fn compiled_decisions_equal_first_match() {
    let seed = bbrkit_cc::testing::test_seed(0x5eed_0019);
    let mut rng = Pcg64::new(u128::from(seed), 0x0a02_bdbf_7bb3_c0a7_ac28_fa16_a64a_bf96);
    for _ in 0..200 {
        let n = 1 + rng.next_u64() % 8;
        let rules = (0..n).map(|_| random_rule(&mut rng)).collect();
        let p = Policy::new("t", rules).unwrap();
        let c = Compiled::new(&p, rng.next_u64());
        for _ in 0..200 {
            let mut pick = |n: u64| rng.next_u64() % n;
            let remote: IpAddr = match pick(3) {
                0 => Ipv4Addr::new(10, pick(3) as u8, pick(3) as u8, pick(256) as u8).into(),
                1 => Ipv4Addr::new(10, pick(3) as u8, pick(3) as u8, pick(4) as u8)
                    .to_ipv6_mapped()
                    .into(),
                _ => {
                    Ipv6Addr::new(0x2001, 0xdb8, pick(3) as u16, 0, 0, 0, 0, pick(6) as u16).into()
                }
            };
            let (lp, rp) = (1 + pick(30) as u16, 1 + pick(30) as u16);
            assert_eq!(
                c.decide(remote, lp, rp, 0).map(|d| d.rule),
                p.first_match(remote, lp, rp),
                "{remote} {lp} {rp} in {p:#?}"
            );
        }
    }
}
