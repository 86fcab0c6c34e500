//! The scenario format's JSON Schema (docs/scenario.schema.json, `retrystorm schema`): the
//! committed file is what the types generate; every scenario the parser accepts (bundled, the
//! combined files, what `init` writes) validates against it with an independent
//! validator (the `jsonschema` crate); and the bad-input corpus's unknown keys, wrong types and
//! unknown names are refused by it as by the parser.

mod common;

use retrystorm::scenario::{schema, Scenario};
use std::path::{Path, PathBuf};

const COMMITTED: &str = "docs/scenario.schema.json";

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn validator() -> jsonschema::Validator {
    jsonschema::draft7::new(&schema::schema()).expect("the schema is a valid draft 7 schema")
}

/// A TOML file as the JSON value a schema validator sees.
fn as_json(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let value: toml::Value = toml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::to_value(value).expect("TOML converts to JSON")
}

/// The schema's complaints about `path`, one per line (empty: valid).
fn complaints(validator: &jsonschema::Validator, path: &Path) -> String {
    let instance = as_json(path);
    validator.iter_errors(&instance).map(|e| format!("  at `{}`: {e}\n", e.instance_path())).collect()
}

fn toml_files(dir: &Path) -> Vec<PathBuf> {
    let mut list: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    list.sort();
    list
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

/// Every scenario the parser accepts is valid against the schema: the schema refuses no key,
/// type or name the parser reads.
#[test]
fn every_scenario_the_parser_accepts_validates() {
    let validator = validator();
    let mut files = common::bundled_scenarios();
    files.extend(toml_files(&root().join("tests/combined")));
    assert!(files.len() > 40, "{} files", files.len());
    let mut refused = String::new();
    for file in &files {
        Scenario::load(&file.display().to_string(), &[]).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let why = complaints(&validator, file);
        if !why.is_empty() {
            refused.push_str(&format!("{}:\n{why}", file.display()));
        }
    }
    assert!(refused.is_empty(), "the schema refuses scenarios the parser accepts:\n{refused}");
}

/// The files `retrystorm init` writes, from a planner's numbers and from the user's own data.
#[test]
fn what_init_writes_validates() {
    let validator = validator();
    let data = root().join("scenarios/data");
    let data = |f: &str| data.join(f).display().to_string();
    let runs: [Vec<String>; 3] = [
        ["--rate", "800", "--capacity", "1000", "--outage", "20s", "--hops", "api,db"].map(String::from).to_vec(),
        ["--clients", "5000", "--preset", "aws-standard"].map(String::from).to_vec(),
        vec!["--from".into(), data("tuesday-rps.csv"), "--from".into(), data("checkout-latency.csv")],
    ];
    let dir = tempfile::tempdir().expect("temp dir");
    for (i, args) in runs.iter().enumerate() {
        let file = dir.path().join(format!("init-{i}.toml"));
        let mut all = vec!["init".to_string(), file.display().to_string()];
        all.extend(args.iter().cloned());
        let all: Vec<&str> = all.iter().map(String::as_str).collect();
        let out = common::retrystorm(dir.path(), &all);
        assert!(out.status.success(), "init {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        let why = complaints(&validator, &file);
        assert!(why.is_empty(), "init {args:?} wrote a file the schema refuses:\n{why}");
    }
}

/// Files of the bad-input corpus whose mistake is one the schema can see: an unknown key, a field
/// of another kind, a value of the wrong type, a name no kind has, a missing key, a malformed
/// duration. Each is refused by the schema (and, as the corpus checks, by the parser).
const REFUSED: [&str; 53] = [
    "unknown_top_level_key",
    "unknown_top_level_table",
    "unknown_hop_key",
    "unknown_policy_key",
    "unknown_fault_key",
    "unknown_arrival_key",
    "hedge_unknown_key",
    "cache_unknown_field",
    "autoscale_unknown_field",
    "admission_unknown_field",
    "admission_field_of_other_kind",
    "arrival_field_of_other_kind",
    "budget_field_of_other_kind",
    "fault_field_of_other_kind",
    "load_latency_field_of_other_kind",
    "ramp_field_of_other_kind",
    "empirical_field_on_constant",
    "profile_with_think",
    "in_service_on_hang",
    "cache_table_on_service_hop",
    "cache_with_service",
    "cache_with_workers",
    "occ_with_workers",
    "occ_with_pool",
    "type_bool_as_string",
    "type_count_as_float",
    "type_count_as_string",
    "type_duration_as_number",
    "type_float_as_string",
    "unknown_arrival_kind",
    "unknown_budget_kind",
    "unknown_dist",
    "unknown_fault_kind",
    "unknown_hop_kind",
    "unknown_jitter",
    "unknown_preset",
    "unknown_retry_after_mode",
    "unknown_scheduling",
    "unknown_scope",
    "discipline_unknown",
    "deadline_mode_unknown",
    "cache_eviction_unknown",
    "autoscale_metric_unknown",
    "admission_kind_unknown",
    "load_latency_kind_unknown",
    "outage_in_service_unknown",
    "cache_key_distribution_unknown",
    "missing_horizon",
    "missing_clients",
    "fault_missing_retry_after",
    "duration_unknown_unit",
    "duration_without_unit",
    "duration_negative",
];

#[test]
fn the_corpus_mistakes_a_schema_can_see_are_refused() {
    let validator = validator();
    let mut accepted = Vec::new();
    for name in REFUSED {
        let file = root().join(format!("tests/bad_scenarios/{name}.toml"));
        assert!(
            Scenario::load(&file.display().to_string(), &[]).is_err(),
            "{name}: the parser accepts it; it is no bad scenario"
        );
        if complaints(&validator, &file).is_empty() {
            accepted.push(name);
        }
    }
    assert!(accepted.is_empty(), "the schema accepts these bad scenarios: {accepted:?}");
}

/// The duration pattern agrees with the parser on what is a duration: each string is valid
/// against the schema's `Duration` exactly when `parse_duration` reads it.
#[test]
fn the_duration_pattern_agrees_with_the_parser() {
    let full = schema::schema();
    let mut duration = full["definitions"]["Duration"].clone();
    duration["$schema"] = "http://json-schema.org/draft-07/schema#".into();
    let validator = jsonschema::draft7::new(&duration).expect("a schema");
    let samples = [
        "100ms",
        "10s",
        "5m",
        "72h",
        "1h 30m",
        "1h30m",
        " 2s ",
        "1.5s",
        "0.25ms",
        "3 days",
        "2weeks",
        "1M",
        "1y",
        "7us",
        "7µs",
        "9ns",
        "0s",
        "1 s",
        "",
        "s",
        "10",
        "-1s",
        "1.5",
        "1 parsec",
        "10S",
        "1h-5m",
        "ms10",
        ".5s",
        "1e3s",
        "inf",
        "NaN",
        "1,5s",
        "10 s 20 ms",
    ];
    let mut disagree = Vec::new();
    for text in samples {
        let parses = retrystorm::engine::time::parse_duration(text).is_ok();
        let valid = validator.is_valid(&serde_json::Value::String(text.into()));
        if parses != valid {
            disagree.push(format!("{text:?}: parser {parses}, schema {valid}"));
        }
    }
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
