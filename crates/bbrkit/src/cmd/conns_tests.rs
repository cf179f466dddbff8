use super::*;
use bbrkit_diag::conns::{ModelNote, Models, report};
use bbrkit_diag::testing::{bbr_socket, bbr_v3_bytes};
use bbrkit_diag::{Socket, StateSet};

fn query() -> Query {
    Query {
        cc: None,
        port: None,
        states: StateSet::connected(),
    }
}

fn table(socks: &[Socket], models: &Models<Model>) -> String {
    render(&report(&query(), socks, models, &Default::default()))
}

#[test]
fn table_of_v1_and_v3_bbr_sockets() {
    let v1 = bbr_socket(248, &bbr_v3_bytes()[..20]);
    let v3 = bbr_socket(248, &bbr_v3_bytes());
    let text = table(&[v1, v3], &Models::default());
    assert!(
        text.contains("bbr1:(bw:1.0 Mbit/s,mrtt:1.500ms,pacing_gain:1.250"),
        "{text}"
    );
    assert!(text.contains("bbr3:(bw:1.0 Mbit/s"), "{text}");
    let row = text.lines().find(|l| l.starts_with("bbr ")).unwrap();
    let cols: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(cols, ["bbr", "2", "2.000", "-", "16.0", "Mbit/s", "25%"]);
}

/// A bbr3 (BPF) socket: no BBR info from sock_diag, its model state
/// joined from the telemetry.
#[cfg(feature = "bpf")]
#[test]
fn table_of_a_bpf_bbr3_socket() {
    let mut s = bbr_socket(248, &bbr_v3_bytes()[..20]);
    s.cc = Some("bbr3".into());
    s.bbr = None;
    let state = Model {
        version: 3,
        mode: Some(bbrkit_bpf::telemetry::Mode::ProbeBw),
        phase: Some(bbrkit_bpf::telemetry::Phase::Cruise),
        bw_bits_per_second: 95_000_000,
        max_bw_bits_per_second: 96_000_000,
        bw_lo_bits_per_second: None,
        min_rtt_ms: Some(20.25),
        inflight_hi: Some(300),
        inflight_lo: None,
        pacing_gain: 1.0,
        cwnd_gain: 2.0,
        cwnd: 42,
        updated_ns: 0,
    };
    let models = Models::new([((s.local, s.remote), state)], None);
    let text = table(std::slice::from_ref(&s), &models);
    assert!(
        text.contains("bbr3:(mode:probe_bw/cruise,bw:95.0 Mbit/s,mrtt:20.250ms,inflight_hi:300,inflight_lo:-,pacing_gain:1.000,cwnd_gain:2.000)"),
        "{text}"
    );
    let note = "no bbr3 model state: reading the sockets' BPF storage (bbr3_sk_stor) needs root (CAP_SYS_ADMIN)";
    let unread = Models::new([], Some(ModelNote::Unreadable(note.into())));
    let text = table(&[s], &unread);
    assert!(text.ends_with(&format!("\nnote: {note}\n")), "{text}");
}

#[test]
fn older_kernel_fields_are_dashes() {
    let s = bbr_socket(104, &bbr_v3_bytes()[..20]);
    let text = table(&[s], &Models::default());
    assert!(
        text.contains("bytes_sent:- bytes_acked:- bytes_retrans:-"),
        "{text}"
    );
}

/// Issue 21 item 9: two idle BBR sockets that had sent 189 bytes made
/// DELIVERY TOTAL say 46.6Gbit/s — app-limited samples, which measure the
/// application — and only `--json` had the flag. Now the total leaves them
/// out (`-` when nothing is left), each is marked in the table, and a line
/// says so.
#[test]
fn app_limited_rates_are_marked_and_left_out_of_the_total() {
    let mut idle = bbr_socket(248, &bbr_v3_bytes()[..20]);
    let t = idle.tcp_info.as_mut().unwrap();
    t.delivery_rate = Some(2_912_500_000);
    t.delivery_rate_app_limited = Some(true);
    let mut other = idle.clone();
    other.remote = "10.0.0.3:1".parse().unwrap();
    let text = table(&[idle, other], &Models::default());
    let row = text.lines().find(|l| l.starts_with("bbr ")).unwrap();
    let cols: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(cols[4], "-", "no path sample to add up: {text}");
    assert!(
        text.contains("DELIVERY TOTAL leaves out 2 app-limited rate(s), marked * below"),
        "{text}"
    );
    assert_eq!(text.matches("23.3 Gbit/s*").count(), 2, "{text}");
}

/// One formatting of rates (issue 21 item 12: `0bit/s` beside `0 bit/s`).
#[test]
fn rates_are_spelled_as_everywhere_else() {
    let mut s = bbr_socket(248, &bbr_v3_bytes()[..20]);
    let t = s.tcp_info.as_mut().unwrap();
    t.delivery_rate = Some(0);
    t.delivery_rate_app_limited = Some(true);
    let text = table(&[s], &Models::default());
    assert!(text.contains(" 0 bit/s "), "no sample, no mark: {text}");
    assert!(!text.contains("0bit/s"), "{text}");
}

/// Governed sockets: a POLICY table by cgroup, rule and the rule's
/// algorithm, and `rule:N=cc` (with `(differs)`) in each detail line; no
/// policy, no table.
#[test]
fn governed_sockets_show_their_rule() {
    use bbrkit_diag::conns::{AttachedPolicy, Policies};
    let text = "[[rule]]\nlocal_port = [443]\ncc = \"bbr\"\n";
    let p = bbrkit_policy::parse("f.toml", text).unwrap();
    let policies = Policies {
        attached: vec![AttachedPolicy {
            cgroup: Some("/sys/fs/cgroup/web".into()),
            cgroup_id: 7,
            compiled: bbrkit_policy::Compiled::new(&p, 1),
        }],
        ..Policies::default()
    };
    let on = Socket {
        cgroup_id: Some(7),
        ..bbr_socket(248, &bbr_v3_bytes()[..20])
    };
    let app = Socket {
        cc: Some("cubic".into()),
        bbr: None,
        remote: "10.0.0.3:1".parse().unwrap(),
        ..on.clone()
    };
    let other_port = Socket {
        local: "10.0.0.1:80".parse().unwrap(),
        ..on.clone()
    };
    let r = report(
        &query(),
        &[on, app, other_port],
        &Models::default(),
        &policies,
    );
    let out = render(&r);
    let lines: Vec<Vec<&str>> = out
        .lines()
        .skip_while(|l| !l.starts_with("POLICY CGROUP"))
        .skip(1)
        .take(2)
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(
        lines,
        [
            ["/sys/fs/cgroup/web", "1", "bbr", "2", "1"],
            ["/sys/fs/cgroup/web", "-", "default", "1", "0"]
        ],
        "{out}"
    );
    assert_eq!(out.matches(" rule:1=bbr\n").count(), 1, "{out}");
    assert_eq!(out.matches(" rule:1=bbr(differs)\n").count(), 1, "{out}");
    assert_eq!(out.matches(" rule:-=default\n").count(), 1, "{out}");
    let none = render(&report(
        &query(),
        &[],
        &Models::default(),
        &Policies::default(),
    ));
    assert!(!none.contains("POLICY"), "{none}");
}
