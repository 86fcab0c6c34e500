//! The user's own files: retry policies imported from real configs (`[policy.NAME] import =
//! "file"`), and the shared plumbing of every data file a scenario names (traces, histograms):
//! paths relative to the scenario, warnings about what an import could not map.
//!
//! Importers turn a source's documented semantics into a [`RawPolicy`] plus, for each field they
//! set, where in the file it came from. The scenario's own fields override imported ones, which
//! override a preset's (an import may name a preset, e.g. AWS `retry_mode = standard`).

pub mod aws;
pub mod envoy;
pub mod grpc;
pub mod resilience4j;
mod resolved;

use super::checks::V;
use super::error::Invalid;
use super::input_file;
use super::raw::{Dur, RawPolicy};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A policy read from a config file.
#[derive(Clone, Debug, Default)]
pub struct Imported {
    /// The values the file sets.
    pub policy: RawPolicy,
    /// Field name (as in `[policy.NAME]`) → where in the file it came from.
    pub sources: BTreeMap<&'static str, String>,
    /// Fields of the file that were not mapped, and why.
    pub warnings: Vec<String>,
}

impl Imported {
    /// Records that `field` came from `key` of the file.
    pub fn record_key(&mut self, field: &'static str, key: &str) {
        self.sources.insert(field, key.to_string());
    }

    /// Warns about a field of the source that has no counterpart in the model.
    pub fn unsupported(&mut self, key: &str, why: &str) {
        self.warnings.push(format!("`{key}` is not modelled: {why}"));
    }
}

thread_local! {
    /// The scenario being validated on this thread: its directory and the warnings so far.
    static CONTEXT: RefCell<(PathBuf, Vec<String>)> = RefCell::new((PathBuf::new(), Vec::new()));
}

/// Starts validating a scenario whose relative paths are read from `base_dir`.
pub fn begin(base_dir: &Path) {
    CONTEXT.with(|c| *c.borrow_mut() = (base_dir.to_path_buf(), Vec::new()));
}

/// The import warnings collected since [`begin`].
pub fn take_warnings() -> Vec<String> {
    CONTEXT.with(|c| std::mem::take(&mut c.borrow_mut().1))
}

/// Adds a warning to the scenario being validated.
pub fn warn(message: String) {
    CONTEXT.with(|c| c.borrow_mut().1.push(message));
}

/// `file` resolved against the scenario's directory.
pub fn resolve(file: &str) -> PathBuf {
    let path = Path::new(file);
    if path.is_absolute() {
        return path.to_path_buf();
    }
    CONTEXT.with(|c| c.borrow().0.join(path))
}

/// Opens a data file named at `at` through [`input_file`] (a regular file of at most
/// `limit`), with an error that says where it was looked for.
pub fn open(file: &str, at: &str, limit: input_file::Limit) -> V<input_file::Bounded> {
    let path = resolve(file);
    input_file::open(&path, limit).map_err(|e| {
        Invalid::at(at, format!("cannot read `{}`: {e}; paths are relative to the scenario file", path.display()))
    })
}

/// Reads a whole (small) config file.
fn read_config(file: &str, at: &str) -> V<String> {
    use std::io::Read;
    let mut text = String::new();
    open(file, at, input_file::Limit { bytes: super::FILE_MAX_BYTES, holder: "an imported config" })?
        .read_to_string(&mut text)
        .map_err(|e| Invalid::at(at, format!("cannot read `{file}` as UTF-8 text: {e}")))?;
    Ok(text)
}

/// The formats `import` reads, by what the file looks like.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// gRPC service config JSON.
    Grpc,
    /// Envoy route configuration YAML (a route's `retry_policy`).
    Envoy,
    /// AWS shared config file (INI profiles).
    Aws,
    /// resilience4j retry YAML (Spring Boot `resilience4j.retry`).
    Resilience4j,
}

/// Guesses the format from the extension and the content.
pub fn detect(file: &str, text: &str) -> Option<Format> {
    let lower = file.to_ascii_lowercase();
    if lower.ends_with(".json") || text.trim_start().starts_with('{') {
        return Some(Format::Grpc);
    }
    if lower.ends_with(".yaml") || lower.ends_with(".yml") {
        return Some(if text.contains("resilience4j") { Format::Resilience4j } else { Format::Envoy });
    }
    let ini = text.lines().map(str::trim).any(|l| l.starts_with("[default]") || l.starts_with("[profile "));
    ini.then_some(Format::Aws)
}

/// The policy `[policy.NAME]` imports (with its own `select`), or None without `import`.
pub fn import_policy(name: &str, written: &RawPolicy) -> V<Option<Imported>> {
    let Some(file) = &written.import else {
        if written.select.is_some() {
            return Err(Invalid::at(&format!("policy.{name}.select"), "is only used with `import`; remove it"));
        }
        return Ok(None);
    };
    let at = format!("policy.{name}.import");
    let text = read_config(file, &at)?;
    let select = written.select.as_deref();
    // A `select` the file does not have is blamed on `select`, anything else on `import`.
    let select_at = format!("policy.{name}.select");
    let fail = |e: String| {
        let blames_select = select.is_some_and(|s| e.contains(&format!("`{s}`")) || e.contains(&format!("\"{s}\"")));
        Invalid::at(if blames_select { &select_at } else { &at }, format!("{file}: {e}"))
    };
    let imported = match detect(file, &text) {
        Some(Format::Grpc) => grpc::import(&text, select).map_err(fail)?,
        Some(Format::Envoy) => envoy::import(&text, select).map_err(fail)?,
        Some(Format::Resilience4j) => resilience4j::import(&text, select).map_err(fail)?,
        Some(Format::Aws) => aws::import(&text, select).map_err(fail)?,
        None => {
            return Err(Invalid::at(
                &at,
                format!(
                    "`{file}` is not a format import reads: a gRPC service config (.json), an Envoy route or \
                     resilience4j retry config (.yaml) or an AWS config file with [default] or [profile NAME]"
                ),
            ))
        }
    };
    for w in &imported.warnings {
        warn(format!("policy `{name}`: import {file}: {w}"));
    }
    Ok(Some(imported))
}

/// A duration written as a string in a config file ("1.5s", "100ms", "PT0.5S", "250" ms when
/// `bare_ms`), in nanoseconds.
pub fn config_duration(text: &str, bare_ms: bool) -> Result<u64, String> {
    let t = text.trim();
    if let Some(iso) = t.strip_prefix("PT").or_else(|| t.strip_prefix("pt")) {
        // ISO-8601 (java.time.Duration): PT1H2M3.5S.
        let mut total = 0.0;
        let mut number = String::new();
        for c in iso.chars() {
            match c.to_ascii_uppercase() {
                'H' | 'M' | 'S' => {
                    let v: f64 = number.parse().map_err(|_| format!("`{text}` is not an ISO-8601 duration"))?;
                    total += v * match c.to_ascii_uppercase() {
                        'H' => 3600.0,
                        'M' => 60.0,
                        _ => 1.0,
                    };
                    number.clear();
                }
                _ => number.push(c),
            }
        }
        if !number.is_empty() {
            return Err(format!("`{text}` is not an ISO-8601 duration (write e.g. PT0.5S)"));
        }
        // A negative part (PT-5S, which java.time accepts), NaN or an infinite total is refused
        // here, as the scenario's own durations are: what a retry delay cannot be.
        if !total.is_finite() || total < 0.0 {
            return Err(format!("`{text}` is not a duration of 0 or more (write e.g. PT0.5S)"));
        }
        return Ok(crate::engine::secs_to_ns(total));
    }
    if let Ok(v) = t.parse::<f64>() {
        if v.is_finite() && v >= 0.0 && bare_ms {
            return Ok(crate::engine::secs_to_ns(v / 1000.0));
        }
    }
    // Protobuf JSON writes "1.5s" (fractional seconds), which humantime does not read.
    if let Some(secs) = t.strip_suffix('s').and_then(|n| n.parse::<f64>().ok()) {
        if secs.is_finite() && secs >= 0.0 {
            return Ok(crate::engine::secs_to_ns(secs));
        }
    }
    super::raw::parse_duration(t)
}

/// Deepest nesting an imported YAML file may have: real retry configs nest about a dozen levels
/// (an Envoy route configuration's `retry_back_off` is at 7).
pub const YAML_DEPTH_MAX: usize = 64;

/// Refuses a YAML text nested deeper than [`YAML_DEPTH_MAX`] before the YAML reader sees it: the
/// reader stops at its own recursion limit, but only after scanning the whole document, in time
/// that grows much faster than the depth (a 200 KB file of nested brackets took 20 s, a nested
/// flow mapping 50 s). One pass over the text: flow collections (`[`, `{` outside quotes and
/// comments) and block levels (a stack of increasing indents, each `- ` of a line one level
/// more) add up to the depth; the message names the line.
pub fn yaml_depth(text: &str) -> Result<(), String> {
    let too_deep = |line: usize| {
        format!(
            "not valid YAML: nested deeper than {YAML_DEPTH_MAX} levels at line {line}; a retry config nests about a dozen levels, so this file is not one (or is corrupted)"
        )
    };
    let mut indents: Vec<usize> = Vec::new();
    let mut flow = 0usize;
    let mut quote: Option<char> = None;
    for (i, line) in text.lines().enumerate() {
        let number = i + 1;
        let body = line.trim_start_matches([' ', '\t']);
        let indent = line.len() - body.len();
        // Block structure: only lines that start a node outside any flow collection or quote.
        if flow == 0 && quote.is_none() && !body.is_empty() && !body.starts_with('#') {
            while indents.last().is_some_and(|&top| top >= indent) {
                indents.pop();
            }
            indents.push(indent);
            let mut dashes = 0;
            let mut rest = body;
            while let Some(r) = rest.strip_prefix("- ").or_else(|| rest.strip_prefix("-\t")) {
                dashes += 1;
                rest = r.trim_start_matches([' ', '\t']);
            }
            if indents.len() + dashes > YAML_DEPTH_MAX {
                return Err(too_deep(number));
            }
        }
        let mut previous = ' ';
        let mut chars = line.chars().peekable();
        while let Some(c) = chars.next() {
            match quote {
                Some('"') if c == '\\' => {
                    chars.next();
                }
                Some(q) if c == q => {
                    // '' inside a single-quoted string is an escaped quote.
                    if q == '\'' && chars.peek() == Some(&'\'') {
                        chars.next();
                    } else {
                        quote = None;
                    }
                }
                Some(_) => {}
                None => match c {
                    '#' if previous.is_whitespace() => break,
                    '"' | '\'' if previous.is_whitespace() || "[{,:".contains(previous) => quote = Some(c),
                    '[' | '{' => {
                        flow += 1;
                        if indents.len() + flow > YAML_DEPTH_MAX {
                            return Err(too_deep(number));
                        }
                    }
                    ']' | '}' => flow = flow.saturating_sub(1),
                    _ => {}
                },
            }
            previous = c;
        }
    }
    Ok(())
}

/// An imported YAML file that does not parse: the reader's message, which names the key and
/// line; an integer beyond 64 bits (which the reader holds only as a 128-bit number and then
/// refuses in words of its own) is said plainly.
pub fn yaml_error(e: serde_norway::Error) -> String {
    let text = e.to_string();
    if text.contains(" as u128") || text.contains(" as i128") {
        return format!("not valid YAML: {text} (an integer beyond 64 bits; give one in the key's range)");
    }
    format!("not valid YAML: {text}")
}

/// Most attempts a policy may make (the scenario's own limit on `max_attempts`).
pub const ATTEMPTS_MAX: i64 = 10_000;

/// Checks a count of retries (`first_try` 0: the file counts retries after the first try) or
/// attempts (`first_try` 1) read from `key`: the policy's attempts must come out in
/// 1..=[`ATTEMPTS_MAX`], else the key is named with the range it allows (no silent wrap of a
/// huge value, no negative count).
pub fn attempts_at(n: i64, key: &str, counts_first_try: bool) -> Result<i64, String> {
    let (low, what) =
        if counts_first_try { (1, "attempts (the first one included)") } else { (0, "retries after the first try") };
    let high = if counts_first_try { ATTEMPTS_MAX } else { ATTEMPTS_MAX - 1 };
    if !(low..=high).contains(&n) {
        return Err(format!("`{key}` is {n}; it counts {what} and must be between {low} and {high}"));
    }
    Ok(if counts_first_try { n } else { n + 1 })
}

/// Sets a duration field from a config string, naming the key on error.
pub fn duration_at(text: &str, key: &str, bare_ms: bool) -> Result<Dur, String> {
    config_duration(text, bare_ms).map(Dur).map_err(|e| format!("`{key}`: {e}"))
}

/// The fields a raw policy sets, by their names in `[policy.NAME]`.
pub fn fields_set(p: &RawPolicy) -> Vec<&'static str> {
    p.written().into_iter().filter(|&(_, set)| set).map(|(f, _)| f).collect()
}

/// Every key of a JSON/YAML object not in `known`, as `prefix.key`.
pub fn unknown_keys<'a>(keys: impl Iterator<Item = &'a str>, known: &[&str], prefix: &str) -> Vec<String> {
    keys.filter(|k| !known.contains(k))
        .map(|k| if prefix.is_empty() { k.to_string() } else { format!("{prefix}.{k}") })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_nesting_is_bounded_before_parsing() {
        let n = 100_000;
        for deep in [
            format!("a: {}{}", "[".repeat(n), "]".repeat(n)),
            format!("a: {}1{}", "{b: ".repeat(n), "}".repeat(n)),
            (0..200).map(|i| format!("{}k{i}:\n", " ".repeat(i))).collect::<String>(),
            format!("a:\n  {}x\n", "- ".repeat(100)),
        ] {
            let e = yaml_depth(&deep).expect_err("too deep");
            assert!(e.contains("nested deeper than 64 levels at line"), "{e}");
        }
        // At the limit it passes; brackets in quotes and comments do not count.
        let at_limit = format!("a: {}{}", "[".repeat(YAML_DEPTH_MAX - 1), "]".repeat(YAML_DEPTH_MAX - 1));
        assert_eq!(yaml_depth(&at_limit), Ok(()));
        let quoted = format!("a: \"{}\"\nb: '{}'\nc: 1 # {}\n", "[".repeat(500), "{".repeat(500), "[".repeat(500));
        assert_eq!(yaml_depth(&quoted), Ok(()));
        for bundled in ["envoy-routes.yaml", "resilience4j.yaml"] {
            let path = format!("{}/../../scenarios/data/{bundled}", env!("CARGO_MANIFEST_DIR"));
            assert_eq!(yaml_depth(&std::fs::read_to_string(path).unwrap()), Ok(()), "{bundled}");
        }
    }

    #[test]
    fn config_durations_in_the_sources_spellings() {
        assert_eq!(config_duration("1.5s", false), Ok(1_500_000_000));
        assert_eq!(config_duration("0.025s", false), Ok(25_000_000));
        assert_eq!(config_duration("PT0.5S", false), Ok(500_000_000));
        assert_eq!(config_duration("PT1M30S", false), Ok(90_000_000_000));
        assert_eq!(config_duration("250", true), Ok(250_000_000));
        assert_eq!(config_duration("100ms", true), Ok(100_000_000));
        assert!(config_duration("soon", false).is_err());
        // Negative, NaN and infinite values are refused with a message, never a panic.
        for bad in ["PT-5S", "PT-1S", "PT1M-90S", "PTNaNS", "PTinfS", "PT1e309S", "-1s", "-250", "NaN", "inf"] {
            let e = config_duration(bad, true).expect_err(bad);
            assert!(e.contains(bad), "{bad}: {e}");
        }
    }
}
