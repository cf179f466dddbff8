use std::mem::{offset_of, size_of};

use libbpf_rs::btf::types::{MemberAttr, Struct};
use libbpf_rs::btf::{Btf, HasSize};

use zerocopy::FromZeros;

use super::*;

/// `(member, byte offset)` of struct `name` in the object's BTF, and its size.
fn btf_layout(name: &str) -> (Vec<(String, usize)>, usize) {
    let bytes = crate::sockops::object_bytes();
    let btf = Btf::from_raw("bkpol", bytes)
        .expect("parse the object")
        .expect("the object has BTF");
    let s: Struct<'_> = btf
        .type_by_name(name)
        .unwrap_or_else(|| panic!("struct {name} in BTF"));
    let members = s
        .iter()
        .map(|m| {
            let bits = match m.attr {
                MemberAttr::Normal { offset } | MemberAttr::BitField { offset, .. } => offset,
            };
            let n = m
                .name
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            (n, bits as usize / 8)
        })
        .collect();
    (members, s.size())
}

macro_rules! rust_layout {
    ($t:ty, [$($f:ident),* $(,)?]) => {
        (vec![$((stringify!($f).to_string(), offset_of!($t, $f))),*], size_of::<$t>())
    };
}

/// Every struct the program and the loader share has the same members at
/// the same offsets and the same size on both sides.
#[test]
fn rust_mirror_matches_the_objects_btf() {
    assert_eq!(
        btf_layout("bkpol_rule"),
        rust_layout!(RawRule, [weights, cc, narms, unit, flags, pad])
    );
    assert_eq!(
        btf_layout("bkpol_cfg"),
        rust_layout!(RawCfg, [salt, nrules, pad])
    );
    assert_eq!(
        btf_layout("bkpol_conn"),
        rust_layout!(RawConn, [start_ns, rule, arm, flags, pad])
    );
    assert_eq!(
        btf_layout("bkpol_hits"),
        rust_layout!(RawHits, [matched, assigned, kept_app, kept_route, failed])
    );
    assert_eq!(
        btf_layout("bkpol_record"),
        rust_layout!(
            RawRecord,
            [
                cookie,
                start_ns,
                end_ns,
                bytes_acked,
                bytes_received,
                bytes_retrans,
                busy_us,
                rwnd_limited_us,
                sndbuf_limited_us,
                segs_out,
                total_retrans,
                lost,
                delivered,
                min_rtt_us,
                srtt_us,
                remote,
                family,
                local_port,
                remote_port,
                rule,
                arm,
                flags,
                pad,
                cc
            ]
        )
    );
}

#[test]
fn rule_rows_round_trip() {
    let e = RuleEntry {
        arms: vec![
            Arm {
                cc: "cubic".into(),
                weight: 70,
            },
            Arm {
                cc: "bbr3".into(),
                weight: 0,
            },
            Arm {
                cc: "bbr".into(),
                weight: 65535,
            },
        ],
        unit: Unit::Prefix,
        record: true,
    };
    let raw = RawRule::from_entry(&e);
    assert_eq!(raw.weights, 70 | (65535 << 32));
    assert_eq!(&raw.cc[1][..5], b"bbr3\0");
    let back = RawRule::read_from_bytes(raw.as_bytes()).unwrap();
    assert_eq!(back.to_entry(), Some(e));
}

#[test]
fn records_decode_addresses_flags_and_names() {
    let mut raw = RawRecord::new_zeroed();
    raw.cookie = 77;
    raw.family = libc::AF_INET as u16;
    raw.remote[0] = u32::from_ne_bytes([203, 0, 113, 9]);
    raw.flags = flags::ASSIGNED | flags::PASSIVE;
    raw.rule = 3;
    raw.arm = 1;
    raw.cc[..4].copy_from_slice(b"bbr3");
    raw.local_port = 443;
    let r = RawRecord::parse(raw.as_bytes()).unwrap().to_conn_record();
    assert_eq!(r.remote, "203.0.113.9".parse::<IpAddr>().unwrap());
    assert_eq!(
        (r.cookie, r.rule, r.arm, r.local_port),
        (77, Some(3), 1, 443)
    );
    assert_eq!(r.cc, "bbr3");
    assert!(r.assigned);
    assert_eq!(r.direction, Direction::Passive);
    raw.family = libc::AF_INET6 as u16;
    let v6: Ipv6Addr = "2001:db8::7".parse().unwrap();
    for (i, w) in v6.octets().chunks(4).enumerate() {
        raw.remote[i] = u32::from_ne_bytes(w.try_into().unwrap());
    }
    raw.flags = flags::APP;
    let r = RawRecord::parse(raw.as_bytes()).unwrap().to_conn_record();
    assert_eq!(r.remote, IpAddr::V6(v6));
    assert!(!r.assigned);
    assert_eq!(r.direction, Direction::Active);
    assert!(RawRecord::parse(&raw.as_bytes()[1..]).is_none());
}

#[test]
fn trie_entries_round_trip() {
    let e = TrieEntry {
        key: vec![203, 0, 113, 0],
        len: 24,
        rules: 0b101,
    };
    let k = trie_key(&e);
    assert_eq!(k.len(), 8);
    assert_eq!(trie_entry(&k, &0b101u64.to_ne_bytes()), Some(e));
}
