//! The wire parser against captured kernel answers (see `fixtures/README.md`)
//! and variants derived from them: older and newer `tcp_info` lengths, BBRv3
//! info, and malformed framing. No root needed.

use bbrkit_diag::wire::{self, Progress};
use bbrkit_diag::{DiagError, Socket, TcpState};

fn fixture(name: &str) -> Vec<u8> {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn parse(buf: &[u8]) -> Result<(Vec<Socket>, Progress), DiagError> {
    let mut out = Vec::new();
    let p = wire::parse_datagram(buf, "IPv4", &mut |s| out.push(s))?;
    Ok((out, p))
}

/// A netlink message as (type, flags, seq, pid, payload), for re-encoding.
struct Msg {
    head: [u8; 16],
    payload: Vec<u8>,
}

fn split_msgs(buf: &[u8]) -> Vec<Msg> {
    let mut out = Vec::new();
    let mut off = 0;
    while off < buf.len() {
        let len = u32::from_ne_bytes(buf[off..off + 4].try_into().unwrap()) as usize;
        out.push(Msg {
            head: buf[off..off + 16].try_into().unwrap(),
            payload: buf[off + 16..off + len].to_vec(),
        });
        off += (len + 3) & !3;
    }
    out
}

fn join_msgs(msgs: &[Msg]) -> Vec<u8> {
    let mut b = Vec::new();
    for m in msgs {
        let mut head = m.head;
        head[..4].copy_from_slice(&((16 + m.payload.len()) as u32).to_ne_bytes());
        b.extend_from_slice(&head);
        b.extend_from_slice(&m.payload);
        while !b.len().is_multiple_of(4) {
            b.push(0);
        }
    }
    b
}

/// The attributes of an inet_diag_msg payload as (type, data).
fn split_attrs(p: &[u8]) -> (Vec<u8>, Vec<(u16, Vec<u8>)>) {
    let mut attrs = Vec::new();
    let mut off = 72;
    while off + 4 <= p.len() {
        let len = u16::from_ne_bytes([p[off], p[off + 1]]) as usize;
        let kind = u16::from_ne_bytes([p[off + 2], p[off + 3]]);
        attrs.push((kind, p[off + 4..off + len].to_vec()));
        off += (len + 3) & !3;
    }
    (p[..72].to_vec(), attrs)
}

fn join_attrs(head: &[u8], attrs: &[(u16, Vec<u8>)]) -> Vec<u8> {
    let mut b = head.to_vec();
    for (kind, data) in attrs {
        b.extend_from_slice(&((4 + data.len()) as u16).to_ne_bytes());
        b.extend_from_slice(&kind.to_ne_bytes());
        b.extend_from_slice(data);
        while !b.len().is_multiple_of(4) {
            b.push(0);
        }
    }
    b
}

/// Rewrites every socket message's attributes with `f`.
fn rewrite(buf: &[u8], f: impl Fn(&mut Vec<(u16, Vec<u8>)>)) -> Vec<u8> {
    let mut msgs = split_msgs(buf);
    for m in &mut msgs {
        if u16::from_ne_bytes([m.head[4], m.head[5]]) == wire::SOCK_DIAG_BY_FAMILY {
            let (head, mut attrs) = split_attrs(&m.payload);
            f(&mut attrs);
            m.payload = join_attrs(&head, &attrs);
        }
    }
    join_msgs(&msgs)
}

#[test]
fn captured_ipv4_dump() {
    let (mut socks, p) = parse(&fixture("ipv4-0.bin")).unwrap();
    assert_eq!(p, Progress::More);
    let (more, p) = parse(&fixture("ipv4-1.bin")).unwrap();
    assert_eq!(p, Progress::More);
    socks.extend(more);
    let (none, p) = parse(&fixture("ipv4-2.bin")).unwrap();
    assert_eq!((none.len(), p), (0, Progress::Done));

    let count = |st: TcpState| socks.iter().filter(|s| s.state == st).count();
    assert_eq!(socks.len(), 12);
    assert_eq!(count(TcpState::Listen), 3);
    assert_eq!(count(TcpState::Established), 6);
    assert_eq!(count(TcpState::TimeWait), 3);
    for s in &socks {
        assert!(s.local.ip().is_loopback());
        if s.state == TcpState::TimeWait {
            assert!(s.cc.is_none() && s.tcp_info.is_none() && s.inode == 0);
            continue;
        }
        let cc = s.cc.as_deref().unwrap();
        assert!(["reno", "cubic", "bbr"].contains(&cc), "{cc}");
        let t = s.tcp_info.as_ref().unwrap();
        assert_eq!(t.len, 280);
        assert_eq!(t.unknown_tail(), 32);
        assert_eq!(t.state, Some(s.state.number()));
        if s.state == TcpState::Established {
            assert!(t.snd_cwnd.unwrap() >= 10);
            assert!(t.rtt_sample_us().is_some());
            assert_eq!(s.bbr.is_some(), cc == "bbr");
        }
    }
    let bbr = socks.iter().find_map(|s| s.bbr.as_ref()).unwrap();
    assert_eq!((bbr.len, bbr.version()), (20, 1));
    assert!(bbr.bw_bytes_per_second > 0 && bbr.min_rtt_us > 0);
}

#[test]
fn captured_ipv6_dump() {
    let (socks, p) = parse(&fixture("ipv6-0.bin")).unwrap();
    assert_eq!(p, Progress::More);
    assert_eq!(socks.len(), 4);
    assert!(
        socks
            .iter()
            .all(|s| s.local.is_ipv6() && s.local.ip().is_loopback())
    );
    assert_eq!(socks.iter().filter(|s| s.bbr.is_some()).count(), 2);
    assert_eq!(parse(&fixture("ipv6-1.bin")).unwrap().1, Progress::Done);
}

#[test]
fn older_and_newer_tcp_info_lengths() {
    let buf = fixture("ipv4-0.bin");
    let (orig, _) = parse(&buf).unwrap();
    // 104: Linux 2.6-3.14 (up to total_retrans); 160: 4.6 (data_segs_out);
    // 192: 4.10 (sndbuf_limited); 232: 5.4 (rcv_wnd); 248: 6.7; 280: this
    // kernel; 320: a future kernel with 40 more bytes.
    for len in [0usize, 7, 50, 104, 160, 192, 232, 248, 280, 320] {
        let b = rewrite(&buf, |attrs| {
            for (kind, data) in attrs.iter_mut() {
                if *kind == wire::INET_DIAG_INFO {
                    data.resize(len, 0xab);
                }
            }
        });
        let (socks, _) = parse(&b).unwrap_or_else(|e| panic!("len {len}: {e}"));
        assert_eq!(socks.len(), orig.len());
        for (s, o) in socks.iter().zip(&orig) {
            let (Some(t), Some(ot)) = (&s.tcp_info, &o.tcp_info) else {
                continue;
            };
            assert_eq!(t.len, len);
            assert_eq!(t.state, (len >= 1).then_some(ot.state.unwrap()));
            assert_eq!(t.snd_cwnd, (len >= 84).then_some(ot.snd_cwnd.unwrap()));
            assert_eq!(
                t.total_retrans,
                (len >= 104).then_some(ot.total_retrans.unwrap())
            );
            assert_eq!(
                t.pacing_rate,
                (len >= 112).then_some(ot.pacing_rate.unwrap())
            );
            assert_eq!(
                t.delivery_rate,
                (len >= 168).then_some(ot.delivery_rate.unwrap())
            );
            assert_eq!(
                t.bytes_retrans,
                (len >= 216).then_some(ot.bytes_retrans.unwrap())
            );
            assert_eq!(
                t.total_rto_time_ms,
                (len >= 248).then_some(ot.total_rto_time_ms.unwrap())
            );
            assert_eq!(s.cc, o.cc, "later attributes still decoded");
            assert_eq!(s.bbr, o.bbr);
        }
    }
}

fn bbr_v3_payload(v1: &[u8]) -> Vec<u8> {
    let mut b = v1[..20].to_vec();
    for v in [0x1111_0000u32, 0x2, 0x3333_0000, 0x0] {
        b.extend_from_slice(&v.to_ne_bytes());
    }
    b.extend_from_slice(&[2, 1, 0, 3]); // mode PROBE_BW, phase 1, unused, version 3
    for v in [40u32, 80, 5] {
        b.extend_from_slice(&v.to_ne_bytes());
    }
    b
}

#[test]
fn bbr_info_v1_v3_partial_and_truncated() {
    let buf = fixture("ipv4-0.bin");
    let (orig, _) = parse(&buf).unwrap();
    let orig_bbr: Vec<_> = orig.iter().filter_map(|s| s.bbr.clone()).collect();
    assert_eq!(orig_bbr.len(), 2);

    let set_bbr = |f: fn(&[u8]) -> Vec<u8>| {
        rewrite(&buf, move |attrs| {
            for (kind, data) in attrs.iter_mut() {
                if *kind == wire::INET_DIAG_BBRINFO {
                    *data = f(data);
                }
            }
        })
    };
    // v3: 52 bytes, version byte at 39.
    let (socks, _) = parse(&set_bbr(bbr_v3_payload)).unwrap();
    let v3: Vec<_> = socks.iter().filter_map(|s| s.bbr.as_ref()).collect();
    assert_eq!(v3.len(), 2);
    for (b, o) in v3.iter().zip(&orig_bbr) {
        assert_eq!(b.version(), 3);
        assert_eq!(
            b.bw_bytes_per_second, o.bw_bytes_per_second,
            "v1 prefix unchanged"
        );
        let m = b.v3.unwrap();
        assert_eq!(m.bw_hi, (2 << 32) | 0x1111_0000);
        assert_eq!(m.bw_lo, 0x3333_0000);
        assert_eq!(
            (m.mode, m.phase, m.inflight_lo, m.inflight_hi, m.extra_acked),
            (2, 1, 40, 80, 5)
        );
    }
    // Longer than v3 (a future layout): v3 fields still decoded.
    let (socks, _) = parse(&set_bbr(|d| {
        let mut b = bbr_v3_payload(d);
        b.extend_from_slice(&[9; 12]);
        b
    }))
    .unwrap();
    assert!(
        socks
            .iter()
            .filter_map(|s| s.bbr.as_ref())
            .all(|b| b.version() == 3 && b.v3.is_some())
    );
    // Truncated to 12 bytes: no BBR info, a warning, the socket is kept.
    let (socks, _) = parse(&set_bbr(|d| d[..12].to_vec())).unwrap();
    assert_eq!(socks.len(), orig.len());
    let warned: Vec<_> = socks.iter().filter(|s| !s.warnings.is_empty()).collect();
    assert_eq!(warned.len(), 2);
    assert!(
        warned
            .iter()
            .all(|s| s.bbr.is_none() && s.cc.as_deref() == Some("bbr") && s.tcp_info.is_some())
    );
    assert!(
        warned[0].warnings[0].contains("tcp_bbr_info truncated: 12 bytes"),
        "{:?}",
        warned[0].warnings
    );
}

#[test]
fn every_truncation_errors_cleanly_or_parses_whole_messages() {
    let buf = fixture("ipv4-0.bin");
    let msgs = split_msgs(&buf);
    let mut boundaries = vec![0usize];
    for m in &msgs {
        boundaries.push(boundaries.last().unwrap() + ((16 + m.payload.len() + 3) & !3));
    }
    for cut in 0..buf.len() {
        match parse(&buf[..cut]) {
            Ok((socks, _)) => {
                // Only a cut on a message boundary parses, with the messages before it.
                let i = boundaries
                    .iter()
                    .position(|&b| b == cut)
                    .expect("parsed at a non-boundary");
                assert_eq!(socks.len(), i);
            }
            Err(e) => assert!(
                matches!(
                    e,
                    DiagError::Malformed {
                        what: "nlmsghdr",
                        ..
                    }
                ),
                "cut {cut}: {e}"
            ),
        }
    }
}

#[test]
fn truncated_attribute_inside_a_message_is_malformed() {
    let buf = fixture("ipv4-0.bin");
    let mut msgs = split_msgs(&buf);
    // Cut the first socket message in the middle of its tcp_info attribute
    // while keeping the netlink framing consistent.
    let m = &mut msgs[0];
    let mut info_at = 72;
    loop {
        let len = u16::from_ne_bytes([m.payload[info_at], m.payload[info_at + 1]]) as usize;
        if u16::from_ne_bytes([m.payload[info_at + 2], m.payload[info_at + 3]])
            == wire::INET_DIAG_INFO
        {
            break;
        }
        info_at += (len + 3) & !3;
    }
    m.payload.truncate(info_at + 4 + 100);
    let e = parse(&join_msgs(&msgs[..1])).unwrap_err();
    match e {
        DiagError::Malformed {
            what,
            offset,
            ref detail,
        } => {
            assert_eq!(what, "rtattr");
            assert_eq!(offset, 16 + info_at, "offset within the datagram");
            assert!(detail.contains("outside 4..=104"), "{detail}");
        }
        other => panic!("unexpected {other}"),
    }
    // An attribute header claiming fewer than 4 bytes is also malformed.
    let mut msgs = split_msgs(&buf);
    msgs[0].payload[72..74].copy_from_slice(&2u16.to_ne_bytes());
    assert!(matches!(
        parse(&join_msgs(&msgs[..1])),
        Err(DiagError::Malformed { what: "rtattr", .. })
    ));
    // A message too short for inet_diag_msg.
    let mut msgs = split_msgs(&buf);
    msgs[0].payload.truncate(40);
    let e = parse(&join_msgs(&msgs[..1])).unwrap_err();
    assert_eq!(
        e.to_string(),
        "inet_diag_msg truncated: 40 bytes, need at least 72"
    );
}

#[test]
fn kernel_error_message_is_reported_with_errno() {
    let mut b = Vec::new();
    b.extend_from_slice(&36u32.to_ne_bytes());
    b.extend_from_slice(&wire::NLMSG_ERROR.to_ne_bytes());
    b.extend_from_slice(&[0; 10]);
    b.extend_from_slice(&(-libc::EPERM).to_ne_bytes());
    b.extend_from_slice(&[0; 16]);
    let e = parse(&b).unwrap_err();
    assert!(matches!(e, DiagError::Kernel { .. }));
    let chain = bbrkit_diag::error_chain(&e);
    assert!(chain.contains("Operation not permitted"), "{chain}");
    assert_eq!(
        chain.matches("os error").count(),
        1,
        "the errno once: {chain}"
    );
}

#[test]
fn request_layout() {
    let r = wire::dump_request(
        wire::AF_INET6,
        bbrkit_diag::StateSet::ALL,
        true,
        None,
        &[],
        7,
    );
    assert_eq!(r.len(), 72);
    assert_eq!(u32::from_ne_bytes(r[0..4].try_into().unwrap()), 72);
    assert_eq!(u16::from_ne_bytes([r[4], r[5]]), 20);
    assert_eq!(u16::from_ne_bytes([r[6], r[7]]), 0x301);
    assert_eq!(u32::from_ne_bytes(r[8..12].try_into().unwrap()), 7);
    assert_eq!(
        &r[16..20],
        &[10, 6, 0b1110, 0],
        "family, TCP, INFO|VEGAS|CONG"
    );
    assert_eq!(u32::from_ne_bytes(r[20..24].try_into().unwrap()), u32::MAX);
}

#[test]
fn request_with_port_bytecode() {
    let r = wire::dump_request(
        wire::AF_INET,
        bbrkit_diag::StateSet::ALL,
        false,
        Some(443),
        &[],
        1,
    );
    assert_eq!(r.len(), 72 + 4 + 20);
    assert_eq!(u32::from_ne_bytes(r[0..4].try_into().unwrap()), 96);
    assert_eq!(&r[16..20], &[2, 6, 0b1000, 0], "CONG only without details");
    assert_eq!(u16::from_ne_bytes([r[72], r[73]]), 24, "rtattr length");
    assert_eq!(
        u16::from_ne_bytes([r[74], r[75]]),
        wire::INET_DIAG_REQ_BYTECODE
    );
    let bc = &r[76..];
    let op = |i: usize| (bc[i], bc[i + 1], u16::from_ne_bytes([bc[i + 2], bc[i + 3]]));
    assert_eq!(op(0), (wire::INET_DIAG_BC_S_EQ, 8, 12));
    assert_eq!(op(4), (0, 0, 443));
    assert_eq!(op(8), (wire::INET_DIAG_BC_JMP, 4, 12));
    assert_eq!(op(12), (wire::INET_DIAG_BC_D_EQ, 8, 12));
    assert_eq!(op(16), (0, 0, 443));
}

/// `INET_DIAG_REQ_SK_BPF_STORAGES` after the bytecode, as `ss --bpf-maps`
/// lays it out: a nested attribute with one `u32` map fd per map.
#[test]
fn request_with_sk_storage_maps() {
    let r = wire::dump_request(
        wire::AF_INET,
        bbrkit_diag::StateSet::ALL,
        true,
        Some(443),
        &[7, 9],
        1,
    );
    assert_eq!(r.len(), 72 + 24 + 4 + 2 * 8);
    assert_eq!(
        u32::from_ne_bytes(r[0..4].try_into().unwrap()),
        r.len() as u32
    );
    let a = &r[96..];
    assert_eq!(
        u16::from_ne_bytes([a[0], a[1]]),
        20,
        "nested attribute length"
    );
    assert_eq!(
        u16::from_ne_bytes([a[2], a[3]]),
        wire::INET_DIAG_REQ_SK_BPF_STORAGES | wire::NLA_F_NESTED
    );
    for (i, fd) in [7u32, 9].into_iter().enumerate() {
        let e = &a[4 + 8 * i..];
        assert_eq!(u16::from_ne_bytes([e[0], e[1]]), 8);
        assert_eq!(
            u16::from_ne_bytes([e[2], e[3]]),
            wire::SK_DIAG_BPF_STORAGE_REQ_MAP_FD
        );
        assert_eq!(u32::from_ne_bytes(e[4..8].try_into().unwrap()), fd);
    }
    let plain = wire::dump_request(
        wire::AF_INET,
        bbrkit_diag::StateSet::ALL,
        true,
        None,
        &[],
        1,
    );
    assert_eq!(
        plain.len(),
        72,
        "no storage attribute when no map is asked for"
    );
}

/// One `rtattr` (header, data, padding to 4).
fn attr(kind: u16, data: &[u8]) -> Vec<u8> {
    let mut b = ((4 + data.len()) as u16).to_ne_bytes().to_vec();
    b.extend_from_slice(&kind.to_ne_bytes());
    b.extend_from_slice(data);
    while !b.len().is_multiple_of(4) {
        b.push(0);
    }
    b
}

/// The answer as `bpf_sk_storage_diag_put` builds it: per map a nested
/// `SK_DIAG_BPF_STORAGE` with the map id, a pad for 64-bit alignment and
/// the value (`nla_reserve_64bit`); two maps, one value of odd length.
#[test]
fn sk_bpf_storages_answer_is_decoded_by_map_id() {
    let entry = |id: u32, value: &[u8], pad: bool| {
        let mut e = attr(wire::SK_DIAG_BPF_STORAGE_MAP_ID, &id.to_ne_bytes());
        if pad {
            e.extend(attr(1, &[])); // SK_DIAG_BPF_STORAGE_PAD
        }
        e.extend(attr(wire::SK_DIAG_BPF_STORAGE_MAP_VALUE, value));
        attr(wire::SK_DIAG_BPF_STORAGE | wire::NLA_F_NESTED, &e)
    };
    let mut all = entry(41, &[1, 2, 3, 4, 5, 6, 7, 8], true);
    all.extend(entry(42, &[9, 9, 9], false));
    let buf = rewrite(&fixture("ipv4-0.bin"), |attrs| {
        attrs.push((
            wire::INET_DIAG_SK_BPF_STORAGES | wire::NLA_F_NESTED,
            all.clone(),
        ));
    });
    let (socks, _) = parse(&buf).unwrap();
    assert!(!socks.is_empty());
    for s in &socks {
        assert!(s.warnings.is_empty(), "{:?}", s.warnings);
        let got: Vec<(u32, &[u8])> = s
            .bpf_storages
            .iter()
            .map(|b| (b.map_id, b.value.as_slice()))
            .collect();
        assert_eq!(
            got,
            [(41, &[1, 2, 3, 4, 5, 6, 7, 8][..]), (42, &[9, 9, 9][..])]
        );
    }
    // A truncated entry is a warning on the socket, not a failed census.
    let cut = rewrite(&fixture("ipv4-0.bin"), |attrs| {
        let mut bad = all.clone();
        bad[0] = 200; // the first entry claims more bytes than there are
        attrs.push((wire::INET_DIAG_SK_BPF_STORAGES, bad));
    });
    let (socks, _) = parse(&cut).unwrap();
    assert!(
        socks
            .iter()
            .all(|s| s.bpf_storages.is_empty() && s.warnings.len() == 1)
    );
}

/// Runs the filter program the way the kernel's `inet_diag_bc_run` does.
fn run_bytecode(bc: &[u8], sport: u16, dport: u16) -> bool {
    let mut off = 0i64;
    let len = bc.len() as i64;
    while off < len {
        let i = off as usize;
        let (code, yes, no) = (
            bc[i],
            bc[i + 1] as i64,
            u16::from_ne_bytes([bc[i + 2], bc[i + 3]]) as i64,
        );
        let port = || u16::from_ne_bytes([bc[i + 6], bc[i + 7]]);
        let hit = match code {
            wire::INET_DIAG_BC_JMP => false,
            wire::INET_DIAG_BC_S_EQ => sport == port(),
            wire::INET_DIAG_BC_D_EQ => dport == port(),
            other => panic!("unexpected op {other}"),
        };
        off += if hit { yes } else { no };
    }
    off == len
}

#[test]
fn port_bytecode_accepts_either_end_only() {
    let bc = wire::port_bytecode(8080);
    assert!(run_bytecode(&bc, 8080, 1));
    assert!(run_bytecode(&bc, 1, 8080));
    assert!(run_bytecode(&bc, 8080, 8080));
    assert!(!run_bytecode(&bc, 1, 2));
    assert!(!run_bytecode(&bc, 8081, 8079));
}

/// `INET_DIAG_CGROUP_ID` (a `u64`, padded to 8 bytes by `INET_DIAG_PAD`
/// before it on the wire) is the socket's cgroup id; a short one is left out.
#[test]
fn cgroup_id_is_decoded() {
    let with = |data: Vec<u8>| {
        rewrite(&fixture("ipv4-0.bin"), move |attrs| {
            attrs.retain(|(k, _)| *k != wire::INET_DIAG_CGROUP_ID);
            attrs.push((wire::INET_DIAG_CGROUP_ID, data.clone()));
        })
    };
    let (socks, _) = parse(&with(4242u64.to_ne_bytes().to_vec())).unwrap();
    assert!(!socks.is_empty());
    assert!(socks.iter().all(|s| s.cgroup_id == Some(4242)));
    let (socks, _) = parse(&with(vec![1, 2, 3, 4])).unwrap();
    assert!(socks.iter().all(|s| s.cgroup_id.is_none()));
}
