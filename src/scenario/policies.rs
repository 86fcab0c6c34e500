//! Validation of `[policy.NAME]`: presets, the jitter family, budgets and breakers.

use super::checks::{count, finite_at_least, probability, show, unknown, V};
use super::error::Invalid;
use super::presets;
use super::raw::{Dur, RawBreaker, RawBudget, RawPolicy, RawRetryAfter};
use crate::engine::{Nanos, NS_PER_MS, NS_PER_S};
use crate::model::budget::{BreakerSpec, BudgetKind, BudgetSpec, Scope, BUDGET_KINDS};
use crate::model::{DeadlineMode, Jitter, RetryAfterMode, RetryOn, RetryPolicy};

/// Validates one policy (after applying its preset, if any).
pub fn policy(name: &str, written: &RawPolicy) -> V<RetryPolicy> {
    let at = |field: &str| format!("policy.{name}.{field}");
    let with_import;
    let written = match super::import::import_policy(name, written)? {
        Some(imported) => {
            with_import = presets::overlay(written, imported.policy);
            &with_import
        }
        None => written,
    };
    let raw = match &written.preset {
        None => written.clone(),
        Some(p) => {
            let base = presets::preset(p).ok_or_else(|| unknown(&at("preset"), "preset", p, &presets::names()))?;
            presets::overlay(written, base)
        }
    };
    let jitter_name = raw.jitter.as_deref().ok_or_else(|| {
        Invalid::at(
            &format!("policy.{name}"),
            format!("has no `jitter`; add one of: {} (or a preset)", Jitter::names().join(", ")),
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
    let present = |field: &str| match field {
        "ratio" => raw.ratio.is_some(),
        "schedule" => raw.schedule.is_some(),
        other => unreachable!("jitter field `{other}` has no raw field"),
    };
    for (field, owner) in Jitter::owned_fields() {
        if present(field) && jitter_name != owner {
            return Err(Invalid::at(&at(field), format!("is only used by jitter = \"{owner}\"; remove it")));
        }
    }
    let jitter = jitter(jitter_name, &raw, &at)?;
    let nonzero = |d: Option<Dur>, field: &str| match d {
        Some(Dur(0)) => Err(Invalid::at(&at(field), "is 0; use a positive duration or leave it out")),
        other => Ok(other.map(|d| d.0)),
    };
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
        budget: raw.budget.as_ref().map(|b| budget(b, &at("budget"))).transpose()?,
        breaker: raw.breaker.as_ref().map(|b| breaker(b, &at("breaker"))).transpose()?,
        preset: raw.preset.clone(),
        retry_on: retry_on(raw.retry_on.as_deref(), &at("retry_on"))?,
        hedge: raw.hedge.as_ref().map(|h| super::hedge::hedge(h, &at)).transpose()?,
        cancel_on_timeout: raw.cancel_on_timeout.unwrap_or(false),
    })
}

/// The strategy `name` with its parameters from `raw` (`ratio`, `schedule`); `at` names a field
/// in messages.
pub fn jitter(name: &str, raw: &RawPolicy, at: &dyn Fn(&str) -> String) -> V<Jitter> {
    Ok(match name {
        "none" => Jitter::None,
        "exponential" => Jitter::Exponential,
        "full" => Jitter::Full,
        "equal" => Jitter::Equal,
        "decorrelated" => Jitter::Decorrelated,
        "decorrelated_v2" => Jitter::DecorrelatedV2,
        "proportional" => {
            let ratio = raw.ratio.unwrap_or(0.2);
            if !(ratio > 0.0 && ratio <= 1.0) {
                return Err(Invalid::at(&at("ratio"), format!("is {ratio}; it must be within (0, 1] (gRPC uses 0.2)")));
            }
            Jitter::Proportional { ratio }
        }
        "schedule" => {
            let delays: Vec<Nanos> = raw.schedule.as_ref().map(|s| s.iter().map(|d| d.0).collect()).unwrap_or_default();
            if delays.is_empty() {
                return Err(Invalid::at(
                    &at("schedule"),
                    "is missing or empty; list the delays, e.g. [\"5s\", \"5m\", \"30m\"]",
                ));
            }
            Jitter::Schedule { delays }
        }
        other => return Err(unknown(&at("jitter"), "jitter", other, &Jitter::names())),
    })
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
    match raw.unwrap_or("per_call") {
        "per_call" => Ok(DeadlineMode::PerCall),
        "propagate" => Ok(DeadlineMode::Propagate),
        other => Err(unknown(at, "deadline mode", other, &["per_call", "propagate"])),
    }
}

/// Retry-After is honoured (waited at least) unless the policy says `ignore` or `false`: the
/// glossary's rule ("if the server says when to come back, wait at least that long").
fn retry_after(raw: Option<&RawRetryAfter>, at: &str) -> V<RetryAfterMode> {
    Ok(match raw {
        Some(RawRetryAfter::Flag(false)) => RetryAfterMode::Ignore,
        None | Some(RawRetryAfter::Flag(true)) => RetryAfterMode::AtLeast,
        Some(RawRetryAfter::Mode(m)) => match m.as_str() {
            "ignore" => RetryAfterMode::Ignore,
            "at_least" => RetryAfterMode::AtLeast,
            "exact" => RetryAfterMode::Exact,
            "aws" => RetryAfterMode::AwsClamp,
            other => {
                return Err(unknown(
                    at,
                    "Retry-After mode",
                    other,
                    &["true", "false", "ignore", "at_least", "exact", "aws"],
                ))
            }
        },
    })
}

fn scope(raw: Option<&str>, at: &str) -> V<Scope> {
    match raw.unwrap_or("client") {
        "client" => Ok(Scope::Client),
        "tenant" => Ok(Scope::Tenant),
        "global" => Ok(Scope::Global),
        other => Err(unknown(at, "scope", other, &["client", "tenant", "global"])),
    }
}

fn budget(raw: &RawBudget, at: &str) -> V<BudgetSpec> {
    let field = |f: &str| format!("{at}.{f}");
    let positive = |v: Option<f64>, f: &str, default: f64| -> V<f64> {
        let x = v.unwrap_or(default);
        if !x.is_finite() || x <= 0.0 {
            return Err(Invalid::at(&field(f), format!("is {x}; it must be a finite number > 0")));
        }
        Ok(x)
    };
    let window = |v: Option<Dur>, f: &str, default: Nanos| -> V<Nanos> {
        match v {
            Some(Dur(0)) => Err(Invalid::at(&field(f), "is 0; a window must be a positive duration")),
            Some(Dur(d)) => Ok(d),
            None => Ok(default),
        }
    };
    let Some(&(_, used)) = BUDGET_KINDS.iter().find(|(name, _)| *name == raw.kind) else {
        let names: Vec<&str> = BUDGET_KINDS.iter().map(|k| k.0).collect();
        return Err(unknown(&field("kind"), "budget kind", &raw.kind, &names));
    };
    let present = [
        ("capacity", raw.capacity.is_some()),
        ("retry_cost", raw.retry_cost.is_some()),
        ("timeout_cost", raw.timeout_cost.is_some()),
        ("throttling_cost", raw.throttling_cost.is_some()),
        ("no_retry_increment", raw.no_retry_increment.is_some()),
        ("max_tokens", raw.max_tokens.is_some()),
        ("token_ratio", raw.token_ratio.is_some()),
        ("ttl", raw.ttl.is_some()),
        ("percent", raw.percent.is_some()),
        ("min_retries_per_s", raw.min_retries_per_s.is_some()),
        ("ratio", raw.ratio.is_some()),
        ("window", raw.window.is_some()),
        ("k", raw.k.is_some()),
        ("per_request", raw.per_request.is_some()),
        ("min_retries", raw.min_retries.is_some()),
    ];
    if let Some((name, _)) = present.iter().find(|(name, set)| *set && !used.contains(name)) {
        return Err(Invalid::at(
            &field(name),
            format!("is not used by budget kind `{}` (it takes: {}); remove it", raw.kind, used.join(", ")),
        ));
    }
    let kind = match raw.kind.as_str() {
        "aws_quota" => BudgetKind::AwsQuota {
            capacity: positive(raw.capacity, "capacity", 500.0)?,
            retry_cost: positive(raw.retry_cost, "retry_cost", 5.0)?,
            timeout_cost: positive(raw.timeout_cost, "timeout_cost", 10.0)?,
            throttling_cost: positive(raw.throttling_cost, "throttling_cost", 5.0)?,
            no_retry_increment: positive(raw.no_retry_increment, "no_retry_increment", 1.0)?,
        },
        "grpc_throttle" => BudgetKind::GrpcThrottle {
            max_tokens: positive(raw.max_tokens, "max_tokens", 10.0)?,
            token_ratio: positive(raw.token_ratio, "token_ratio", 0.1)?,
        },
        "finagle" => BudgetKind::Finagle {
            ttl: window(raw.ttl, "ttl", 10 * NS_PER_S)?,
            percent: probability(Some(raw.percent.unwrap_or(0.2)), &field("percent"))?,
            min_retries_per_s: finite_at_least(
                raw.min_retries_per_s.unwrap_or(10.0),
                0.0,
                &field("min_retries_per_s"),
                "it must be a finite number ≥ 0",
            )?,
        },
        "ratio" => BudgetKind::Ratio {
            ratio: positive(raw.ratio, "ratio", 0.1)?,
            min_retries: finite_at_least(
                raw.min_retries.unwrap_or(0.0),
                0.0,
                &field("min_retries"),
                "it must be a finite number ≥ 0",
            )?,
            window: window(raw.window, "window", 10 * NS_PER_S)?,
        },
        "adaptive_throttle" => BudgetKind::AdaptiveThrottle {
            k: finite_at_least(raw.k.unwrap_or(2.0), 1.0, &field("k"), "it must be a finite number ≥ 1 (SRE uses 2)")?,
            window: window(raw.window, "window", 120 * NS_PER_S)?,
        },
        _ => BudgetKind::TokenBucket {
            capacity: positive(raw.capacity, "capacity", 5.0)?,
            per_request: positive(raw.per_request, "per_request", 0.1)?,
        },
    };
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
        for (name, fields) in crate::model::policy::JITTER_STRATEGIES {
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
        for (name, _) in crate::model::budget::BUDGET_KINDS {
            let parsed = parse(&format!("jitter = \"full\"\nbudget = {{ kind = \"{name}\" }}")).expect(name);
            assert_eq!(parsed.budget.expect("a budget").kind.name(), name);
        }
    }
}
