//! Scenario files: parse the TOML, apply overrides, validate into a [`SimSpec`] per variant.

pub mod error;
pub mod invariants;
pub mod locate;
pub mod overrides;
pub mod raw;
pub mod validate;

pub use error::ScenarioError;
pub use overrides::{parse_assignment, Override};

use crate::model::SimSpec;
use error::{line_col, with_suggestion, Invalid};
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
    source: String,
    table: Table,
}

/// Name of the single variant `run` simulates when the file declares none.
pub const BASELINE: &str = "baseline";

impl Scenario {
    /// Reads and validates `path` with `overrides` applied (before the variants' own).
    pub fn load(path: &str, overrides: &[Override]) -> Result<Scenario, ScenarioError> {
        let source = std::fs::read_to_string(path).map_err(|e| ScenarioError {
            file: path.to_string(),
            location: None,
            field: None,
            message: format!("cannot read the scenario file: {e}"),
        })?;
        Scenario::from_source(path, &source, overrides)
    }

    /// Validates scenario text; `file` names it in messages.
    pub fn from_source(file: &str, source: &str, overrides: &[Override]) -> Result<Scenario, ScenarioError> {
        let at_span = |span: Option<std::ops::Range<usize>>| span.map(|s| line_col(source, s.start));
        // Parsing the text itself first gives every syntax, type and unknown-key error a position.
        let parsed: RawScenario = toml::from_str(source).map_err(|e| ScenarioError {
            file: file.to_string(),
            location: at_span(e.span()),
            field: None,
            message: with_suggestion(e.message().trim()),
        })?;
        let mut table: Table = toml::from_str(source).expect("parsed above as a scenario");
        for o in overrides {
            overrides::apply(&mut table, o).map_err(|m| override_error(file, m))?;
        }
        let raw = if overrides.is_empty() { parsed } else { from_table(file, &table, "--set")? };
        let (meta, base, mut warnings) =
            validate::validate(&raw).map_err(|e| place(file, source, &table, overrides, e))?;
        let mut scenario = Scenario {
            file: file.to_string(),
            name: raw.name.clone(),
            seed: meta.seed,
            replications: meta.replications,
            base,
            variants: Vec::new(),
            warnings: Vec::new(),
            source: source.to_string(),
            table,
        };
        for (i, v) in raw.variant.iter().enumerate() {
            if v.name.trim().is_empty() || raw.variant[..i].iter().any(|o| o.name == v.name) {
                let e = Invalid::at(&format!("variant.{}", v.name), "variant names must be non-empty and unique");
                return Err(place(file, source, &scenario.table, overrides, e));
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
        let mut table = self.table.clone();
        table.remove("variant");
        for o in sets {
            if ["seed", "replications", "name"].contains(&o.path.as_str()) {
                return Err(override_error(&self.file, format!("variant `{name}` sets `{}`: variants share the scenario's name, seed and replications (common random numbers)", o.path)));
            }
            overrides::apply(&mut table, o)
                .map_err(|m| override_error(&self.file, format!("variant `{name}`: {m}")))?;
        }
        let raw = from_table(&self.file, &table, &format!("variant `{name}`"))?;
        let (_, spec, warnings) = validate::validate(&raw).map_err(|e| {
            let mut err = place(&self.file, &self.source, &table, sets, e);
            err.message = format!("{} (in variant `{name}`)", err.message);
            err
        })?;
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
                self.variant_with(j, &sets).map(|(v, _)| v)
            })
            .collect()
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

fn from_table(file: &str, table: &Table, origin: &str) -> Result<RawScenario, ScenarioError> {
    RawScenario::deserialize(toml::Value::Table(table.clone())).map_err(|e| ScenarioError {
        file: file.to_string(),
        location: None,
        field: None,
        message: format!("{} (after applying {origin})", with_suggestion(e.message().trim())),
    })
}

fn override_error(file: &str, message: String) -> ScenarioError {
    ScenarioError { file: file.to_string(), location: None, field: None, message }
}

/// Places a validation error: in the file when the field is written there, else at `--set`.
fn place(file: &str, source: &str, _table: &Table, overrides: &[Override], e: Invalid) -> ScenarioError {
    let field = e.path.join(".");
    let overridden = overrides.iter().any(|o| o.path == field || field.starts_with(&format!("{}.", o.path)));
    let location = if overridden { None } else { locate::locate(source, &e.path).map(|s| line_col(source, s.start)) };
    ScenarioError {
        file: if overridden { format!("{file} (--set {field})") } else { file.to_string() },
        location,
        field: Some(field),
        message: e.message,
    }
}
