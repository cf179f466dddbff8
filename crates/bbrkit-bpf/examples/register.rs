//! Loads a BPF object FILE, registers every struct_ops map in it through a
//! link and holds the registration until Ctrl-C (or SIGTERM) or for
//! `--seconds N`. When the kernel refuses a program the verifier's whole log
//! is printed. Needs root (CAP_BPF + CAP_NET_ADMIN).
//!
//! ```text
//! cargo run -p bbrkit-bpf --example register -- crates/bbrkit-bpf/bpf/bbr3.bpf.o --seconds 5
//! ```

use std::path::PathBuf;
use std::process::ExitCode;

use bbrkit_bpf::{BpfError, Loaded, ObjectSource, Registration};
use nix::sys::signal::{SigSet, SigmaskHow, Signal, pthread_sigmask};

fn main() -> ExitCode {
    let (file, seconds) = match args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("register: {e}\nusage: register FILE [--seconds N]");
            return ExitCode::from(2);
        }
    };
    // Block the signals before anything else so they wait for sigwait below.
    let mut set = SigSet::empty();
    for s in [Signal::SIGINT, Signal::SIGTERM, Signal::SIGALRM] {
        set.add(s);
    }
    if let Err(e) = pthread_sigmask(SigmaskHow::SIG_BLOCK, Some(&set), None) {
        eprintln!("register: block signals: {e}");
        return ExitCode::from(2);
    }
    let registration =
        match Loaded::load(ObjectSource::File(&file)).and_then(Registration::register) {
            Ok(r) => r,
            Err(e) => return report(&e),
        };
    for map in registration.algorithms() {
        println!("registered struct_ops {map}");
    }
    if let Some(s) = seconds {
        nix::unistd::alarm::set(s);
    }
    match set.wait() {
        Ok(sig) => println!("{sig:?}: unregistering"),
        Err(e) => eprintln!("register: sigwait: {e}"),
    }
    drop(registration);
    ExitCode::SUCCESS
}

fn report(e: &BpfError) -> ExitCode {
    let mut chain = e.to_string();
    let mut src = std::error::Error::source(e);
    while let Some(s) = src {
        chain.push_str(&format!(": {s}"));
        src = s.source();
    }
    eprintln!("register: {chain}");
    if let BpfError::Refused { log, .. } = e {
        eprintln!("--- verifier log ---\n{log}--- end of verifier log ---");
    }
    ExitCode::from(1)
}

fn args() -> Result<(PathBuf, Option<u32>), String> {
    let mut file = None;
    let mut seconds = None;
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--seconds" => {
                let v = it.next().ok_or("--seconds needs a value")?;
                let n: u32 = v.parse().map_err(|_| format!("bad --seconds {v:?}"))?;
                seconds = Some(n.max(1));
            }
            _ if file.is_none() && !a.starts_with('-') => file = Some(PathBuf::from(a)),
            _ => return Err(format!("unexpected argument {a:?}")),
        }
    }
    Ok((file.ok_or("missing FILE")?, seconds))
}
