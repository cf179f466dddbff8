//! `bbrkit fleet report` against a real Prometheus (Debian's `prometheus`,
//! installed by `contrib/deps.sh test`): seven hosts' trial series are
//! backfilled with `promtool tsdb create-blocks-from openmetrics` into a
//! temporary TSDB, Prometheus serves it on a free loopback port, and the
//! report's pooled numbers must be the library's on the same inputs
//! (`bbrkit_fleet::meta::pool` of the fresh hosts' log ratios and SEs).
//! Four hosts are fresh (one planted far from the others), one stopped
//! being scraped 4 minutes before the report (stale: left out of the
//! pool), one 20 minutes before (missing), and one fresh host runs the
//! arms swapped (A bbr, B cubic: listed with a note, not pooled). Bad
//! input: one line, exit 2.
//! Needs no root; changes nothing outside its temporary directory.

use std::fmt::Write as _;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use bbrkit_fleet::meta::pool;

fn bbrkit(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_bbrkit"))
        .args(args)
        .output()
        .expect("spawn bbrkit")
}

/// One backfilled host: its effect per group, its last sample's age.
struct Fake {
    instance: &'static str,
    /// (group, ln ratio, SE)
    groups: &'static [(&'static str, f64, f64)],
    /// Seconds between its last sample and the report.
    last_age_s: i64,
    /// Its definition has the arms the other way round (A bbr, B cubic).
    swapped: bool,
}

const Z95: f64 = 1.959_963_984_540_054;

const HOSTS: [Fake; 7] = [
    Fake {
        instance: "edge-1:9100",
        groups: &[("all", 0.41, 0.08), ("198.51.100.0/24", 1.9, 0.2)],
        last_age_s: 15,
        swapped: false,
    },
    Fake {
        instance: "edge-2:9100",
        groups: &[("all", 0.35, 0.07), ("198.51.100.0/24", 1.2, 0.15)],
        last_age_s: 15,
        swapped: false,
    },
    Fake {
        instance: "edge-3:9100",
        groups: &[("all", 0.47, 0.09), ("198.51.100.0/24", 2.4, 0.25)],
        last_age_s: 15,
        swapped: false,
    },
    Fake {
        instance: "dc-1:9100",
        groups: &[("all", -0.35, 0.06)],
        last_age_s: 15,
        swapped: false,
    },
    Fake {
        instance: "stale-1:9100",
        groups: &[("all", 3.0, 0.05)],
        last_age_s: 240,
        swapped: false,
    },
    Fake {
        instance: "gone-1:9100",
        groups: &[("all", -3.0, 0.05)],
        last_age_s: 1200,
        swapped: false,
    },
    Fake {
        instance: "swapped-1:9100",
        groups: &[("all", -0.4, 0.06)],
        last_age_s: 15,
        swapped: true,
    },
];

/// The hosts' series over 15 minutes, one sample per 15 s, ending
/// `last_age_s` before `at`, in OpenMetrics (families contiguous).
fn openmetrics(at: i64) -> String {
    let mut fams: Vec<(String, Vec<(String, f64)>)> = Vec::new();
    let mut add = |name: &str, labels: String, v: f64| match fams.iter_mut().find(|f| f.0 == name) {
        Some(f) => f.1.push((labels, v)),
        None => fams.push((name.to_string(), vec![(labels, v)])),
    };
    for h in &HOSTS {
        let base = format!("instance=\"{}\",job=\"node\",trial=\"edge\"", h.instance);
        let arms = if h.swapped {
            [("A", "bbr"), ("B", "cubic")]
        } else {
            [("A", "cubic"), ("B", "bbr")]
        };
        for (arm, cc) in arms {
            let a = format!("{base},arm=\"{arm}\",cc=\"{cc}\"");
            add("bbrkit_trial_split_weight", a.clone(), 50.0);
            add("bbrkit_trial_drawn_total", a, 500.0);
        }
        add("bbrkit_trial_running", base.clone(), 1.0);
        for (g, y, se) in h.groups {
            let gl = format!("{base},group=\"{g}\"");
            add("bbrkit_trial_effect_log_ratio", gl.clone(), *y);
            add("bbrkit_trial_effect_log_se", gl.clone(), *se);
            add("bbrkit_trial_effect_ratio", gl.clone(), y.exp());
            add(
                "bbrkit_trial_effect_ratio_ci_low",
                gl.clone(),
                (y - Z95 * se).exp(),
            );
            add(
                "bbrkit_trial_effect_ratio_ci_high",
                gl.clone(),
                (y + Z95 * se).exp(),
            );
            add("bbrkit_trial_trusted", gl.clone(), 1.0);
            for (arm, cc) in arms {
                let al = format!("{gl},arm=\"{arm}\",cc=\"{cc}\"");
                add("bbrkit_trial_connections_total", al.clone(), 120.0);
                add(
                    "bbrkit_trial_units",
                    format!("{al},unit=\"connection\""),
                    120.0,
                );
            }
        }
    }
    let mut out = String::new();
    for (name, series) in &fams {
        for (labels, v) in series {
            let h = HOSTS
                .iter()
                .find(|h| labels.contains(&format!("\"{}\"", h.instance)))
                .unwrap();
            let last = at - h.last_age_s;
            for t in (0..=60).map(|i| last - 900 + 15 * i) {
                let _ = writeln!(out, "{name}{{{labels}}} {v:?} {t}");
            }
        }
    }
    // The look's time is the sample's own: a live trial looks at every scrape here.
    for h in &HOSTS {
        let last = at - h.last_age_s;
        for t in (0..=60).map(|i| last - 900 + 15 * i) {
            let _ = writeln!(
                out,
                "bbrkit_trial_look_timestamp_seconds{{instance=\"{}\",job=\"node\",trial=\"edge\"}} {t} {t}",
                h.instance
            );
        }
    }
    out + "# EOF\n"
}

/// Prometheus serving `data` on a free loopback port; killed on drop.
struct Prometheus {
    child: Child,
    url: String,
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(dir: &Path) -> Prometheus {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let config = dir.join("prometheus.yml");
    std::fs::write(&config, "global:\n  scrape_interval: 1h\n").unwrap();
    let log = std::fs::File::create(dir.join("prometheus.log")).unwrap();
    let child = Command::new("prometheus")
        .arg(format!("--config.file={}", config.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.join("data").display()
        ))
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("prometheus (Debian package 'prometheus')");
    let p = Prometheus {
        child,
        url: format!("http://127.0.0.1:{port}"),
    };
    let start = Instant::now();
    loop {
        let ready = std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
            && bbrkit(&["fleet", "report", "--prometheus", &p.url, "--trial", "none"])
                .stderr
                .starts_with(b"bbrkit: no host exports");
        if ready {
            return p;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "prometheus not ready: {}",
            std::fs::read_to_string(dir.join("prometheus.log")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn close(what: &str, got: &serde_json::Value, want: f64) {
    let g = got
        .as_f64()
        .unwrap_or_else(|| panic!("{what}: {got} is not a number"));
    assert!(
        (g - want).abs() <= 1e-9 * want.abs().max(1.0),
        "{what}: report {g}, library {want}"
    );
}

#[test]
fn the_report_pools_a_backfilled_fleet_as_the_library_does() {
    let dir = tempfile::tempdir().unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    // Ten minutes ago: inside the default retention, not in the future.
    let at = now - 600;
    let om = dir.path().join("fleet.om");
    std::fs::write(&om, openmetrics(at)).unwrap();
    let out = Command::new("promtool")
        .args(["tsdb", "create-blocks-from", "openmetrics"])
        .arg(&om)
        .arg(dir.path().join("data"))
        .output()
        .expect("promtool (Debian package 'prometheus')");
    assert!(out.status.success(), "promtool: {out:?}");
    let prom = serve(dir.path());
    let plot = dir.path().join("forest.svg");
    let at_s = at.to_string();
    let args = [
        "fleet",
        "report",
        "--prometheus",
        &prom.url,
        "--trial",
        "edge",
        "--time",
        &at_s,
        "--plot",
        plot.to_str().unwrap(),
    ];
    let mut json_args = args.to_vec();
    json_args.push("--json");
    let out = bbrkit(&json_args);
    assert!(out.status.success(), "{out:?}");
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        r["stale"],
        serde_json::json!(["gone-1:9100", "stale-1:9100"])
    );
    assert_eq!(r["missing"], serde_json::json!(["gone-1:9100"]));
    assert_eq!(r["arms"], serde_json::json!({"A": "cubic", "B": "bbr"}));

    // The library on the fresh hosts' own numbers, per group.
    for (group, key) in [("all", &r["overall"]), ("198.51.100.0/24", &r["groups"][0])] {
        assert_eq!(key["group"], group);
        let fresh: Vec<(f64, f64)> = HOSTS
            .iter()
            .filter(|h| h.last_age_s < 120 && !h.swapped)
            .filter_map(|h| h.groups.iter().find(|g| g.0 == group))
            .map(|g| (g.1, g.2 * g.2))
            .collect();
        let (y, v): (Vec<f64>, Vec<f64>) = fresh.into_iter().unzip();
        let p = pool(&y, &v, 0.95).unwrap();
        assert_eq!(key["k"], y.len());
        let e = &key["effect"];
        close("ratio", &e["ratio"], p.mu.exp());
        close("ci_low", &e["ci_low"], p.ci.0.exp());
        close("ci_high", &e["ci_high"], p.ci.1.exp());
        let (lo, hi) = p.prediction.unwrap();
        close("prediction_low", &e["prediction_low"], lo.exp());
        close("prediction_high", &e["prediction_high"], hi.exp());
        let h = &key["heterogeneity"];
        close("tau2", &h["tau2"], p.tau2);
        close("i2", &h["i2"], p.i2);
        close("q", &h["q"], p.q);
        for host in key["hosts"].as_array().unwrap() {
            for k in [
                "instance",
                "ratio",
                "ci_low",
                "ci_high",
                "connections",
                "stale",
            ] {
                assert!(host.get(k).is_some(), "{k} in {host}");
            }
        }
    }
    // Datacenter and edge differ: heterogeneity is high, and the one
    // datacenter host is the one that disagrees with the others.
    assert!(r["overall"]["heterogeneity"]["i2"].as_f64().unwrap() > 0.9);
    assert_eq!(
        r["overall"]["disagreeing"],
        serde_json::json!(["dc-1:9100"])
    );
    assert_eq!(r["groups"][0]["verdict"], "better");
    let stale = r["overall"]["hosts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["instance"] == "stale-1:9100")
        .unwrap();
    assert_eq!(
        (&stale["stale"], &stale["pooled"]),
        (&true.into(), &false.into())
    );
    let swapped = r["overall"]["hosts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["instance"] == "swapped-1:9100")
        .unwrap();
    assert_eq!(
        (&swapped["stale"], &swapped["pooled"], &swapped["note"]),
        (
            &false.into(),
            &false.into(),
            &"its arms differ: A bbr, B cubic (the fleet's: A cubic, B bbr)".into()
        )
    );
    let svg = std::fs::read_to_string(&plot).unwrap();
    assert!(
        svg.starts_with("<svg") && svg.contains("edge-3:9100"),
        "{svg:.200}"
    );

    // The table says the same.
    let out = bbrkit(&args);
    let table = String::from_utf8(out.stdout).unwrap();
    let head = format!(
        "bbrkit fleet report: trial edge (A cubic, B bbr: B/A is bbr over cubic) at {at}, 6 host(s) exporting it, 2 stale, 1 missing\n"
    );
    assert!(table.starts_with(&head), "{table}");
    assert!(table.contains("disagrees with the other hosts"), "{table}");
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    let cases: [&[&str]; 4] = [
        &[
            "fleet",
            "report",
            "--prometheus",
            "https://p:9090",
            "--trial",
            "t",
        ],
        &["fleet", "report", "--prometheus", "p:9090", "--trial", "t"],
        &[
            "fleet",
            "report",
            "--prometheus",
            "http://p:9090",
            "--trial",
            "a b",
        ],
        &[
            "fleet",
            "report",
            "--prometheus",
            "http://p:9090",
            "--trial",
            "t",
            "--time",
            "x",
        ],
    ];
    for args in cases {
        let out = bbrkit(args);
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.starts_with("bbrkit: ") && err.trim_end().lines().count() == 1,
            "{args:?}: {err}"
        );
    }
    // Nothing listens on a port just released: a connection error, exit 2.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}");
    let out = bbrkit(&["fleet", "report", "--prometheus", &url, "--trial", "t"]);
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.starts_with("bbrkit: query http://127.0.0.1:"), "{err}");
}
