//! No module of a workspace crate imports one that imports it back
//! (issue 34): the import graph of every crate's `src/`, read from the
//! sources, its cycles printed with the `use` (file:line) behind each edge.
//!
//! How the graph is built:
//! - modules are found from `lib.rs`/`main.rs` by their `mod name;`
//!   declarations (`name.rs`, `name/mod.rs`, `#[path]` and
//!   `#[cfg_attr(.., path = ..)]` all followed); `#[cfg(test)]` items and
//!   test-only module files are left out (tests may use any fixture).
//! - every `use` tree and every `crate::`/`super::`/`self::` path is an
//!   edge to the deepest module that exists as a file (`use crate::a::b::Item`
//!   → `a::b` if `a/b.rs` exists, else `a`).
//! - parent ↔ descendant edges are **not** counted: a parent declares its
//!   children and re-exports their items, a child uses `super::` items —
//!   Rust's usual shape, and one directory owns both ends. An edge between
//!   two modules in different subtrees counts as an edge between the two
//!   sibling subtrees that hold them (`change/persist.rs → snapshot.rs` is
//!   `change → snapshot`), so a cycle is one between siblings.
//!
//! A strongly connected component of more than one module is a cycle. The
//! ones not yet broken are [`KNOWN`], exactly: a new edge inside a cycle
//! fails, and so does a listed edge that no longer closes one.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Edges (`crate`, `from`, `to`, between sibling modules) that close a
/// cycle today, to be broken. None: every crate is acyclic (issue 34 broke
/// bbrkit-host's last component, {bpf, change, enable, host, kernel,
/// snapshot}, by moving the policies' live-state types into `live.rs` and
/// the tuning set into `tuning.rs`). Exactly these: the test fails on one
/// more, and on one fewer (update the list when a cycle is broken).
const KNOWN: &[(&str, &str, &str)] = &[];

type Module = Vec<String>;

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    Str(String),
    Punct(char),
}

/// The tokens of a Rust source with their lines; comments gone, strings
/// kept as one token, lifetimes and char literals skipped.
fn tokenize(src: &str) -> Vec<(Tok, usize)> {
    let c: Vec<char> = src.chars().collect();
    let mut out = Vec::new();
    let (mut i, mut line) = (0, 1);
    while i < c.len() {
        let ch = c[i];
        if ch == '\n' {
            line += 1;
            i += 1;
        } else if ch.is_whitespace() {
            i += 1;
        } else if ch == '/' && c.get(i + 1) == Some(&'/') {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if ch == '/' && c.get(i + 1) == Some(&'*') {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && c.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    if c[i] == '\n' {
                        line += 1;
                    }
                    i += 1;
                }
            }
        } else if ch == 'r'
            && (c.get(i + 1) == Some(&'"')
                || (c.get(i + 1) == Some(&'#')
                    && c.get(i + 2).is_some_and(|x| *x == '"' || *x == '#')))
            || (ch == 'b'
                && c.get(i + 1) == Some(&'r')
                && matches!(c.get(i + 2), Some('"') | Some('#')))
        {
            // raw string: r"..", r#".."#, br".."
            let start_line = line;
            i += if ch == 'b' { 2 } else { 1 };
            let mut hashes = 0;
            while c[i] == '#' {
                hashes += 1;
                i += 1;
            }
            i += 1;
            let mut s = String::new();
            loop {
                if c[i] == '"' && (1..=hashes).all(|k| c.get(i + k) == Some(&'#')) {
                    i += 1 + hashes;
                    break;
                }
                if c[i] == '\n' {
                    line += 1;
                }
                s.push(c[i]);
                i += 1;
            }
            out.push((Tok::Str(s), start_line));
        } else if ch == '"' || (ch == 'b' && c.get(i + 1) == Some(&'"')) {
            let start_line = line;
            i += if ch == 'b' { 2 } else { 1 };
            let mut s = String::new();
            while c[i] != '"' {
                if c[i] == '\\' {
                    s.push(c[i]);
                    i += 1;
                }
                if c[i] == '\n' {
                    line += 1;
                }
                s.push(c[i]);
                i += 1;
            }
            i += 1;
            out.push((Tok::Str(s), start_line));
        } else if ch == '\'' {
            // char literal ('a', '\n', '\u{..}') or a lifetime ('a)
            if c.get(i + 1) == Some(&'\\') {
                i += 2;
                while c[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if c.get(i + 2) == Some(&'\'') {
                i += 3;
            } else {
                i += 1;
                while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                    i += 1;
                }
            }
        } else if ch.is_alphanumeric() || ch == '_' {
            let mut s = String::new();
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                s.push(c[i]);
                i += 1;
            }
            out.push((Tok::Ident(s), line));
        } else {
            out.push((Tok::Punct(ch), line));
            i += 1;
        }
    }
    out
}

fn is_ident(t: &Tok, s: &str) -> bool {
    matches!(t, Tok::Ident(x) if x == s)
}
fn is_punct(t: &Tok, p: char) -> bool {
    *t == Tok::Punct(p)
}
fn is_path_sep(toks: &[(Tok, usize)], i: usize) -> bool {
    i + 1 < toks.len() && is_punct(&toks[i].0, ':') && is_punct(&toks[i + 1].0, ':')
}

/// The index after the bracketed group opening at `i` (`(`, `[` or `{`).
fn skip_group(toks: &[(Tok, usize)], mut i: usize) -> usize {
    let mut depth = 0i32;
    while i < toks.len() {
        match toks[i].0 {
            Tok::Punct('(' | '[' | '{') => depth += 1,
            Tok::Punct(')' | ']' | '}') => {
                depth -= 1;
                if depth == 0 {
                    return i + 1;
                }
            }
            _ => {}
        }
        i += 1;
    }
    i
}

/// The tokens without `#[cfg(test)]` items (an item ends at `;` or at the
/// brace that closes its body).
fn strip_cfg_test(toks: Vec<(Tok, usize)>) -> Vec<(Tok, usize)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        let attr_test = is_punct(&toks[i].0, '#')
            && toks.get(i + 1).is_some_and(|t| is_punct(&t.0, '['))
            && toks.get(i + 2).is_some_and(|t| is_ident(&t.0, "cfg"))
            && toks.get(i + 3).is_some_and(|t| is_punct(&t.0, '('))
            && toks.get(i + 4).is_some_and(|t| is_ident(&t.0, "test"))
            && toks.get(i + 5).is_some_and(|t| is_punct(&t.0, ')'));
        if !attr_test {
            out.push(toks[i].clone());
            i += 1;
            continue;
        }
        i = skip_group(&toks, i + 1);
        while i < toks.len() {
            match toks[i].0 {
                Tok::Punct(';') => {
                    i += 1;
                    break;
                }
                Tok::Punct('#') => i = skip_group(&toks, i + 1),
                Tok::Punct('{') => {
                    i = skip_group(&toks, i);
                    if toks.get(i).is_some_and(|t| is_punct(&t.0, ';')) {
                        i += 1;
                    }
                    break;
                }
                Tok::Punct('(' | '[') => i = skip_group(&toks, i),
                _ => i += 1,
            }
        }
    }
    out
}

/// `mod name;` declarations of a file (after `#[cfg(test)]` items are
/// gone): the name and the `path = ".."` of its attributes, if any.
fn mod_decls(toks: &[(Tok, usize)]) -> Vec<(String, Option<String>)> {
    let mut out = Vec::new();
    for i in 0..toks.len() {
        let (Tok::Ident(kw), Some((Tok::Ident(name), _)), Some((Tok::Punct(';'), _))) =
            (&toks[i].0, toks.get(i + 1), toks.get(i + 2))
        else {
            continue;
        };
        if kw != "mod" {
            continue;
        }
        // The attributes before it (past `pub`, `pub(crate)`).
        let mut j = i;
        let mut path = None;
        loop {
            while j > 0 && matches!(&toks[j - 1].0, Tok::Ident(x) if x == "pub" || x == "crate") {
                j -= 1;
            }
            if j > 0 && is_punct(&toks[j - 1].0, ')') {
                // `pub(crate)` / `pub(super)`
                let mut k = j - 1;
                while k > 0 && !is_punct(&toks[k].0, '(') {
                    k -= 1;
                }
                if k > 0 && is_ident(&toks[k - 1].0, "pub") {
                    j = k - 1;
                    continue;
                }
            }
            if j == 0 || !is_punct(&toks[j - 1].0, ']') {
                break;
            }
            let mut k = j - 1;
            let mut depth = 0;
            loop {
                match toks[k].0 {
                    Tok::Punct(']') => depth += 1,
                    Tok::Punct('[') => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    _ => {}
                }
                k -= 1;
            }
            for w in k..j {
                if is_ident(&toks[w].0, "path")
                    && toks.get(w + 1).is_some_and(|t| is_punct(&t.0, '='))
                    && let Some((Tok::Str(p), _)) = toks.get(w + 2)
                {
                    path = Some(p.clone());
                }
            }
            j = k - 1; // the `#`
        }
        out.push((name.clone(), path));
    }
    out
}

struct Crate {
    /// Module → its files (a module swapped by `#[cfg_attr(.., path)]` has two).
    files: BTreeMap<Module, Vec<PathBuf>>,
    /// Items the crate root re-exports (`pub use a::b::Item;`) → the module
    /// they come from, so `use crate::Item` is an edge to `a::b`.
    reexports: BTreeMap<String, Module>,
}

fn load_crate(src: &Path) -> Crate {
    let mut files = BTreeMap::new();
    for root in ["lib.rs", "main.rs"] {
        let f = src.join(root);
        if f.exists() {
            walk(&f, Vec::new(), true, &mut files);
        }
    }
    let mut c = Crate {
        files,
        reexports: BTreeMap::new(),
    };
    let mut reexports = BTreeMap::new();
    for f in &c.files[&Vec::new()] {
        let toks = strip_cfg_test(tokenize(&std::fs::read_to_string(f).unwrap()));
        for r in refs(&toks).into_iter().filter(|r| r.in_use) {
            if let Some(m) = resolve(&c, &Vec::new(), &r).filter(|m| !m.is_empty()) {
                reexports.insert(r.segs.last().unwrap().clone(), m);
            }
        }
    }
    c.reexports = reexports;
    c
}

/// Adds `file` as module `m` and follows its `mod` declarations.
fn walk(file: &Path, m: Module, owns_dir: bool, files: &mut BTreeMap<Module, Vec<PathBuf>>) {
    let entry: &mut Vec<PathBuf> = files.entry(m.clone()).or_default();
    if entry.iter().any(|f| f == file) {
        return;
    }
    entry.push(file.to_path_buf());
    let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let toks = strip_cfg_test(tokenize(&text));
    let here = file.parent().unwrap();
    // `foo.rs`'s children live in `foo/`; `mod.rs`/`lib.rs`'s next to it.
    let child_dir = if owns_dir {
        here.to_path_buf()
    } else {
        here.join(file.file_stem().unwrap())
    };
    for (name, path) in mod_decls(&toks) {
        let mut cm = m.clone();
        cm.push(name.clone());
        let mut candidates = Vec::new();
        if let Some(p) = path {
            candidates.push((here.join(&p), p.ends_with("mod.rs")));
        }
        candidates.push((child_dir.join(format!("{name}.rs")), false));
        candidates.push((child_dir.join(&name).join("mod.rs"), true));
        // Both the `path` file and the default one, when both exist (a
        // `cfg_attr` swap compiles one or the other).
        let mut found = false;
        for (f, owns) in candidates {
            if f.exists() {
                walk(&f, cm.clone(), owns, files);
                found = true;
            }
        }
        assert!(found, "{}: mod {name}; has no file", file.display());
    }
}

/// One `use`/path occurrence: the module-relative path as written.
struct Ref {
    segs: Vec<String>,
    line: usize,
    in_use: bool,
}

/// Expands a `use` tree starting at `i` (after `use`) into its paths.
fn use_tree(
    toks: &[(Tok, usize)],
    mut i: usize,
    prefix: Vec<String>,
    line: usize,
    out: &mut Vec<Ref>,
) -> usize {
    let mut segs = prefix;
    loop {
        match toks.get(i).map(|t| &t.0) {
            Some(Tok::Ident(s)) if s == "as" => {
                i += 2;
            }
            Some(Tok::Ident(s)) => {
                if s != "self" || segs.is_empty() {
                    segs.push(s.clone());
                }
                i += 1;
                if is_path_sep(toks, i) {
                    i += 2;
                    continue;
                }
            }
            Some(Tok::Punct(':')) if is_path_sep(toks, i) => {
                i += 2;
                continue;
            }
            Some(Tok::Punct('*')) => {
                i += 1;
            }
            Some(Tok::Punct('{')) => {
                i += 1;
                loop {
                    i = use_tree(toks, i, segs.clone(), line, out);
                    match toks.get(i).map(|t| &t.0) {
                        Some(Tok::Punct(',')) => {
                            i += 1;
                            if toks.get(i).is_some_and(|t| is_punct(&t.0, '}')) {
                                return i + 1;
                            }
                        }
                        Some(Tok::Punct('}')) => return i + 1,
                        _ => return i,
                    }
                }
            }
            _ => {}
        }
        if let Some(Tok::Ident(s)) = toks.get(i).map(|t| &t.0)
            && s == "as"
        {
            i += 2;
        }
        out.push(Ref {
            segs,
            line,
            in_use: true,
        });
        return i;
    }
}

fn refs(toks: &[(Tok, usize)]) -> Vec<Ref> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        if is_ident(&toks[i].0, "use") {
            let line = toks[i].1;
            let mut j = use_tree(toks, i + 1, Vec::new(), line, &mut out);
            while j < toks.len() && !is_punct(&toks[j].0, ';') {
                j += 1;
            }
            i = j + 1;
            continue;
        }
        let starts = matches!(&toks[i].0, Tok::Ident(s) if s == "crate" || s == "super" || s == "self")
            && is_path_sep(toks, i + 1)
            && !(i > 0 && is_path_sep(toks, i - 2));
        if starts {
            let line = toks[i].1;
            let mut segs = Vec::new();
            let mut j = i;
            while let Some((Tok::Ident(s), _)) = toks.get(j) {
                segs.push(s.clone());
                j += 1;
                if !is_path_sep(toks, j) {
                    break;
                }
                j += 2;
            }
            out.push(Ref {
                segs,
                line,
                in_use: false,
            });
            i = j;
            continue;
        }
        i += 1;
    }
    out
}

/// The module a path written in module `m` names (the deepest that exists).
fn resolve(c: &Crate, m: &Module, r: &Ref) -> Option<Module> {
    let mut segs = r.segs.iter();
    let mut base: Module = match r.segs.first().map(String::as_str) {
        Some("crate") => {
            segs.next();
            Vec::new()
        }
        Some("super" | "self") => {
            let mut b = m.clone();
            while let Some(s) = segs.clone().next() {
                match s.as_str() {
                    "super" => {
                        b.pop()?;
                    }
                    "self" => {}
                    _ => break,
                }
                segs.next();
            }
            b
        }
        // A bare `use child::Item` names a child module (2018 paths); any
        // other bare path is an extern crate or a local item.
        Some(first) if r.in_use => {
            let mut b = m.clone();
            b.push(first.to_string());
            if !c.files.contains_key(&b) {
                return None;
            }
            m.clone()
        }
        _ => return None,
    };
    for s in segs {
        if base.is_empty()
            && let Some(m) = c.reexports.get(s)
        {
            return Some(m.clone());
        }
        base.push(s.clone());
        if !c.files.contains_key(&base) {
            base.pop();
            break;
        }
    }
    Some(base)
}

/// A lifted edge's evidence: `file:line path`.
type Evidence = Vec<String>;

/// Edges between sibling modules, with the `use`s behind them.
fn sibling_edges(c: &Crate, root: &Path) -> BTreeMap<(Module, Module), Evidence> {
    let mut edges: BTreeMap<(Module, Module), Evidence> = BTreeMap::new();
    for (m, files) in &c.files {
        for f in files {
            let text = std::fs::read_to_string(f).unwrap();
            let toks = strip_cfg_test(tokenize(&text));
            for r in refs(&toks) {
                let Some(t) = resolve(c, m, &r) else { continue };
                let common = m.iter().zip(&t).take_while(|(a, b)| a == b).count();
                if common == m.len() || common == t.len() {
                    continue; // itself, a parent or a descendant
                }
                let from = m[..=common].to_vec();
                let to = t[..=common].to_vec();
                let rel = f.strip_prefix(root).unwrap_or(f);
                edges.entry((from, to)).or_default().push(format!(
                    "{}:{} {}",
                    rel.display(),
                    r.line,
                    r.segs.join("::")
                ));
            }
        }
    }
    edges
}

/// Strongly connected components of more than one node.
fn cycles(edges: &BTreeMap<(Module, Module), Evidence>) -> Vec<BTreeSet<Module>> {
    let mut adj: BTreeMap<&Module, BTreeSet<&Module>> = BTreeMap::new();
    for (a, b) in edges.keys() {
        adj.entry(a).or_default().insert(b);
        adj.entry(b).or_default();
    }
    let reach = |s: &Module| -> BTreeSet<Module> {
        let mut seen = BTreeSet::new();
        let mut stack = vec![s];
        while let Some(n) = stack.pop() {
            for &x in &adj[n] {
                if seen.insert(x.clone()) {
                    stack.push(x);
                }
            }
        }
        seen
    };
    let reach: BTreeMap<&Module, BTreeSet<Module>> = adj.keys().map(|&n| (n, reach(n))).collect();
    let mut out: Vec<BTreeSet<Module>> = Vec::new();
    for (&n, r) in &reach {
        let scc: BTreeSet<Module> = reach
            .iter()
            .filter(|&(m, rm)| r.contains(*m) && rm.contains(n))
            .map(|(m, _)| (*m).clone())
            .collect();
        if scc.len() > 1 && !out.contains(&scc) {
            out.push(scc);
        }
    }
    out
}

fn name(m: &Module) -> String {
    m.join("::")
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// Every crate's cycles: (crate, from, to) of each edge inside one, and a
/// printed account with the evidence.
fn all_cycle_edges() -> (BTreeSet<(String, String, String)>, String) {
    let ws = workspace();
    let mut found = BTreeSet::new();
    let mut report = String::new();
    let mut crates: Vec<PathBuf> = std::fs::read_dir(ws.join("crates"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("src").is_dir())
        .collect();
    crates.sort();
    assert!(
        crates.len() >= 13,
        "the workspace's crates under {}",
        ws.display()
    );
    for dir in crates {
        let krate = dir.file_name().unwrap().to_string_lossy().into_owned();
        let c = load_crate(&dir.join("src"));
        let edges = sibling_edges(&c, &ws);
        for scc in cycles(&edges) {
            let names: Vec<String> = scc.iter().map(name).collect();
            report.push_str(&format!("{krate}: cycle {{{}}}\n", names.join(", ")));
            for ((a, b), ev) in &edges {
                if scc.contains(a) && scc.contains(b) {
                    found.insert((krate.clone(), name(a), name(b)));
                    report.push_str(&format!("  {} -> {}\n", name(a), name(b)));
                    for e in ev {
                        report.push_str(&format!("      {e}\n"));
                    }
                }
            }
        }
    }
    (found, report)
}

#[test]
fn no_module_imports_one_that_imports_it_back() {
    let (found, report) = all_cycle_edges();
    print!("{report}");
    let known: BTreeSet<(String, String, String)> = KNOWN
        .iter()
        .map(|(c, a, b)| (c.to_string(), a.to_string(), b.to_string()))
        .collect();
    let new: Vec<_> = found.difference(&known).collect();
    let gone: Vec<_> = known.difference(&found).collect();
    assert!(
        new.is_empty() && gone.is_empty(),
        "module cycles changed.\nnew edges inside a cycle: {new:?}\nlisted in KNOWN but no longer in a cycle (remove them): {gone:?}\n{report}"
    );
}

/// The parser on a tree in memory-like shape: a sibling pair through a
/// nested `use` tree, `super::` and a `crate::` path in an expression, a
/// parent ↔ child pair left out.
#[test]
fn the_graph_sees_nested_uses_super_and_expression_paths() {
    let dir = std::env::temp_dir().join(format!("bbrkit-module-graph-{}", std::process::id()));
    let src = dir.join("src");
    std::fs::create_dir_all(src.join("a")).unwrap();
    std::fs::write(src.join("lib.rs"), "mod a;\npub use c::Y;\n#[cfg_attr(not(feature = \"x\"), path = \"b_none.rs\")]\npub mod b;\nmod c;\n#[cfg(test)]\nmod t;\n").unwrap();
    std::fs::write(
        src.join("a/mod.rs"),
        "pub mod inner;\npub use inner::X;\nuse crate::{c::{self, Y}};\n",
    )
    .unwrap();
    std::fs::write(
        src.join("a/inner.rs"),
        "pub struct X;\nfn f() { super::super::b::g(); }\n",
    )
    .unwrap();
    std::fs::write(src.join("b.rs"), "pub fn g() {}\nuse crate::Y;\n").unwrap();
    std::fs::write(
        src.join("b_none.rs"),
        "pub fn g() { let _ = crate::a::X; }\n",
    )
    .unwrap();
    std::fs::write(
        src.join("c.rs"),
        "// use crate::a;\npub struct Y;\n#[cfg(test)]\nmod tests { use crate::b; }\n",
    )
    .unwrap();
    std::fs::write(src.join("t.rs"), "use crate::a;\n").unwrap();
    let c = load_crate(&src);
    let edges = sibling_edges(&c, &dir);
    let pairs: BTreeSet<(String, String)> = edges.keys().map(|(a, b)| (name(a), name(b))).collect();
    let want: BTreeSet<(String, String)> = [("a", "b"), ("a", "c"), ("b", "a"), ("b", "c")]
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    assert_eq!(pairs, want, "{edges:?}");
    let cyc = cycles(&edges);
    assert_eq!(cyc.len(), 1);
    assert_eq!(cyc[0].iter().map(name).collect::<Vec<_>>(), ["a", "b"]);
    assert!(
        edges[&(vec!["b".into()], vec!["a".into()])][0].ends_with("src/b_none.rs:1 crate::a::X")
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
