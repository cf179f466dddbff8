//! docs/architecture.md's crate table and README's Layout match the
//! workspace (issue 34): every bbrkit crate a crate's `[dependencies]`
//! names (optional ones too, dev ones not) is in the doc's `uses` column and
//! nothing else is; every workspace crate has a row in both.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// Short name: `bbrkit-host` → `host`, `bbrkit` stays.
fn short(name: &str) -> String {
    name.strip_prefix("bbrkit-").unwrap_or(name).to_string()
}

/// (crate, crate it uses) from each member's Cargo.toml, short names.
fn cargo_edges(ws: &Path) -> (BTreeSet<String>, BTreeSet<(String, String)>) {
    let root = std::fs::read_to_string(ws.join("Cargo.toml")).unwrap();
    let members: Vec<String> = root
        .lines()
        .skip_while(|l| !l.starts_with("members"))
        .skip(1)
        .take_while(|l| !l.starts_with(']'))
        .map(|l| l.trim().trim_end_matches(',').trim_matches('"').to_string())
        .filter(|l| !l.is_empty())
        .collect();
    let mut crates = BTreeSet::new();
    let mut edges = BTreeSet::new();
    for m in members {
        let toml = std::fs::read_to_string(ws.join(&m).join("Cargo.toml")).unwrap();
        let name = toml
            .lines()
            .find_map(|l| {
                l.strip_prefix("name = ")
                    .map(|n| n.trim_matches('"').to_string())
            })
            .unwrap();
        let mut section = String::new();
        for l in toml.lines() {
            let l = l.trim();
            if l.starts_with('[') {
                section = l.to_string();
            } else if (section == "[dependencies]"
                || section.starts_with("[target.") && section.ends_with(".dependencies]"))
                && l.starts_with("bbrkit")
                && let Some((dep, _)) = l.split_once([' ', '='])
            {
                edges.insert((short(&name), short(dep)));
            }
        }
        crates.insert(short(&name));
    }
    (crates, edges)
}

/// The table after "```text\ncrate       uses" in docs/architecture.md.
fn doc_edges(ws: &Path) -> (BTreeSet<String>, BTreeSet<(String, String)>) {
    let doc = std::fs::read_to_string(ws.join("docs/architecture.md")).unwrap();
    let start = doc
        .find("```text\ncrate ")
        .expect("docs/architecture.md: the crate table (```text / crate  uses)");
    let mut crates = BTreeSet::new();
    let mut edges = BTreeSet::new();
    for l in doc[start..]
        .lines()
        .skip(2)
        .take_while(|l| !l.starts_with("```"))
    {
        let (c, uses) = l.split_once(' ').unwrap_or((l, "-"));
        crates.insert(c.to_string());
        for u in uses
            .split(',')
            .map(str::trim)
            .filter(|u| *u != "-" && !u.is_empty())
        {
            let u = u.trim_end_matches(" (feature bpf)");
            edges.insert((c.to_string(), u.to_string()));
        }
    }
    (crates, edges)
}

#[test]
fn the_architecture_doc_lists_every_crate_and_every_dependency() {
    let ws = workspace();
    let (crates, edges) = cargo_edges(&ws);
    let (doc_crates, doc) = doc_edges(&ws);
    assert_eq!(crates.len(), 14, "{crates:?}");
    assert_eq!(
        doc_crates, crates,
        "docs/architecture.md's crate table vs the workspace members"
    );
    let missing: Vec<_> = edges.difference(&doc).collect();
    let extra: Vec<_> = doc.difference(&edges).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "docs/architecture.md's crate table: missing (crate, uses) {missing:?}; not in any Cargo.toml {extra:?}"
    );
    let arch = std::fs::read_to_string(ws.join("docs/architecture.md")).unwrap();
    assert!(
        arch.contains(&format!("bbrkit is {} crates", crates.len())),
        "docs/architecture.md's crate count"
    );
}

#[test]
fn the_readme_layout_has_a_row_per_crate() {
    let ws = workspace();
    let (crates, _) = cargo_edges(&ws);
    let readme = std::fs::read_to_string(ws.join("README.md")).unwrap();
    let layout = &readme[readme.find("## Layout").expect("README: ## Layout")..];
    let layout = &layout[..layout[3..].find("\n## ").map_or(layout.len(), |i| i + 3)];
    let rows: BTreeSet<String> = layout
        .lines()
        .filter_map(|l| {
            l.strip_prefix("| `")?
                .split_once('`')
                .map(|(c, _)| short(c))
        })
        .collect();
    assert_eq!(
        rows, crates,
        "README's Layout rows vs the workspace members"
    );
}
