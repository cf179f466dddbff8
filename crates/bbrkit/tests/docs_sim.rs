//! The simulator's figures in the README and docs are what `bbrkit sim`
//! prints today: every `$ bbrkit sim ...` line in a fenced block of
//! README.md or docs/*.md is run and its stdout compared with the lines that
//! follow it in the block, byte for byte (the simulator is deterministic).
//! A model change that moves a figure fails here until the docs are
//! regenerated and the move is explained.

use std::path::{Path, PathBuf};
use std::process::Command;

/// One documented run: where it is, the command line, the printed lines.
struct Example {
    place: String,
    args: Vec<String>,
    expected: String,
}

fn docs() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files = vec![root.join("README.md")];
    let mut dir: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    dir.sort();
    files.extend(dir);
    files
}

/// The `$ bbrkit sim` examples of `text`: the command and what follows it up
/// to the block's end or the next `$ ` line.
fn examples(file: &Path, text: &str) -> Vec<Example> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let Some(cmd) = line.strip_prefix("$ bbrkit sim") else {
            continue;
        };
        let expected: Vec<&str> = lines[i + 1..]
            .iter()
            .take_while(|l| !l.starts_with("```") && !l.starts_with("$ "))
            .copied()
            .collect();
        let mut args = vec!["sim".to_string()];
        args.extend(cmd.split_whitespace().map(String::from));
        out.push(Example {
            place: format!("{}:{}", file.display(), i + 1),
            args,
            expected: expected.join("\n").trim_end().to_string(),
        });
    }
    out
}

fn run(e: &Example) -> Result<(), String> {
    let out = Command::new(env!("CARGO_BIN_EXE_bbrkit"))
        .args(&e.args)
        .output()
        .unwrap();
    let got = String::from_utf8_lossy(&out.stdout).trim_end().to_string();
    if out.status.success() && got == e.expected {
        return Ok(());
    }
    Err(format!(
        "{} `bbrkit {}` (exit {:?}) prints:\n{got}\n--- the docs say:\n{}\n{}",
        e.place,
        e.args.join(" "),
        out.status.code(),
        e.expected,
        String::from_utf8_lossy(&out.stderr)
    ))
}

#[test]
fn every_documented_sim_run_prints_what_the_docs_show() {
    let all: Vec<Example> = docs()
        .iter()
        .flat_map(|f| examples(f, &std::fs::read_to_string(f).unwrap()))
        .collect();
    assert!(
        all.len() >= 5,
        "the README and docs/sim.md show sim runs; found {}",
        all.len()
    );
    let failures: Vec<String> = std::thread::scope(|s| {
        let handles: Vec<_> = all.iter().map(|e| s.spawn(|| run(e))).collect();
        handles
            .into_iter()
            .filter_map(|h| h.join().unwrap().err())
            .collect()
    });
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn the_example_parser_takes_the_lines_up_to_the_block_end() {
    let text =
        "x\n```text\n$ bbrkit sim --preset seed\na\nb\n\n```\n$ bbrkit sim --cc bbr3\nc\n$ other\n";
    let got = examples(Path::new("t.md"), text);
    assert_eq!(got.len(), 2);
    assert_eq!(got[0].args, ["sim", "--preset", "seed"]);
    assert_eq!(got[0].expected, "a\nb");
    assert_eq!(got[0].place, "t.md:3");
    assert_eq!(got[1].expected, "c");
}
