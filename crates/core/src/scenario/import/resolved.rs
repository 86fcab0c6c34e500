//! `retrystorm validate`'s account of each policy: the resolved value of every field and where
//! it came from (the scenario or `--set`, an imported file and its key, a preset, a default).

use super::{fields_set, import_policy, take_warnings, Imported};
use crate::model::{Jitter, RetryAfterMode, RetryPolicy};
use crate::scenario::checks::show;
use crate::scenario::raw::RawPolicy;
use crate::scenario::tagged;
use crate::scenario::Scenario;
use serde::Deserialize;

impl Scenario {
    /// One block of lines per policy of the base scenario: `field  value  ← source`.
    pub fn policy_report(&self) -> Vec<String> {
        let mut lines = Vec::new();
        super::begin(&super::super::base_dir(&self.file));
        let written_all = self.table.get("policy").and_then(toml::Value::as_table);
        for policy in &self.base.policies {
            let written = written_all
                .and_then(|t| t.get(&policy.name))
                .and_then(toml::Value::as_table)
                .cloned()
                .unwrap_or_default();
            let raw = RawPolicy::deserialize(toml::Value::Table(written.clone())).unwrap_or_default();
            // The scenario validated, so the import reads again without error.
            let imported = import_policy(&policy.name, &raw).ok().flatten();
            let file = raw.import.as_deref();
            let mut head = format!("policy `{}`", policy.name);
            if let Some(f) = file {
                head.push_str(&format!(
                    " (import {f}{})",
                    raw.select.as_ref().map(|s| format!(", select {s}")).unwrap_or_default()
                ));
            }
            lines.push(format!("{head}:"));
            for (field, source) in provenance(&policy.name, &written, imported.as_ref(), file) {
                let value = value(policy, field);
                let field = field.name();
                // At most 100 columns: a source that would run past them goes on a line of
                // its own under the value.
                let line = format!("  {field:<18} {value:<34} ← {source}");
                if line.chars().count() <= 100 {
                    lines.push(line);
                } else {
                    lines.push(format!("  {field:<18} {value}"));
                    lines.extend(crate::engine::text::wrap_words(&format!("← {source}"), 4, 100));
                }
            }
        }
        take_warnings();
        lines
    }
}

fn opt(d: Option<u64>) -> String {
    d.map_or_else(|| "none".to_string(), show)
}

/// The fields `validate` reports for each policy, in its order; their names are
/// `[policy.NAME]`'s (a test checks them against `RawPolicy::written`).
#[derive(Clone, Copy, Debug, PartialEq, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
enum Reported {
    Jitter,
    Base,
    Multiplier,
    Cap,
    MaxAttempts,
    Deadline,
    AttemptTimeout,
    HonorRetryAfter,
    ThrottleBase,
    RetryOn,
    Budget,
    Breaker,
}

impl Reported {
    /// Every reported field, in order.
    fn all() -> impl Iterator<Item = Reported> {
        tagged::names::<Reported>().iter().map(|n| tagged::read_name(n).expect("a name of the type"))
    }

    /// The field's name in `[policy.NAME]`.
    fn name(self) -> &'static str {
        tagged::names::<Reported>()[self as usize]
    }
}

/// The fields of `[policy.NAME]` and where each value of the resolved policy comes from:
/// `(field, source)` for every reported field: the scenario, the import, the preset or the default.
fn provenance(
    name: &str,
    written: &toml::Table,
    imported: Option<&Imported>,
    file: Option<&str>,
) -> Vec<(Reported, String)> {
    let preset_name = written
        .get("preset")
        .and_then(toml::Value::as_str)
        .map(str::to_string)
        .or_else(|| imported.and_then(|i| i.policy.preset.clone()));
    let preset = preset_name.as_deref().and_then(crate::scenario::presets::preset);
    let preset_fields = preset.as_ref().map(fields_set).unwrap_or_default();
    // `sdk = "…"` on `aws-standard`: the SDK's own values come before the preset's.
    let sdk = written.get("sdk").and_then(toml::Value::as_str);
    let sdk_fields = sdk.and_then(crate::scenario::presets::aws_sdk).as_ref().map(fields_set).unwrap_or_default();
    let source = |field: &str| {
        if written.contains_key(field) {
            format!("scenario [policy.{name}]")
        } else if let Some(key) = imported.and_then(|i| i.sources.get(field)) {
            format!("import {} ({key})", file.unwrap_or("?"))
        } else if sdk_fields.contains(&field) {
            format!("preset {} (sdk {})", preset_name.as_deref().unwrap_or("?"), sdk.unwrap_or("?"))
        } else if preset_fields.contains(&field) {
            format!("preset {}", preset_name.as_deref().unwrap_or("?"))
        } else {
            "default".to_string()
        }
    };
    Reported::all().map(|f| (f, source(f.name()))).collect()
}

/// The resolved value of `field` in words.
fn value(p: &RetryPolicy, field: Reported) -> String {
    match field {
        Reported::Jitter => match &p.jitter {
            Jitter::Proportional { ratio } => format!("proportional (±{:.0}%)", ratio * 100.0),
            Jitter::Schedule { delays } => {
                format!("schedule [{}]", delays.iter().map(|d| show(*d)).collect::<Vec<_>>().join(", "))
            }
            j @ (Jitter::None
            | Jitter::Exponential
            | Jitter::Full
            | Jitter::Equal
            | Jitter::Decorrelated
            | Jitter::DecorrelatedV2
            | Jitter::DecorrelatedFinagle) => j.name().to_string(),
        },
        Reported::Base => show(p.base),
        Reported::Multiplier => format!("{}", p.multiplier),
        Reported::Cap => show(p.cap),
        Reported::MaxAttempts => p.attempts_max.to_string(),
        Reported::Deadline => opt(p.deadline),
        Reported::AttemptTimeout => opt(p.attempt_timeout),
        Reported::HonorRetryAfter => match p.retry_after {
            RetryAfterMode::Ignore => "ignore",
            RetryAfterMode::AtLeast => "at_least",
            RetryAfterMode::Exact => "exact",
            RetryAfterMode::AwsClamp => "aws",
        }
        .to_string(),
        Reported::ThrottleBase => opt(p.throttle_base),
        Reported::RetryOn => {
            let on = [
                ("transient", p.retry_on.transient),
                ("throttling", p.retry_on.throttling),
                ("timeout", p.retry_on.timeout),
            ];
            let list: Vec<&str> = on.iter().filter(|(_, b)| *b).map(|(n, _)| *n).collect();
            if list.is_empty() {
                "nothing (no retries)".into()
            } else {
                list.join(", ")
            }
        }
        Reported::Budget => {
            p.budget.as_ref().map_or_else(|| "none".into(), |b| format!("{}, {}", b.kind.words(), b.scope.words()))
        }
        Reported::Breaker => p.breaker.as_ref().map_or_else(
            || "none".into(),
            |b| format!("{}, window {}, threshold {}", b.scope.words(), show(b.window), b.threshold),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_source_wraps_within_100_columns() {
        let source =
            "← import data/grpc-service-config.json (methodConfig[0].retryPolicy (gRFC A6: random(0, backoff)))";
        let lines = crate::engine::text::wrap_words(source, 21, 100);
        assert!(lines.len() == 2 && lines.iter().all(|l| l.chars().count() <= 100), "{lines:?}");
        assert!(
            lines[0].starts_with(&format!("{:21}← import", "")) && lines[1].starts_with(&" ".repeat(23)),
            "{lines:?}"
        );
        // Under its value, 4 columns in, so that an unbreakable key fits too.
        let key = "← import data/grpc-service-config.json (methodConfig[0].retryPolicy.maxBackoff)";
        assert_eq!(crate::engine::text::wrap_words(key, 4, 100), vec![format!("    {key}")]);
    }

    #[test]
    fn each_reported_field_is_a_policy_field() {
        let fields: Vec<&str> = RawPolicy::default().written().iter().map(|&(f, _)| f).collect();
        for f in Reported::all() {
            assert!(fields.contains(&f.name()), "`{}` is not a field of [policy.NAME]", f.name());
            assert_eq!(tagged::read_name::<Reported>(f.name()), Ok(f), "`name` is the variant's own name");
        }
    }
}
