//! The crate's layers, checked: no module imports from a layer above it (the files at the root
//! of `src/` included), the files of one folder (sub-folders such as `model/sim/` included) do
//! not import each other in a cycle, and every Rust file opens with its module doc line. The
//! order (lowest first) is the one ARCHITECTURE.md describes; test code (`#[cfg(test)]` blocks
//! and `tests.rs` files) may use any layer to build its fixtures and is not checked.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Top-level modules, lowest layer first: each may use only itself and those before it.
const LAYERS: [&str; 9] =
    ["engine", "metrics", "model", "scenario", "retry_window", "runner", "emulate", "report", "cli"];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("src is readable") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The production code of a file: comments dropped, test modules cut off.
fn code(text: &str) -> String {
    let text = text.split("#[cfg(test)]").next().unwrap_or("");
    text.lines().filter(|l| !l.trim_start().starts_with("//")).collect::<Vec<_>>().join("\n")
}

fn ident_at(s: &str) -> &str {
    let end = s.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(s.len());
    &s[..end]
}

/// Names referenced after `prefix` (`crate::x`, `super::{x, y}`), first path segment only.
fn referenced<'a>(code: &'a str, prefix: &str) -> Vec<&'a str> {
    let mut out = Vec::new();
    for (i, _) in code.match_indices(prefix) {
        let before = code[..i].chars().last();
        if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
            continue; // `foo_crate::`, not ours
        }
        let rest = &code[i + prefix.len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let inner = &group[..group.find('}').unwrap_or(group.len())];
            out.extend(inner.split(',').map(|p| ident_at(p.trim())).filter(|p| !p.is_empty()));
        } else {
            let name = ident_at(rest);
            if !name.is_empty() {
                out.push(name);
            }
        }
    }
    out
}

/// The folders holding `rel` (a path under src/), each with the unit `rel` belongs to there:
/// `model/sim/server.rs` → [(model, sim), (model::sim, server)]; a folder's `mod.rs` is its
/// root and belongs to none of its own units: `model/sim/mod.rs` → [(model, sim)].
fn units_of(rel: &Path) -> Vec<(String, String)> {
    let parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().trim_end_matches(".rs").to_string()).collect();
    (1..parts.len())
        .filter(|&k| !(k == parts.len() - 1 && parts[k] == "mod"))
        .map(|k| (parts[..k].join("::"), parts[k].clone()))
        .collect()
}

/// Upward imports and import cycles of the source tree at `src`. Cycles are looked for in every
/// folder between its units (its files and sub-folders; the root, which re-exports, excepted): a
/// file names a unit of its folder as `super::unit` or by its full `crate::` path, and a
/// sub-folder uses what any file inside it uses.
fn violations(src: &Path) -> (Vec<String>, Vec<String>) {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    files.sort();
    let rank = |m: &str| LAYERS.iter().position(|l| *l == m);
    let mut upward = Vec::new();
    // Per folder: unit → units of that folder it uses.
    let mut edges: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    for path in &files {
        let rel = path.strip_prefix(src).expect("under src");
        if rel.file_name().is_some_and(|n| n == "tests.rs") || rel == Path::new("lib.rs") || rel == Path::new("main.rs")
        {
            continue; // test fixtures; lib.rs and main.rs sit above every layer
        }
        // A folder's name, or a file at the root (`retry_window.rs`) without its extension.
        let top = rel.iter().next().expect("a component").to_string_lossy().trim_end_matches(".rs").to_string();
        let Some(own) = rank(&top) else { panic!("`{}` is in no layer: add it to LAYERS", rel.display()) };
        let code = code(&std::fs::read_to_string(path).expect("readable"));
        for used in referenced(&code, "crate::") {
            match rank(used) {
                Some(r) if r > own => upward.push(format!("{} uses crate::{used}", rel.display())),
                Some(_) => {}
                None => panic!("{} uses crate::{used}, which is in no layer", rel.display()),
            }
        }
        let depth = rel.components().count();
        let is_root = rel.file_name().is_some_and(|n| n == "mod.rs");
        for (folder, unit) in units_of(rel) {
            let prefix = format!("crate::{folder}::");
            let uses = edges.entry((folder.clone(), unit.clone())).or_default();
            for (i, _) in code.match_indices(&prefix) {
                uses.push(ident_at(&code[i + prefix.len()..]).to_string());
            }
            // `super::x` from a file directly in the folder (or from the root of a sub-folder
            // of it) names a unit of the folder.
            let in_folder = folder.split("::").count() + 1;
            if (depth == in_folder && !is_root) || (depth == in_folder + 1 && is_root) {
                uses.extend(referenced(&code, "super::").into_iter().map(str::to_string));
            }
        }
    }
    let mut cycles = Vec::new();
    for ((folder, unit), uses) in &edges {
        for used in uses.iter().filter(|u| *u != unit && !u.is_empty()) {
            if reaches(&edges, folder, used, unit, &mut Vec::new()) {
                let cycle = format!("{folder}::{unit} ↔ {folder}::{used}");
                if !cycles.contains(&cycle) {
                    cycles.push(cycle);
                }
            }
        }
    }
    (upward, cycles)
}

/// The source trees whose top-level modules are the layers: the simulation core's crate
/// (`crates/core`: metrics … runner) and this crate's `src/` (emulate, report, cli), which
/// re-exports the core's modules under the same paths.
const LAYERED_TREES: [&str; 2] = ["crates/core/src", "src"];

#[test]
fn no_module_imports_from_a_layer_above_it_and_no_file_cycles() {
    for tree in LAYERED_TREES {
        let (upward, cycles) = violations(&Path::new(env!("CARGO_MANIFEST_DIR")).join(tree));
        assert!(upward.is_empty(), "{tree}: upward imports (layers, lowest first: {LAYERS:?}):\n{}", upward.join("\n"));
        assert!(cycles.is_empty(), "{tree}: import cycles:\n{}", cycles.join("\n"));
    }
}

/// The packages `package` depends on in Cargo.lock, directly or not (the lock lists every
/// dependency any feature may pull in, so this is an upper bound of what a build links).
fn locked_closure(lock: &str, package: &str) -> Vec<String> {
    let lock: toml::Table = lock.parse().expect("Cargo.lock is TOML");
    let packages = lock["package"].as_array().expect("[[package]]");
    let deps_of = |name: &str| -> Vec<String> {
        let entry = packages.iter().find(|p| p["name"].as_str() == Some(name));
        let deps = entry.and_then(|p| p.get("dependencies")).and_then(|d| d.as_array());
        // An entry reads "name" or "name version" when two versions are locked.
        deps.map(|d| {
            d.iter().filter_map(|x| x.as_str()).map(|x| x.split(' ').next().unwrap_or(x).to_string()).collect()
        })
        .unwrap_or_default()
    };
    let mut seen: Vec<String> = Vec::new();
    let mut todo = deps_of(package);
    while let Some(next) = todo.pop() {
        if !seen.contains(&next) {
            todo.extend(deps_of(&next));
            seen.push(next);
        }
    }
    seen.sort();
    seen
}

/// The simulation core builds without the command line, the charts or the sockets: no clap,
/// plotters, tokio or hyper among its dependencies, direct or not (`cargo tree -p
/// retrystorm-core -e normal` shows the same).
#[test]
fn the_core_crate_depends_on_no_clap_plotters_tokio_or_hyper() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let lock = std::fs::read_to_string(root.join("Cargo.lock")).expect("Cargo.lock");
    let core = locked_closure(&lock, "retrystorm-core");
    assert!(core.iter().any(|d| d == "rand") && core.iter().any(|d| d == "retrystorm-engine"), "{core:?}");
    let forbidden: Vec<&String> =
        core.iter().filter(|d| ["clap", "plotters", "tokio", "hyper"].contains(&d.as_str())).collect();
    assert!(forbidden.is_empty(), "retrystorm-core depends on {forbidden:?}");
    // The check can fail: the crate above the core does pull them in.
    let top = locked_closure(&lock, "retrystorm");
    assert!(["clap", "plotters", "tokio", "hyper"].iter().all(|f| top.iter().any(|d| d == f)), "{top:?}");
}

/// The engine is a crate of its own (`crates/engine`), so the compiler keeps it from using any
/// layer above it; its files are checked for cycles as the folder `engine/` of the tree would be
/// (its `crate::x` paths read as `crate::engine::x`).
#[test]
fn the_engine_crate_has_no_file_cycles() {
    let engine = Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/engine/src");
    let dir = tempfile::tempdir().expect("temp dir");
    let mut files = Vec::new();
    rust_files(&engine, &mut files);
    assert!(files.len() > 1, "the engine crate's files are found at {}", engine.display());
    for path in files {
        let rel = path.strip_prefix(&engine).expect("under the engine");
        let rel = if rel == Path::new("lib.rs") { PathBuf::from("mod.rs") } else { rel.to_path_buf() };
        let to = dir.path().join("engine").join(rel);
        std::fs::create_dir_all(to.parent().expect("a folder")).expect("temp folder");
        let text = std::fs::read_to_string(&path).expect("readable").replace("crate::", "crate::engine::");
        std::fs::write(to, text).expect("temp file");
    }
    let (upward, cycles) = violations(dir.path());
    assert!(upward.is_empty(), "the engine uses no other layer: {upward:?}");
    assert!(cycles.is_empty(), "import cycles in the engine crate:\n{}", cycles.join("\n"));
}

/// Writes `text` at `rel` under `root`, making its folders: a fixture tree for the checks' own
/// tests.
fn write_file(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().expect("a folder")).expect("fixture folder");
    std::fs::write(path, text).expect("fixture file");
}

#[test]
fn the_check_finds_an_upward_import_and_a_cycle() {
    let dir = tempfile::tempdir().expect("temp dir");
    let write = |rel: &str, text: &str| write_file(dir.path(), rel, text);
    write("lib.rs", "pub mod metrics;\npub mod scenario;\n");
    write("metrics/mod.rs", "use crate::model::SimSpec;\n#[cfg(test)]\nmod tests { use crate::cli::x; }\n");
    write("scenario/validate.rs", "use super::policies::policy;\n/// [`crate::report`]\n");
    write("scenario/policies.rs", "use super::{checks::V, validate::show};\n");
    write("scenario/checks.rs", "use crate::engine::Nanos;\n");
    // Inside a sub-folder: two files that use each other, and the root every file uses.
    write("model/sim/mod.rs", "mod accounting;\nmod run_ahead;\npub struct Simulation;\n");
    write("model/sim/accounting.rs", "use super::{Simulation, run_ahead::Samples};\n");
    write("model/sim/run_ahead.rs", "use super::Simulation;\nfn f() { crate::model::sim::accounting::count(); }\n");
    write("model/sim/server.rs", "use super::accounting::count;\n");
    // A file at the root of src/ is checked as its own layer; main.rs sits above them all.
    write("retry_window.rs", "use crate::model::Jitter;\nfn f() { crate::report::format::fmt_secs(1.0); }\n");
    write("main.rs", "fn main() { retrystorm::cli::main(); crate::cli::x(); }\n");
    let (upward, cycles) = violations(dir.path());
    assert_eq!(
        upward,
        vec!["metrics/mod.rs uses crate::model".to_string(), "retry_window.rs uses crate::report".to_string()]
    );
    assert_eq!(
        cycles,
        vec![
            "model::sim::accounting ↔ model::sim::run_ahead",
            "model::sim::run_ahead ↔ model::sim::accounting",
            "scenario::policies ↔ scenario::validate",
            "scenario::validate ↔ scenario::policies",
        ]
    );
}

/// True when unit `from` of folder `top` reaches `to` through the edges.
fn reaches(
    edges: &BTreeMap<(String, String), Vec<String>>,
    top: &str,
    from: &str,
    to: &str,
    seen: &mut Vec<String>,
) -> bool {
    if from == to {
        return true;
    }
    if seen.iter().any(|s| s == from) {
        return false;
    }
    seen.push(from.to_string());
    let next = edges.get(&(top.to_string(), from.to_string())).cloned().unwrap_or_default();
    next.iter().filter(|n| n.as_str() != from).any(|n| reaches(edges, top, n, to, seen))
}

/// Only the command line knows clap: `model`, `runner` and every other layer below `cli` derive
/// no CLI trait (a flag's choices are mirrored in `cli`, which converts them).
#[test]
fn only_the_command_line_uses_clap() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for tree in LAYERED_TREES {
        rust_files(&root.join(tree), &mut files);
    }
    files.sort();
    let users: Vec<String> = files
        .iter()
        .map(|f| f.strip_prefix(root).expect("under the root"))
        .filter(|rel| !rel.starts_with("src/cli") && *rel != Path::new("src/main.rs"))
        .filter(|rel| code(&std::fs::read_to_string(root.join(rel)).expect("readable")).contains("clap"))
        .map(|rel| rel.display().to_string())
        .collect();
    assert!(files.len() > 100 && users.is_empty(), "clap used below the command line:\n{}", users.join("\n"));
}

/// The Rust files under `root` (its `src/`, each `crates/*/src/`, `tests/` and `benches/`) whose
/// first line is not a module doc comment (`//!`): each file says what it holds there, which is
/// the code map ARCHITECTURE.md no longer repeats file by file.
fn files_without_module_doc(root: &Path) -> (usize, Vec<String>) {
    let mut dirs = vec![root.join("src"), root.join("tests"), root.join("benches")];
    if let Ok(crates) = std::fs::read_dir(root.join("crates")) {
        dirs.extend(crates.map(|c| c.expect("entry").path().join("src")).filter(|p| p.is_dir()));
    }
    let mut files = Vec::new();
    for dir in dirs.iter().filter(|d| d.is_dir()) {
        rust_files(dir, &mut files);
    }
    files.sort();
    let missing = files
        .iter()
        .filter(|f| !std::fs::read_to_string(f).expect("readable").starts_with("//!"))
        .map(|f| f.strip_prefix(root).expect("under the root").display().to_string())
        .collect();
    (files.len(), missing)
}

#[test]
fn every_rust_file_opens_with_its_module_doc_line() {
    let (count, missing) = files_without_module_doc(Path::new(env!("CARGO_MANIFEST_DIR")));
    assert!(count > 100, "{count} files found");
    assert!(missing.is_empty(), "files whose first line is not a `//!` module doc line:\n{}", missing.join("\n"));
}

#[test]
fn the_module_doc_check_finds_a_file_without_one() {
    let dir = tempfile::tempdir().expect("temp dir");
    let write = |rel: &str, text: &str| write_file(dir.path(), rel, text);
    write("src/lib.rs", "//! The library.\npub mod a;\n");
    write("src/a.rs", "/// Not a module doc.\npub fn f() {}\n");
    write("crates/engine/src/lib.rs", "\n//! A blank line first.\n");
    write("tests/t.rs", "//! A test.\n");
    write("tests/common/mod.rs", "use std::path::Path;\n");
    write("benches/b.rs", "//! A bench.\n");
    write("benches/notes.md", "not Rust\n");
    let (count, missing) = files_without_module_doc(dir.path());
    assert_eq!(count, 6);
    assert_eq!(missing, vec!["crates/engine/src/lib.rs", "src/a.rs", "tests/common/mod.rs"]);
}
