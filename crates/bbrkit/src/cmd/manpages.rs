//! `bbrkit manpages DIR` (hidden): one roff man page per command, generated
//! by `clap_mangen` from the clap definitions compiled into this binary:
//! `bbrkit.1`, `bbrkit-check.1`, `bbrkit-enable.1`, ... in DIR.
//!
//! Hidden because it serves packaging (`contrib/deb/build.sh` runs it on the
//! binary it packages, so the pages describe exactly that binary), not
//! operators. Deterministic: no dates, so two builds give identical pages.
//! Writes only into DIR, which must exist.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use clap::CommandFactory as _;

use crate::{Cli, Global, Outcome};

/// Arguments of `bbrkit manpages`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Existing directory to write the pages into.
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
}

/// Runs `bbrkit manpages`: prints the path of each page written.
pub fn run(args: Args, global: Global) -> anyhow::Result<Outcome> {
    if !args.dir.is_dir() {
        bail!("{}: not a directory", args.dir.display());
    }
    let mut cmd = Cli::command().disable_help_subcommand(true);
    cmd.build();
    let mut written = Vec::new();
    write_pages(&cmd, &args.dir, &mut written)?;
    if global.json {
        crate::print_json(&written)?;
    } else {
        crate::emit(&written.iter().map(|p| format!("{p}\n")).collect::<String>())?;
    }
    Ok(Outcome::Ok)
}

/// Writes the page of `cmd` and of each visible subcommand, depth first.
fn write_pages(cmd: &clap::Command, dir: &Path, written: &mut Vec<String>) -> anyhow::Result<()> {
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        write_pages(sub, dir, written)?;
    }
    let version = env!("CARGO_PKG_VERSION");
    let man = clap_mangen::Man::new(cmd.clone())
        .source(format!("bbrkit {version}"))
        .manual("bbrkit manual");
    let path = man
        .generate_to(dir)
        .with_context(|| format!("writing a man page into {}", dir.display()))?;
    written.push(path.display().to_string());
    Ok(())
}
