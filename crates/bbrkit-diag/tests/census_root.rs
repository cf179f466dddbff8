//! Census against real sockets in a throwaway network namespace (needs root).
//! Sockets with reno, cubic and bbr are opened over IPv4 and IPv6 loopback;
//! the census must count them by algorithm and agree with each socket's own
//! `getsockopt(TCP_INFO)`.

mod netns;

use std::collections::BTreeMap;
use std::os::fd::AsRawFd;

use bbrkit_diag::{Filter, StateSet, TcpState, census};

const ALGOS: [&str; 3] = ["reno", "cubic", "bbr"];

#[test]
#[ignore = "needs root"]
fn census_counts_by_algorithm_and_matches_tcp_info() {
    netns::in_new_netns(|| {
        let mut listeners = Vec::new();
        let mut pairs = Vec::new();
        for (i, cc) in ALGOS.iter().enumerate() {
            for v6 in [false, true] {
                let l = netns::listener(cc, v6);
                pairs.extend(netns::connect(&l, cc, i + 1, 64 * 1024));
                listeners.push(l);
            }
        }
        let all = census(&Filter::default()).expect("census");
        // Per algorithm: 2 listeners + 2 * (i+1) connections * 2 ends.
        let mut by_cc: BTreeMap<String, usize> = BTreeMap::new();
        for s in &all {
            *by_cc.entry(s.cc.clone().unwrap_or_default()).or_default() += 1;
        }
        let want: BTreeMap<String, usize> = ALGOS
            .iter()
            .enumerate()
            .map(|(i, cc)| (cc.to_string(), 2 + 4 * (i + 1)))
            .collect();
        assert_eq!(by_cc, want, "census by algorithm");

        // The visitor form sees the same sockets in the same order.
        let mut seen = Vec::new();
        let n = bbrkit_diag::census_each(&Filter::default(), |s| seen.push(s.cookie)).unwrap();
        assert_eq!(n, all.len());
        assert_eq!(seen, all.iter().map(|s| s.cookie).collect::<Vec<_>>());

        // Kernel-side state filter: only the six listeners.
        let listen = census(&Filter {
            states: StateSet::empty().with(TcpState::Listen),
            ..Filter::default()
        })
        .unwrap();
        assert_eq!(listen.len(), 6);
        assert!(listen.iter().all(|s| s.state == TcpState::Listen));

        // User-side port and cc filters.
        let port = listeners[0].local_addr().unwrap().port();
        let by_port = census(&Filter {
            port: Some(port),
            ..Filter::default()
        })
        .unwrap();
        assert_eq!(
            by_port.len(),
            1 + 2,
            "listener + both ends of its one connection"
        );
        // The kernel applied the port bytecode: its raw answer holds only those.
        for v6 in [false, true] {
            let frames = bbrkit_diag::dump_raw(
                v6,
                &Filter {
                    port: Some(port),
                    ..Filter::default()
                },
            )
            .unwrap();
            let mut raw = Vec::new();
            for f in &frames {
                bbrkit_diag::wire::parse_datagram(f, "x", &mut |s| raw.push(s)).unwrap();
            }
            assert_eq!(
                raw.len(),
                if v6 { 0 } else { 3 },
                "kernel-side filter (v6 = {v6})"
            );
            assert!(
                raw.iter()
                    .all(|s| s.local.port() == port || s.remote.port() == port)
            );
        }
        let bbr = census(&Filter {
            cc: Some("bbr".into()),
            ..Filter::default()
        })
        .unwrap();
        assert_eq!(bbr.len(), 2 + 12);
        assert!(bbr.iter().all(|s| s.cc.as_deref() == Some("bbr")));

        for p in &pairs {
            let local = p.client.local_addr().unwrap();
            let s = all
                .iter()
                .find(|s| s.local == local)
                .expect("client socket in census");
            assert_eq!(s.state, TcpState::Established);
            assert_eq!(s.remote, p.client.peer_addr().unwrap());
            assert_eq!(s.cc.as_deref(), Some(p.cc.as_str()));
            assert_eq!(netns::get_cc(&p.client), p.cc);
            let (own, raw) = netns::tcp_info(&p.client);
            let t = s.tcp_info.as_ref().expect("tcp_info");
            assert_eq!(
                t.len,
                raw.len(),
                "netlink and getsockopt carry the same struct size"
            );
            assert_eq!(t.state, Some(own.tcpi_state));
            assert_eq!(t.snd_cwnd, Some(own.tcpi_snd_cwnd));
            assert_eq!(t.snd_mss, Some(own.tcpi_snd_mss));
            assert_eq!(t.total_retrans, Some(own.tcpi_total_retrans));
            assert_eq!(t.options, Some(own.tcpi_options));
            assert_eq!(t.bytes_acked, Some(own.tcpi_bytes_acked));
            assert_eq!(t.segs_out, Some(own.tcpi_segs_out));
            assert_eq!(
                t.min_rtt_us,
                Some(u32::from_ne_bytes(raw[148..152].try_into().unwrap()))
            );
            assert_eq!(
                t.bytes_sent,
                Some(u64::from_ne_bytes(raw[200..208].try_into().unwrap()))
            );
            assert_eq!(t.bytes_sent, Some(64 * 1024));
            assert!(t.rtt_sample_us().is_some());
            assert_eq!(
                s.bbr.is_some(),
                p.cc == "bbr",
                "BBR info only on BBR sockets"
            );
            if let Some(b) = &s.bbr {
                assert_eq!(b.len, 20, "mainline kernel: 20-byte v1 layout");
                assert_eq!(b.version(), 1);
                assert!(b.bw_bytes_per_second > 0);
                assert!(b.min_rtt_us > 0);
            }
            assert!(s.inode > 0 && s.cookie > 0);
            assert!(s.warnings.is_empty(), "{:?}", s.warnings);
            let _ = p.server.as_raw_fd();
        }
    });
}
