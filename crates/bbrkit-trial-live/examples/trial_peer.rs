//! The governed TCP peer of this crate's root tests and of `trial_rate`
//! (`bbrkit_trial_live::testing::serve`):
//!
//! ```text
//! trial_peer serve --cgroup DIR --listen ADDR [--listen ADDR]... [--reply BYTES] [--pace CC=BYTES_PER_S]
//! ```

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let r = match args.first().map(String::as_str) {
        Some("serve") => bbrkit_trial_live::testing::serve(&args[1..]),
        _ => Err("usage: trial_peer serve --cgroup DIR --listen ADDR ...".into()),
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("trial_peer: {e}");
            ExitCode::from(2)
        }
    }
}
