//! The policy's sock_ops program against the real kernel: prefix and port
//! rules on real active and passive connections (IPv4, IPv6, IPv4-mapped;
//! bbr3 included), an application's own algorithm kept, splits drawn as
//! predicted and within binomial bounds, one close record per connection,
//! attach → pin → exit → reopen → detach leaving nothing, SIGKILL before
//! the pin leaving nothing. Root only: each test runs in throwaway network
//! and mount namespaces (private bpffs) with a throwaway child cgroup
//! (`sockops_sandbox`); the processes whose sockets the policy governs are
//! `examples/policy_peer`. Run with the other BPF suites under
//! `flock /tmp/bbrkit-root.lock` (bbr3's name is global).

#[path = "sockops_sandbox/mod.rs"]
mod sandbox;

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::io::{BufRead, BufReader, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use bbrkit_bpf::sockops::{self, Attachment, cgroup, records::Records};
use bbrkit_bpf::status;
use bbrkit_policy::{Compiled, ConnRecord, Direction, Policy};
use sandbox::{Conn, Peer, args, connect_from, default_cc, ensure_bbr3, in_sandbox};

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

fn policy(text: &str) -> Policy {
    bbrkit_policy::parse("test.toml", text).unwrap()
}

/// The algorithm the compiled policy gives a connection the peer saw.
fn expected(c: &Compiled, conn: &Conn, default: &str) -> String {
    match c.decide(
        conn.remote.ip(),
        conn.local.port(),
        conn.remote.port(),
        conn.cookie,
    ) {
        Some(d) => c.rules[d.rule].arms[d.arm.expect("an arm")].cc.clone(),
        None => default.to_string(),
    }
}

/// No `bkpol` program or map since `before`, within 5 s (the kernel frees
/// them asynchronously once the last reference is gone).
fn assert_nothing_left(before: &status::Leftovers) {
    let left = status::leftovers_after(before, sockops::PREFIX, &[], Duration::from_secs(5));
    assert!(left.is_empty(), "left behind: {left:?}");
}

const RULES: &str = r#"
[[rule]]
name = "far"
remote = ["127.0.0.2/32", "2001:db8:1::/48"]
cc = "bbr3"

[[rule]]
name = "service"
local_port = [7002]
cc = "cubic"

[[rule]]
name = "upstream"
remote_port = ["7003-7004"]
cc = "reno"
"#;

/// Listens on 0.0.0.0 and [::] (IPv6-only) at `port`, draining every
/// accepted connection on a thread; returns the listeners' guard threads.
fn sink_listeners(port: u16) -> Vec<TcpListener> {
    ["0.0.0.0", "::"]
        .iter()
        .map(|a| {
            let addr: SocketAddr = SocketAddr::new(a.parse().unwrap(), port);
            let s = socket2::Socket::new(
                socket2::Domain::for_address(addr),
                socket2::Type::STREAM,
                None,
            )
            .unwrap();
            if addr.is_ipv6() {
                s.set_only_v6(true).unwrap();
            }
            s.bind(&addr.into()).unwrap();
            s.listen(1024).unwrap();
            let l: TcpListener = s.into();
            let l2 = l.try_clone().unwrap();
            std::thread::spawn(move || {
                for mut c in l2.incoming().flatten() {
                    std::thread::spawn(move || std::io::copy(&mut c, &mut std::io::sink()));
                }
            });
            l
        })
        .collect()
}

#[test]
#[ignore = "needs root"]
fn rules_choose_the_algorithm_of_active_and_passive_connections() {
    let _g = serial();
    let _bbr3 = ensure_bbr3();
    in_sandbox(|sb| {
        let p = policy(RULES);
        let c = Compiled::new(&p, 1);
        let att = Attachment::attach(&c, &sb.cgroup).expect("attach");
        let _sinks = [sink_listeners(7003), sink_listeners(7005)];
        let mut peer = Peer::start(
            &sb.cgroup,
            &args(&[
                ("--listen", "0.0.0.0:7001".into()),
                ("--listen", "[::]:7001".into()),
                ("--listen", "0.0.0.0:7002".into()),
                ("--listen", "[::]:7002".into()),
                ("--dual", "[::]:7006".into()),
                ("--accept", "6".into()),
                ("--to", "127.0.0.2:7005".into()),
                ("--to", "[2001:db8:1::1]:7005".into()),
                ("--to", "127.0.0.4:7003".into()),
                ("--to", "127.0.0.4:7005".into()),
            ]),
        );
        // Active: far (IPv4), far (IPv6), upstream, default. Passive below:
        // far, default, service, far (IPv6), service (IPv6), far (IPv4-mapped
        // on a dual-stack listener).
        let clients: Vec<TcpStream> = [
            ("127.0.0.2", "127.0.0.1:7001"),
            ("127.0.0.3", "127.0.0.1:7001"),
            ("127.0.0.3", "127.0.0.1:7002"),
            ("2001:db8:1::5", "[2001:db8:1::1]:7001"),
            ("2001:db8:2::5", "[2001:db8:1::1]:7002"),
            ("127.0.0.2", "127.0.0.1:7006"),
        ]
        .iter()
        .map(|(from, to)| connect_from(from.parse().unwrap(), to.parse().unwrap()))
        .collect();
        let conns = peer.connections();
        assert_eq!(conns.len(), 10, "{conns:#?}");
        let default = default_cc();
        let mut got: Vec<(String, String, String)> = Vec::new();
        for conn in &conns {
            let want = expected(&c, conn, &default);
            assert_eq!(conn.cc, want, "{conn:?}");
            // The compiled decision is the rules' meaning.
            let first = p.first_match(conn.remote.ip(), conn.local.port(), conn.remote.port());
            let rule = first.map_or("default".to_string(), |i| {
                p.rules()[i].name.clone().unwrap()
            });
            got.push((format!("{:?}", conn.side), conn.remote.to_string(), rule));
        }
        let by_rule = |r: &str| got.iter().filter(|g| g.2 == r).count();
        assert_eq!(
            (
                by_rule("far"),
                by_rule("service"),
                by_rule("upstream"),
                by_rule("default")
            ),
            (5, 2, 1, 2),
            "{got:#?}"
        );
        assert!(conns.iter().any(|c| c.remote.ip()
            == "::ffff:127.0.0.2".parse::<IpAddr>().unwrap()
            && c.cc == "bbr3"));
        let counters = att.maps().counters().unwrap();
        let matched: Vec<u64> = counters.arms.iter().map(|a| a.matched).collect();
        assert_eq!(matched, [5, 2, 1]);
        assert!(
            counters.arms.iter().all(|a| a.assigned == a.matched),
            "{counters:?}"
        );
        assert_eq!(counters.stats.established, 10);
        assert_eq!(counters.stats.unmatched, 2);
        assert!(counters.unmatched_rules().is_empty());
        peer.close();
        drop(clients);
    });
}

#[test]
#[ignore = "needs root"]
fn an_applications_own_algorithm_is_kept_active_and_passive() {
    let _g = serial();
    let _bbr3 = ensure_bbr3();
    in_sandbox(|sb| {
        let c = Compiled::new(&policy(RULES), 1);
        let att = Attachment::attach(&c, &sb.cgroup).expect("attach");
        let _sink = sink_listeners(7005);
        let mut peer = Peer::start(
            &sb.cgroup,
            &args(&[
                ("--listen-cc", "0.0.0.0:7007=reno".into()),
                ("--accept", "1".into()),
                ("--to-cc", "127.0.0.2:7005=reno".into()),
                ("--to", "127.0.0.2:7005".into()),
            ]),
        );
        let _client = connect_from(
            "127.0.0.2".parse().unwrap(),
            "127.0.0.1:7007".parse().unwrap(),
        );
        let conns = peer.connections();
        let mut cc: Vec<(Direction, &str)> =
            conns.iter().map(|c| (c.side, c.cc.as_str())).collect();
        cc.sort_by_key(|(d, c)| (*d == Direction::Passive, *c));
        // The rule says bbr3 for 127.0.0.2; the socket that chose reno
        // itself, and the one accepted by a listener that chose it, keep it.
        assert_eq!(
            cc,
            [
                (Direction::Active, "bbr3"),
                (Direction::Active, "reno"),
                (Direction::Passive, "reno")
            ]
        );
        let far = &att.maps().counters().unwrap().arms[0];
        assert_eq!(
            (far.matched, far.assigned, far.kept_app, far.failed),
            (3, 1, 2, 0),
            "{far:?}"
        );
        peer.close();
    });
}

#[test]
#[ignore = "needs root"]
fn splits_draw_as_predicted_and_give_each_arm_its_share() {
    let _g = serial();
    let salt = bbrkit_cc::testing::test_seed(0x19_5a17);
    in_sandbox(move |sb| {
        let p = policy(
            r#"
[[rule]]
local_port = [7010]
split = { cubic = 1, reno = 1 }
[[rule]]
local_port = [7011]
split = { cubic = 3, reno = 1 }
unit = "client"
"#,
        );
        let c = Compiled::new(&p, salt);
        let _att = Attachment::attach(&c, &sb.cgroup).expect("attach");
        const PER_CONN: usize = 300;
        const CLIENTS: u8 = 200;
        let mut peer = Peer::start(
            &sb.cgroup,
            &args(&[
                ("--listen", "0.0.0.0:7010".into()),
                ("--listen", "0.0.0.0:7011".into()),
                (
                    "--accept",
                    (PER_CONN + 2 * usize::from(CLIENTS)).to_string(),
                ),
            ]),
        );
        let mut clients = Vec::new();
        for _ in 0..PER_CONN {
            clients.push(connect_from(
                "127.0.0.3".parse().unwrap(),
                "127.0.0.1:7010".parse().unwrap(),
            ));
        }
        for x in 1..=CLIENTS {
            for _ in 0..2 {
                let from = IpAddr::from([127, 0, 1, x]);
                clients.push(connect_from(from, "127.0.0.1:7011".parse().unwrap()));
            }
        }
        let conns = peer.connections();
        let default = default_cc();
        for conn in &conns {
            assert_eq!(conn.cc, expected(&c, conn, &default), "{conn:?}");
        }
        // Per connection: 1:1 within 4.5 binomial standard deviations.
        let cubic = conns
            .iter()
            .filter(|c| c.local.port() == 7010 && c.cc == "cubic")
            .count() as f64;
        let (n, p1) = (PER_CONN as f64, 0.5);
        assert!(
            (cubic - n * p1).abs() <= 4.5 * (n * p1 * (1.0 - p1)).sqrt(),
            "cubic {cubic} of {n}"
        );
        // Per client: both connections of a client share the arm; 3:1 over clients.
        let mut by_client: BTreeMap<IpAddr, BTreeSet<&str>> = BTreeMap::new();
        for conn in conns.iter().filter(|c| c.local.port() == 7011) {
            by_client
                .entry(conn.remote.ip())
                .or_default()
                .insert(&conn.cc);
        }
        assert_eq!(by_client.len(), usize::from(CLIENTS));
        assert!(by_client.values().all(|s| s.len() == 1), "{by_client:?}");
        let cubic = by_client.values().filter(|s| s.contains("cubic")).count() as f64;
        let (n, p1) = (f64::from(CLIENTS), 0.75);
        assert!(
            (cubic - n * p1).abs() <= 4.5 * (n * p1 * (1.0 - p1)).sqrt(),
            "cubic clients {cubic} of {n}"
        );
        peer.close();
        drop(clients);
    });
}

#[test]
#[ignore = "needs root"]
fn every_closed_connection_yields_exactly_one_record_with_its_arm() {
    let _g = serial();
    in_sandbox(|sb| {
        let p = policy(
            r#"
[[rule]]
local_port = [7020]
split = { cubic = 1, reno = 1 }
record = true
[[rule]]
remote_port = [7021]
cc = "cubic"
record = true
[[rule]]
local_port = [7022]
cc = "reno"
"#,
        );
        let c = Compiled::new(&p, 5);
        let e = Attachment::attach_with_ring(&c, &sb.cgroup, Some(1000)).unwrap_err();
        assert!(e.to_string().contains("power of two"), "{e}");
        let att = Attachment::attach_with_ring(&c, &sb.cgroup, Some(1 << 16)).expect("attach");
        let mut records = Records::new(att.maps()).expect("ring");
        let _sink = sink_listeners(7021);
        let mut peer = Peer::start(
            &sb.cgroup,
            &[
                args(&[
                    ("--listen", "0.0.0.0:7020".into()),
                    ("--listen", "0.0.0.0:7022".into()),
                    ("--accept", "28".into()),
                    ("--send", "50000".into()),
                ]),
                (0..10)
                    .flat_map(|_| ["--to".to_string(), "127.0.0.5:7021".into()])
                    .collect(),
            ]
            .concat(),
        );
        let mut clients = Vec::new();
        for port in [7020u16; 24].into_iter().chain([7022; 4]) {
            let mut s = connect_from(
                "127.0.0.3".parse().unwrap(),
                SocketAddr::from(([127, 0, 0, 1], port)),
            );
            s.write_all(&[1u8; 100_000]).unwrap();
            clients.push(s);
        }
        let conns = peer.connections();
        peer.close();
        drop(clients);
        let recorded: Vec<&Conn> = conns.iter().filter(|c| c.local.port() != 7022).collect();
        assert_eq!(recorded.len(), 34);
        let mut got: Vec<ConnRecord> = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(10);
        while got.len() < recorded.len() && Instant::now() < deadline {
            got.extend(records.poll(Duration::from_millis(100)).unwrap());
        }
        got.extend(records.poll(Duration::from_millis(300)).unwrap());
        assert_eq!(
            got.len(),
            recorded.len(),
            "one record per connection: {got:#?}"
        );
        let cookies: HashSet<u64> = got.iter().map(|r| r.cookie).collect();
        assert_eq!(
            cookies,
            recorded.iter().map(|c| c.cookie).collect::<HashSet<u64>>()
        );
        for conn in recorded {
            let r = got.iter().find(|r| r.cookie == conn.cookie).unwrap();
            let d = c
                .decide(
                    conn.remote.ip(),
                    conn.local.port(),
                    conn.remote.port(),
                    conn.cookie,
                )
                .unwrap();
            assert_eq!(
                (r.rule, usize::from(r.arm)),
                (Some(d.rule as u16), d.arm.unwrap()),
                "{r:?}"
            );
            assert_eq!(r.cc, conn.cc);
            assert!(r.assigned);
            assert_eq!(r.direction, conn.side);
            assert_eq!(SocketAddr::new(r.remote, r.remote_port), conn.remote);
            assert_eq!(r.local_port, conn.local.port());
            assert!(
                r.end_ns > r.start_ns && r.min_rtt_us > 0 && r.segs_out > 0,
                "{r:?}"
            );
            match conn.side {
                Direction::Passive => assert!(r.bytes_received >= 100_000, "{r:?}"),
                Direction::Active => assert!(r.bytes_acked >= 50_000, "{r:?}"),
            }
        }
        assert_eq!(records.malformed(), 0);
        let stats = att.maps().counters().unwrap().stats;
        assert_eq!(
            (stats.records, stats.ring_full, stats.no_tcp_sock),
            (34, 0, 0),
            "{stats:?}"
        );
    });
}

/// Runs `policy_peer attach ARGS` (not in the cgroup) and returns it with
/// its stdout, after the line starting with `until`.
fn attacher(args: &[String], until: &str) -> (std::process::Child, Vec<String>) {
    let mut child = std::process::Command::new(sandbox::example("policy_peer"))
        .arg("attach")
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut lines = Vec::new();
    loop {
        let mut l = String::new();
        if out.read_line(&mut l).unwrap() == 0 {
            let status = child.wait().unwrap();
            panic!("attach exited ({status}) after {lines:?}");
        }
        lines.push(l.trim().to_string());
        if l.starts_with(until) {
            break;
        }
    }
    (child, lines)
}

fn write_policy(text: &str) -> std::path::PathBuf {
    let path = std::env::temp_dir().join(format!("bbrkit-policy-test-{}.toml", std::process::id()));
    std::fs::write(&path, text).unwrap();
    path
}

const SPLIT_7030: &str = "[[rule]]\nlocal_port = [7030]\nsplit = { cubic = 1, reno = 1 }\n";

fn ccs_of_accepted(cgroup: &Path, n: usize) -> Vec<Conn> {
    let mut peer = Peer::start(
        cgroup,
        &args(&[
            ("--listen", "0.0.0.0:7030".into()),
            ("--accept", n.to_string()),
        ]),
    );
    let clients: Vec<TcpStream> = (0..n)
        .map(|_| {
            connect_from(
                "127.0.0.3".parse().unwrap(),
                "127.0.0.1:7030".parse().unwrap(),
            )
        })
        .collect();
    let conns = peer.connections();
    peer.close();
    drop(clients);
    conns
}

#[test]
#[ignore = "needs root"]
fn attach_pin_exit_reopen_detach_leaves_nothing() {
    let _g = serial();
    let before = status::leftovers(sockops::PREFIX, &[]);
    in_sandbox(|sb| {
        let file = write_policy(SPLIT_7030);
        let id = cgroup::cgroup_id(&sb.cgroup).unwrap();
        let dir = sockops::default_pin_dir(id);
        let cg = sb.cgroup.display().to_string();
        let a = [
            ("--policy", file.display().to_string()),
            ("--cgroup", cg),
            ("--salt", "9".into()),
        ];
        let (mut child, lines) = attacher(
            &[args(&a), args(&[("--pin", dir.display().to_string())])].concat(),
            "pinned",
        );
        assert!(child.wait().unwrap().success());
        std::fs::remove_file(&file).unwrap();
        let link_id: u32 = lines[0].strip_prefix("attached ").unwrap().parse().unwrap();
        // The attacher is gone; its pinned link still attaches the program.
        let progs = cgroup::sock_ops_programs(&sb.cgroup, false).unwrap();
        assert_eq!(progs.len(), 1, "{progs:?}");
        assert!(
            progs[0].ours && progs[0].link_id == Some(link_id),
            "{progs:?}"
        );
        let att = Attachment::open(&dir).expect("reopen the pinned attachment");
        let c = Compiled::new(&policy(SPLIT_7030), 9);
        assert_eq!(
            att.maps().read_back().unwrap(),
            c,
            "the maps equal the file"
        );
        let d = att.describe().unwrap();
        assert_eq!(
            (d.link_id, d.cgroup_id, d.pin_dir.as_deref()),
            (link_id, id, Some(dir.as_path()))
        );
        let default = default_cc();
        for conn in ccs_of_accepted(&sb.cgroup, 20) {
            assert_eq!(conn.cc, expected(&c, &conn, &default));
        }
        // A guardrail moves every new connection to arm 1.
        att.maps().set_weights(0, &[0, 1]).unwrap();
        assert!(
            ccs_of_accepted(&sb.cgroup, 20)
                .iter()
                .all(|c| c.cc == "reno")
        );
        let arms = att.maps().counters().unwrap().arms;
        assert_eq!(arms.iter().map(|a| a.matched).sum::<u64>(), 40);
        assert!(att.maps().set_weights(0, &[0, 0]).is_err());
        assert!(att.maps().set_weights(1, &[1, 1]).is_err());
        // A second attachment cannot take the same directory.
        let mut other = Attachment::attach(&c, &sb.cgroup).unwrap();
        let e = other.pin(&dir).unwrap_err();
        assert!(e.to_string().contains("already holds an attachment"), "{e}");
        drop(other);
        assert!(sockops::detach(&dir).unwrap());
        assert!(!dir.exists());
        assert!(
            cgroup::sock_ops_programs(&sb.cgroup, false)
                .unwrap()
                .is_empty()
        );
        drop(att);
        assert!(
            ccs_of_accepted(&sb.cgroup, 4)
                .iter()
                .all(|c| c.cc == default)
        );
        assert!(
            !sockops::detach(&dir).unwrap(),
            "detaching twice is a no-op"
        );
        let e = Attachment::open(&dir).unwrap_err();
        assert!(e.to_string().contains("not attached"), "{e}");
    });
    assert_nothing_left(&before);
}

#[test]
#[ignore = "needs root"]
fn sigkill_before_the_pin_leaves_nothing_attached() {
    let _g = serial();
    let before = status::leftovers(sockops::PREFIX, &[]);
    in_sandbox(|sb| {
        let file = write_policy(SPLIT_7030);
        let a = [
            ("--policy", file.display().to_string()),
            ("--cgroup", sb.cgroup.display().to_string()),
        ];
        let (mut child, _) = attacher(&[args(&a), vec!["--hold".into()]].concat(), "attached");
        std::fs::remove_file(&file).unwrap();
        assert_eq!(
            cgroup::sock_ops_programs(&sb.cgroup, false).unwrap().len(),
            1
        );
        child.kill().unwrap();
        child.wait().unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        while !cgroup::sock_ops_programs(&sb.cgroup, false)
            .unwrap()
            .is_empty()
        {
            assert!(Instant::now() < deadline, "still attached after SIGKILL");
            std::thread::sleep(Duration::from_millis(20));
        }
    });
    assert_nothing_left(&before);
}

/// Bad input fails before anything is loaded (runs as any user).
#[test]
fn refuses_a_directory_that_is_not_a_cgroup_v2() {
    let c = Compiled::new(&policy(SPLIT_7030), 0);
    let e = Attachment::attach(&c, Path::new("/proc")).unwrap_err();
    let msg = bbrkit_diag::error_chain(&e);
    assert_eq!(
        msg,
        "cgroup /proc: not a cgroup v2 directory (see /proc/self/mountinfo for the cgroup2 mount)"
    );
    let e = Attachment::attach(&c, Path::new("/nonexistent-cgroup")).unwrap_err();
    assert!(
        bbrkit_diag::error_chain(&e).starts_with("cgroup /nonexistent-cgroup: No such file"),
        "{e}"
    );
}

/// A route's `congctl` is overridden like the default; `congctl lock` is
/// kept (the kernel would refuse the change with EPERM).
#[test]
#[ignore = "needs root"]
fn a_routes_congctl_is_overridden_and_a_locked_one_kept() {
    let _g = serial();
    in_sandbox(|sb| {
        sandbox::add_congctl_route([127, 0, 0, 6].into(), "reno", false);
        sandbox::add_congctl_route([127, 0, 0, 7].into(), "reno", true);
        let p = policy("[[rule]]\nremote = [\"127.0.0.6/32\", \"127.0.0.7/32\"]\ncc = \"cubic\"\n");
        let att = Attachment::attach(&Compiled::new(&p, 0), &sb.cgroup).expect("attach");
        let _sink = sink_listeners(7005);
        let mut peer = Peer::start(
            &sb.cgroup,
            &args(&[
                ("--to", "127.0.0.6:7005".into()),
                ("--to", "127.0.0.7:7005".into()),
            ]),
        );
        let cc: Vec<(String, String)> = peer
            .connections()
            .iter()
            .map(|c| (c.remote.ip().to_string(), c.cc.clone()))
            .collect();
        let want = [("127.0.0.6", "cubic"), ("127.0.0.7", "reno")]
            .map(|(a, c)| (a.to_string(), c.to_string()));
        assert_eq!(cc, want);
        let a = &att.maps().counters().unwrap().arms[0];
        assert_eq!(
            (a.matched, a.assigned, a.kept_route, a.failed),
            (2, 1, 1, 0),
            "{a:?}"
        );
        peer.close();
    });
}

/// Issue 33 (verify's window): a connection whose rule names an algorithm
/// the kernel does not have counts `failed` and stamps the program's
/// `BKPOL_S_LAST_FAILED` with the monotonic clock, between the reading
/// before it and the reading after it; a policy with no failure has no
/// stamp.
#[test]
#[ignore = "needs root"]
fn a_failure_is_stamped_with_the_monotonic_clock() {
    let _g = serial();
    in_sandbox(|sb| {
        let c = Compiled::new(
            &policy("[[rule]]\nremote_port = [7005]\ncc = \"nosuchcc\"\n"),
            1,
        );
        let att = Attachment::attach(&c, &sb.cgroup).expect("attach");
        let before = att.maps().counters().unwrap();
        assert_eq!(before.stats.last_failed_ns, 0, "{before:?}");
        assert_eq!(before.stats.since_failed(), None);
        let _sink = sink_listeners(7005);
        let mut peer = Peer::start(&sb.cgroup, &args(&[("--to", "127.0.0.2:7005".into())]));
        let conns = peer.connections();
        assert_eq!(conns.len(), 1, "{conns:?}");
        assert_eq!(
            conns[0].cc,
            default_cc(),
            "a failure keeps the host default"
        );
        let after = att.maps().counters().unwrap();
        assert_eq!(after.arms[0].failed, 1, "{after:?}");
        let s = &after.stats;
        assert!(
            before.stats.read_ns < s.last_failed_ns && s.last_failed_ns <= s.read_ns,
            "{before:?} {after:?}"
        );
        assert!(s.since_failed().unwrap() < Duration::from_secs(60), "{s:?}");
        peer.close();
    });
}
