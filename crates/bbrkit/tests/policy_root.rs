//! `bbrkit enable --policy` on the real kernel (issue 19, host
//! integration): enable → connections in the cgroup get their rule's
//! algorithm, others keep the default → verify → a simulated reboot and
//! `bbrkit boot --policy` → a replacement → rollback leaving no program,
//! link, pin or file; SIGKILL at each step of `enable --policy`; bad input
//! refused with nothing changed.
//!
//! Root only. Each test runs on a thread in throwaway network and mount
//! namespaces (a private bpffs at /sys/fs/bpf, so no pin reaches the
//! host's), with a throwaway child cgroup under the cgroup2 mount and a
//! `--root` sandbox for files. The test process joins the child cgroup only
//! while it creates the sockets the policy governs (a socket belongs to the
//! cgroup of the process that created it; an accepted one to its
//! listener's), then returns to its own.

mod bbr3_name;
#[path = "../../bbrkit-bpf/tests/child_cgroup/mod.rs"]
mod child_cgroup;
#[path = "../../bbrkit-diag/tests/netns/mod.rs"]
mod netns;

mod common;
#[path = "foreign_sockops/mod.rs"]
mod foreign_sockops;

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use bbrkit_bpf::sockops::{self, cgroup};
use common::{code, run, snapshot, stderr, stdout, text};

static SERIAL: Mutex<()> = Mutex::new(());

/// A sandbox: the child cgroup and the `--root` directory.
struct Sandbox {
    cgroup: PathBuf,
    root: tempfile::TempDir,
}

impl Sandbox {
    fn root(&self) -> &str {
        self.root.path().to_str().unwrap()
    }

    fn cg(&self) -> &str {
        self.cgroup.to_str().unwrap()
    }

    /// The pin directories of this cgroup with a link pinned.
    fn linked(&self) -> Vec<PathBuf> {
        let a = sockops::default_pin_dir(cgroup::cgroup_id(&self.cgroup).unwrap());
        [a.clone(), PathBuf::from(format!("{}-b", a.display()))]
            .into_iter()
            .filter(|d| d.join(sockops::LINK_PIN).exists())
            .collect()
    }

    /// Programs attached to the cgroup itself.
    fn programs(&self) -> usize {
        cgroup::sock_ops_programs(&self.cgroup, false)
            .unwrap()
            .len()
    }
}

/// Runs `f` in a fresh sandbox on its own thread.
fn in_sandbox<T: Send + 'static>(f: impl FnOnce(&Sandbox) -> T + Send + 'static) -> T {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    std::thread::spawn(move || {
        netns::enter_netns_with_private_bpffs();
        let cg = child_cgroup::ChildCgroup::new("policyhost");
        f(&Sandbox {
            cgroup: cg.0.clone(),
            root: tempfile::tempdir().unwrap(),
        })
    })
    .join()
    .unwrap_or_else(|e| std::panic::resume_unwind(e))
}

/// This process's cgroup v2 directory.
fn own_cgroup() -> PathBuf {
    let text = std::fs::read_to_string("/proc/self/cgroup").unwrap();
    let rel = text
        .lines()
        .find_map(|l| l.strip_prefix("0::"))
        .expect("a cgroup v2 line");
    let mount_point = cgroup::cgroup2_mount().unwrap().unwrap();
    mount_point.join(rel.trim_start_matches('/'))
}

fn move_to(cg: &Path) {
    std::fs::write(cg.join("cgroup.procs"), std::process::id().to_string())
        .unwrap_or_else(|e| panic!("join {}: {e}", cg.display()));
}

/// Runs `f` (which creates sockets) with this process in `cg`.
fn governed<T>(cg: &Path, f: impl FnOnce() -> T) -> T {
    let home = own_cgroup();
    move_to(cg);
    let r = f();
    move_to(&home);
    r
}

/// The algorithm of a connection accepted on `port` by a listener the
/// cgroup owns (passive), from a client outside it.
fn passive(cg: &Path, port: u16) -> String {
    let l = governed(cg, || TcpListener::bind(("127.0.0.1", port)).unwrap());
    let _c = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let (s, _) = l.accept().unwrap();
    netns::get_cc(&s)
}

/// The algorithm of a connection the cgroup opens to `port` (active).
fn active(cg: &Path, port: u16) -> String {
    let l = TcpListener::bind(("127.0.0.1", port)).unwrap();
    let c = governed(cg, || TcpStream::connect(("127.0.0.1", port)).unwrap());
    let _s = l.accept().unwrap();
    netns::get_cc(&c)
}

/// The namespace default and an algorithm that differs from it.
fn default_and_other() -> (String, &'static str) {
    let d = common::sysctl_get(common::CC);
    let other = if d == "reno" { "cubic" } else { "reno" };
    (d, other)
}

fn policy(dir: &Path, name: &str, cc: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(
        &p,
        format!(
            "[[rule]]\nname = \"service\"\nlocal_port = [7443]\ncc = \"{cc}\"\n\n[[rule]]\nname = \"upstream\"\nremote_port = [7445]\ncc = \"{cc}\"\n"
        ),
    )
    .unwrap();
    p
}

fn ok(args: &[&str]) -> String {
    let o = run(args, &[]);
    assert_eq!(code(&o), 0, "{args:?}: {}", text(&o));
    stdout(&o)
}

/// The policy's algorithm on matching connections, the default elsewhere.
fn assert_governed(cg: &Path, default: &str, rule: &str) {
    assert_eq!(passive(cg, 7443), rule, "passive, service port");
    assert_eq!(active(cg, 7445), rule, "active, upstream port");
    assert_eq!(passive(cg, 7080), default, "passive, another port");
    assert_eq!(active(cg, 7081), default, "active, another port");
}

#[test]
#[ignore = "needs root"]
fn enable_verify_reboot_replace_rollback_is_exact() {
    in_sandbox(|sb| {
        let (default, other) = default_and_other();
        let files = tempfile::tempdir().unwrap();
        let first = policy(files.path(), "first.toml", other);
        // The root boots with systemd: enable also writes the boot unit.
        std::fs::create_dir_all(sb.root.path().join("run/systemd/system")).unwrap();
        let before = snapshot(sb.root.path());
        let (r, cg) = (sb.root(), sb.cg());
        let f = first.to_str().unwrap();

        let dry = ok(&[
            "enable",
            "--policy",
            f,
            "--cgroup",
            cg,
            "--root",
            r,
            "--dry-run",
        ]);
        assert!(
            dry.contains("rule 1 \"service\": local_port 7443 ->"),
            "{dry}"
        );
        assert!(dry.contains("policy: would attach to cgroup"), "{dry}");
        assert_eq!(snapshot(sb.root.path()), before, "a dry run writes nothing");
        assert_eq!(sb.programs(), 0, "a dry run attaches nothing");

        let out = ok(&["enable", "--policy", f, "--cgroup", cg, "--root", r]);
        assert!(out.contains("policy: attached to cgroup"), "{out}");
        let unit = sb
            .root
            .path()
            .join("etc/systemd/system/bbrkit-policy.service");
        let unit_text = std::fs::read_to_string(&unit).unwrap();
        assert!(
            unit_text.contains("\nExecStart=/usr/local/lib/bbrkit/bbrkit boot --policy\n"),
            "{unit_text}"
        );
        // bbrkit has exited: the pinned link keeps the policy attached.
        assert_eq!((sb.linked().len(), sb.programs()), (1, 1));
        assert_governed(&sb.cgroup, &default, other);
        let v = ok(&["verify", "--root", r]);
        assert!(
            v.contains("ok   policy.")
                && v.contains(".maps=equal (2 rules)")
                && v.contains("ok   unit.bbrkit-policy.service=enabled"),
            "{v}"
        );
        let again = ok(&["enable", "--policy", f, "--cgroup", cg, "--root", r]);
        assert!(again.contains("nothing to change"), "{again}");

        // A reboot detaches and unpins everything; the boot entry point
        // re-attaches the recorded policy from bbrkit's copy.
        for d in sb.linked() {
            assert!(sockops::detach(&d).unwrap());
        }
        assert_eq!(sb.programs(), 0);
        assert_eq!(passive(&sb.cgroup, 7443), default);
        let boot = ok(&["boot", "--policy", "--root", r]);
        assert!(boot.contains("attached from"), "{boot}");
        assert_governed(&sb.cgroup, &default, other);

        // A second policy replaces the first: attach new, then detach old.
        let second = policy(files.path(), "second.toml", &default);
        let s = second.to_str().unwrap();
        let out = ok(&["enable", "--policy", s, "--cgroup", cg, "--root", r]);
        assert!(out.contains("; detached the policy at"), "{out}");
        assert_eq!((sb.linked().len(), sb.programs()), (1, 1));
        assert_eq!(passive(&sb.cgroup, 7443), default);
        ok(&["verify", "--root", r]);

        let out = ok(&["rollback", "--root", r]);
        assert!(
            out.contains(": detached (detached the policy from"),
            "{out}"
        );
        assert_eq!(sb.programs(), 0, "nothing attached");
        assert!(!Path::new(sockops::PIN_ROOT).exists(), "no pin left");
        assert_eq!(snapshot(sb.root.path()), before, "files byte for byte");
        assert_eq!(passive(&sb.cgroup, 7443), default);
    });
}

/// SIGKILL after each step of `enable --policy` (the before-image is saved
/// before anything is attached, so there is no "attached but not recorded"
/// window): the old state or the new one — or, killed between pinning the
/// new policy and detaching the old one, both, the older still governing — and a
/// rollback still leaves nothing.
#[test]
#[ignore = "needs root"]
fn sigkill_at_each_step_leaves_the_old_or_the_new_policy() {
    in_sandbox(|sb| {
        let (default, other) = default_and_other();
        let files = tempfile::tempdir().unwrap();
        let first = policy(files.path(), "first.toml", other);
        let second = policy(files.path(), "second.toml", &default);
        let (r, cg) = (sb.root(), sb.cg());
        let before = snapshot(sb.root.path());
        let enable = |p: &Path, at: &str| {
            let args = [
                "enable",
                "--policy",
                p.to_str().unwrap(),
                "--cgroup",
                cg,
                "--root",
                r,
            ];
            run(&args, &[("BBRKIT_TEST_CRASH_AT", at)])
        };
        for at in ["state-written", "file-written"] {
            let o = enable(&first, at);
            assert_eq!(code(&o), -1, "killed at {at}: {}", text(&o));
            assert_eq!(sb.programs(), 0, "{at}: nothing attached yet");
            ok(&["rollback", "--root", r]);
            assert_eq!(snapshot(sb.root.path()), before, "{at}");
        }
        for at in ["policy-pinned", "policy-attached"] {
            let o = enable(&first, at);
            assert_eq!(code(&o), -1, "{}", text(&o));
            assert_eq!(sb.linked().len(), 1, "{at}: the new policy is pinned");
            assert_governed(&sb.cgroup, &default, other);
            ok(&["rollback", "--root", r]);
            assert_eq!((sb.linked().len(), sb.programs()), (0, 0), "{at}");
            assert_eq!(snapshot(sb.root.path()), before, "{at}");
        }
        // Killed while replacing: both attached. The older runs first and its
        // bpf_setsockopt marks the socket's algorithm as chosen
        // (icsk_ca_setsockopt), so the newer keeps it: the old policy still
        // governs, whole. The next enable (or rollback) detaches the extra one.
        ok(&[
            "enable",
            "--policy",
            first.to_str().unwrap(),
            "--cgroup",
            cg,
            "--root",
            r,
        ]);
        let o = enable(&second, "policy-pinned");
        assert_eq!(code(&o), -1, "{}", text(&o));
        assert_eq!((sb.linked().len(), sb.programs()), (2, 2));
        assert_eq!(
            passive(&sb.cgroup, 7443),
            other,
            "the older policy still governs"
        );
        ok(&[
            "enable",
            "--policy",
            second.to_str().unwrap(),
            "--cgroup",
            cg,
            "--root",
            r,
        ]);
        assert_eq!((sb.linked().len(), sb.programs()), (1, 1));
        assert_eq!(passive(&sb.cgroup, 7443), default);
        ok(&["rollback", "--root", r]);
        assert_eq!((sb.linked().len(), sb.programs()), (0, 0));
        assert_eq!(snapshot(sb.root.path()), before);
    });
}

#[test]
#[ignore = "needs root"]
fn bad_input_is_one_line_exit_2_and_changes_nothing() {
    in_sandbox(|sb| {
        let files = tempfile::tempdir().unwrap();
        let (r, cg) = (sb.root(), sb.cg());
        let bad = files.path().join("bad.toml");
        std::fs::write(&bad, "[[rule]]\nremote = [\"10.0.0.0/33\"]\ncc = \"bbr\"\n").unwrap();
        let unknown = files.path().join("unknown.toml");
        std::fs::write(&unknown, "[[rule]]\ncc = \"nosuchcc\"\n").unwrap();
        let good = policy(files.path(), "good.toml", "reno");
        let before = snapshot(sb.root.path());
        let cases: [(&Path, &str, &str); 3] = [
            (
                &bad,
                cg,
                "rule 1 (line 1): remote \"10.0.0.0/33\": prefix length 33 > 32",
            ),
            (
                &unknown,
                cg,
                "rule 1 (line 1): cc: the policy names nosuchcc, which this host does not offer: the kernel registers",
            ),
            (
                &good,
                "/proc",
                "--cgroup /proc: cgroup /proc: not a cgroup v2 directory",
            ),
        ];
        for (file, cgroup, want) in cases {
            let args = [
                "enable",
                "--policy",
                file.to_str().unwrap(),
                "--cgroup",
                cgroup,
                "--root",
                r,
            ];
            let o = run(&args, &[]);
            let err = stderr(&o);
            assert_eq!(code(&o), 2, "{}", text(&o));
            assert_eq!(err.lines().count(), 1, "{err}");
            assert!(err.starts_with("bbrkit: ") && err.contains(want), "{err}");
            assert!(stdout(&o).is_empty(), "{}", stdout(&o));
            assert_eq!(snapshot(sb.root.path()), before);
            assert_eq!(sb.programs(), 0);
            assert!(!Path::new(sockops::PIN_ROOT).exists());
        }
    });
}

/// `conns` shows the rule each governed connection matched (issue 19):
/// the passive and active connections of the cgroup get rule 1 and 2 with
/// the rule's algorithm, one whose application chose its own algorithm
/// before connecting keeps it and differs, one no rule matches is the host
/// default, and the summary counts them by (cgroup, rule, algorithm).
#[test]
#[ignore = "needs root"]
fn conns_shows_each_connections_rule() {
    in_sandbox(|sb| {
        let (default, other) = default_and_other();
        let files = tempfile::tempdir().unwrap();
        let f = policy(files.path(), "p.toml", other);
        let (r, cg) = (sb.root(), sb.cg());
        ok(&[
            "enable",
            "--policy",
            f.to_str().unwrap(),
            "--cgroup",
            cg,
            "--root",
            r,
        ]);
        // Passive on the service port, active to the upstream port, the
        // application's own algorithm, and a port no rule names.
        let svc = governed(&sb.cgroup, || {
            TcpListener::bind(("127.0.0.1", 7443)).unwrap()
        });
        let _c1 = TcpStream::connect(("127.0.0.1", 7443)).unwrap();
        let (s1, _) = svc.accept().unwrap();
        let up = TcpListener::bind(("127.0.0.1", 7445)).unwrap();
        let c2 = governed(&sb.cgroup, || {
            TcpStream::connect(("127.0.0.1", 7445)).unwrap()
        });
        let own = governed(&sb.cgroup, || {
            let s =
                socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
            netns::set_cc(&s, &default);
            s.connect(&std::net::SocketAddr::from(([127, 0, 0, 1], 7445)).into())
                .unwrap();
            s
        });
        let _a2 = (up.accept().unwrap(), up.accept().unwrap());
        let free = TcpListener::bind(("127.0.0.1", 7081)).unwrap();
        let c3 = governed(&sb.cgroup, || {
            TcpStream::connect(("127.0.0.1", 7081)).unwrap()
        });
        let _a3 = free.accept().unwrap();
        assert_eq!(
            (
                netns::get_cc(&s1),
                netns::get_cc(&c2),
                netns::get_cc(&own),
                netns::get_cc(&c3)
            ),
            (
                other.to_string(),
                other.to_string(),
                default.clone(),
                default.clone()
            )
        );

        let j = common::json_ok(&run(&["conns", "--json", "--state", "established"], &[]));
        let rows = j["sockets"].as_array().unwrap();
        let rule_of = |local: String, remote: String| {
            let row = rows
                .iter()
                .find(|s| s["local"] == local.as_str() && s["remote"] == remote.as_str())
                .unwrap_or_else(|| panic!("{local} -> {remote} in {j}"));
            let p = &row["policy"];
            (
                p["rule"].clone(),
                p["cc"].clone(),
                p["differs"].clone(),
                p["cgroup"].clone(),
            )
        };
        let text = |a: std::net::SocketAddr| a.to_string();
        let want = |rule: serde_json::Value, cc: serde_json::Value, differs: bool| {
            (rule, cc, differs.into(), serde_json::Value::from(cg))
        };
        assert_eq!(
            rule_of(
                text(s1.local_addr().unwrap()),
                text(s1.peer_addr().unwrap())
            ),
            want(1.into(), other.into(), false)
        );
        assert_eq!(
            rule_of(
                text(c2.local_addr().unwrap()),
                text(c2.peer_addr().unwrap())
            ),
            want(2.into(), other.into(), false)
        );
        let own_local = own.local_addr().unwrap().as_socket().unwrap();
        assert_eq!(
            rule_of(text(own_local), "127.0.0.1:7445".into()),
            want(2.into(), other.into(), true)
        );
        assert_eq!(
            rule_of(text(c3.local_addr().unwrap()), "127.0.0.1:7081".into()),
            want(serde_json::Value::Null, serde_json::Value::Null, false)
        );
        // The peers outside the cgroup are governed by no policy.
        assert!(
            rule_of(
                text(s1.peer_addr().unwrap()),
                text(s1.local_addr().unwrap())
            )
            .0
            .is_null()
        );
        let summary: Vec<(serde_json::Value, serde_json::Value, u64, u64)> = j["policy_summary"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                (
                    e["rule"].clone(),
                    e["cc"].clone(),
                    e["sockets"].as_u64().unwrap(),
                    e["differ"].as_u64().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            summary,
            [
                (1.into(), other.into(), 1, 0),
                (2.into(), other.into(), 2, 1),
                (serde_json::Value::Null, serde_json::Value::Null, 1, 0)
            ],
            "{j}"
        );
        let table = ok(&["conns", "--state", "established"]);
        assert!(
            table.contains("POLICY CGROUP") && table.contains(&format!(" rule:2={other}(differs)")),
            "{table}"
        );
        drop((s1, c2, own, c3));
        ok(&["rollback", "--root", r]);
    });
}

/// A simulated reboot of a child cgroup's policy: the pins are gone and
/// the directory is not made yet (`boot --policy` fails naming the fix),
/// then made again with a new id (`boot --policy` attaches by path, the
/// policy governs, `verify` passes) and rollback leaves nothing.
#[test]
#[ignore = "needs root"]
fn a_child_cgroup_made_again_after_a_reboot_gets_its_policy_back() {
    in_sandbox(|sb| {
        let (default, other) = default_and_other();
        let files = tempfile::tempdir().unwrap();
        let f = policy(files.path(), "p.toml", other);
        let (r, cg) = (sb.root(), sb.cg());
        let before = snapshot(sb.root.path());
        ok(&[
            "enable",
            "--policy",
            f.to_str().unwrap(),
            "--cgroup",
            cg,
            "--root",
            r,
        ]);
        let old_id = cgroup::cgroup_id(&sb.cgroup).unwrap();
        for d in sb.linked() {
            assert!(sockops::detach(&d).unwrap());
        }
        std::fs::remove_dir(&sb.cgroup).unwrap();
        let o = run(&["boot", "--policy", "--root", r], &[]);
        assert_ne!(code(&o), 0, "{}", text(&o));
        assert!(
            text(&o).contains("does not exist (yet): create it, or start the service that owns it, then run `bbrkit boot --policy` again"),
            "{}",
            text(&o)
        );
        std::fs::create_dir(&sb.cgroup).unwrap();
        assert_ne!(
            cgroup::cgroup_id(&sb.cgroup).unwrap(),
            old_id,
            "a new directory, a new id"
        );
        let boot = ok(&["boot", "--policy", "--root", r]);
        assert!(boot.contains("attached from"), "{boot}");
        assert_eq!((sb.linked().len(), sb.programs()), (1, 1));
        assert_governed(&sb.cgroup, &default, other);
        let v = ok(&["verify", "--root", r]);
        assert!(v.contains(".maps=equal (2 rules)"), "{v}");
        ok(&["rollback", "--root", r]);
        assert_eq!(sb.programs(), 0, "nothing attached");
        assert!(!Path::new(sockops::PIN_ROOT).exists(), "no pin left");
        assert_eq!(snapshot(sb.root.path()), before, "files byte for byte");
    });
}

/// An algorithm registered here that is neither `a` nor `b`.
fn third(a: &str, b: &str) -> String {
    let avail = common::sysctl_get("net.ipv4.tcp_available_congestion_control");
    avail
        .split_whitespace()
        .find(|c| *c != a && *c != b)
        .unwrap_or_else(|| panic!("a third algorithm in {avail}"))
        .to_string()
}

/// The policy's counters of rule 2 (`remote_port 7445`): (assigned, kept_app).
fn upstream_counters(cg: &Path) -> (u64, u64) {
    let dir = sockops::default_pin_dir(cgroup::cgroup_id(cg).unwrap());
    let a = sockops::Attachment::open(&dir).unwrap();
    let c = a.maps().counters().unwrap();
    let arm = c.arms.iter().find(|a| a.rule == 1).unwrap();
    (arm.assigned, arm.kept_app)
}

/// Issue 33 item 2: another sock_ops program that sets the algorithm,
/// attached to the policy cgroup's parent and then to a child of it. On the
/// parent it runs after the policy, for the policy's own sockets: its
/// algorithm wins and the policy counts `assigned`. On the child it runs
/// first, for the child's sockets: its algorithm wins again, and the
/// policy, seeing the choice made, counts `kept_app`. Either way `verify`
/// fails `policy.<cg>.foreign` and `doctor` names the program (id, name,
/// cgroup), and `bbrkit metrics` counts it.
#[test]
#[ignore = "needs root"]
fn a_foreign_program_on_a_parent_or_a_child_cgroup_wins_and_is_reported() {
    in_sandbox(|sb| {
        let (default, other) = default_and_other();
        let foreign_cc = third(&default, other);
        let files = tempfile::tempdir().unwrap();
        let f = policy(files.path(), "p.toml", other);
        let cg = sb.cgroup.join("policy");
        let child = cg.join("app");
        std::fs::create_dir_all(&child).unwrap();
        let (r, c) = (sb.root(), cg.to_str().unwrap());
        ok(&[
            "enable",
            "--policy",
            f.to_str().unwrap(),
            "--cgroup",
            c,
            "--root",
            r,
        ]);
        assert_eq!(active(&cg, 7445), other, "the policy alone");
        let v = ok(&["verify", "--root", r]);
        assert!(v.contains(&format!("ok   policy.{c}.foreign=none")), "{v}");
        let foreign_line = |out: &str, place: &str, on: &Path, name: &str| {
            out.lines()
                .any(|l| l.contains(&format!("({name}) on {}, {place}", on.display())))
        };

        // On the parent: runs after the policy; its algorithm wins.
        let parent = foreign_sockops::Foreign::attach(&sb.cgroup, &foreign_cc);
        let before = upstream_counters(&cg);
        assert_eq!(
            active(&cg, 7445),
            foreign_cc,
            "the parent's program runs last"
        );
        let after = upstream_counters(&cg);
        assert_eq!(
            (after.0 - before.0, after.1 - before.1),
            (1, 0),
            "assigned, then replaced"
        );
        let o = run(&["verify", "--root", r], &[]);
        let v = stdout(&o);
        assert_eq!(code(&o), 1, "{v}");
        assert!(
            v.contains(&format!("FAIL policy.{c}.foreign=1 program(s)")),
            "{v}"
        );
        assert!(
            foreign_line(&v, "an ancestor", &sb.cgroup, &parent.name),
            "{v}"
        );
        let o = run(&["doctor", "--root", r], &[]);
        let d = stdout(&o);
        assert_eq!(code(&o), 1, "{d}");
        assert!(d.contains("WARNING [policy_foreign_sockops]"), "{d}");
        assert!(
            foreign_line(&d, "an ancestor", &sb.cgroup, &parent.name),
            "{d}"
        );
        let m = ok(&["metrics", "--root", r]);
        let id = cgroup::cgroup_id(&cg).unwrap();
        assert!(
            m.contains(&format!(
                "bbrkit_policy_foreign_programs{{cgroup_id=\"{id}\"}} 1\n"
            )),
            "{m}"
        );
        drop(parent);

        // On a child: runs first for the child's sockets; the policy keeps
        // the choice made (kept_app); the policy's own sockets are untouched.
        let kid = foreign_sockops::Foreign::attach(&child, &foreign_cc);
        let before = upstream_counters(&cg);
        assert_eq!(
            active(&child, 7445),
            foreign_cc,
            "the child's program runs first"
        );
        let after = upstream_counters(&cg);
        assert_eq!((after.0 - before.0, after.1 - before.1), (0, 1), "kept_app");
        assert_eq!(active(&cg, 7445), other, "the policy's cgroup itself");
        let o = run(&["verify", "--root", r], &[]);
        let v = stdout(&o);
        assert_eq!(code(&o), 1, "{v}");
        assert!(foreign_line(&v, "a descendant", &child, &kid.name), "{v}");
        let d = stdout(&run(&["doctor", "--root", r], &[]));
        assert!(foreign_line(&d, "a descendant", &child, &kid.name), "{d}");
        drop(kid);

        let v = ok(&["verify", "--root", r]);
        assert!(v.contains(&format!("ok   policy.{c}.foreign=none")), "{v}");
        let m = ok(&["metrics", "--root", r]);
        assert!(
            m.contains(&format!(
                "bbrkit_policy_foreign_programs{{cgroup_id=\"{id}\"}} 0\n"
            )),
            "{m}"
        );
        ok(&["rollback", "--root", r]);
        std::fs::remove_dir(&child).unwrap();
        std::fs::remove_dir(&cg).unwrap();
    });
}

/// Detaches every bpffs at /sys/fs/bpf in this thread's private mount
/// namespace (the sandbox's, and one the host may have underneath).
fn unmount_bpffs() {
    for _ in 0..4 {
        // SAFETY: a NUL-terminated literal; the mount namespace is this
        // thread's own (the sandbox's), nothing propagates to the host.
        let rc = unsafe { libc::umount2(c"/sys/fs/bpf".as_ptr(), libc::MNT_DETACH) };
        if rc != 0 {
            break;
        }
    }
}

/// Issue 33 item 5: what attaching needs is checked in the plan, before
/// anything is written: with no bpffs at /sys/fs/bpf, or next to a legacy
/// exclusive sock_ops attachment on the cgroup's parent or the cgroup
/// itself, `enable --policy` is one line `bbrkit: ...` with the fix, exit 2,
/// no file under `--root` (not the copy, not the boot unit), nothing
/// attached — not the bare EPERM the link attach or the pin would give.
#[test]
#[ignore = "needs root"]
fn no_bpffs_or_an_exclusive_attachment_is_refused_before_anything_is_written() {
    in_sandbox(|sb| {
        let files = tempfile::tempdir().unwrap();
        let good = policy(files.path(), "good.toml", "reno");
        let cg = sb.cgroup.join("policy");
        std::fs::create_dir(&cg).unwrap();
        // The root boots with systemd: a plan that went on would write the unit.
        std::fs::create_dir_all(sb.root.path().join("run/systemd/system")).unwrap();
        let before = snapshot(sb.root.path());
        let refused = |want: &str| {
            let args = [
                "enable",
                "--policy",
                good.to_str().unwrap(),
                "--cgroup",
                cg.to_str().unwrap(),
                "--root",
                sb.root(),
            ];
            let o = run(&args, &[]);
            let err = stderr(&o);
            assert_eq!(code(&o), 2, "{}", text(&o));
            assert_eq!(err.lines().count(), 1, "{err}");
            assert!(
                err.starts_with("bbrkit: --policy: ") && err.contains(want),
                "{err}"
            );
            assert!(!err.contains("Operation not permitted"), "{err}");
            assert_eq!(snapshot(sb.root.path()), before, "nothing written");
            assert!(
                cgroup::sock_ops_programs(&cg, true)
                    .unwrap()
                    .iter()
                    .all(|p| !p.ours)
            );
        };

        let parent = foreign_sockops::Foreign::attach_exclusive(&sb.cgroup, "reno");
        refused(&format!(
            "cgroup {} holds a sock_ops program attached exclusively",
            sb.cg()
        ));
        drop(parent);
        let own = foreign_sockops::Foreign::attach_exclusive(&cg, "reno");
        refused(&format!(
            "cgroup {} holds a sock_ops program attached exclusively",
            cg.display()
        ));
        drop(own);

        unmount_bpffs();
        refused("/sys/fs/bpf is not bpffs (mount -t bpf bpf /sys/fs/bpf)");
        assert!(!Path::new(sockops::PIN_ROOT).exists());
        std::fs::remove_dir(&cg).unwrap();
    });
}

/// Issue 33 item 5: an upgrade from the previous layout's pins. The
/// fixture is that layout's program (`tests/fixtures/sockops-layout1.bpf.o`,
/// the object of main before the layout marker, commit 55fbbf4) attached
/// and pinned as its code did: the maps and the link, no `layout` marker.
/// Its maps equal the policy, yet `enable` is not "unchanged": doctor names
/// the old layout, `enable` replaces it through the free directory with
/// this layout's program, and rollback still leaves nothing.
#[test]
#[ignore = "needs root"]
fn an_upgrade_replaces_a_policy_pinned_by_the_previous_layout() {
    in_sandbox(|sb| {
        let (default, other) = default_and_other();
        let files = tempfile::tempdir().unwrap();
        let f = policy(files.path(), "p.toml", other);
        let before = snapshot(sb.root.path());
        let (r, cg) = (sb.root(), sb.cg());
        let file = f.to_str().unwrap();
        ok(&["enable", "--policy", file, "--cgroup", cg, "--root", r]);
        let [dir] = sb.linked().try_into().unwrap();
        assert!(sockops::detach(&dir).unwrap());

        let bytes = std::fs::read(f.as_path()).unwrap();
        let (_, compiled) = bbrkit_host::change::policy::compile("p.toml", &bytes).unwrap();
        let object = std::fs::read(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/sockops-layout1.bpf.o"
        ))
        .unwrap();
        let source = bbrkit_bpf::ObjectSource::Memory {
            name: sockops::OBJECT_NAME,
            bytes: &object,
        };
        let mut old = sockops::Attachment::attach_source(source, &compiled, &sb.cgroup, None)
            .expect("attach the previous layout's program");
        old.pin(&dir).unwrap();
        std::fs::remove_file(dir.join(sockops::LAYOUT_PIN)).unwrap(); // it pinned none
        drop(old);
        let layout = |d: &Path| {
            sockops::Attachment::open(d)
                .unwrap()
                .describe()
                .unwrap()
                .layout
        };
        assert_eq!(layout(&dir), 1);
        assert_governed(&sb.cgroup, &default, other);
        let o = run(&["doctor", "--root", r], &[]);
        let d = stdout(&o);
        assert!(d.contains("WARNING [policy_old_layout]"), "{d}");

        let out = ok(&["enable", "--policy", file, "--cgroup", cg, "--root", r]);
        assert!(
            out.contains(&format!("; detached the policy at {}", dir.display())),
            "{out}"
        );
        let [new] = sb.linked().try_into().unwrap();
        assert_ne!(new, dir);
        assert_eq!((layout(&new), sb.programs()), (sockops::LAYOUT, 1));
        assert_governed(&sb.cgroup, &default, other);
        let again = ok(&["enable", "--policy", file, "--cgroup", cg, "--root", r]);
        assert!(again.contains("nothing to change"), "{again}");
        let d = stdout(&run(&["doctor", "--root", r], &[]));
        assert!(!d.contains("policy_old_layout"), "{d}");

        ok(&["rollback", "--root", r]);
        assert_eq!(sb.programs(), 0, "nothing attached");
        assert!(!Path::new(sockops::PIN_ROOT).exists(), "no pin left");
        assert_eq!(snapshot(sb.root.path()), before, "files byte for byte");
    });
}

/// Issue 33.6: a policy naming bbr3 on a host where bbr3 is not registered
/// registers it as part of its own change — the namespace default stays
/// as it was, so connections the policy does not match keep it — keeps it
/// at boot (`boot --policy` registers it again after a simulated reboot),
/// and rollback leaves nothing registered, no pin, the files byte for byte.
/// bbr3 is global to the host: the test waits until no one else holds it.
#[test]
#[ignore = "needs root"]
fn a_policy_naming_bbr3_registers_it_without_changing_the_default() {
    in_sandbox(|sb| {
        if !bbr3_name::wait_free() {
            return;
        }
        let default = common::sysctl_get(common::CC);
        assert_ne!(default, "bbr3");
        let files = tempfile::tempdir().unwrap();
        let p = policy(files.path(), "bbr3.toml", "bbr3");
        let (r, cg, f) = (sb.root(), sb.cg(), p.to_str().unwrap());
        let before = snapshot(sb.root.path());

        let out = ok(&["enable", "--policy", f, "--cgroup", cg, "--root", r]);
        assert!(
            out.contains("policy: registered bbr3 with a pinned link /sys/fs/bpf/bbrkit/bbr3/link for its rules; the namespace default is left as it is"),
            "{out}"
        );
        assert!(bbr3_name::registered());
        assert_eq!(
            common::sysctl_get(common::CC),
            default,
            "the default is untouched"
        );
        assert_governed(&sb.cgroup, &default, "bbr3");
        let v = ok(&["verify", "--root", r]);
        assert!(v.contains(".maps=equal (2 rules)"), "{v}");

        // A reboot: no policy pin, no registration. The boot entry point
        // registers bbr3 first, then re-attaches.
        for d in sb.linked() {
            assert!(sockops::detach(&d).unwrap());
        }
        std::fs::remove_dir_all("/sys/fs/bpf/bbrkit/bbr3").unwrap();
        assert!(bbr3_name::wait_released(), "bbr3 still registered");
        let boot = ok(&["boot", "--policy", "--root", r]);
        assert!(
            boot.contains("bbr3: registered, link pinned at") && boot.contains("attached from"),
            "{boot}"
        );
        assert_eq!(common::sysctl_get(common::CC), default);
        assert_governed(&sb.cgroup, &default, "bbr3");

        let out = ok(&["rollback", "--root", r]);
        assert!(
            out.contains("bbr3: unregistered (pin /sys/fs/bpf/bbrkit/bbr3/link removed"),
            "{out}"
        );
        assert_eq!(sb.programs(), 0, "nothing attached");
        assert!(!Path::new("/sys/fs/bpf/bbrkit").exists(), "no pin left");
        assert!(bbr3_name::wait_released(), "bbr3 still registered");
        assert!(!bbr3_name::registered(), "bbr3 unregistered");
        assert_eq!(snapshot(sb.root.path()), before, "files byte for byte");
        assert_eq!(common::sysctl_get(common::CC), default);
    });
}

/// Issue 33: a cgroup removed while its policy is attached (the service's
/// unit stopped, a container gone). The kernel detaches a removed cgroup's
/// programs but the pinned link and maps outlive it; `rollback` must still
/// exit 0 and leave no pin under the private bpffs, no program on any
/// cgroup around it, and the files byte for byte.
#[test]
#[ignore = "needs root"]
fn rollback_after_the_cgroup_was_removed_leaves_nothing() {
    in_sandbox(|sb| {
        let (_, other) = default_and_other();
        let files = tempfile::tempdir().unwrap();
        let f = policy(files.path(), "p.toml", other);
        let cg = sb.cgroup.join("gone");
        std::fs::create_dir(&cg).unwrap();
        let r = sb.root();
        let before = snapshot(sb.root.path());
        ok(&[
            "enable",
            "--policy",
            f.to_str().unwrap(),
            "--cgroup",
            cg.to_str().unwrap(),
            "--root",
            r,
        ]);
        assert!(
            cgroup::sock_ops_programs(&cg, false)
                .unwrap()
                .iter()
                .any(|p| p.ours),
            "attached"
        );
        // No process ever joined `cg` (the test joins it only to create
        // sockets, and created none): it can be removed at once.
        std::fs::remove_dir(&cg).unwrap();
        assert!(Path::new(sockops::PIN_ROOT).exists(), "the pins outlive it");

        let o = run(&["rollback", "--root", r], &[]);
        assert_eq!(code(&o), 0, "{}", text(&o));
        assert!(!Path::new(sockops::PIN_ROOT).exists(), "no pin left");
        assert!(
            cgroup::sock_ops_programs(&sb.cgroup, true)
                .unwrap()
                .iter()
                .all(|p| !p.ours),
            "no program of ours on the parent"
        );
        assert_eq!(snapshot(sb.root.path()), before, "files byte for byte");
    });
}

/// Issue 33 item 8 on the real host: a rule that can never match (rule 1
/// has no match keys) is warned at `--dry-run` with its line and the
/// covering rule's, in the table and in `--json`'s `warnings`, and the
/// dry run changes nothing.
#[test]
#[ignore = "needs root"]
fn a_rule_an_earlier_one_covers_is_warned_at_dry_run_with_its_line() {
    in_sandbox(|sb| {
        let files = tempfile::tempdir().unwrap();
        let f = files.path().join("shadow.toml");
        std::fs::write(
            &f,
            "[[rule]]\ncc = \"cubic\"\n\n[[rule]]\nname = \"web\"\nlocal_port = [443]\ncc = \"reno\"\n",
        )
        .unwrap();
        let cg = sb.cgroup.to_str().unwrap();
        let (f, r) = (f.to_str().unwrap(), sb.root());
        let before = snapshot(sb.root.path());
        let want = "rule 2 (line 4) \"web\" can never match: rule 1 (line 1)";
        let out = ok(&[
            "enable",
            "--policy",
            f,
            "--cgroup",
            cg,
            "--root",
            r,
            "--dry-run",
        ]);
        assert!(out.contains(&format!("policy: warning: {want}")), "{out}");
        let json = ok(&[
            "enable",
            "--policy",
            f,
            "--cgroup",
            cg,
            "--root",
            r,
            "--dry-run",
            "--json",
        ]);
        let doc: serde_json::Value = serde_json::from_str(&json).unwrap();
        let warnings = doc["policy"]["warnings"].as_array().unwrap();
        assert!(
            warnings.len() == 1 && warnings[0].as_str().unwrap().starts_with(want),
            "{warnings:?}"
        );
        assert_eq!(
            snapshot(sb.root.path()),
            before,
            "a dry run changes nothing"
        );
        assert_eq!(sb.programs(), 0);
    });
}
