//! Validation of a policy's `hedge = { after, max_share }` and `cancel_on_timeout`.

use super::checks::V;
use super::error::Invalid;
use super::raw::{parse_duration, RawHedge, RawHedgeThrottle};
use crate::model::budget::GrpcTokens;
use crate::model::{BudgetKind, BudgetSpec, HedgeAfter, HedgeSpec, HedgeThrottle};

/// `after` is a duration ("50ms") or a latency percentile ("p95", "p99.9"). `budget` is the
/// policy's: a `grpc_throttle` budget throttles the hedges too (gRFC A6: one bucket per server
/// name for retries and hedges).
pub(super) fn hedge(raw: &RawHedge, budget: Option<&BudgetSpec>, at: &dyn Fn(&str) -> String) -> V<HedgeSpec> {
    let after_at = at("hedge.after");
    let after = if let Some(pct) = raw.after.strip_prefix('p') {
        let q = pct.parse::<f64>().ok().filter(|p| p.is_finite() && *p > 0.0 && *p < 100.0).ok_or_else(|| {
            Invalid::at(
                &after_at,
                format!(
                    "is \"{}\"; a percentile is written p followed by a number in (0, 100), e.g. \"p95\" or \"p99.9\"",
                    raw.after
                ),
            )
        })?;
        HedgeAfter::Quantile(q / 100.0)
    } else {
        match parse_duration(&raw.after) {
            Ok(0) => return Err(Invalid::at(&after_at, "is 0; a hedge sent at once doubles every attempt — use a positive delay such as \"50ms\" or a percentile such as \"p95\"")),
            Ok(ns) => HedgeAfter::Fixed(ns),
            Err(_) => {
                return Err(Invalid::at(
                    &after_at,
                    format!("is \"{}\"; write a delay (\"50ms\") or a latency percentile (\"p95\")", raw.after),
                ))
            }
        }
    };
    let share_at = at("hedge.max_share");
    let max_share = raw.max_share.ok_or_else(|| {
        Invalid::at(&share_at, "is missing; add max_share = 0.05 (at most 5% of attempts hedged; 1 means no cap)")
    })?;
    if !(max_share > 0.0 && max_share <= 1.0) {
        return Err(Invalid::at(
            &share_at,
            format!("is {max_share}; it must be in (0, 1] (the largest share of attempts hedged; 1 means no cap)"),
        ));
    }
    let shared = budget.and_then(|b| match b.kind {
        BudgetKind::GrpcThrottle { max_tokens, token_ratio } => Some(GrpcTokens { max_tokens, token_ratio }),
        BudgetKind::AwsQuota { .. }
        | BudgetKind::Finagle { .. }
        | BudgetKind::Ratio { .. }
        | BudgetKind::AdaptiveThrottle { .. }
        | BudgetKind::TokenBucket { .. }
        | BudgetKind::ConcurrentRetries { .. } => None,
    });
    let throttle = match (&raw.throttle, shared) {
        (None, None) => None,
        (None, Some(tokens)) => Some(HedgeThrottle { tokens, shared: true, charge_unanswered: false }),
        (Some(t), shared) => Some(throttle(t, shared, at)?),
    };
    Ok(HedgeSpec { after, max_share, throttle })
}

/// gRFC A6's bounds: `max_tokens` in (0, 1000], `token_ratio` in (0, 1]; both required unless the
/// policy's `grpc_throttle` budget is the bucket (`shared`), when neither may be given.
fn throttle(raw: &RawHedgeThrottle, shared: Option<GrpcTokens>, at: &dyn Fn(&str) -> String) -> V<HedgeThrottle> {
    let charge_unanswered = raw.charge_unanswered.unwrap_or(false);
    if let Some(tokens) = shared {
        let given = [("max_tokens", raw.max_tokens), ("token_ratio", raw.token_ratio)];
        if let Some((name, Some(v))) = given.into_iter().find(|(_, v)| v.is_some()) {
            return Err(Invalid::at(
                &at(&format!("hedge.throttle.{name}")),
                format!(
                    "is {v}, but this policy's budget is gRPC's retry throttle, and gRPC keeps one bucket per server \
                     name for retries and hedges (gRFC A6): hedges already use the budget's bucket; remove \
                     hedge.throttle.{name} (set the bucket in `budget`)"
                ),
            ));
        }
        return Ok(HedgeThrottle { tokens, shared: true, charge_unanswered });
    }
    let field = |name: &str, value: Option<f64>, max: f64, example: &str| -> V<f64> {
        let path = at(&format!("hedge.throttle.{name}"));
        let v = value.ok_or_else(|| Invalid::at(&path, format!("is missing; add {name} = {example}")))?;
        if !(v > 0.0 && v <= max) {
            return Err(Invalid::at(
                &path,
                format!("is {v}; it must be in (0, {max}] (gRPC's retryThrottling bounds), e.g. {example}"),
            ));
        }
        Ok(v)
    };
    let tokens = GrpcTokens {
        max_tokens: field("max_tokens", raw.max_tokens, 1000.0, "10")?,
        token_ratio: field("token_ratio", raw.token_ratio, 1.0, "0.1")?,
    };
    Ok(HedgeThrottle { tokens, shared: false, charge_unanswered })
}
