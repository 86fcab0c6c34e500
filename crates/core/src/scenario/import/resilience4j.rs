//! resilience4j retry YAML (Spring Boot `resilience4j.retry`): an instance with its
//! `baseConfig` (or `configs.default`) underneath.
//!
//! resilience4j: `maxAttempts` (default 3) counts the first call; `waitDuration` (default
//! 500 ms) is the wait; `enableExponentialBackoff` multiplies it by
//! `exponentialBackoffMultiplier` (default 1.5) per retry up to `exponentialMaxWaitDuration`
//! (default unbounded); `enableRandomizedWait` draws uniformly in [w(1−f), w(1+f)] with
//! `randomizedWaitFactor` f (default 0.5). Durations: "100ms", "10s", ISO-8601, or milliseconds.

use super::{duration_at, unknown_keys, Imported};
use crate::scenario::raw::Dur;
use serde_norway::{Mapping, Value};

const SETTINGS: [&str; 8] = [
    "maxAttempts",
    "waitDuration",
    "enableExponentialBackoff",
    "exponentialBackoffMultiplier",
    "exponentialMaxWaitDuration",
    "enableRandomizedWait",
    "randomizedWaitFactor",
    "baseConfig",
];

/// Imports instance `select` (or the only instance).
pub fn import(text: &str, select: Option<&str>) -> Result<Imported, String> {
    super::yaml_depth(text)?;
    let root: Value = serde_norway::from_str(text).map_err(super::yaml_error)?;
    let retry = get(&root, "resilience4j.retry")
        .or_else(|| get(&root, "resilience4j").and_then(|r| get(r, "retry")))
        .ok_or("no `resilience4j.retry` section")?;
    let instances = get(retry, "instances").and_then(Value::as_mapping);
    let configs = get(retry, "configs").and_then(Value::as_mapping);
    let names: Vec<&str> = instances.map(|m| m.keys().filter_map(Value::as_str).collect()).unwrap_or_default();
    let (prefix, entry) = match (select, names.as_slice()) {
        (Some(s), _) => {
            if let Some(i) = instances.and_then(|m| m.get(Value::String(s.into()))) {
                (format!("instances.{s}"), i)
            } else if let Some(c) = configs.and_then(|m| m.get(Value::String(s.into()))) {
                (format!("configs.{s}"), c)
            } else {
                return Err(format!("no instance or config `{s}` (instances: {})", names.join(", ")));
            }
        }
        (None, [only]) => (
            format!("instances.{only}"),
            instances.and_then(|m| m.get(Value::String((*only).to_string()))).expect("listed"),
        ),
        (None, _) => {
            return Err(format!("choose an instance with select = \"NAME\" (instances: {})", names.join(", ")))
        }
    };
    let entry = entry.as_mapping().ok_or_else(|| format!("`{prefix}` is not a table of settings"))?;
    // Settings: the instance's own, then its baseConfig's (or configs.default), then defaults.
    let base_name = entry.get("baseConfig").and_then(Value::as_str).map(str::to_string);
    let base_name = base_name.or_else(|| configs.and_then(|c| c.get("default")).map(|_| "default".to_string()));
    let base = base_name.as_deref().and_then(|n| configs.and_then(|c| c.get(n))).and_then(Value::as_mapping);
    if let (Some(n), None) = (&base_name, base) {
        return Err(format!("`{prefix}.baseConfig` names `{n}`, which is not under configs"));
    }
    let mut out = Imported::default();
    for (m, at) in [(Some(entry), prefix.clone()), (base, format!("configs.{}", base_name.as_deref().unwrap_or("")))] {
        if let Some(m) = m {
            for key in unknown_keys(m.keys().filter_map(Value::as_str), &SETTINGS, &at) {
                out.unsupported(&key, "exception and result predicates, events and metrics are not simulated (every modelled failure is retried)");
            }
        }
    }
    let lookup = |k: &str| -> Option<(&Value, String)> {
        if let Some(v) = entry.get(k) {
            return Some((v, format!("{prefix}.{k}")));
        }
        base.and_then(|b| b.get(k)).map(|v| (v, format!("configs.{}.{k}", base_name.as_deref().unwrap_or(""))))
    };
    #[allow(clippy::wildcard_enum_match_arm, reason = "a YAML value, not a kind: any other shape is shown as YAML")]
    let text = |v: &Value| match v {
        Value::String(s) => s.clone(),
        other => serde_norway::to_string(other).unwrap_or_default().trim().to_string(),
    };
    let flag =
        |k: &str| lookup(k).map(|(v, at)| v.as_bool().ok_or(format!("`{at}` must be true or false")).map(|b| (b, at)));
    let number =
        |k: &str| lookup(k).map(|(v, at)| v.as_f64().ok_or(format!("`{at}` must be a number")).map(|x| (x, at)));
    let (attempts, attempts_at) = match lookup("maxAttempts") {
        Some((v, at)) => (super::attempts_at(v.as_i64().ok_or(format!("`{at}` must be an integer"))?, &at, true)?, at),
        None => (3, "maxAttempts (resilience4j default 3)".into()),
    };
    out.policy.max_attempts = Some(attempts);
    out.record_key("max_attempts", &attempts_at);
    let (wait, wait_at) = match lookup("waitDuration") {
        Some((v, at)) => (duration_at(&text(v), &at, true)?, at),
        None => (Dur(500_000_000), "waitDuration (resilience4j default 500ms)".into()),
    };
    out.policy.base = Some(wait);
    out.record_key("base", &wait_at);
    let exponential = flag("enableExponentialBackoff").transpose()?;
    let randomized = flag("enableRandomizedWait").transpose()?;
    let is_exp = exponential.as_ref().is_some_and(|e| e.0);
    let is_rand = randomized.as_ref().is_some_and(|r| r.0);
    let (multiplier, mult_at) = if is_exp {
        number("exponentialBackoffMultiplier")
            .transpose()?
            .unwrap_or((1.5, "exponentialBackoffMultiplier (resilience4j default 1.5)".into()))
    } else {
        (1.0, "no enableExponentialBackoff: constant wait".into())
    };
    out.policy.multiplier = Some(multiplier);
    out.record_key("multiplier", &mult_at);
    let cap = match lookup("exponentialMaxWaitDuration").filter(|_| is_exp) {
        Some((v, at)) => {
            out.record_key("cap", &at);
            duration_at(&text(v), &at, true)?
        }
        None => {
            // Unbounded in resilience4j: the largest wait the attempts can reach.
            out.record_key("cap", "unbounded in resilience4j: the last retry's wait");
            let largest = wait.0 as f64 * multiplier.powi(attempts.clamp(1, 10_000) as i32);
            Dur(if largest >= u64::MAX as f64 { u64::MAX } else { largest as u64 }.max(wait.0))
        }
    };
    out.policy.cap = Some(cap);
    if is_rand {
        let (factor, at) = number("randomizedWaitFactor")
            .transpose()?
            .unwrap_or((0.5, "randomizedWaitFactor (resilience4j default 0.5)".into()));
        out.policy.jitter = Some("proportional".into());
        out.policy.ratio = Some(factor);
        out.record_key("ratio", &at);
        out.record_key("jitter", &format!("{} + {at}", randomized.map(|r| r.1).unwrap_or_default()));
    } else {
        out.policy.jitter = Some("exponential".into());
        out.record_key("jitter", "no enableRandomizedWait: no jitter");
    }
    Ok(out)
}

/// `v[key]` for a YAML mapping.
fn get<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    v.as_mapping().and_then(|m: &Mapping| m.get(Value::String(key.to_string())))
}

#[cfg(test)]
mod tests {
    use super::*;

    const CONFIG: &str = include_str!("../../../../../scenarios/data/resilience4j.yaml");

    #[test]
    fn instances_inherit_their_base_config() {
        let got = import(CONFIG, Some("payments")).expect("imports");
        let p = &got.policy;
        assert_eq!(p.max_attempts, Some(5));
        assert_eq!(p.base.map(|d| d.0), Some(200_000_000));
        assert_eq!(p.multiplier, Some(2.0));
        assert_eq!(p.cap.map(|d| d.0), Some(5_000_000_000));
        assert_eq!((p.jitter.as_deref(), p.ratio), (Some("proportional"), Some(0.3)));
        assert!(got.sources["base"].starts_with("configs.default"), "{:?}", got.sources);
        assert!(got.warnings.iter().any(|w| w.contains("retryExceptions")), "{:?}", got.warnings);
        // Another base config: a constant wait of 1 s (ISO-8601), no jitter.
        let plain = import(CONFIG, Some("inventory")).expect("imports");
        assert_eq!((plain.policy.jitter.as_deref(), plain.policy.multiplier), (Some("exponential"), Some(1.0)));
        assert_eq!(plain.policy.base.map(|d| d.0), Some(1_000_000_000));
        assert!(import(CONFIG, None).unwrap_err().contains("payments"));
    }
}
