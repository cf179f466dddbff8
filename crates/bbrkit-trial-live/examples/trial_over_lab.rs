//! A trial over a lab run, beside the lab's own measurement with fixed
//! algorithms (root; hold the lab lock: `flock /work/lab.lock ...`):
//!
//! ```text
//! trial_over_lab BBRKIT NAME A,B [TRIAL FLAGS...] -- LAB FLAGS...
//! ```
//!
//! 1. `bbrkit lab --cc A,B LAB FLAGS` (each algorithm on its own, the
//!    workload's FCT per size class);
//! 2. a throwaway child cgroup, `bbrkit trial --arms A,B --cgroup CG --json
//!    TRIAL FLAGS` started, and once attached `bbrkit lab --cc host --cgroup
//!    CG LAB FLAGS` (the same workload, each connection's algorithm left to
//!    the trial's program); the trial ends by its own `--duration`;
//! 3. prints the trial's verdict and effect beside the lab's ratio: per size
//!    class p50 FCT of A over B, combined with the trial's weights.
//!
//! Writes `NAME.fixed.json`, `NAME.trial.json`, `NAME.trial.err` and
//! `NAME.host.json` in the current directory.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

type Res<T> = Result<T, String>;

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("trial_over_lab: {e}");
            ExitCode::from(2)
        }
    }
}

fn run() -> Res<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let split = args
        .iter()
        .position(|a| a == "--")
        .ok_or("no -- before the lab's flags")?;
    let (mine, lab) = (&args[..split], &args[split + 1..]);
    let [bbrkit, name, arms, trial @ ..] = mine else {
        return Err("usage: trial_over_lab BBRKIT NAME A,B [TRIAL FLAGS] -- LAB FLAGS".into());
    };
    let bbrkit = Path::new(bbrkit);
    let fixed = output(
        Command::new(bbrkit)
            .args(["lab", "--json", "--cc", arms])
            .args(lab),
    )?;
    std::fs::write(format!("{name}.fixed.json"), &fixed).map_err(|e| e.to_string())?;
    let cg = cgroup(name)?;
    let result = trial_over(bbrkit, name, arms, trial, lab, &cg);
    let _ = std::fs::remove_dir(&cg);
    let (report, host) = result?;
    compare(
        &serde_json::from_slice(&fixed).map_err(|e| e.to_string())?,
        &report,
        &host,
        arms,
    )
}

/// A throwaway child cgroup under the cgroup2 mount.
fn cgroup(name: &str) -> Res<PathBuf> {
    let root = bbrkit_bpf::sockops::cgroup::cgroup2_mount()
        .map_err(|e| e.to_string())?
        .ok_or("cgroup v2 is not mounted")?;
    let cg = root.join(format!("bbrkit-trial-over-lab-{name}"));
    std::fs::create_dir(&cg).map_err(|e| format!("create {}: {e}", cg.display()))?;
    Ok(cg)
}

/// The trial over the lab's `--cc host` run: its report and the lab's.
fn trial_over(
    bbrkit: &Path,
    name: &str,
    arms: &str,
    trial: &[String],
    lab: &[String],
    cg: &Path,
) -> Res<(Value, Value)> {
    let err = std::fs::File::create(format!("{name}.trial.err")).map_err(|e| e.to_string())?;
    let mut child = Command::new(bbrkit)
        .args(["trial", "--json", "--arms", arms, "--cgroup"])
        .arg(cg)
        .args(trial)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| e.to_string())?;
    let lines = BufReader::new(child.stderr.take().ok_or("no stderr")?);
    let copier = std::thread::spawn(move || copy_until_attached(lines, err));
    let until = Instant::now() + Duration::from_secs(30);
    while !copier.is_finished() {
        if Instant::now() > until {
            let _ = child.kill();
            let _ = child.wait();
            return Err("the trial did not attach".into());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let mut lines = copier.join().map_err(|_| "copier")??;
    let host = output(
        Command::new(bbrkit)
            .args(["lab", "--json", "--cc", "host", "--cgroup"])
            .arg(cg)
            .args(lab),
    );
    let rest = std::thread::spawn(move || {
        let mut buf = String::new();
        while lines.0.read_line(&mut buf).unwrap_or(0) > 0 {
            let _ = std::io::Write::write_all(&mut lines.1, buf.as_bytes());
            buf.clear();
        }
    });
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    let _ = rest.join();
    let host = host?;
    std::fs::write(format!("{name}.trial.json"), &out.stdout).map_err(|e| e.to_string())?;
    std::fs::write(format!("{name}.host.json"), &host).map_err(|e| e.to_string())?;
    let parse = |b: &[u8]| serde_json::from_slice::<Value>(b).map_err(|e| e.to_string());
    Ok((parse(&out.stdout)?, parse(&host)?))
}

type Lines = (BufReader<std::process::ChildStderr>, std::fs::File);

/// Copies the trial's stderr into the file until its "attached" line.
fn copy_until_attached(
    mut r: BufReader<std::process::ChildStderr>,
    mut f: std::fs::File,
) -> Res<Lines> {
    let mut line = String::new();
    loop {
        line.clear();
        if r.read_line(&mut line).map_err(|e| e.to_string())? == 0 {
            return Err("the trial exited before it attached".into());
        }
        std::io::Write::write_all(&mut f, line.as_bytes()).map_err(|e| e.to_string())?;
        if line.contains("attached to") {
            return Ok((r, f));
        }
    }
}

/// Runs `cmd`, returns its stdout, fails with its stderr.
fn output(cmd: &mut Command) -> Res<Vec<u8>> {
    let out = cmd.output().map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    Ok(out.stdout)
}

/// p50 FCT per size class of algorithm `cc` in a lab's workload JSON.
fn fct_p50(lab: &Value, cc: &str) -> Vec<(String, f64, u64)> {
    let results = lab["conditions"][0]["results"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let Some(r) = results.iter().find(|r| r["cc"] == cc) else {
        return Vec::new();
    };
    let classes = r["classes"].as_object().cloned().unwrap_or_default();
    classes
        .iter()
        .map(|(k, v)| {
            (
                k.clone(),
                v["fct_ms"]["p50"].as_f64().unwrap_or(f64::NAN),
                v["requests"].as_u64().unwrap_or(0),
            )
        })
        .collect()
}

/// The trial's effect beside the lab's p50 FCT ratio A/B per class,
/// combined with the trial's class weights (the trial's own combination).
fn compare(fixed: &Value, trial: &Value, host: &Value, arms: &str) -> Res<()> {
    let (a, b) = arms.split_once(',').ok_or("A,B")?;
    let all = &trial["overall"];
    let e = &all["effect"];
    println!(
        "trial: {} ({} closed, {} after a guardrail), effect B/A {:.2}x [{:.2}, {:.2}] ({})",
        all["verdict"].as_str().unwrap_or("?"),
        trial["records"]["closed"],
        trial["live"]["records"]["after_guardrail"],
        e["ratio"].as_f64().unwrap_or(f64::NAN),
        e["ci_low"].as_f64().unwrap_or(f64::NAN),
        e["ci_high"].as_f64().unwrap_or(f64::NAN),
        trial["mode"].as_str().unwrap_or("?"),
    );
    let (fa, fb) = (fct_p50(fixed, a), fct_p50(fixed, b));
    let mut log_sum = 0.0;
    let mut weights = 0.0;
    for c in e["classes"].as_array().cloned().unwrap_or_default() {
        let (class, w) = (
            c["class"].as_str().unwrap_or(""),
            c["weight"].as_f64().unwrap_or(0.0),
        );
        let find = |v: &[(String, f64, u64)]| v.iter().find(|x| x.0 == class).cloned();
        if let (Some(x), Some(y)) = (find(&fa), find(&fb))
            && w > 0.0
        {
            println!(
                "lab {class}: {a} p50 {:.0} ms ({} requests), {b} p50 {:.0} ms ({} requests): {a}/{b} {:.2}x, weight {:.3}",
                x.1,
                x.2,
                y.1,
                y.2,
                x.1 / y.1,
                w
            );
            log_sum += w * (x.1 / y.1).ln();
            weights += w;
        }
    }
    let host_requests: u64 = host["conditions"][0]["results"][0]["requests"]
        .as_u64()
        .unwrap_or(0);
    println!("lab --cc host under the trial: {host_requests} requests");
    if weights > 0.0 {
        let lab = (log_sum / weights).exp();
        let t = e["ratio"].as_f64().unwrap_or(f64::NAN);
        let within = (t / lab).max(lab / t);
        println!(
            "lab with fixed algorithms: {a}/{b} FCT {lab:.2}x; trial/lab {:.2} (within x1.5: {})",
            t / lab,
            within <= 1.5
        );
    }
    Ok(())
}
