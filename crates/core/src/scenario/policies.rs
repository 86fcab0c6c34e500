//! Validation of `[policy.NAME]`: presets, the jitter family, budgets and breakers.

use super::checks::{count, finite_at_least, probability, read_kind, show, unknown, Words, V};
use super::error::Invalid;
use super::presets;
use super::raw::{Dur, RawBreaker, RawBudget, RawPolicy, RawRetryAfter};
use super::tagged;
use crate::engine::{Nanos, NS_PER_MS, NS_PER_S};
use crate::model::breaker::BreakerSpec;
use crate::model::budget::{BudgetKind, BudgetSpec, Scope};
use crate::model::{DeadlineMode, Jitter, LateReply, RetryAfterMode, RetryOn, RetryPolicy};

/// Validates one policy (after applying its preset, if any).
pub fn policy(name: &str, written: &RawPolicy) -> V<RetryPolicy> {
    let Some(imported) = super::import::import_policy(name, written)? else { return resolved(name, written) };
    let own = super::import::fields_set(written);
    let file = written.import.clone().unwrap_or_default();
    resolved(name, &presets::overlay(written, imported.policy.clone())).map_err(|e| {
        // A value the import set (not the scenario) is the imported file's to fix: name the
        // file and the key it came from, not the policy field it was turned into.
        let field = match e.path.as_slice() {
            [p, n, field, ..] if p == "policy" && n == name => field.as_str(),
            _ => return e,
        };
        let own = own.contains(&field);
        match imported.sources.get(field).filter(|_| !own) {
            Some(key) => Invalid::at(
                &format!("policy.{name}.import"),
                format!("{file}: `{key}` (read as the policy's {field}): {}", e.message),
            ),
            None => e,
        }
    })
}

/// Validates one policy whose import, if any, is already overlaid.
fn resolved(name: &str, written: &RawPolicy) -> V<RetryPolicy> {
    let at = |field: &str| format!("policy.{name}.{field}");
    let raw = match &written.preset {
        None => written.clone(),
        Some(p) => {
            let base = presets::preset(p).ok_or_else(|| unknown(&at("preset"), "preset", p, &presets::names()))?;
            let mut raw = presets::overlay(written, with_sdk(written, p, base, &at)?);
            if let Some(sdk) = &written.sdk {
                raw.preset = Some(format!("{p} (sdk {sdk})"));
            }
            raw
        }
    };
    if raw.sdk.is_some() && written.preset.is_none() {
        return Err(Invalid::at(
            &at("sdk"),
            format!("is only read with preset = \"{}\"; add the preset or remove `sdk`", presets::AWS_SDK_PRESET),
        ));
    }
    let jitter_name = raw.jitter.as_deref().ok_or_else(|| {
        Invalid::at(
            &format!("policy.{name}"),
            format!("has no `jitter`; add one of: {} (or a preset)", jitter_names().join(", ")),
        )
    })?;
    let base = raw.base.map_or(100 * NS_PER_MS, |d| d.0);
    let cap = raw.cap.map_or(base.max(20 * NS_PER_S), |d| d.0);
    if cap < base {
        return Err(Invalid::at(
            &at("cap"),
            format!("is {} but base is {}; cap must be ≥ base", show(cap), show(base)),
        ));
    }
    let multiplier =
        finite_at_least(raw.multiplier.unwrap_or(2.0), 1.0, &at("multiplier"), "it must be a finite number ≥ 1")?;
    let attempts_max = count(raw.max_attempts.unwrap_or(3), &at("max_attempts"), 1, 10_000)? as u32;
    let jitter = jitter(jitter_name, &raw, &at)?;
    let nonzero = |d: Option<Dur>, field: &str| match d {
        Some(Dur(0)) => Err(Invalid::at(&at(field), "is 0; use a positive duration or leave it out")),
        other => Ok(other.map(|d| d.0)),
    };
    let budget = raw.budget.as_ref().map(|b| budget(b, &at("budget"))).transpose()?;
    let hedge = raw.hedge.as_ref().map(|h| super::hedge::hedge(h, budget.as_ref(), &at)).transpose()?;
    let requeue = raw.requeue.unwrap_or(false);
    if requeue && !matches!(budget.as_ref().map(|b| &b.kind), Some(BudgetKind::Finagle { .. })) {
        return Err(Invalid::at(
            &at("requeue"),
            "is true, but Finagle's requeues draw on its RetryBudget and are capped by its balance; add \
             budget = { kind = \"finagle\" } (or preset = \"finagle\"), or remove `requeue`",
        ));
    }
    let late_reply = late_reply(raw.late_reply.as_deref(), &at("late_reply"))?;
    let cancel_on_timeout = raw.cancel_on_timeout.unwrap_or(false);
    if late_reply == LateReply::Accept && cancel_on_timeout {
        return Err(Invalid::at(
            &at("late_reply"),
            "is \"accept\", but cancel_on_timeout = true cancels the attempt it would take the reply of; \
             remove one of the two",
        ));
    }
    Ok(RetryPolicy {
        name: name.to_string(),
        jitter,
        base,
        multiplier,
        cap,
        attempts_max,
        deadline: nonzero(raw.deadline, "deadline")?,
        attempt_timeout: nonzero(raw.attempt_timeout, "attempt_timeout")?,
        deadline_mode: deadline_mode(raw.deadline_mode.as_deref(), &at("deadline_mode"))?,
        retry_after: retry_after(raw.honor_retry_after.as_ref(), &at("honor_retry_after"))?,
        throttle_base: nonzero(raw.throttle_base, "throttle_base")?,
        budget,
        breaker: raw.breaker.as_ref().map(|b| breaker(b, &at("breaker"))).transpose()?,
        preset: raw.preset.clone(),
        retry_on: retry_on(raw.retry_on.as_deref(), &at("retry_on"))?,
        hedge,
        cancel_on_timeout,
        requeue,
        late_reply,
    })
}

/// Preset `name`'s values `base` with the AWS SDK `written.sdk` overlaid (`presets::AWS_SDKS`);
/// `base` itself without `sdk`. (The caller names the preset `aws-standard (sdk java-v2)`, so
/// that `validate` and the report show which SDK.)
fn with_sdk(written: &RawPolicy, name: &str, base: RawPolicy, at: &dyn Fn(&str) -> String) -> V<RawPolicy> {
    let Some(sdk) = &written.sdk else { return Ok(base) };
    if name != presets::AWS_SDK_PRESET {
        return Err(Invalid::at(
            &at("sdk"),
            format!(
                "is only read with preset = \"{}\" (this policy's preset is \"{name}\"); remove `sdk`",
                presets::AWS_SDK_PRESET
            ),
        ));
    }
    let overlay = presets::aws_sdk(sdk).ok_or_else(|| unknown(&at("sdk"), "AWS SDK", sdk, &presets::sdk_names()))?;
    Ok(presets::overlay(&overlay, base))
}

/// Every jitter strategy's name, in definition order ([`Jitter`]).
pub(crate) fn jitter_names() -> &'static [&'static str] {
    tagged::names::<Jitter>()
}

/// (policy field, the strategy that owns it) for every strategy-specific field ([`Jitter`]).
pub(crate) fn jitter_owned_fields() -> impl Iterator<Item = (&'static str, &'static str)> {
    jitter_names().iter().flat_map(|name| tagged::fields::<Jitter>(name).iter().map(move |f| (*f, *name)))
}

/// The strategy `name` with its parameters from `raw` (the policy fields a strategy may own:
/// `ratio`, `schedule`), read into [`Jitter`], which says which strategy takes which; `at` names
/// a field in messages.
pub fn jitter(name: &str, raw: &RawPolicy, at: &dyn Fn(&str) -> String) -> V<Jitter> {
    let mut table = toml::Table::new();
    table.insert("jitter".into(), name.into());
    if let Some(ratio) = raw.ratio {
        table.insert("ratio".into(), ratio.into());
    }
    if let Some(schedule) = &raw.schedule {
        let delays = schedule.iter().map(|d| toml::Value::from(format!("{}ns", d.0))).collect();
        table.insert("schedule".into(), toml::Value::Array(delays));
    }
    let owner = |field: &str| jitter_owned_fields().find(|(f, _)| *f == field).map_or("", |(_, owner)| owner);
    let words = Words {
        table: &at(""),
        field: at,
        family: "jitter",
        siblings: &[],
        not_used: &|_, field, _| format!("is only used by jitter = \"{}\"; remove it", owner(field)),
        missing: &|kind, field| format!("jitter `{kind}` needs {field}"),
    };
    let jitter = read_kind(&table, "jitter", &words)?;
    match &jitter {
        Jitter::None
        | Jitter::Exponential
        | Jitter::Full
        | Jitter::Equal
        | Jitter::Decorrelated
        | Jitter::DecorrelatedV2
        | Jitter::DecorrelatedFinagle => {}
        Jitter::Proportional { ratio } => {
            if !(*ratio > 0.0 && *ratio <= 1.0) {
                return Err(Invalid::at(&at("ratio"), format!("is {ratio}; it must be within (0, 1] (gRPC uses 0.2)")));
            }
        }
        Jitter::Schedule { delays } => {
            if delays.is_empty() {
                return Err(Invalid::at(
                    &at("schedule"),
                    "is missing or empty; list the delays, e.g. [\"5s\", \"5m\", \"30m\"]",
                ));
            }
        }
    }
    Ok(jitter)
}

fn retry_on(raw: Option<&[String]>, at: &str) -> V<RetryOn> {
    let Some(list) = raw else { return Ok(RetryOn::ALL) };
    let mut on = RetryOn { transient: false, throttling: false, timeout: false };
    for item in list {
        match item.as_str() {
            "transient" => on.transient = true,
            "throttling" => on.throttling = true,
            "timeout" => on.timeout = true,
            other => return Err(unknown(at, "failure kind", other, &["transient", "throttling", "timeout"])),
        }
    }
    Ok(on)
}

/// `per_call` (the default: what HTTP clients and SDKs do unless told otherwise) or `propagate`.
fn deadline_mode(raw: Option<&str>, at: &str) -> V<DeadlineMode> {
    match raw {
        None => Ok(DeadlineMode::PerCall),
        Some(name) => super::tagged::read_name(name).map_err(|names| unknown(at, "deadline mode", name, names)),
    }
}

fn late_reply(raw: Option<&str>, at: &str) -> V<LateReply> {
    match raw {
        None => Ok(LateReply::Ignore),
        Some(name) => super::tagged::read_name(name).map_err(|names| unknown(at, "late-reply choice", name, names)),
    }
}

/// Retry-After is honoured (waited at least) unless the policy says `ignore` or `false`: the
/// glossary's rule ("if the server says when to come back, wait at least that long").
fn retry_after(raw: Option<&RawRetryAfter>, at: &str) -> V<RetryAfterMode> {
    Ok(match raw {
        Some(RawRetryAfter::Flag(false)) => RetryAfterMode::Ignore,
        None | Some(RawRetryAfter::Flag(true)) => RetryAfterMode::AtLeast,
        Some(RawRetryAfter::Mode(m)) => super::tagged::read_name(m).map_err(|names| {
            let accepted: Vec<&str> = ["true", "false"].into_iter().chain(names.iter().copied()).collect();
            unknown(at, "Retry-After mode", m, &accepted)
        })?,
    })
}

fn scope(raw: Option<&str>, at: &str) -> V<Scope> {
    match raw {
        None => Ok(Scope::Client),
        Some(name) => super::tagged::read_name(name).map_err(|names| unknown(at, "scope", name, names)),
    }
}

fn budget(raw: &RawBudget, at: &str) -> V<BudgetSpec> {
    let field = |f: &str| format!("{at}.{f}");
    let positive = |x: f64, f: &str| -> V<f64> {
        if !x.is_finite() || x <= 0.0 {
            return Err(Invalid::at(&field(f), format!("is {x}; it must be a finite number > 0")));
        }
        Ok(x)
    };
    let window = |d: Nanos, f: &str| -> V<Nanos> {
        match d {
            0 => Err(Invalid::at(&field(f), "is 0; a window must be a positive duration")),
            d => Ok(d),
        }
    };
    let at_least_zero =
        |x: f64, f: &str| finite_at_least(x, 0.0, &field(f), "it must be a finite number ≥ 0").map(|_| ());
    let words = Words {
        table: at,
        field: &field,
        family: "budget kind",
        siblings: &["scope"],
        not_used: &|kind, _, takes| {
            format!("is not used by budget kind `{kind}` (it takes: {}); remove it", takes.join(", "))
        },
        missing: &|kind, f| format!("kind `{kind}` needs {f}"),
    };
    let kind: BudgetKind = read_kind(&raw.kind, "kind", &words)?;
    match kind {
        BudgetKind::AwsQuota { capacity, retry_cost, timeout_cost, throttling_cost, no_retry_increment } => {
            positive(capacity, "capacity")?;
            positive(retry_cost, "retry_cost")?;
            positive(timeout_cost, "timeout_cost")?;
            positive(throttling_cost, "throttling_cost")?;
            positive(no_retry_increment, "no_retry_increment")?;
        }
        BudgetKind::GrpcThrottle { max_tokens, token_ratio } => {
            positive(max_tokens, "max_tokens")?;
            positive(token_ratio, "token_ratio")?;
        }
        BudgetKind::Finagle { ttl, percent, min_retries_per_s } => {
            window(ttl, "ttl")?;
            probability(Some(percent), &field("percent"))?;
            at_least_zero(min_retries_per_s, "min_retries_per_s")?;
        }
        BudgetKind::Ratio { ratio, window: w, min_retries } => {
            positive(ratio, "ratio")?;
            at_least_zero(min_retries, "min_retries")?;
            window(w, "window")?;
        }
        BudgetKind::AdaptiveThrottle { k, window: w } => {
            finite_at_least(k, 1.0, &field("k"), "it must be a finite number ≥ 1 (SRE uses 2)")?;
            window(w, "window")?;
        }
        BudgetKind::TokenBucket { capacity, per_request } => {
            positive(capacity, "capacity")?;
            positive(per_request, "per_request")?;
        }
        BudgetKind::ConcurrentRetries { budget_percent, min_retry_concurrency: _ } => {
            if !(budget_percent.is_finite() && (0.0..=100.0).contains(&budget_percent)) {
                return Err(Invalid::at(
                    &field("budget_percent"),
                    format!("is {budget_percent}; it must be a percentage in [0, 100] (Envoy's default is 20)"),
                ));
            }
        }
    }
    Ok(BudgetSpec { kind, scope: scope(raw.scope.as_deref(), &field("scope"))? })
}

fn breaker(raw: &RawBreaker, at: &str) -> V<BreakerSpec> {
    let field = |f: &str| format!("{at}.{f}");
    let duration = |v: Option<Dur>, f: &str, default: Nanos| -> V<Nanos> {
        match v {
            Some(Dur(0)) => Err(Invalid::at(&field(f), "is 0; use a positive duration")),
            other => Ok(other.map_or(default, |d| d.0)),
        }
    };
    let threshold = probability(Some(raw.threshold.unwrap_or(0.5)), &field("threshold"))?;
    if threshold == 0.0 {
        return Err(Invalid::at(&field("threshold"), "is 0, which would open on the first call; use (0, 1]"));
    }
    Ok(BreakerSpec {
        scope: scope(raw.scope.as_deref(), &field("scope"))?,
        window: duration(raw.window, "window", 10 * NS_PER_S)?,
        threshold,
        min_calls: count(raw.min_calls.unwrap_or(20), &field("min_calls"), 1, 1_000_000)? as u32,
        open_for: duration(raw.open_for, "open_for", 5 * NS_PER_S)?,
        probes: count(raw.probes.unwrap_or(3), &field("probes"), 1, 1_000_000)? as u32,
        retries_only: raw.retries_only.unwrap_or(false),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> V<RetryPolicy> {
        policy("p", &toml::from_str::<RawPolicy>(text).expect("valid TOML"))
    }

    #[test]
    fn every_jitter_strategy_parses_to_itself_and_owns_its_fields() {
        for &name in jitter_names() {
            let fields = tagged::fields::<Jitter>(name);
            let needs = match name {
                "schedule" => "\nschedule = [\"1s\"]",
                _ => "",
            };
            let parsed = parse(&format!("jitter = \"{name}\"{needs}")).expect(name);
            assert_eq!(parsed.jitter.name(), name);
            for field in fields {
                let value = if *field == "schedule" { "[\"1s\"]" } else { "0.5" };
                let err = parse(&format!("jitter = \"full\"\n{field} = {value}")).expect_err(field);
                assert_eq!(
                    err,
                    Invalid::at(
                        &format!("policy.p.{field}"),
                        format!("is only used by jitter = \"{name}\"; remove it")
                    )
                );
            }
        }
    }

    #[test]
    fn every_budget_kind_parses_to_itself() {
        for &name in tagged::names::<BudgetKind>() {
            let parsed = parse(&format!("jitter = \"full\"\nbudget = {{ kind = \"{name}\" }}")).expect(name);
            assert_eq!(parsed.budget.expect("a budget").kind.name(), name);
        }
    }
}
