//! `bbrkit boot --cc bbr3`: what `bbrkit-bbr3.service` runs at boot, after
//! systemd-sysctl: register the BPF congestion control with a pinned link
//! and make it the default when bbrkit's sysctl file says so. Renders
//! `bbrkit_host::boot::run`; holds no logic. Exit 1 (the unit fails) when
//! registration or the default failed; the reason goes to stderr (the
//! journal) and to `run/bbrkit/<cc>.boot.json` for `verify` and `doctor`.

use std::path::PathBuf;

use bbrkit_host::{LinuxHost, Root};

use crate::{Global, Outcome, print_json};

/// Arguments of `bbrkit boot`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The BPF congestion control to register (`bbr3`).
    #[arg(long, default_value = "bbr3")]
    pub cc: String,
    /// Only re-attach the per-connection policies `enable --policy`
    /// recorded (no registration; `--cc` also re-attaches them, after it).
    #[arg(long, conflicts_with = "cc")]
    pub policy: bool,
    /// Alternate filesystem root for the files read and the record written.
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
}

/// Runs `bbrkit boot`.
pub fn run(args: Args, global: Global) -> anyhow::Result<Outcome> {
    let root = Root::from_option(args.root.as_deref())?;
    let mut host = LinuxHost::new(root.clone());
    let r = if args.policy {
        bbrkit_host::boot::run_policy(&mut host)?
    } else {
        bbrkit_host::boot::run(&mut host, &args.cc)?
    };
    if global.json {
        print_json(&r)?;
    } else if args.policy {
        crate::emit(&r.steps.iter().map(|s| format!("{s}\n")).collect::<String>())?;
    } else {
        let mut text: String = r.steps.iter().map(|s| format!("{s}\n")).collect();
        text.push_str(&format!(
            "record: {}\n",
            root.show(&bbrkit_host::unit::record_path(&root, &args.cc))
        ));
        crate::emit(&text)?;
    }
    if let Some(e) = &r.error {
        eprintln!("bbrkit: boot: {e}");
        if let Some(t) = &r.verifier_log_tail {
            eprintln!("verifier log (end):\n{t}");
        }
    }
    Ok(if r.ok { Outcome::Ok } else { Outcome::Problem })
}
