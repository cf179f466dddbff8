//! Rendering of `bbrkit trial` while it runs: the progress display
//! (stderr: a spinner on a terminal, one line per look elsewhere) and the
//! `--textfile` writes (at every look and at the end, through
//! [`crate::output`]).
//!
//! Owns presentation only; the trial and its numbers are
//! `bbrkit-trial-live`'s.

use std::io::IsTerminal as _;
use std::path::PathBuf;
use std::time::Duration;

use bbrkit_trial_live::{Event, LiveReport, render};
use indicatif::{ProgressBar, ProgressStyle};

use crate::output::OutFile;

/// Where `--textfile` goes and what it is named.
pub struct TextfileTo {
    /// `--textfile`.
    pub path: Option<PathBuf>,
    /// `--name` (default: the arms, `bbrkit_trial::render::default_name`).
    pub name: Option<String>,
    /// `--groups`: groups written besides `all`.
    pub groups: usize,
}

/// Writes `--textfile` of `r` as `to` says: the pre-opened file first,
/// then new ones.
pub fn write_textfile(
    to: &TextfileTo,
    pre: &mut Option<OutFile>,
    r: &LiveReport,
) -> anyhow::Result<()> {
    let Some(path) = &to.path else {
        return Ok(());
    };
    let running = r.live.stopped == bbrkit_trial_live::StopReason::Running;
    let weights = r.live.guardrail.as_ref().map(|g| g.weights);
    let shares = match weights {
        Some(w) => {
            let total = f64::from(w[0]) + f64::from(w[1]);
            [f64::from(w[0]) / total, f64::from(w[1]) / total]
        }
        None => [r.report.split[0].share, r.report.split[1].share],
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64());
    let status = bbrkit_trial::render::LiveStatus {
        shares,
        running,
        ended_unix_s: (!running).then_some(now),
    };
    let name = match &to.name {
        Some(n) => n.clone(),
        None => bbrkit_trial::render::default_name(&r.report),
    };
    let drawn = match &r.live.guardrail {
        Some(g) => g.drawn_at_cut,
        None => r.live.drawn(),
    };
    let export = bbrkit_trial::render::Export {
        name: &name,
        max_groups: to.groups,
        live: Some(&status),
        drawn: Some(drawn),
        look_unix_s: Some(now),
    };
    let text = bbrkit_trial::render::textfile_export(&r.report, &export)?;
    let file = match pre.take() {
        Some(f) => f,
        None => OutFile::create(path, "--textfile")?,
    };
    file.write_and_commit(text.as_bytes())
}

/// Progress on stderr: a spinner on a terminal, else one line per look.
pub struct Progress {
    bar: Option<ProgressBar>,
    seed: u64,
    last_look: String,
}

impl Progress {
    /// Progress of a trial drawn with `seed`.
    pub fn new(seed: u64) -> Progress {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::new_spinner();
            if let Ok(style) = ProgressStyle::with_template("{spinner} {elapsed_precise} {msg}") {
                bar.set_style(style);
            }
            bar.enable_steady_tick(Duration::from_millis(200));
            bar
        });
        Progress {
            bar,
            seed,
            last_look: "first look after --interval".into(),
        }
    }

    /// Shows one event.
    pub fn event(&mut self, ev: Event<'_>) {
        match ev {
            Event::Attached(info) => {
                self.line(&format!("{} (seed {})", render::attached(info), self.seed));
            }
            Event::Tick { closed, .. } => {
                if let Some(bar) = &self.bar {
                    bar.set_message(format!("{closed} closed | {}", self.last_look));
                }
            }
            Event::Look(r) => {
                self.last_look = render::progress(r);
                match &self.bar {
                    Some(bar) => bar.set_message(self.last_look.clone()),
                    None => eprintln!("bbrkit trial: {}", self.last_look),
                }
            }
            Event::Guardrail(g) => self.line(&render::guardrail(g)),
            Event::Ending(reason) => self.line(&format!(
                "stopping ({}): sampling open connections, detaching",
                reason.as_str()
            )),
            Event::Records(_) => {}
        }
    }

    fn line(&self, text: &str) {
        match &self.bar {
            Some(bar) => bar.println(format!("bbrkit trial: {text}")),
            None => eprintln!("bbrkit trial: {text}"),
        }
    }

    /// Clears the spinner.
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
