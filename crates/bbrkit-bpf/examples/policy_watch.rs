//! Shows a pinned policy attachment: its ids, the counters per rule and
//! arm, and (with SECONDS) the close records that arrive meanwhile, one
//! JSON object per line. Reads only (consuming records takes them off the
//! ring: do not run it beside a trial). Needs root.
//!
//! ```text
//! cargo run -p bbrkit-bpf --example policy_watch -- /sys/fs/bpf/bbrkit/policy/<cgroup-id> [SECONDS]
//! ```

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use bbrkit_bpf::sockops::Attachment;
use bbrkit_bpf::sockops::records::Records;

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let Some(dir) = args.next().map(PathBuf::from) else {
        eprintln!("usage: policy_watch PIN_DIR [SECONDS]");
        return ExitCode::from(2);
    };
    let secs: f64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(0.0);
    match watch(&dir, secs) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bbrkit: {}", bbrkit_diag::error_chain(&e));
            ExitCode::from(2)
        }
    }
}

fn watch(dir: &std::path::Path, secs: f64) -> bbrkit_bpf::Result<()> {
    let att = Attachment::open(dir)?;
    let d = att.describe()?;
    println!(
        "attached: link {} program {} cgroup {} pinned at {}",
        d.link_id,
        d.prog_id,
        d.cgroup_id,
        dir.display()
    );
    let c = att.maps().counters()?;
    for a in &c.arms {
        println!(
            "rule {} arm {} {:8} matched {:6} assigned {:6} kept_app {:4} kept_route {:4} failed {:4}",
            a.rule + 1,
            a.arm,
            a.cc,
            a.matched,
            a.assigned,
            a.kept_app,
            a.kept_route,
            a.failed
        );
    }
    println!(
        "stats: {}",
        serde_json::to_string(&c.stats).unwrap_or_default()
    );
    if secs > 0.0 {
        let mut records = Records::new(att.maps())?;
        let end = Instant::now() + Duration::from_secs_f64(secs);
        while Instant::now() < end {
            for r in records.poll(Duration::from_millis(100))? {
                println!("{}", serde_json::to_string(&r).unwrap_or_default());
            }
        }
    }
    Ok(())
}
