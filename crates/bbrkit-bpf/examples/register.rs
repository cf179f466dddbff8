//! Loads a BPF object, registers every struct_ops map in it through a link
//! and holds the registration until Ctrl-C (or SIGTERM) or for `--seconds N`.
//! When the kernel refuses a program the verifier's whole log is printed.
//! Needs root (CAP_BPF, CAP_PERFMON, CAP_NET_ADMIN). Also the helper of the
//! crate's root tests: once registered it prints `objects {"programs":[..],
//! "maps":[..],"links":[..]}`, the ids of what it created.
//!
//! ```text
//! register FILE [--seconds N]        an object file (e.g. bpf/bbr3.bpf.o)
//! register --embedded [--only CA]... the object built into bbrkit-bpf
//!          [--pin]                   pin link + telemetry map, then exit
//!          [--no-links]              register by map update (as on Linux < 6.4)
//! register --unpin CA                remove bbrkit's pins of CA
//! cargo run -p bbrkit-bpf --example register -- crates/bbrkit-bpf/bpf/bbr3.bpf.o --seconds 5
//! ```

use std::path::PathBuf;
use std::process::ExitCode;

use bbrkit_bpf::{BpfError, Loaded, ObjectSource, Registration, bbr3, pin};
use nix::sys::signal::{SigSet, SigmaskHow, Signal, pthread_sigmask};

#[derive(Default)]
struct Args {
    file: Option<PathBuf>,
    embedded: bool,
    only: Vec<String>,
    pin: bool,
    no_links: bool,
    unpin: Option<String>,
    seconds: Option<u32>,
}

fn main() -> ExitCode {
    let args = match args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!(
                "register: {e}\nusage: register FILE|--embedded [--only CA]... [--pin] [--no-links] [--seconds N] | --unpin CA"
            );
            return ExitCode::from(2);
        }
    };
    if let Some(ca) = &args.unpin {
        return match pin::unpin(ca) {
            Ok(had) => {
                println!(
                    "unpinned {ca}: {}",
                    if had { "pin removed" } else { "no pin" }
                );
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("register: unpin {ca}: {e}");
                ExitCode::from(1)
            }
        };
    }
    // Block the signals before anything else so they wait for sigwait below.
    let mut set = SigSet::empty();
    for s in [Signal::SIGINT, Signal::SIGTERM, Signal::SIGALRM] {
        set.add(s);
    }
    if let Err(e) = pthread_sigmask(SigmaskHow::SIG_BLOCK, Some(&set), None) {
        eprintln!("register: block signals: {e}");
        return ExitCode::from(2);
    }
    let mut registration = match register(&args) {
        Ok(r) => r,
        Err(e) => return report(&e),
    };
    // The ids of what it created, for leak checks that look only at them.
    let objects = bbrkit_bpf::objects::Objects::of_registration(&registration);
    println!(
        "objects {}",
        serde_json::to_string(&objects).expect("plain ids")
    );
    for ca in registration.algorithms() {
        println!("registered struct_ops {ca}");
    }
    if args.pin {
        match registration.pin() {
            Ok(paths) => paths
                .iter()
                .for_each(|p| println!("pinned {}", p.display())),
            Err(e) => return report(&e),
        }
        if args.seconds.is_none() {
            return ExitCode::SUCCESS; // the pins hold the registration
        }
    }
    if let Some(s) = args.seconds {
        nix::unistd::alarm::set(s);
    }
    match set.wait() {
        Ok(sig) => println!("{sig:?}: unregistering"),
        Err(e) => eprintln!("register: sigwait: {e}"),
    }
    drop(registration);
    ExitCode::SUCCESS
}

fn register(args: &Args) -> bbrkit_bpf::Result<Registration> {
    let only: Vec<&str> = args.only.iter().map(String::as_str).collect();
    let only = (!only.is_empty()).then_some(&only[..]);
    let loaded = match &args.file {
        Some(f) if args.no_links => Loaded::load_only_without_links(ObjectSource::File(f), only)?,
        Some(f) => Loaded::load_only(ObjectSource::File(f), only)?,
        None if args.no_links => Loaded::load_only_without_links(bbr3::source(), only)?,
        None => bbr3::load(only)?,
    };
    Registration::register(loaded)
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

fn args() -> Result<Args, String> {
    let mut a = Args::default();
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = |flag: &str| it.next().ok_or(format!("{flag} needs a value"));
        match arg.as_str() {
            "--seconds" => {
                let v = value("--seconds")?;
                let n: u32 = v.parse().map_err(|_| format!("bad --seconds {v:?}"))?;
                a.seconds = Some(n.max(1));
            }
            "--embedded" => a.embedded = true,
            "--pin" => a.pin = true,
            "--no-links" => a.no_links = true,
            "--only" => a.only.push(value("--only")?),
            "--unpin" => a.unpin = Some(value("--unpin")?),
            _ if a.file.is_none() && !arg.starts_with('-') => a.file = Some(PathBuf::from(arg)),
            _ => return Err(format!("unexpected argument {arg:?}")),
        }
    }
    if a.unpin.is_none() && a.file.is_some() == a.embedded {
        return Err("give either FILE or --embedded".into());
    }
    Ok(a)
}
