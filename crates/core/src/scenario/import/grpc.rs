//! gRPC service config JSON (gRFC A6 "gRPC Retry Design"): a `methodConfig` entry's
//! `retryPolicy` and the top-level `retryThrottling`.
//!
//! A6: retry n waits random(0, min(initialBackoff · backoffMultiplier^(n−1), maxBackoff)) —
//! full jitter; maxAttempts counts the first try and values above 5 are treated as 5; server
//! pushback (`grpc-retry-pushback-ms`) replaces the backoff; `timeout` is the whole call's
//! deadline; throttling keeps tokens per server name (maxTokens, tokenRatio).

use super::{duration_at, unknown_keys, Imported};
use crate::scenario::raw::{RawBudget, RawRetryAfter};
use serde_json::{Map, Value};

/// gRPC's own upper limit on maxAttempts.
const MAX_ATTEMPTS_LIMIT: i64 = 5;

/// Parses `text` into a JSON value in one pass, refusing a key given twice in one object as
/// gRPC's own service-config parser does (grpc-core's JSON reader: "duplicate key"); serde_json's
/// own `Value` would keep the last silently.
fn parse_without_repeated_keys(text: &str) -> Result<Value, String> {
    use serde::de::{DeserializeSeed, Error, MapAccess, SeqAccess, Visitor};
    struct Walk<'p>(&'p str);
    impl<'de> DeserializeSeed<'de> for Walk<'_> {
        type Value = Value;
        fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
            d.deserialize_any(self)
        }
    }
    impl<'de> Visitor<'de> for Walk<'_> {
        type Value = Value;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a JSON value")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
            let mut object = Map::new();
            while let Some(key) = map.next_key::<String>()? {
                let path = if self.0.is_empty() { key.clone() } else { format!("{}.{key}", self.0) };
                let value = map.next_value_seed(Walk(&path))?;
                if object.insert(key, value).is_some() {
                    return Err(A::Error::custom(format!(
                        "`{path}` is given twice in one object; gRPC's parser refuses a repeated key: keep one"
                    )));
                }
            }
            Ok(Value::Object(object))
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
            let mut items = Vec::new();
            while let Some(item) = seq.next_element_seed(Walk(&format!("{}[{}]", self.0, items.len())))? {
                items.push(item);
            }
            Ok(Value::Array(items))
        }
        fn visit_bool<E>(self, b: bool) -> Result<Value, E> {
            Ok(Value::Bool(b))
        }
        fn visit_i64<E>(self, n: i64) -> Result<Value, E> {
            Ok(Value::from(n))
        }
        fn visit_u64<E>(self, n: u64) -> Result<Value, E> {
            Ok(Value::from(n))
        }
        fn visit_f64<E>(self, x: f64) -> Result<Value, E> {
            Ok(serde_json::Number::from_f64(x).map_or(Value::Null, Value::Number))
        }
        fn visit_str<E>(self, s: &str) -> Result<Value, E> {
            Ok(Value::String(s.to_string()))
        }
        fn visit_string<E>(self, s: String) -> Result<Value, E> {
            Ok(Value::String(s))
        }
        fn visit_unit<E>(self) -> Result<Value, E> {
            Ok(Value::Null)
        }
    }
    let mut reader = serde_json::Deserializer::from_str(text);
    let value = Walk("").deserialize(&mut reader).and_then(|v| reader.end().map(|()| v));
    // A repeated key is the deserializer's data error; anything else is the text's syntax.
    value.map_err(|e| if e.is_data() { e.to_string() } else { format!("not valid JSON: {e}") })
}

/// Imports the method config matching `select` ("package.Service/Method", "package.Service",
/// or none for the only or the default entry).
pub fn import(text: &str, select: Option<&str>) -> Result<Imported, String> {
    let root = parse_without_repeated_keys(text)?;
    let root = root.as_object().ok_or("a service config is a JSON object with `methodConfig`")?;
    let mut out = Imported::default();
    let top = ["methodConfig", "retryThrottling"];
    for key in unknown_keys(root.keys().map(String::as_str), &top, "") {
        out.unsupported(&key, "not a retry setting");
    }
    let configs = root.get("methodConfig").and_then(Value::as_array).cloned().unwrap_or_default();
    let (index, config) = choose(&configs, select)?;
    let config = config.as_object().ok_or("methodConfig entries are objects")?;
    let prefix = format!("methodConfig[{index}]");
    let known = ["name", "retryPolicy", "timeout"];
    for key in unknown_keys(config.keys().map(String::as_str), &known, &prefix) {
        let why = if key.ends_with("hedgingPolicy") { "hedging is not simulated" } else { "not a retry setting" };
        out.unsupported(&key, why);
    }
    if let Some(t) = config.get("timeout").and_then(Value::as_str) {
        let key = format!("{prefix}.timeout");
        out.policy.deadline = Some(duration_at(t, &key, false)?);
        out.record_key("deadline", &key);
    }
    let policy = config
        .get("retryPolicy")
        .and_then(Value::as_object)
        .ok_or_else(|| format!("{prefix} has no `retryPolicy`; gRPC does not retry this method"))?;
    retry_policy(policy, &format!("{prefix}.retryPolicy"), &mut out)?;
    if let Some(throttling) = root.get("retryThrottling").and_then(Value::as_object) {
        throttle(throttling, &mut out)?;
    }
    Ok(out)
}

/// gRPC's lookup: exact service/method, then the service's entry, then the default (empty
/// name); without `select`, the only entry with a retry policy.
fn choose<'a>(configs: &'a [Value], select: Option<&str>) -> Result<(usize, &'a Value), String> {
    let names = |c: &Value| -> Vec<(String, String)> {
        let list = c.get("name").and_then(Value::as_array).cloned().unwrap_or_default();
        list.iter()
            .map(|n| {
                let get = |k: &str| n.get(k).and_then(Value::as_str).unwrap_or("").to_string();
                (get("service"), get("method"))
            })
            .collect()
    };
    let described: Vec<String> = configs
        .iter()
        .flat_map(names)
        .map(|(s, m)| match (s.is_empty(), m.is_empty()) {
            (true, _) => "(default)".to_string(),
            (false, true) => s,
            (false, false) => format!("{s}/{m}"),
        })
        .collect();
    let Some(select) = select else {
        let with_policy: Vec<usize> = (0..configs.len()).filter(|&i| configs[i].get("retryPolicy").is_some()).collect();
        return match with_policy.as_slice() {
            [only] => Ok((*only, &configs[*only])),
            [] => Err("no methodConfig has a `retryPolicy`".into()),
            _ => Err(format!(
                "{} methodConfig entries have a retryPolicy; choose one with select = \"service/method\" ({})",
                with_policy.len(),
                described.join(", ")
            )),
        };
    };
    let (service, method) = select.split_once('/').unwrap_or((select, ""));
    let rank = |c: &Value| {
        names(c)
            .iter()
            .filter_map(|(s, m)| match (s.as_str(), m.as_str()) {
                (s, m) if s == service && !m.is_empty() && m == method => Some(0),
                (s, "") if s == service => Some(1),
                ("", "") => Some(2),
                _ => None,
            })
            .min()
    };
    (0..configs.len())
        .filter_map(|i| rank(&configs[i]).map(|r| (r, i)))
        .min()
        .map(|(_, i)| (i, &configs[i]))
        .ok_or_else(|| format!("no methodConfig matches select = \"{select}\" (there are: {})", described.join(", ")))
}

fn retry_policy(p: &Map<String, Value>, prefix: &str, out: &mut Imported) -> Result<(), String> {
    let known = [
        "maxAttempts",
        "initialBackoff",
        "maxBackoff",
        "backoffMultiplier",
        "retryableStatusCodes",
        "perAttemptRecvTimeout",
    ];
    for key in unknown_keys(p.keys().map(String::as_str), &known, prefix) {
        out.unsupported(&key, "not part of gRPC's retryPolicy as gRFC A6 defines it");
    }
    let key = |k: &str| format!("{prefix}.{k}");
    let attempts = p
        .get("maxAttempts")
        .and_then(Value::as_i64)
        .ok_or_else(|| format!("`{}` is required (an integer > 1)", key("maxAttempts")))?;
    if attempts < 2 {
        // gRFC A6: "maxAttempts MUST be an integer value greater than 1"; gRPC refuses the
        // service config otherwise.
        return Err(format!(
            "`{}` is {attempts}; gRPC refuses a retryPolicy with maxAttempts below 2 (gRFC A6): give 2 to {MAX_ATTEMPTS_LIMIT}, or remove retryPolicy for no retries",
            key("maxAttempts")
        ));
    }
    if attempts > MAX_ATTEMPTS_LIMIT {
        out.warnings.push(format!(
            "`{}` is {attempts}; gRPC treats values above {MAX_ATTEMPTS_LIMIT} as {MAX_ATTEMPTS_LIMIT}, and so does the import",
            key("maxAttempts")
        ));
    }
    out.policy.max_attempts = Some(attempts.min(MAX_ATTEMPTS_LIMIT));
    out.record_key("max_attempts", &key("maxAttempts"));
    out.policy.jitter = Some("full".into());
    out.record_key("jitter", &format!("{prefix} (gRFC A6: random(0, backoff))"));
    for (field, name) in [("base", "initialBackoff"), ("cap", "maxBackoff")] {
        let text =
            p.get(name).and_then(Value::as_str).ok_or_else(|| format!("`{}` is required, e.g. \"0.1s\"", key(name)))?;
        let d = duration_at(text, &key(name), false)?;
        if field == "base" {
            out.policy.base = Some(d);
        } else {
            out.policy.cap = Some(d);
        }
        out.record_key(field, &key(name));
    }
    let multiplier = p
        .get("backoffMultiplier")
        .and_then(Value::as_f64)
        .ok_or_else(|| format!("`{}` is required (a number > 0)", key("backoffMultiplier")))?;
    out.policy.multiplier = Some(multiplier);
    out.record_key("multiplier", &key("backoffMultiplier"));
    if let Some(t) = p.get("perAttemptRecvTimeout").and_then(Value::as_str) {
        out.policy.attempt_timeout = Some(duration_at(t, &key("perAttemptRecvTimeout"), false)?);
        out.record_key("attempt_timeout", &key("perAttemptRecvTimeout"));
    }
    let codes = p
        .get("retryableStatusCodes")
        .and_then(Value::as_array)
        .ok_or_else(|| format!("`{}` is required (e.g. [\"UNAVAILABLE\"])", key("retryableStatusCodes")))?;
    if codes.is_empty() {
        // gRFC A6: retryableStatusCodes "MUST be specified" and non-empty; gRPC refuses it.
        return Err(format!(
            "`{}` is empty; gRPC refuses a retryPolicy that retries no status code (gRFC A6): list at least one, e.g. [\"UNAVAILABLE\"]",
            key("retryableStatusCodes")
        ));
    }
    let mut retry_on = Vec::new();
    for code in codes {
        let name = code.as_str().map(str::to_ascii_uppercase).unwrap_or_else(|| code.to_string());
        match name.as_str() {
            "UNAVAILABLE" | "14" => retry_on.push("transient"),
            "RESOURCE_EXHAUSTED" | "8" => retry_on.push("throttling"),
            "DEADLINE_EXCEEDED" | "4" => retry_on.push("timeout"),
            other => out.unsupported(
                &format!("{}: {other}", key("retryableStatusCodes")),
                "the model's failures are UNAVAILABLE (outage, overload, 5xx), RESOURCE_EXHAUSTED (throttling) and DEADLINE_EXCEEDED (attempt timeout)",
            ),
        }
    }
    retry_on.dedup();
    out.policy.retry_on = Some(retry_on.into_iter().map(String::from).collect());
    out.record_key("retry_on", &key("retryableStatusCodes"));
    out.policy.honor_retry_after = Some(RawRetryAfter::Mode("exact".into()));
    out.record_key("honor_retry_after", "gRFC A6 server pushback (grpc-retry-pushback-ms)");
    Ok(())
}

fn throttle(t: &Map<String, Value>, out: &mut Imported) -> Result<(), String> {
    for key in unknown_keys(t.keys().map(String::as_str), &["maxTokens", "tokenRatio"], "retryThrottling") {
        out.unsupported(&key, "not part of gRPC's retryThrottling");
    }
    let get = |k: &str| {
        t.get(k).and_then(Value::as_f64).ok_or_else(|| format!("`retryThrottling.{k}` is required (a number > 0)"))
    };
    let kind = [
        ("kind", toml::Value::from("grpc_throttle")),
        ("max_tokens", toml::Value::from(get("maxTokens")?)),
        ("token_ratio", toml::Value::from(get("tokenRatio")?)),
    ];
    let kind = kind.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
    out.policy.budget = Some(RawBudget { scope: Some("client".into()), kind });
    out.record_key("budget", "retryThrottling");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const CONFIG: &str = include_str!("../../../../../scenarios/data/grpc-service-config.json");

    #[test]
    fn imports_the_method_and_the_throttling() {
        let got = import(CONFIG, Some("shop.Checkout/PlaceOrder")).expect("imports");
        let p = &got.policy;
        assert_eq!(p.max_attempts, Some(4));
        assert_eq!(p.jitter.as_deref(), Some("full"));
        assert_eq!(p.base.map(|d| d.0), Some(100_000_000));
        assert_eq!(p.cap.map(|d| d.0), Some(2_000_000_000));
        assert_eq!(p.multiplier, Some(2.0));
        assert_eq!(p.deadline.map(|d| d.0), Some(10_000_000_000));
        assert_eq!(p.retry_on.as_deref(), Some(&["transient".to_string(), "throttling".to_string()][..]));
        let b = p.budget.as_ref().expect("throttling");
        assert_eq!((b.kind["max_tokens"].as_float(), b.kind["token_ratio"].as_float()), (Some(10.0), Some(0.1)));
        // Unknown and unsupported keys are named, never dropped silently.
        let all = got.warnings.join("\n");
        assert!(all.contains("loadBalancingConfig"), "{all}");
        assert!(all.contains("waitForReady"), "{all}");
        assert!(all.contains("INTERNAL"), "{all}");
        // The service-wide entry applies to another method of the service; the default to others.
        let service = import(CONFIG, Some("shop.Checkout/GetCart")).expect("imports");
        assert_eq!(service.policy.max_attempts, Some(5));
        assert!(service.warnings.iter().any(|w| w.contains("treats values above 5")));
        let other = import(CONFIG, Some("shop.Search/Query")).expect("default");
        assert_eq!(other.policy.max_attempts, Some(2));
        assert!(import(CONFIG, None).unwrap_err().contains("choose one with select"));
    }
}
