//! The crate's layers, checked: no module imports from a layer above it, and the files of one
//! module do not import each other in a cycle. The order (lowest first) is the one
//! ARCHITECTURE.md describes; test code (`#[cfg(test)]` blocks and `tests.rs` files) may use any
//! layer to build its fixtures and is not checked.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Top-level modules, lowest layer first: each may use only itself and those before it.
const LAYERS: [&str; 9] = ["engine", "metrics", "model", "scenario", "budget", "runner", "emulate", "report", "cli"];

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

/// (top module, unit within it) of a file: `src/scenario/validate.rs` → (scenario, validate),
/// `src/model/sim/server.rs` → (model, sim), a module root → (top, "").
fn unit_of(rel: &Path) -> (String, String) {
    let parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().trim_end_matches(".rs").to_string()).collect();
    let top = parts[0].clone();
    let unit = match parts.len() {
        1 => String::new(),
        _ if parts[1] == "mod" => String::new(),
        _ => parts[1].clone(),
    };
    (top, unit)
}

/// Upward imports and import cycles of the source tree at `src`.
fn violations(src: &Path) -> (Vec<String>, Vec<String>) {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    files.sort();
    let rank = |m: &str| LAYERS.iter().position(|l| *l == m);
    let mut upward = Vec::new();
    // Within each top module: unit → units it uses.
    let mut edges: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    for path in &files {
        let rel = path.strip_prefix(src).expect("under src");
        if rel.file_name().is_some_and(|n| n == "tests.rs") || rel.components().count() == 1 {
            continue; // test fixtures; lib.rs and main.rs sit above every layer
        }
        let (top, unit) = unit_of(rel);
        let Some(own) = rank(&top) else { panic!("`{}` is in no layer: add it to LAYERS", rel.display()) };
        let code = code(&std::fs::read_to_string(path).expect("readable"));
        for used in referenced(&code, "crate::") {
            match rank(used) {
                Some(r) if r > own => upward.push(format!("{} uses crate::{used}", rel.display())),
                Some(_) => {}
                None => panic!("{} uses crate::{used}, which is in no layer", rel.display()),
            }
            if used == top {
                for (i, _) in code.match_indices(&format!("crate::{top}::")) {
                    let sub = ident_at(&code[i + top.len() + 9..]);
                    edges.entry((top.clone(), unit.clone())).or_default().push(sub.to_string());
                }
            }
        }
        // `super::x` from a file directly in a module's folder names a sibling unit.
        if !unit.is_empty() && rel.components().count() == 2 {
            for sibling in referenced(&code, "super::") {
                edges.entry((top.clone(), unit.clone())).or_default().push(sibling.to_string());
            }
        }
    }
    // Cycles between units of one module (its root, which re-exports, excepted).
    let mut cycles = Vec::new();
    for ((top, unit), uses) in &edges {
        for used in uses.iter().filter(|u| *u != unit && !u.is_empty()) {
            if reaches(&edges, top, used, unit, &mut Vec::new()) {
                cycles.push(format!("{top}::{unit} ↔ {top}::{used}"));
            }
        }
    }
    (upward, cycles)
}

#[test]
fn no_module_imports_from_a_layer_above_it_and_no_file_cycles() {
    let (upward, cycles) = violations(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    assert!(upward.is_empty(), "upward imports (layers, lowest first: {LAYERS:?}):\n{}", upward.join("\n"));
    assert!(cycles.is_empty(), "import cycles:\n{}", cycles.join("\n"));
}

#[test]
fn the_check_finds_an_upward_import_and_a_cycle() {
    let dir = tempfile::tempdir().expect("temp dir");
    let write = |rel: &str, text: &str| {
        let path = dir.path().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write("lib.rs", "pub mod metrics;\npub mod scenario;\n");
    write("metrics/mod.rs", "use crate::model::SimSpec;\n#[cfg(test)]\nmod tests { use crate::cli::x; }\n");
    write("scenario/validate.rs", "use super::policies::policy;\n/// [`crate::report`]\n");
    write("scenario/policies.rs", "use super::{checks::V, validate::show};\n");
    write("scenario/checks.rs", "use crate::engine::Nanos;\n");
    let (upward, cycles) = violations(dir.path());
    assert_eq!(upward, vec!["metrics/mod.rs uses crate::model".to_string()]);
    assert_eq!(cycles, vec!["scenario::policies ↔ scenario::validate", "scenario::validate ↔ scenario::policies"]);
}

/// True when unit `from` of module `top` reaches `to` through the edges.
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
