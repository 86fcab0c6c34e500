//! Named policy presets: the retry settings real stacks ship, each with its source values.
//!
//! A scenario policy may say `preset = "grpc"` and override any field; the preset fills the rest.
//! Where a real system's mechanism differs from our model, the comment says what we approximate.
//! Retry-After is honoured (at least) by default in scenarios; presets whose source ignores it
//! say `honor_retry_after = "ignore"`. The Svix and Standard Webhooks presets keep the default: their
//! published schedules do not say how a consumer's Retry-After is treated.

use super::raw::RawPolicy;

/// `(name, description with sources, TOML of the policy)`.
pub const PRESETS: [(&str, &str, &str); 10] = [
    (
        "aws-standard",
        "AWS SDK standard retry mode (pre-2026): full jitter b·2^i with base 1 s, cap 20 s, 3 attempts; \
         retry quota 500 tokens, 5 per retry, 10 per timeout retry, +1 per success without retry, refund on success; \
         no Retry-After handling in this mode",
        r#"jitter = "full"
base = "1s"
multiplier = 2.0
cap = "20s"
max_attempts = 3
honor_retry_after = "ignore"
budget = { kind = "aws_quota", scope = "client", capacity = 500.0, retry_cost = 5.0, timeout_cost = 10.0, throttling_cost = 5.0, no_retry_increment = 1.0 }"#,
    ),
    (
        "aws-standard-2026",
        "AWS SDK standard retry mode, 2026 values: full jitter with base 50 ms (1 s after throttling), cap 20 s, \
         3 attempts; quota 500, 14 per retry, 5 per throttling retry; x-amz-retry-after honoured within [backoff, backoff + 5 s]",
        r#"jitter = "full"
base = "50ms"
throttle_base = "1s"
multiplier = 2.0
cap = "20s"
max_attempts = 3
honor_retry_after = "aws"
budget = { kind = "aws_quota", scope = "client", capacity = 500.0, retry_cost = 14.0, timeout_cost = 14.0, throttling_cost = 5.0, no_retry_increment = 1.0 }"#,
    ),
    (
        "grpc",
        "gRPC retry design (gRFC A6, the retry policy of the service config): retry n waits \
         random(0, min(initialBackoff × backoffMultiplier^(n−1), maxBackoff)) — full jitter, not the ±20% of \
         gRPC's connection-backoff spec — with A6's example policy (maxAttempts 4, initialBackoff 0.1 s, \
         maxBackoff 1 s, backoffMultiplier 2; clients cap maxAttempts at 5); retry throttling with maxTokens 10 and \
         tokenRatio 0.1; server pushback (grpc-retry-pushback-ms) used as the delay",
        r#"jitter = "full"
base = "100ms"
multiplier = 2.0
cap = "1s"
max_attempts = 4
honor_retry_after = "exact"
budget = { kind = "grpc_throttle", scope = "client", max_tokens = 10.0, token_ratio = 0.1 }"#,
    ),
    (
        "envoy",
        "Envoy router retries with Envoy's defaults: fully jittered exponential backoff, base 25 ms, max 250 ms \
         (10 × base), one retry (num_retries 1); no retry budget configured, so retries are limited by the \
         cluster's max_retries circuit breaker: at most 3 retries outstanding at once per cluster \
         (concurrent_retries with budget_percent 0); rate-limited (Retry-After) back-off only when configured, \
         so ignored here",
        r#"jitter = "full"
base = "25ms"
multiplier = 2.0
cap = "250ms"
max_attempts = 2
honor_retry_after = "ignore"
budget = { kind = "concurrent_retries", scope = "client", budget_percent = 0.0, min_retry_concurrency = 3 }"#,
    ),
    (
        "envoy-retry-budget",
        "Envoy router retries as `envoy`, with a retry budget configured at its defaults \
         (circuit_breakers.thresholds.retry_budget: budget_percent 20, min_retry_concurrency 3): at most \
         max(20% of active requests, 3) retries outstanding at once per cluster",
        r#"jitter = "full"
base = "25ms"
multiplier = 2.0
cap = "250ms"
max_attempts = 2
honor_retry_after = "ignore"
budget = { kind = "concurrent_retries", scope = "client", budget_percent = 20.0, min_retry_concurrency = 3 }"#,
    ),
    (
        "finagle",
        "Finagle (finagle ≥ 20.8.1): RetryBudget with ttl 10 s, 20% of the successful requests (a request \
         deposits only when it succeeds) plus 10 retries/s; automatic requeues of refused attempts with no \
         delay, at most ceil(0.2 × balance) per try (RequeueFilter); MethodBuilder's default retries: \
         RetryPolicy.tries with Backoff.decorrelatedJittered(5 ms, 200 ms), 2 retries (3 attempts); no \
         Retry-After handling",
        r#"jitter = "decorrelated_finagle"
base = "5ms"
cap = "200ms"
max_attempts = 3
honor_retry_after = "ignore"
requeue = true
budget = { kind = "finagle", scope = "client", ttl = "10s", percent = 0.2, min_retries_per_s = 10.0 }"#,
    ),
    (
        "polly-v8",
        "Polly v8 retry strategy as Microsoft.Extensions.Http.Resilience's standard resilience handler configures it \
         by default (HttpRetryStrategyOptions: BackoffType.Exponential, UseJitter, Delay 2 s, MaxRetryAttempts 3 = \
         4 attempts, ShouldRetryAfterHeader): decorrelated jitter v2; MaxDelay unset (capped here at 30 s); \
         Retry-After used as the delay; the handler's 10 s attempt timeout and 30 s total request timeout. Bare \
         Polly defaults differ (constant backoff, no jitter, no timeouts)",
        r#"jitter = "decorrelated_v2"
base = "2s"
multiplier = 2.0
cap = "30s"
max_attempts = 4
honor_retry_after = "exact"
attempt_timeout = "10s"
deadline = "30s""#,
    ),
    (
        "resilience4j",
        "resilience4j Retry with exponential random backoff: initial 500 ms, multiplier 1.5, randomization factor 0.5, \
         maxAttempts 3 (cap 30 s here); no Retry-After handling",
        r#"jitter = "proportional"
ratio = 0.5
base = "500ms"
multiplier = 1.5
cap = "30s"
max_attempts = 3
honor_retry_after = "ignore""#,
    ),
    (
        "svix",
        "Svix webhook delivery: attempts immediately, then after 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h; \
         15 s timeout per delivery",
        r#"jitter = "schedule"
schedule = ["5s", "5m", "30m", "2h", "5h", "10h", "10h"]
max_attempts = 8
attempt_timeout = "15s""#,
    ),
    (
        "standard-webhooks",
        "Standard Webhooks specification 1.0.0's example retry schedule (spec/standard-webhooks.md, \"Deliverability \
         and reliability\"): 10 attempts — immediately, then 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 14 h, 20 h, 24 h \
         (the last at 75 h 35 min 5 s); the spec also recommends random jitter (not modelled: the schedule is exact) \
         and a request timeout between 15 and 30 s (15 s here). Svix's own schedule stops after 8 (`svix`)",
        r#"jitter = "schedule"
schedule = ["5s", "5m", "30m", "2h", "5h", "10h", "14h", "20h", "24h"]
max_attempts = 10
attempt_timeout = "15s""#,
    ),
];

/// The preset an `sdk` applies to.
pub const AWS_SDK_PRESET: &str = "aws-standard";

/// `(sdk, what it changes, TOML overlaid on aws-standard)`: the pre-2026 standard retry mode as
/// each AWS SDK ships it (docs/PRESETS.md, "`aws-standard`: per SDK", cites every value).
/// `python` is the preset itself (botocore).
pub const AWS_SDKS: [(&str, &str, &str); 5] = [
    ("python", "botocore: base 1 s, cap 20 s; quota 500, 5 per retry, 10 per timeout retry", ""),
    (
        "java-v2",
        "AWS SDK for Java 2.x: base 100 ms (1 s after throttling), cap 20 s; quota 500, 5 per retry of any kind",
        r#"base = "100ms"
throttle_base = "1s"
budget = { kind = "aws_quota", scope = "client", capacity = 500.0, retry_cost = 5.0, timeout_cost = 5.0, throttling_cost = 5.0, no_retry_increment = 1.0 }"#,
    ),
    (
        "js-v3",
        "AWS SDK for JavaScript v3: base 100 ms (500 ms after throttling), cap 20 s; retry-after hint waited at least; \
         quota 500, 5 per retry, 10 per timeout retry",
        r#"base = "100ms"
throttle_base = "500ms"
honor_retry_after = "at_least""#,
    ),
    (
        "go-v2",
        "AWS SDK for Go v2: rand × 2^attempt seconds (the first retry up to 2 s), cap 20 s; quota 500, 5 per retry, \
         10 per timeout retry",
        r#"base = "2s""#,
    ),
    (
        "rust",
        "AWS SDK for Rust: base 1 s, cap 20 s; x-amz-retry-after used as the delay; quota 500, 5 per retry, \
         10 per timeout retry",
        r#"honor_retry_after = "exact""#,
    ),
];

/// The names of the AWS SDKs `sdk` takes.
pub fn sdk_names() -> Vec<&'static str> {
    AWS_SDKS.iter().map(|s| s.0).collect()
}

/// The overlay of AWS SDK `name` on `aws-standard` (None if unknown).
pub fn aws_sdk(name: &str) -> Option<RawPolicy> {
    let (_, _, text) = AWS_SDKS.iter().find(|s| s.0 == name)?;
    Some(toml::from_str(text).expect("bundled SDK overlays are valid policies"))
}

/// The names of all presets.
pub fn names() -> Vec<&'static str> {
    PRESETS.iter().map(|p| p.0).collect()
}

/// The preset `name` as a raw policy (None if unknown).
pub fn preset(name: &str) -> Option<RawPolicy> {
    let (_, _, text) = PRESETS.iter().find(|p| p.0 == name)?;
    Some(toml::from_str(text).expect("bundled presets are valid policies"))
}

/// `raw` with every field it leaves out taken from `base`. A jitter that differs from the
/// preset's drops the preset's jitter-specific fields (`ratio`, `schedule`).
pub fn overlay(raw: &RawPolicy, mut base: RawPolicy) -> RawPolicy {
    if raw.jitter.is_some() && raw.jitter != base.jitter {
        base.ratio = None;
        base.schedule = None;
    }
    RawPolicy {
        preset: raw.preset.clone().or(base.preset),
        jitter: raw.jitter.clone().or(base.jitter),
        base: raw.base.or(base.base),
        multiplier: raw.multiplier.or(base.multiplier),
        cap: raw.cap.or(base.cap),
        max_attempts: raw.max_attempts.or(base.max_attempts),
        deadline: raw.deadline.or(base.deadline),
        attempt_timeout: raw.attempt_timeout.or(base.attempt_timeout),
        deadline_mode: raw.deadline_mode.clone().or(base.deadline_mode),
        honor_retry_after: raw.honor_retry_after.clone().or(base.honor_retry_after),
        throttle_base: raw.throttle_base.or(base.throttle_base),
        ratio: raw.ratio.or(base.ratio),
        schedule: raw.schedule.clone().or(base.schedule),
        budget: raw.budget.clone().or(base.budget),
        breaker: raw.breaker.clone().or(base.breaker),
        import: raw.import.clone(),
        select: raw.select.clone(),
        retry_on: raw.retry_on.clone().or(base.retry_on),
        hedge: raw.hedge.clone().or(base.hedge),
        cancel_on_timeout: raw.cancel_on_timeout.or(base.cancel_on_timeout),
        requeue: raw.requeue.or(base.requeue),
        late_reply: raw.late_reply.clone().or(base.late_reply),
        sdk: raw.sdk.clone().or(base.sdk),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_preset_validates() {
        for name in names() {
            let raw = RawPolicy { preset: Some(name.to_string()), ..RawPolicy::default() };
            let policy = super::super::policies::policy(name, &raw).unwrap_or_else(|e| panic!("{name}: {e:?}"));
            assert_eq!(policy.preset.as_deref(), Some(name));
        }
    }

    fn validated(name: &str) -> crate::model::RetryPolicy {
        let raw = RawPolicy { preset: Some(name.to_string()), ..RawPolicy::default() };
        super::super::policies::policy(name, &raw).expect("bundled presets validate")
    }

    #[test]
    fn grpc_follows_the_retry_design_not_the_connection_backoff() {
        // gRFC A6: random(0, min(initialBackoff × multiplier^(n−1), maxBackoff)), example policy
        // 0.1 s, ×2, 1 s, 4 attempts; pushback used as the delay.
        use crate::engine::{NS_PER_MS, NS_PER_S};
        use crate::model::{Jitter, RetryAfterMode};
        let p = validated("grpc");
        assert_eq!(p.jitter, Jitter::Full);
        assert_eq!((p.base, p.multiplier, p.cap, p.attempts_max), (100 * NS_PER_MS, 2.0, NS_PER_S, 4));
        assert_eq!(p.retry_after, RetryAfterMode::Exact);
    }

    #[test]
    fn presets_whose_source_ignores_retry_after_say_so() {
        use crate::model::RetryAfterMode;
        for name in ["aws-standard", "envoy", "envoy-retry-budget", "finagle", "resilience4j"] {
            assert_eq!(validated(name).retry_after, RetryAfterMode::Ignore, "{name}");
        }
        assert_eq!(validated("aws-standard-2026").retry_after, RetryAfterMode::AwsClamp);
        assert_eq!(validated("polly-v8").retry_after, RetryAfterMode::Exact);
    }

    /// docs/PRESETS.md's tables: for each `## \`name\`` section, every row whose first cell is a
    /// backticked field gives the preset's value (TOML) in its second cell. The doc cites the
    /// source of each value (e.g. the Standard Webhooks spec's 10-attempt example schedule, fixed
    /// here from Svix's 8); this test keeps the doc and the definitions equal.
    #[test]
    fn presets_doc_matches_the_definitions() {
        let doc = include_str!("../../../../docs/PRESETS.md");
        let mut documented: std::collections::BTreeMap<String, Vec<(String, toml::Value)>> = Default::default();
        let mut current: Option<String> = None;
        for line in doc.lines() {
            if let Some(h) = line.strip_prefix("## ") {
                current = h.strip_prefix('`').and_then(|h| h.strip_suffix('`')).map(str::to_string);
                continue;
            }
            let (Some(name), Some(row)) = (&current, line.strip_prefix("| `")) else { continue };
            let cells: Vec<&str> = row.split(" | ").collect();
            let field = cells[0].trim_end_matches('`').to_string();
            let ours = cells[1].trim().trim_matches('`');
            let value: toml::Table =
                toml::from_str(&format!("v = {ours}")).unwrap_or_else(|e| panic!("{name}.{field}: {e}"));
            documented.entry(name.clone()).or_default().push((field, value["v"].clone()));
        }
        for (name, _, text) in PRESETS {
            let table: toml::Table = toml::from_str(text).expect("preset TOML");
            let mut flat = std::collections::BTreeMap::new();
            for (k, v) in &table {
                #[allow(clippy::wildcard_enum_match_arm, reason = "a TOML value, not a kind: only a table nests")]
                match v {
                    toml::Value::Table(t) => t.iter().for_each(|(k2, v2)| {
                        flat.insert(format!("{k}.{k2}"), v2.clone());
                    }),
                    _ => {
                        flat.insert(k.clone(), v.clone());
                    }
                }
            }
            let rows = documented.get(name).unwrap_or_else(|| panic!("docs/PRESETS.md has no section for {name}"));
            let doc_fields: std::collections::BTreeSet<&str> = rows.iter().map(|r| r.0.as_str()).collect();
            let code_fields: std::collections::BTreeSet<&str> = flat.keys().map(String::as_str).collect();
            assert_eq!(doc_fields, code_fields, "{name}: fields in docs/PRESETS.md vs presets.rs");
            for (field, value) in rows {
                assert_eq!(&flat[field], value, "{name}.{field}: docs/PRESETS.md vs presets.rs");
            }
        }
        assert_eq!(documented.len(), PRESETS.len(), "a section in docs/PRESETS.md names no preset");
    }

    /// docs/PRESETS.md's "AWS SDKs" section: under each `### sdk \`name\``, every row whose first
    /// cell is a backticked field gives the SDK overlay's value (TOML) in its second cell, and
    /// every field an overlay sets has a row.
    #[test]
    fn sdk_doc_matches_the_overlays() {
        let doc = include_str!("../../../../docs/PRESETS.md");
        let section = doc.split("\n## AWS SDKs").nth(1).expect("the AWS SDKs section");
        let section = section.split("\n## ").next().expect("up to the next section");
        let mut documented: std::collections::BTreeMap<String, toml::Table> = Default::default();
        let mut current = None;
        for line in section.lines() {
            if let Some(h) = line.strip_prefix("### sdk `") {
                let name = h.trim_end_matches('`').to_string();
                documented.insert(name.clone(), toml::Table::new());
                current = Some(name);
                continue;
            }
            let (Some(name), Some(row)) = (&current, line.strip_prefix("| `")) else { continue };
            let cells: Vec<&str> = row.split(" | ").collect();
            let field = cells[0].trim_end_matches('`');
            let value: toml::Table = toml::from_str(&format!("v = {}", cells[1].trim().trim_matches('`')))
                .unwrap_or_else(|e| panic!("sdk {name}.{field}: {e}"));
            documented.get_mut(name).expect("inserted").insert(field.to_string(), value["v"].clone());
        }
        assert_eq!(documented.keys().map(String::as_str).collect::<Vec<_>>(), {
            let mut names = sdk_names();
            names.sort_unstable();
            names
        });
        for (name, _, text) in AWS_SDKS {
            let table: toml::Table = toml::from_str(text).expect("overlay TOML");
            assert_eq!(documented[name], table, "sdk {name}: docs/PRESETS.md vs presets.rs");
        }
    }

    #[test]
    fn each_sdk_gives_its_vendors_values_and_names_itself() {
        // The values each SDK's source gives (docs/PRESETS.md, "AWS SDKs"), written out here.
        use crate::engine::{NS_PER_MS, NS_PER_S};
        use crate::model::budget::BudgetKind;
        use crate::model::RetryAfterMode;
        let sdk = |sdk: &str| {
            let raw = RawPolicy { preset: Some("aws-standard".into()), sdk: Some(sdk.into()), ..RawPolicy::default() };
            super::super::policies::policy("p", &raw).unwrap_or_else(|e| panic!("{sdk}: {e:?}"))
        };
        let costs = |p: &crate::model::RetryPolicy| match p.budget.as_ref().map(|b| &b.kind) {
            Some(&BudgetKind::AwsQuota { capacity, retry_cost, timeout_cost, .. }) => {
                (capacity, retry_cost, timeout_cost)
            }
            other => panic!("{}: an AWS quota, not {other:?}", p.name),
        };
        // (sdk, base, throttle base, cap, attempts, Retry-After, quota, retry cost, timeout cost)
        let expected = [
            ("python", NS_PER_S, None, 20 * NS_PER_S, RetryAfterMode::Ignore, 5.0, 10.0),
            ("java-v2", 100 * NS_PER_MS, Some(NS_PER_S), 20 * NS_PER_S, RetryAfterMode::Ignore, 5.0, 5.0),
            ("js-v3", 100 * NS_PER_MS, Some(500 * NS_PER_MS), 20 * NS_PER_S, RetryAfterMode::AtLeast, 5.0, 10.0),
            ("go-v2", 2 * NS_PER_S, None, 20 * NS_PER_S, RetryAfterMode::Ignore, 5.0, 10.0),
            ("rust", NS_PER_S, None, 20 * NS_PER_S, RetryAfterMode::Exact, 5.0, 10.0),
        ];
        for (name, base, throttle_base, cap, retry_after, retry_cost, timeout_cost) in expected {
            let p = sdk(name);
            assert_eq!((p.base, p.throttle_base, p.cap, p.attempts_max), (base, throttle_base, cap, 3), "{name}");
            assert_eq!(p.retry_after, retry_after, "{name}");
            assert_eq!(costs(&p), (500.0, retry_cost, timeout_cost), "{name}");
            assert_eq!(p.preset.as_deref(), Some(format!("aws-standard (sdk {name})").as_str()));
        }
        // A field the policy writes wins over the SDK's.
        let raw = RawPolicy {
            preset: Some("aws-standard".into()),
            sdk: Some("java-v2".into()),
            base: Some(super::super::raw::Dur(7 * NS_PER_MS)),
            ..RawPolicy::default()
        };
        assert_eq!(super::super::policies::policy("p", &raw).expect("valid").base, 7 * NS_PER_MS);
        // `sdk` with another preset, without one, or an unknown SDK: refused, naming the field.
        let refused = |preset: Option<&str>, sdk: &str| {
            let raw = RawPolicy {
                preset: preset.map(str::to_string),
                jitter: Some("full".into()),
                sdk: Some(sdk.into()),
                ..RawPolicy::default()
            };
            let e = super::super::policies::policy("p", &raw).expect_err("refused");
            assert_eq!(e.path.join("."), "policy.p.sdk", "{e:?}");
            e.message
        };
        assert!(refused(Some("grpc"), "java-v2").contains("aws-standard"));
        assert!(refused(None, "java-v2").contains("aws-standard"));
        let unknown = refused(Some("aws-standard"), "java");
        assert!(unknown.contains("java-v2"), "{unknown}");
    }

    #[test]
    fn standard_webhooks_follows_the_specs_ten_attempt_example() {
        // standard-webhooks/standard-webhooks spec/standard-webhooks.md (1.0.0), "Example retry
        // schedule": immediately, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 14 h, 20 h, 24 h.
        let raw = preset("standard-webhooks").expect("bundled");
        assert_eq!(raw.max_attempts, Some(10));
        let p = validated("standard-webhooks");
        assert_eq!(p.attempts_max, 10);
        // Svix keeps its own 8 (docs.svix.com "Retry Schedule").
        assert_eq!(validated("svix").attempts_max, 8);
    }
}
