//! `retrystorm validate`'s account of each policy: the resolved value of every field and where
//! it came from (the scenario or `--set`, an imported file and its key, a preset, a default).

use super::{import_policy, provenance, take_warnings};
use crate::model::{Jitter, RetryAfterMode, RetryPolicy};
use crate::scenario::checks::show;
use crate::scenario::raw::RawPolicy;
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
                let value = value(policy, &field);
                lines.push(format!("  {field:<18} {value:<34} ← {source}"));
            }
        }
        take_warnings();
        lines
    }
}

fn opt(d: Option<u64>) -> String {
    d.map_or_else(|| "none".to_string(), show)
}

/// The resolved value of `field` in words.
fn value(p: &RetryPolicy, field: &str) -> String {
    match field {
        "jitter" => match &p.jitter {
            Jitter::Proportional { ratio } => format!("proportional (±{:.0}%)", ratio * 100.0),
            Jitter::Schedule { delays } => {
                format!("schedule [{}]", delays.iter().map(|d| show(*d)).collect::<Vec<_>>().join(", "))
            }
            j @ (Jitter::None
            | Jitter::Exponential
            | Jitter::Full
            | Jitter::Equal
            | Jitter::Decorrelated
            | Jitter::DecorrelatedV2) => j.name().to_string(),
        },
        "base" => show(p.base),
        "multiplier" => format!("{}", p.multiplier),
        "cap" => show(p.cap),
        "max_attempts" => p.attempts_max.to_string(),
        "deadline" => opt(p.deadline),
        "attempt_timeout" => opt(p.attempt_timeout),
        "honor_retry_after" => match p.retry_after {
            RetryAfterMode::Ignore => "ignore",
            RetryAfterMode::AtLeast => "at_least",
            RetryAfterMode::Exact => "exact",
            RetryAfterMode::AwsClamp => "aws",
        }
        .to_string(),
        "throttle_base" => opt(p.throttle_base),
        "retry_on" => {
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
        "budget" => p.budget.as_ref().map_or_else(|| "none".into(), |b| format!("{:?} ({:?})", b.kind, b.scope)),
        "breaker" => p.breaker.as_ref().map_or_else(
            || "none".into(),
            |b| format!("{:?}, window {}, threshold {}", b.scope, show(b.window), b.threshold),
        ),
        _ => String::new(),
    }
}
