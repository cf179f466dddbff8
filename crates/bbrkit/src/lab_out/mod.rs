//! Rendering of `bbrkit lab` results: the seed-style table, the progress bar,
//! and the `--out` / `--timeseries` / `--plot` files.
//!
//! Owns presentation only; the numbers come from `bbrkit_lab::runner`. Every
//! file is written atomically (temporary file in the same directory, then
//! rename), so an error or Ctrl-C never leaves a half-written file.

mod files;
mod plot;
mod table;

pub use files::{check_writable, write_json, write_timeseries};
pub use plot::write_plot;
pub use table::{rate, table};

use std::path::PathBuf;

use indicatif::{ProgressBar, ProgressStyle};

/// A progress bar on stderr (hidden when stderr is not a terminal).
pub fn progress_bar(total: u64) -> ProgressBar {
    let bar = ProgressBar::new(total);
    if let Ok(style) =
        ProgressStyle::with_template("{bar:30} {pos}/{len} runs  {elapsed_precise}  {msg}")
    {
        bar.set_style(style);
    }
    bar
}

/// Prints what `--cleanup` removed.
pub fn print_cleanup(removed: &[PathBuf], json: bool) -> anyhow::Result<()> {
    if json {
        let names: Vec<String> = removed.iter().map(|p| p.display().to_string()).collect();
        crate::print_json(&serde_json::json!({ "removed": names }))
    } else {
        if removed.is_empty() {
            crate::emit("nothing to clean up: no leftover lab namespaces\n")?;
        }
        for p in removed {
            crate::emit(&format!("removed {}\n", p.display()))?;
        }
        Ok(())
    }
}
