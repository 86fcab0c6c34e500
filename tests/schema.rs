//! The scenario format's JSON Schema (docs/scenario.schema.json, `retrystorm schema`): the
//! committed file is what the types generate, and the parser's side of the shared cases
//! (`tests/schema_cases.json`): every bad-input file listed there is refused by the parser, and
//! each duration string is read by `parse_duration` exactly when the file says. The schema's side
//! — every scenario the parser accepts (bundled, combined, what `init` writes) validates, the
//! listed bad files and durations are refused — is checked by an independent validator, Python's
//! `jsonschema`, in `python/tests/test_schema.py` (run by `scripts/test`).

mod common;

use retrystorm::scenario::{schema, Scenario};
use std::path::Path;

const COMMITTED: &str = "docs/scenario.schema.json";

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The cases both validators' tests read: `refused` (bad_scenarios/ names) and `durations`
/// (string → whether the parser reads it).
fn cases() -> serde_json::Value {
    serde_json::from_str(include_str!("schema_cases.json")).expect("tests/schema_cases.json is JSON")
}

#[test]
fn the_committed_schema_is_what_the_types_generate() {
    let committed = std::fs::read_to_string(root().join(COMMITTED)).unwrap_or_default();
    assert!(
        committed == schema::text(),
        "{COMMITTED} differs from the schema the scenario types generate; regenerate it with \
         `cargo run --release -- schema --out {COMMITTED}` and commit it"
    );
}

/// Every bad-input file the shared cases list is refused by the parser: it is a bad scenario, so
/// the schema's refusing it (python/tests/test_schema.py) agrees with the parser.
#[test]
fn the_listed_corpus_mistakes_are_refused_by_the_parser() {
    let cases = cases();
    let names = cases["refused"].as_array().expect("a list");
    assert!(names.len() >= 50, "{} names", names.len());
    for name in names {
        let name = name.as_str().expect("a name");
        let file = root().join(format!("tests/bad_scenarios/{name}.toml"));
        assert!(file.exists(), "{}: no such file in the corpus", file.display());
        assert!(
            Scenario::load(&file.display().to_string(), &[]).is_err(),
            "{name}: the parser accepts it; it is no bad scenario"
        );
    }
}

/// Each duration string of the shared cases is read by `parse_duration` exactly when the file
/// says; the schema's `Duration` pattern is held to the same answers in Python.
#[test]
fn the_duration_cases_say_what_the_parser_reads() {
    let cases = cases();
    let durations = cases["durations"].as_object().expect("a table");
    assert!(durations.len() > 30 && durations.values().any(|v| v == false));
    let disagree: Vec<String> = durations
        .iter()
        .filter(|(text, parses)| {
            retrystorm::engine::time::parse_duration(text).is_ok() != parses.as_bool().expect("bool")
        })
        .map(|(text, parses)| format!("{text:?}: the file says {parses}"))
        .collect();
    assert!(disagree.is_empty(), "{disagree:#?}");
}

/// `retrystorm schema --out FILE` writes the committed text; an `--out` in a missing folder is
/// refused with exit code 2, naming the flag, and writes nothing.
#[test]
fn the_schema_command_writes_the_file_or_refuses_the_flag() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = common::retrystorm(dir.path(), &["schema", "--out", "s.json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(std::fs::read_to_string(dir.path().join("s.json")).expect("written"), schema::text());
    let printed = common::retrystorm(dir.path(), &["schema"]);
    assert_eq!(String::from_utf8_lossy(&printed.stdout), schema::text());
    let bad = common::retrystorm(dir.path(), &["schema", "--out", "missing/s.json"]);
    assert_eq!(bad.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert!(stderr.contains("--out missing/s.json is in a folder that does not exist"), "{stderr}");
    assert_eq!(common::listing(dir.path()), vec![dir.path().join("s.json")]);
}
