//! Scenario files: parse the TOML, apply overrides, validate into a [`SimSpec`] per variant.

mod cache;
mod checks;
mod dists;
pub mod empirical;
pub mod error;
mod faults;
pub(crate) mod graph;
mod hedge;
mod hop_kind;
mod hops;
pub mod import;
pub mod input_file;
pub(crate) mod invariants;
mod kind_fields;
pub(crate) mod locate;
pub mod names;
mod overload;
pub(crate) mod overrides;
pub mod policies;
pub mod presets;
// The serde mirror of the file. Its doc comments are the JSON Schema's descriptions; the top
// table's and the tenants' fields have them, the others not yet, so the module is exempt from
// `missing_docs` until they do.
#[allow(missing_docs)]
pub mod raw;
mod replicas;
pub(crate) mod sanity;
mod scaling;
pub mod schema;
pub(crate) mod tagged;
pub(crate) mod tenants;
pub mod trace;
pub(crate) mod validate;

pub use error::ScenarioError;
pub use overrides::{parse_assignment, Override};

use crate::model::SimSpec;
use error::{line_col, shorten, with_suggestion, Invalid};
use raw::RawScenario;
use serde::Deserialize;
use toml::Table;

/// One simulated configuration of a scenario.
#[derive(Clone, Debug)]
pub struct Variant {
    /// Name shown in outputs.
    pub name: String,
    /// What to simulate.
    pub spec: SimSpec,
}

/// A loaded, validated scenario.
#[derive(Clone, Debug)]
pub struct Scenario {
    /// Where it came from (for messages).
    pub file: String,
    /// Scenario name.
    pub name: String,
    /// Master seed.
    pub seed: u64,
    /// Replications per variant.
    pub replications: u32,
    /// The scenario as written (plus command-line overrides).
    pub base: SimSpec,
    /// The `[[variant]]`s, validated.
    pub variants: Vec<Variant>,
    /// Invariant warnings of the base and every variant (deduplicated, in order).
    pub warnings: Vec<String>,
    /// `[objective]`: what the verdict ranks by and requires (default: success ratio, then peak
    /// after recovery over capacity, then p99 latency; no requirements).
    pub objective: crate::metrics::objective::Objective,
    /// `[map]` as written: `retrystorm map` reads it under its flags.
    pub map: Option<raw::RawMap>,
    source: String,
    table: Table,
}

/// Validates `[objective]` against the scenario's hops and tenants.
fn objective(raw: &RawScenario, spec: &SimSpec) -> Result<crate::metrics::objective::Objective, Invalid> {
    use crate::metrics::objective::{Criterion, Objective, Requirement};
    let default = Objective::default_for_tenants(spec.tenants.len());
    let Some(o) = &raw.objective else { return Ok(default) };
    let hops: Vec<&str> = spec.hops.iter().map(|h| h.name.as_str()).collect();
    let tenants: Vec<&str> = spec.tenants.iter().map(|t| t.name.as_str()).collect();
    let mut rank = if o.rank.is_empty() { default.rank } else { Vec::new() };
    for (i, text) in o.rank.iter().enumerate() {
        let c = Criterion::parse(text)
            .and_then(|c| c.metric.check_names(&hops, &tenants).map(|()| c))
            .map_err(|e| Invalid::at(&format!("objective.rank.{i}"), e))?;
        rank.push(c);
    }
    let mut require = Vec::new();
    for (i, text) in o.require.iter().enumerate() {
        let r = Requirement::parse(text)
            .and_then(|r| r.metric.check_names(&hops, &tenants).map(|()| r))
            .map_err(|e| Invalid::at(&format!("objective.require.{i}"), e))?;
        require.push(r);
    }
    let mut objective = Objective::with_default_ties(rank, require);
    for (key, value) in &o.tie {
        #[allow(
            clippy::wildcard_enum_match_arm,
            reason = "a TOML value, not a kind: set_tie reads any other shape's TOML text"
        )]
        let text = match value {
            toml::Value::String(s) => s.clone(),
            toml::Value::Integer(n) => n.to_string(),
            toml::Value::Float(x) => x.to_string(),
            other => format!("{other}"),
        };
        objective.set_tie(key, &text).map_err(|e| Invalid::at(&format!("objective.tie.{key}"), e))?;
    }
    Ok(objective)
}

/// Name of the single variant `run` simulates when the file declares none.
pub const BASELINE: &str = "baseline";

/// Feeds text into a 64-bit FNV-1a hash without holding it (a scenario's debug form may hold a
/// trace of millions of timestamps).
struct Fnv(u64);

impl std::fmt::Write for Fnv {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        for b in s.bytes() {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
        Ok(())
    }
}

/// A digest of the model as run: the validated base scenario and every variant's validated
/// description (`fnv1a64:` and 16 hex digits). Sweep, plan and map write it into their files
/// so that `merge` refuses shards of different models — another scenario file, another `--set`,
/// a changed trace — even when their names and seeds agree.
pub fn model_digest(base: &SimSpec, variants: &[Variant]) -> String {
    use std::fmt::Write as _;
    let mut h = Fnv(0xcbf2_9ce4_8422_2325);
    let _ = write!(h, "{base:?}");
    for v in variants {
        let _ = write!(h, "|{}|{:?}", v.name, v.spec);
    }
    format!("fnv1a64:{:016x}", h.0)
}

impl Scenario {
    /// FNV-1a 64-bit hash of the scenario file's text, as 16 hex digits (identifies the file a
    /// run used; not a security hash).
    pub fn source_hash(&self) -> String {
        let hash =
            self.source.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3));
        format!("{hash:016x}")
    }

    /// Reads and validates `path` with `overrides` applied (before the variants' own).
    pub fn load(path: &str, overrides: &[Override]) -> Result<Scenario, ScenarioError> {
        let source = read_scenario_file(path).map_err(|message| ScenarioError {
            file: path.to_string(),
            location: None,
            field: None,
            message: format!("cannot read the scenario file: {message}"),
        })?;
        Scenario::from_source(path, &source, overrides)
    }

    /// Validates scenario text; `file` names it in messages.
    pub fn from_source(file: &str, source: &str, overrides: &[Override]) -> Result<Scenario, ScenarioError> {
        // Parsing the text itself first gives every syntax, type and unknown-key error a position.
        let parsed: RawScenario = toml::from_str(source).map_err(|e| parse_error(file, source, &e))?;
        let table: Table = toml::from_str(source).expect("parsed above as a scenario");
        let origin = Origin { file, source, variant: None };
        let (mut table, mut raw) =
            if overrides.is_empty() { (table, parsed) } else { with_overrides(&origin, &table, overrides)? };
        // Variants apply to the base without its `[[variant]]` list: dropping it once here keeps
        // each variant's copy small (6,000 variants each cloning 6,000 was quadratic).
        table.remove("variant");
        raw.base_dir = base_dir(file);
        let (meta, base, mut warnings) = validate::validate(&raw).map_err(|e| origin.place(overrides, e))?;
        let objective = objective(&raw, &base).map_err(|e| origin.place(overrides, e))?;
        let mut scenario = Scenario {
            file: file.to_string(),
            name: raw.name.clone(),
            seed: meta.seed,
            replications: meta.replications,
            base,
            variants: Vec::new(),
            warnings: Vec::new(),
            objective,
            map: raw.map.clone(),
            source: source.to_string(),
            table,
        };
        let duplicate = names::first_duplicate(raw.variant.iter().map(|v| v.name.as_str()));
        for (i, v) in raw.variant.iter().enumerate() {
            let bad_name = v.name.trim().is_empty()
                || v.name.chars().any(char::is_control)
                || v.name.chars().count() > names::NAME_MAX_CHARS;
            if bad_name || duplicate == Some(i) {
                let why = format!(
                    "`{}` is empty, too long or defined twice; variant names must be non-empty, unique, at most {} characters and free of control characters",
                    error::shorten(&v.name, 40),
                    names::NAME_MAX_CHARS
                );
                let e = Invalid::at(&format!("variant.{i}.name"), why);
                return Err(origin.place(&[], e));
            }
            let sets: Vec<Override> =
                v.set.iter().map(|(path, value)| Override { path: path.clone(), value: value.clone() }).collect();
            let (variant, w) = scenario.variant_with(&v.name, &sets)?;
            warnings.extend(w);
            scenario.variants.push(variant);
        }
        let mut seen = std::collections::BTreeSet::new();
        warnings.retain(|w| seen.insert(w.clone()));
        scenario.warnings = warnings;
        Ok(scenario)
    }

    /// The base scenario with `sets` applied, validated, as variant `name` (plus its warnings).
    pub fn variant_with(&self, name: &str, sets: &[Override]) -> Result<(Variant, Vec<String>), ScenarioError> {
        let origin = Origin { file: &self.file, source: &self.source, variant: Some(name) };
        let table = self.table.clone();
        if let Some(o) = sets.iter().find(|o| ["seed", "replications", "name"].contains(&o.path.as_str())) {
            let why = "variants share the scenario's name, seed and replications (common random numbers); set it at the top level or with --seed/--replications";
            return Err(origin.error(&o.path, &o.path, why.to_string()));
        }
        let (_, mut raw) = with_overrides(&origin, &table, sets)?;
        raw.base_dir = base_dir(&self.file);
        let (_, spec, warnings) = validate::validate(&raw).map_err(|e| origin.place(sets, e))?;
        Ok((Variant { name: name.to_string(), spec }, warnings))
    }

    /// One variant per jitter strategy, each setting `jitter` on every tenant policy.
    pub fn jitter_variants(&self, jitters: &[String]) -> Result<Vec<Variant>, ScenarioError> {
        let mut policies: Vec<&str> =
            self.base.tenants.iter().map(|t| self.base.policies[t.policy].name.as_str()).collect();
        policies.sort_unstable();
        policies.dedup();
        jitters
            .iter()
            .map(|j| {
                let sets: Vec<Override> = policies
                    .iter()
                    .map(|p| Override { path: format!("policy.{p}.jitter"), value: toml::Value::String(j.clone()) })
                    .collect();
                // Fields only the old strategy uses (a schedule's table, proportional's ratio)
                // would make the new policy invalid: the variant drops them.
                let mut base = self.clone();
                for p in &policies {
                    let policy =
                        base.table.get_mut("policy").and_then(|v| v.get_mut(*p)).and_then(|v| v.as_table_mut());
                    if let Some(policy) = policy {
                        for (field, owner) in policies::jitter_owned_fields() {
                            if j != owner {
                                policy.remove(field);
                            }
                        }
                    }
                }
                base.variant_with(j, &sets).map(|(v, _)| v)
            })
            .collect()
    }

    /// Bytes this loaded scenario holds (its text and the parsed table, a few times the text),
    /// for memory estimates.
    pub fn base_bytes(&self) -> u64 {
        (self.source.len() as u64).saturating_mul(8) + 4096
    }

    /// What `run` simulates: the declared variants, or the base scenario as [`BASELINE`].
    pub fn run_variants(&self) -> Vec<Variant> {
        if self.variants.is_empty() {
            vec![Variant { name: BASELINE.to_string(), spec: self.base.clone() }]
        } else {
            self.variants.clone()
        }
    }
}

/// The directory relative data and import paths of scenario `file` are read from.
fn base_dir(file: &str) -> std::path::PathBuf {
    std::path::Path::new(file).parent().map(std::path::Path::to_path_buf).unwrap_or_default()
}

/// Largest scenario file read, in bytes: far beyond any hand-written scenario (150,000 tenants
/// take about 12 MB), small enough to parse in seconds.
pub const FILE_MAX_BYTES: u64 = 16 << 20;

/// Reads a scenario file through [`input_file`]: a regular file of at most [`FILE_MAX_BYTES`]
/// (`/dev/zero`, a FIFO or a huge file would hang or exhaust memory).
fn read_scenario_file(path: &str) -> Result<String, String> {
    let limit = input_file::Limit { bytes: FILE_MAX_BYTES, holder: "a scenario" };
    input_file::read_text(std::path::Path::new(path), limit).map_err(|e| match e {
        input_file::InputError::Directory | input_file::InputError::NotRegular => format!("{e}; give a .toml file"),
        e @ (input_file::InputError::TooBig { .. }
        | input_file::InputError::Io(_)
        | input_file::InputError::NotUtf8) => e.to_string(),
    })
}

/// How much of an offending line or value a message quotes.
const QUOTE_MAX_CHARS: usize = 80;

/// A TOML syntax, type or unknown-key error, at its position and named by the field there.
fn parse_error(file: &str, source: &str, e: &toml::de::Error) -> ScenarioError {
    let start = e.span().map(|s| s.start);
    // A missing top-level field is reported at the start of the file, which is not that field.
    let missing = e.message().starts_with("missing field");
    let field = start.and_then(|s| locate::path_at(source, s)).filter(|p| !missing || p.contains('.'));
    let mut message = with_suggestion(e.message());
    if toml_edit::Document::parse(source).is_err() {
        // Not TOML at all: no field can be named, so quote the line instead.
        let line = start.map_or("", |s| source[..s.min(source.len())].rsplit('\n').next().unwrap_or(""));
        let rest = start.map_or("", |s| source[s.min(source.len())..].split('\n').next().unwrap_or(""));
        // The reason first, then the line cut to a readable length: a line of 10,000 nested
        // brackets must not bury why it was refused.
        let quoted = shorten(format!("{line}{rest}").trim(), QUOTE_MAX_CHARS);
        message = format!("TOML syntax error: {}, in `{quoted}`", shorten(&message, QUOTE_MAX_CHARS * 2));
    }
    let location = start.map(|s| line_col(source, s));
    ScenarioError { file: file.to_string(), location, field, message }
}

/// Where overrides come from, for messages: the command line, or a `[[variant]]` of the file.
struct Origin<'a> {
    file: &'a str,
    source: &'a str,
    variant: Option<&'a str>,
}

impl Origin<'_> {
    /// An error about `field`, caused by the override of `set_path`: at the variant's `set` entry
    /// when the file wrote it, else at `--set`.
    fn error(&self, set_path: &str, field: &str, message: String) -> ScenarioError {
        let Some(variant) = self.variant else {
            let file = format!("{} (--set {set_path})", self.file);
            return ScenarioError { file, location: None, field: Some(field.to_string()), message };
        };
        let entry = ["variant", variant, "set", set_path].map(str::to_string);
        let location = locate::locate(self.source, &entry).map(|s| line_col(self.source, s.start));
        let message = format!("{message} (in variant `{variant}`)");
        ScenarioError { file: self.file.to_string(), location, field: Some(field.to_string()), message }
    }

    /// Places a validation error: at the override that set the field, else where the file has it.
    fn place(&self, overrides: &[Override], e: Invalid) -> ScenarioError {
        let field = e.path.join(".");
        let setter = overrides.iter().find(|o| o.path == field || field.starts_with(&format!("{}.", o.path)));
        if let Some(o) = setter {
            return self.error(&o.path, &field, e.message);
        }
        let location = locate::locate(self.source, &e.path).map(|s| line_col(self.source, s.start));
        let message = match self.variant {
            Some(v) => format!("{} (in variant `{v}`)", e.message),
            None => e.message,
        };
        ScenarioError { file: self.file.to_string(), location, field: Some(field), message }
    }
}

/// Applies `overrides` to `table` and reads the result as a scenario. Reading after each one
/// blames the override that breaks the file's shape (wrong type, unknown field).
fn with_overrides(
    origin: &Origin,
    table: &Table,
    overrides: &[Override],
) -> Result<(Table, RawScenario), ScenarioError> {
    let mut edited = table.clone();
    let mut raw = None;
    for o in overrides {
        overrides::apply(&mut edited, o).map_err(|m| origin.error(&o.path, &o.path, m))?;
        let read = RawScenario::deserialize(toml::Value::Table(edited.clone()));
        raw = Some(read.map_err(|e| origin.error(&o.path, &o.path, with_suggestion(e.message())))?);
    }
    let raw = match raw {
        Some(raw) => raw,
        None => RawScenario::deserialize(toml::Value::Table(edited.clone()))
            .map_err(|e| origin.error("", "", with_suggestion(e.message())))?,
    };
    Ok((edited, raw))
}
