//! Rendering of `bbrkit lab` results: the tables of the modes, the
//! progress (a bar on a terminal, one line per run otherwise), and the
//! `--out` / `--timeseries` / `--plot` files, written through
//! [`crate::output`] (opened before the run, committed atomically).
//!
//! Owns presentation only; the numbers come from `bbrkit_lab`.

mod commands;
mod compete;
mod files;
mod plot;
mod table;
mod workload;

pub use files::deliver;
pub use workload::{fct_header, fct_rows};

use std::io::IsTerminal;
use std::path::PathBuf;

use bbrkit_lab::experiment::{Experiment, Mode, Report};
use bbrkit_lab::session::{Event, Outcome};
use indicatif::{ProgressBar, ProgressStyle};

use crate::units::{pct, rate};

/// The human report of any mode.
pub fn table(report: &Report) -> String {
    match report {
        Report::Alone(r) => table::table(r),
        Report::Compete(r) => compete::table(r),
        Report::Workload(r) => workload::table(r),
        Report::Commands(r) => commands::table(r),
        Report::Hold(r) => commands::hold(r),
    }
}

/// Progress on stderr: a bar on a terminal; elsewhere (a CI log) one line
/// per finished run, so a long lab is never silent.
pub struct Progress {
    bar: Option<ProgressBar>,
}

impl Progress {
    /// Progress of `exp`'s runs.
    pub fn new(exp: &Experiment) -> Progress {
        let p = &exp.plan;
        let per = match exp.mode {
            Mode::Compete { .. } => 1,
            _ => p.algorithms.len(),
        };
        let total = (p.conditions.len() * per * p.runs) as u64;
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::new(total);
            if let Ok(style) =
                ProgressStyle::with_template("{bar:30} {pos}/{len} runs  {elapsed_precise}  {msg}")
            {
                bar.set_style(style);
            }
            bar
        });
        Progress { bar }
    }

    /// Shows one event.
    pub fn event(&mut self, ev: Event<'_>) {
        match ev {
            Event::RunDone {
                done,
                total,
                condition,
                cc,
                run,
                outcome,
                spoiled,
            } => {
                let what = outcome_text(&outcome);
                let flag = if spoiled.is_some() { " (spoiled)" } else { "" };
                let msg = format!("{condition}: {cc} run {run} → {what}{flag}");
                match &self.bar {
                    Some(bar) => {
                        bar.set_position(done as u64);
                        bar.set_message(msg);
                    }
                    None => eprintln!("bbrkit lab: [{done}/{total}] {msg}"),
                }
            }
            Event::Repeat { reason } => self.line(&format!("repeating a spoiled run: {reason}")),
            Event::Note(note) => self.line(note),
        }
    }

    fn line(&self, text: &str) {
        match &self.bar {
            Some(bar) => bar.println(format!("bbrkit lab: {text}")),
            None => eprintln!("bbrkit lab: {text}"),
        }
    }

    /// Removes the bar.
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

fn outcome_text(o: &Outcome<'_>) -> String {
    match o {
        Outcome::Goodput(bps) => rate(*bps),
        Outcome::Shares(s) => s
            .iter()
            .map(|(cc, share)| format!("{cc} {}", pct(*share)))
            .collect::<Vec<_>>()
            .join(", "),
        Outcome::Requests { completed, failed } => {
            format!("{completed} requests ({failed} failed or unfinished)")
        }
        Outcome::Client {
            exit_code: Some(code),
            elapsed_s,
        } => format!("client exit {code} after {elapsed_s:.2} s"),
        Outcome::Client {
            exit_code: None,
            elapsed_s,
        } => format!("client stopped at the limit ({elapsed_s:.2} s)"),
    }
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

/// Writes `rows` with every column as wide as its widest cell.
fn aligned(out: &mut String, rows: &[Vec<String>], indent: &str) {
    use std::fmt::Write;
    let n = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..n)
        .map(|i| {
            rows.iter()
                .map(|r| r.get(i).map_or(0, |s| s.chars().count()))
                .max()
                .unwrap_or(0)
        })
        .collect();
    for row in rows {
        let cells: Vec<String> = row
            .iter()
            .enumerate()
            .map(|(i, s)| format!("{s:<w$}", w = widths[i]))
            .collect();
        let _ = writeln!(out, "{indent}{}", cells.join("  ").trim_end());
    }
}
