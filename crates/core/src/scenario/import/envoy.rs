//! Envoy route configuration YAML: a route's (or its virtual host's) `retry_policy`
//! (`config.route.v3.RetryPolicy`).
//!
//! Envoy: `num_retries` (default 1) retries after the first try; `per_try_timeout`;
//! `retry_back_off` is fully jittered exponential back-off, retry k waiting U(0, (2^k − 1) ·
//! base_interval) capped at `max_interval` (default 25 ms and 10 × base); `retry_on` lists the
//! conditions; `rate_limited_retry_back_off` uses the upstream's reset header as the delay. A
//! route's own `retry_policy` replaces its virtual host's; the route `timeout` (default 15 s)
//! bounds the whole call.

use super::{duration_at, unknown_keys, Imported};
use crate::scenario::raw::{Dur, RawRetryAfter};
use serde_norway::{Mapping, Value};

/// Envoy's default base interval.
const BASE_DEFAULT_NS: u64 = 25_000_000;

/// Imports the retry policy of the route or virtual host named `select` (or the only one).
pub fn import(text: &str, select: Option<&str>) -> Result<Imported, String> {
    super::yaml_depth(text)?;
    let root: Value = serde_norway::from_str(text).map_err(super::yaml_error)?;
    let mut found = Vec::new();
    collect(&root, "", None, &mut found);
    if found.is_empty() {
        return Err("no `retry_policy` found (in a route, a virtual host, or as the file itself)".into());
    }
    let names: Vec<&str> = found.iter().map(|c| c.name.as_str()).collect();
    let chosen = match select {
        Some(s) => found.iter().find(|c| c.name == s).ok_or_else(|| {
            format!("no route or virtual host named `{s}` has a retry policy (there are: {})", names.join(", "))
        })?,
        None if found.len() == 1 => &found[0],
        None => {
            return Err(format!(
                "{} routes have a retry policy; choose one with select = \"ROUTE\" ({})",
                found.len(),
                names.join(", ")
            ))
        }
    };
    let mut out = Imported::default();
    retry_policy(chosen.policy, &chosen.path, &mut out)?;
    if let Some((timeout, key)) = &chosen.timeout {
        let d = duration_at(timeout, key, false)?;
        if d.0 > 0 {
            out.policy.deadline = Some(d);
            out.record_key("deadline", key);
        }
    }
    Ok(out)
}

struct Candidate<'a> {
    name: String,
    path: String,
    policy: &'a Mapping,
    timeout: Option<(String, String)>,
}

fn get<'a>(m: &'a Mapping, key: &str) -> Option<&'a Value> {
    m.get(Value::String(key.to_string()))
}

fn keys(m: &Mapping) -> impl Iterator<Item = &str> {
    m.keys().filter_map(Value::as_str)
}

#[allow(clippy::wildcard_enum_match_arm, reason = "a YAML value, not a kind: only strings and numbers are text")]
fn text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// Every route and virtual host with a retry policy (a route inherits its host's), or the
/// file itself when it is a retry policy.
#[allow(
    clippy::wildcard_enum_match_arm,
    reason = "a YAML value, not a kind: only mappings and sequences hold policies"
)]
fn collect<'a>(v: &'a Value, path: &str, inherited: Option<&'a Mapping>, out: &mut Vec<Candidate<'a>>) {
    match v {
        Value::Mapping(m) => {
            let is_policy =
                ["num_retries", "retry_on", "retry_back_off", "per_try_timeout"].iter().any(|k| get(m, k).is_some())
                    && get(m, "routes").is_none();
            if is_policy && path.is_empty() {
                out.push(Candidate {
                    name: "retry_policy".into(),
                    path: "retry_policy".into(),
                    policy: m,
                    timeout: None,
                });
                return;
            }
            let own = get(m, "retry_policy").and_then(Value::as_mapping);
            let name = get(m, "name").and_then(Value::as_str).unwrap_or("").to_string();
            if let Some(routes) = get(m, "routes").and_then(Value::as_sequence) {
                // A virtual host.
                if let Some(policy) = own {
                    let path = format!("{path}.retry_policy");
                    out.push(Candidate { name: name.clone(), path, policy, timeout: None });
                }
                for (i, r) in routes.iter().enumerate() {
                    collect(r, &format!("{path}.routes[{i}]"), own.or(inherited), out);
                }
                return;
            }
            if let Some(action) = get(m, "route").and_then(Value::as_mapping) {
                // A route: its action's retry policy, else its virtual host's.
                let timeout = get(action, "timeout").and_then(text).map(|t| (t, format!("{path}.route.timeout")));
                let timeout = timeout.or_else(|| Some(("15s".into(), format!("{path}.route.timeout (Envoy default)"))));
                let own = get(action, "retry_policy").and_then(Value::as_mapping);
                let name = if name.is_empty() { path.to_string() } else { name };
                if let Some(policy) = own {
                    out.push(Candidate { name, path: format!("{path}.route.retry_policy"), policy, timeout });
                } else if let Some(policy) = inherited {
                    out.push(Candidate { name, path: format!("{path} (virtual host retry_policy)"), policy, timeout });
                }
                return;
            }
            for (k, child) in m {
                let k = k.as_str().unwrap_or("?");
                let p = if path.is_empty() { k.to_string() } else { format!("{path}.{k}") };
                collect(child, &p, inherited, out);
            }
        }
        Value::Sequence(items) => {
            for (i, child) in items.iter().enumerate() {
                collect(child, &format!("{path}[{i}]"), inherited, out);
            }
        }
        _ => {}
    }
}

fn retry_policy(p: &Mapping, prefix: &str, out: &mut Imported) -> Result<(), String> {
    let known = [
        "retry_on",
        "num_retries",
        "per_try_timeout",
        "retry_back_off",
        "rate_limited_retry_back_off",
        "retriable_status_codes",
    ];
    for key in unknown_keys(keys(p), &known, prefix) {
        out.unsupported(&key, "host selection, priorities and header matching are not simulated");
    }
    let key = |k: &str| format!("{prefix}.{k}");
    let retries = match get(p, "num_retries") {
        Some(v) => v.as_i64().ok_or_else(|| format!("`{}` must be an integer", key("num_retries")))?,
        None => 1,
    };
    out.policy.max_attempts = Some(super::attempts_at(retries, &key("num_retries"), false)?);
    let source =
        if get(p, "num_retries").is_some() { key("num_retries") } else { key("num_retries (Envoy default 1)") };
    out.record_key("max_attempts", &source);
    if let Some(t) = get(p, "per_try_timeout").and_then(text) {
        out.policy.attempt_timeout = Some(duration_at(&t, &key("per_try_timeout"), false)?);
        out.record_key("attempt_timeout", &key("per_try_timeout"));
    }
    let back_off = get(p, "retry_back_off").and_then(Value::as_mapping);
    let mut base = Dur(BASE_DEFAULT_NS);
    if let Some(b) = back_off {
        let at = key("retry_back_off");
        for k in unknown_keys(keys(b), &["base_interval", "max_interval"], &at) {
            out.unsupported(&k, "not part of Envoy's retry_back_off");
        }
        if let Some(t) = get(b, "base_interval").and_then(text) {
            base = duration_at(&t, &format!("{at}.base_interval"), false)?;
        }
    }
    let max = back_off.and_then(|b| get(b, "max_interval")).and_then(text);
    let cap = match &max {
        Some(t) => duration_at(t, &key("retry_back_off.max_interval"), false)?,
        None => Dur(base.0.saturating_mul(10)),
    };
    out.policy.jitter = Some("full".into());
    out.record_key("jitter", &format!("{prefix} (Envoy: fully jittered exponential back-off)"));
    out.policy.base = Some(base);
    out.record_key("base", &key("retry_back_off.base_interval"));
    out.policy.multiplier = Some(2.0);
    out.record_key("multiplier", "Envoy's back-off doubles");
    out.policy.cap = Some(cap);
    out.record_key(
        "cap",
        &key(if max.is_some() { "retry_back_off.max_interval" } else { "retry_back_off (10 × base)" }),
    );
    let codes: Vec<i64> = get(p, "retriable_status_codes")
        .and_then(Value::as_sequence)
        .map(|s| s.iter().filter_map(Value::as_i64).collect())
        .unwrap_or_default();
    let on = get(p, "retry_on").and_then(Value::as_str).unwrap_or("");
    if on.is_empty() {
        out.warnings.push(format!("`{}` is empty: Envoy retries nothing without it", key("retry_on")));
    }
    let (mut transient, mut throttling, mut timeout) = (false, false, false);
    for cond in on.split(',').map(str::trim).filter(|c| !c.is_empty()) {
        match cond {
            "5xx" | "gateway-error" => (transient, timeout) = (true, true),
            "reset"
            | "reset-before-request"
            | "connect-failure"
            | "refused-stream"
            | "unavailable"
            | "http3-post-connect-failure" => transient = true,
            "envoy-ratelimited" | "resource-exhausted" => throttling = true,
            "deadline-exceeded" => timeout = true,
            "retriable-status-codes" => {
                transient |= codes.iter().any(|&c| (500..600).contains(&c));
                throttling |= codes.contains(&429);
                for c in codes.iter().filter(|&&c| c != 429 && !(500..600).contains(&c)) {
                    out.unsupported(
                        &format!("{}: {c}", key("retriable_status_codes")),
                        "the model answers 5xx, 429 and 4xx only",
                    );
                }
            }
            other => out.unsupported(
                &format!("{}: {other}", key("retry_on")),
                "the model's failures are 5xx/reset (transient), 429 (throttling) and timeouts",
            ),
        }
    }
    let retry_on: Vec<String> = [("transient", transient), ("throttling", throttling), ("timeout", timeout)]
        .iter()
        .filter(|(_, on)| *on)
        .map(|(n, _)| n.to_string())
        .collect();
    out.policy.retry_on = Some(retry_on);
    out.record_key("retry_on", &key("retry_on"));
    if let Some(rl) = get(p, "rate_limited_retry_back_off").and_then(Value::as_mapping) {
        let at = key("rate_limited_retry_back_off");
        for k in unknown_keys(keys(rl), &["reset_headers", "max_interval"], &at) {
            out.unsupported(&k, "not part of Envoy's rate_limited_retry_back_off");
        }
        out.policy.honor_retry_after = Some(RawRetryAfter::Mode("exact".into()));
        out.record_key("honor_retry_after", &format!("{at}.reset_headers"));
        if get(rl, "max_interval").is_some() {
            out.unsupported(
                &format!("{at}.max_interval"),
                "the reset header's interval is used as given (no upper bound)",
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROUTES: &str = include_str!("../../../../../scenarios/data/envoy-routes.yaml");

    #[test]
    fn imports_a_route_and_inherits_the_virtual_host_policy() {
        let got = import(ROUTES, Some("checkout")).expect("imports");
        let p = &got.policy;
        assert_eq!(p.max_attempts, Some(4));
        assert_eq!(p.attempt_timeout.map(|d| d.0), Some(500_000_000));
        assert_eq!((p.base.map(|d| d.0), p.cap.map(|d| d.0)), (Some(50_000_000), Some(1_000_000_000)));
        assert_eq!(p.deadline.map(|d| d.0), Some(5_000_000_000));
        assert_eq!(p.retry_on.as_deref(), Some(&["transient".to_string(), "throttling".into(), "timeout".into()][..]));
        assert_eq!(p.honor_retry_after, Some(RawRetryAfter::Mode("exact".into())));
        assert!(got.warnings.iter().any(|w| w.contains("retry_host_predicate")), "{:?}", got.warnings);
        // `catalog` has no policy of its own: the virtual host's, with Envoy's defaults.
        let host = import(ROUTES, Some("catalog")).expect("inherits");
        assert_eq!(host.policy.max_attempts, Some(2));
        assert_eq!(host.policy.base.map(|d| d.0), Some(BASE_DEFAULT_NS));
        assert_eq!(host.policy.cap.map(|d| d.0), Some(10 * BASE_DEFAULT_NS));
        assert_eq!(host.policy.deadline.map(|d| d.0), Some(15_000_000_000));
        assert!(import(ROUTES, Some("nope")).unwrap_err().contains("checkout"));
        assert!(import(ROUTES, None).unwrap_err().contains("choose one"));
    }
}
