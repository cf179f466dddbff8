//! `bbrkit conns` and `bbrkit metrics` against real sockets (needs root).
//!
//! A helper thread unshares a throwaway network namespace, brings `lo` up and
//! opens IPv4 and IPv6 loopback connections with `TCP_CONGESTION` reno, cubic
//! and bbr; the bbrkit binary is spawned from that thread, so it is born in the
//! same namespace. Counts by algorithm and per-socket fields are checked
//! against each socket's own `getsockopt(TCP_INFO)`.

mod common;
#[path = "../../bbrkit-diag/tests/netns/mod.rs"]
mod netns;

use std::collections::BTreeMap;
use std::net::TcpListener;

use common::{bbrkit, json_ok};

const ALGOS: [(&str, usize); 3] = [("reno", 1), ("cubic", 2), ("bbr", 3)];

/// Listeners (kept open) and connections: per algorithm one IPv4 and one
/// IPv6 listener, each with `n` connections.
fn setup() -> (Vec<TcpListener>, Vec<netns::Pair>) {
    let mut ls = Vec::new();
    let mut pairs = Vec::new();
    for (cc, n) in ALGOS {
        for v6 in [false, true] {
            let l = netns::listener(cc, v6);
            pairs.extend(netns::connect(&l, cc, n, 100 * 1024));
            ls.push(l);
        }
    }
    (ls, pairs)
}

#[test]
#[ignore = "needs root"]
fn conns_json_counts_and_fields_match_tcp_info() {
    netns::in_new_netns(|| {
        let (ls, pairs) = setup();
        let doc = json_ok(&bbrkit(&["conns", "--state", "all", "--json"]));

        // Summary by algorithm: 2 listeners + 2 families * n connections * 2 ends.
        let summary: BTreeMap<String, u64> = doc["summary"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| {
                (
                    s["cc"].as_str().unwrap().to_string(),
                    s["sockets"].as_u64().unwrap(),
                )
            })
            .collect();
        let want: BTreeMap<String, u64> = ALGOS
            .iter()
            .map(|(cc, n)| (cc.to_string(), 2 + 4 * *n as u64))
            .collect();
        assert_eq!(summary, want);
        assert_eq!(doc["summary"][0]["cc"], "bbr", "most sockets first");
        for s in doc["summary"].as_array().unwrap() {
            assert!(s["median_rtt_ms"].as_f64().unwrap() > 0.0);
            assert!(s["median_min_rtt_ms"].as_f64().unwrap() > 0.0);
            // The senders' last samples measured the path unless the
            // kernel marked them app-limited (then they are counted apart).
            let total = s["delivery_rate_total_bits_per_second"].as_u64().unwrap();
            let samples = s["delivery_rate_samples"].as_u64().unwrap();
            let app = s["delivery_rate_app_limited"].as_u64().unwrap();
            assert_eq!(total > 0, samples > 0, "{s}");
            assert!(samples + app >= 2, "at least one sender per family: {s}");
            // Loopback loses nothing, but a loaded machine may make TCP
            // retransmit (a late ACK): the ratio is the bytes' ratio.
            let (sent, re) = (s["bytes_sent"].as_f64(), s["bytes_retrans"].as_f64());
            assert_eq!(
                s["retrans_ratio"].as_f64(),
                Some(re.unwrap() / sent.unwrap())
            );
        }

        let sockets = doc["sockets"].as_array().unwrap();
        assert_eq!(sockets.len() as u64, want.values().sum::<u64>());
        for p in &pairs {
            let local = p.client.local_addr().unwrap().to_string();
            let s = sockets
                .iter()
                .find(|s| s["local"] == local.as_str())
                .expect("client in conns");
            let (own, raw) = netns::tcp_info(&p.client);
            assert_eq!(s["state"], "ESTABLISHED");
            assert_eq!(
                s["remote"],
                p.client.peer_addr().unwrap().to_string().as_str()
            );
            assert_eq!(s["cc"], p.cc.as_str());
            assert_eq!(
                s["family"],
                if p.client.local_addr().unwrap().is_ipv6() {
                    "ipv6"
                } else {
                    "ipv4"
                }
            );
            assert_eq!(s["cwnd"], own.tcpi_snd_cwnd);
            assert_eq!(s["mss_bytes"], own.tcpi_snd_mss);
            assert_eq!(s["retrans_total"], own.tcpi_total_retrans);
            assert_eq!(s["retrans_current"], own.tcpi_retrans);
            assert_eq!(s["bytes_acked"], own.tcpi_bytes_acked);
            assert_eq!(s["bytes_sent"], 100 * 1024);
            assert_eq!(s["tcp_info_bytes"], raw.len());
            let min_rtt_us = u32::from_ne_bytes(raw[148..152].try_into().unwrap());
            assert_eq!(
                s["min_rtt_ms"].as_f64().unwrap(),
                f64::from(min_rtt_us) / 1000.0
            );
            let rate = u64::from_ne_bytes(raw[160..168].try_into().unwrap());
            assert_eq!(s["delivery_rate_bits_per_second"], rate * 8);
            assert!(s["rtt_ms"].as_f64().unwrap() > 0.0);
            assert_eq!(s["bbr"].is_object(), p.cc == "bbr");
            if p.cc == "bbr" {
                assert_eq!(s["bbr"]["version"], 1);
                assert!(s["bbr"]["bw_bits_per_second"].as_u64().unwrap() > 0);
                assert!(s["bbr"]["pacing_gain"].as_f64().unwrap() > 0.0);
            }
        }

        // --cc, --port and the default state filter.
        let bbr = json_ok(&bbrkit(&["conns", "--cc", "bbr", "--json"]));
        let bbr = bbr["sockets"].as_array().unwrap();
        assert_eq!(
            bbr.len(),
            12,
            "established bbr sockets only (no listeners by default)"
        );
        assert!(
            bbr.iter()
                .all(|s| s["cc"] == "bbr" && s["state"] == "ESTABLISHED")
        );
        let port = ls[2].local_addr().unwrap().port(); // cubic IPv4 listener: 2 connections
        let by_port = json_ok(&bbrkit(&[
            "conns",
            "--port",
            &port.to_string(),
            "--state",
            "all",
            "--json",
        ]));
        assert_eq!(by_port["sockets"].as_array().unwrap().len(), 1 + 4);
        let listen = json_ok(&bbrkit(&["conns", "--state", "listen", "--json"]));
        assert_eq!(listen["sockets"].as_array().unwrap().len(), 6);

        // Human output: summary first, then sockets.
        let out = bbrkit(&["conns"]);
        assert!(out.status.success());
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(text.starts_with("ALGORITHM"), "{text}");
        let bbr_row = text
            .lines()
            .find(|l| l.starts_with("bbr "))
            .expect("bbr summary row");
        assert_eq!(bbr_row.split_whitespace().nth(1), Some("12"));
        assert!(text.contains("bbr1:(bw:"), "{text}");
    });
}

/// Issue 21 item 9: two idle BBR connections that sent 189 bytes each
/// report app-limited delivery rates (they measured how fast the
/// application wrote, gigabits per second on loopback); the summary's total
/// must not add them up as if they measured the path, and the table must
/// show the flag.
#[test]
#[ignore = "needs root"]
fn app_limited_delivery_rates_are_not_a_total() {
    netns::in_new_netns(|| {
        let l = netns::listener("bbr", false);
        let pairs = netns::connect(&l, "bbr", 2, 189);
        let port = l.local_addr().unwrap().port().to_string();
        let doc = json_ok(&bbrkit(&["conns", "--port", &port, "--json"]));
        let senders: Vec<&serde_json::Value> = doc["sockets"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| s["bytes_sent"] == 189)
            .collect();
        assert_eq!(senders.len(), pairs.len(), "{doc}");
        for s in &senders {
            assert!(
                s["delivery_rate_bits_per_second"].as_u64().unwrap() > 0,
                "{s}"
            );
            assert_eq!(s["delivery_rate_app_limited"], true, "{s}");
        }
        let bbr = &doc["summary"][0];
        assert_eq!(bbr["cc"], "bbr");
        assert_eq!(bbr["delivery_rate_app_limited"], 2, "{bbr}");
        assert_eq!(bbr["delivery_rate_samples"], 0, "{bbr}");
        assert_eq!(bbr["delivery_rate_total_bits_per_second"], 0, "{bbr}");
        let text = common::stdout(&bbrkit(&["conns", "--port", &port]));
        let row = text.lines().find(|l| l.starts_with("bbr ")).unwrap();
        assert_eq!(row.split_whitespace().nth(4), Some("-"), "{text}");
        assert!(text.contains("leaves out 2 app-limited rate(s)"), "{text}");
        assert_eq!(
            text.lines().filter(|l| l.contains("bit/s*")).count(),
            2,
            "{text}"
        );
    });
}

/// `promtool check metrics` accepts `text` (histograms populated here, unlike
/// on an idle host). Debian's `prometheus` package provides promtool; these
/// root tests run in CI, which must install it.
fn promtool_accepts(text: &str) {
    let out = common::promtool_check("promtool", text);
    assert!(
        out.status.success(),
        "promtool rejected:\n{}{}\n{text}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Value of the series line `name{labels}` in an exposition.
fn series(text: &str, name_and_labels: &str) -> Option<f64> {
    text.lines().find_map(|l| {
        l.strip_prefix(name_and_labels)?
            .strip_prefix(' ')?
            .parse()
            .ok()
    })
}

#[test]
#[ignore = "needs root"]
fn metrics_count_sockets_by_algorithm_and_write_textfile() {
    netns::in_new_netns(|| {
        let (_ls, pairs) = setup();
        let root = tempfile::tempdir().unwrap();
        let retrans = || bbrkit_diag::nstat::read().unwrap().get("TcpRetransSegs");
        let retrans_before = retrans().unwrap() as f64;
        let out = bbrkit(&["metrics", "--root", root.path().to_str().unwrap()]);
        let retrans_after = retrans().unwrap() as f64;
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8(out.stdout).unwrap();
        for (cc, n) in ALGOS {
            let est = series(
                &text,
                &format!("bbrkit_sockets{{cc=\"{cc}\",state=\"ESTABLISHED\"}}"),
            );
            assert_eq!(est, Some((4 * n) as f64), "{cc}\n{text}");
            let listen = series(
                &text,
                &format!("bbrkit_sockets{{cc=\"{cc}\",state=\"LISTEN\"}}"),
            );
            assert_eq!(listen, Some(2.0));
            // Every established socket has a min-RTT sample; loopback RTTs are
            // far below 25 ms, and all of them are under +Inf.
            let count = series(
                &text,
                &format!("bbrkit_socket_min_rtt_seconds_count{{cc=\"{cc}\"}}"),
            );
            assert_eq!(count, Some((4 * n) as f64));
            let le = series(
                &text,
                &format!("bbrkit_socket_min_rtt_seconds_bucket{{cc=\"{cc}\",le=\"0.025\"}}"),
            );
            assert_eq!(le, Some((4 * n) as f64));
            let rate = series(
                &text,
                &format!("bbrkit_socket_delivery_rate_bytes_per_second_count{{cc=\"{cc}\"}}"),
            );
            assert!(
                rate.unwrap() >= (2 * n) as f64,
                "at least the senders delivered data"
            );
        }
        let sent = series(&text, "bbrkit_tcp_original_data_segments_sent_total").unwrap();
        assert!(
            sent >= pairs.len() as f64,
            "the namespace's own counters: {sent}"
        );
        // The namespace's own counter (0 unless a loaded machine made
        // loopback TCP retransmit), read as the test reads it.
        let re = series(&text, "bbrkit_tcp_retransmitted_segments_total").unwrap();
        assert!(
            (retrans_before..=retrans_after).contains(&re),
            "{retrans_before} <= {re} <= {retrans_after}"
        );
        assert!(text.contains("bbrkit_info{default_cc=\""), "{text}");
        assert!(
            text.contains("bbr_version=\"1\""),
            "version from live BBR sockets: {text}"
        );
        assert!(
            text.contains("bbrkit_interface_root_qdisc_info{dev=\"lo\""),
            "{text}"
        );
        assert!(
            text.contains("bbrkit_verify_ok{check=\"sockets\""),
            "{text}"
        );
        promtool_accepts(&text);

        // --textfile: same families, atomically in place, no temporary left.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bbrkit.prom");
        std::fs::write(&path, "old\n").unwrap();
        let out = bbrkit(&[
            "metrics",
            "--root",
            root.path().to_str().unwrap(),
            "--textfile",
            path.to_str().unwrap(),
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.stdout.is_empty(), "nothing on stdout with --textfile");
        let written = std::fs::read_to_string(&path).unwrap();
        let families = |t: &str| {
            t.lines()
                .filter(|l| l.starts_with("# TYPE"))
                .map(String::from)
                .collect::<Vec<_>>()
        };
        assert_eq!(families(&written), families(&text));
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("bbrkit.prom")]);

        // --json: one document with the same families.
        let doc = json_ok(&bbrkit(&[
            "metrics",
            "--root",
            root.path().to_str().unwrap(),
            "--json",
        ]));
        let fams = doc["families"].as_array().unwrap();
        assert_eq!(fams.len(), families(&text).len());
        let sockets = fams.iter().find(|f| f["name"] == "bbrkit_sockets").unwrap();
        let bbr_est = sockets["samples"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["labels"]["cc"] == "bbr" && s["labels"]["state"] == "ESTABLISHED")
            .unwrap();
        assert_eq!(bbr_est["value"], 12.0);
    });
}

/// A sender stalled by a receiver that never reads is busy and limited by the
/// receive window: `conns` reports `busy_s` and `rwnd_limited_ratio` within
/// what the socket's own `TCP_INFO` says just before and just after the run.
#[test]
#[ignore = "needs root"]
fn conns_busy_and_limited_shares_match_tcp_info() {
    netns::in_new_netns(|| {
        use std::io::Write;
        let l = netns::listener("cubic", false);
        let mut client = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (_server, _) = l.accept().unwrap(); // never read
        client.set_nonblocking(true).unwrap();
        let chunk = vec![0u8; 64 * 1024];
        loop {
            match client.write(&chunk) {
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) => panic!("send: {e}"),
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(300));
        let u64_at =
            |raw: &[u8], off: usize| u64::from_ne_bytes(raw[off..off + 8].try_into().unwrap());
        let (_, before) = netns::tcp_info(&client);
        let port = client.local_addr().unwrap().port().to_string();
        let doc = json_ok(&bbrkit(&["conns", "--port", &port, "--json"]));
        let (_, after) = netns::tcp_info(&client);
        let local = client.local_addr().unwrap().to_string();
        let s = doc["sockets"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["local"] == local.as_str())
            .expect("stalled sender in conns");
        let busy_us = (s["busy_s"].as_f64().unwrap() * 1e6).round() as u64;
        let (b0, b1) = (u64_at(&before, 168), u64_at(&after, 168));
        assert!(b0 > 0, "the sender has been busy");
        assert!(b0 <= busy_us && busy_us <= b1, "{b0} <= {busy_us} <= {b1}");
        let rwnd = s["rwnd_limited_ratio"].as_f64().unwrap();
        let own = |raw: &[u8]| u64_at(raw, 176) as f64 / u64_at(raw, 168) as f64;
        assert!(
            rwnd > 0.5 && rwnd <= 1.0,
            "stalled by the receive window: {rwnd} (own TCP_INFO {} .. {})",
            own(&before),
            own(&after)
        );
        let sndbuf = s["sndbuf_limited_ratio"].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&sndbuf), "{sndbuf}");
        assert!(
            s["send_queue_bytes"].as_u64().unwrap() > 0,
            "data waits in the send queue"
        );
    });
}
